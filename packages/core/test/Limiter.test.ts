import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Failure, Knob, Memory, Metrics, Pipeline } from "../src/index.ts"
import type { SignalBus } from "../src/index.ts"
import * as Limiter from "../src/stage/Limiter.ts"
import * as Stats from "../src/stage/Stats.ts"

const knobsOf = (values: Partial<Knob.KnobValues>) => {
  let current: Knob.KnobValues = {
    concurrency: 2,
    batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 },
    readGate: "open",
    rate: null,
    ...values
  }
  return { current: () => current, set: (next: Partial<Knob.KnobValues>) => void (current = { ...current, ...next }) }
}

const setup = (values: Partial<Knob.KnobValues>) =>
  Effect.gen(function*() {
    const knobs = knobsOf(values)
    const stats = Stats.make("open")
    const signals: Array<SignalBus.Signal> = []
    const limiter = yield* Limiter.make({ knobs, stats, metrics: Metrics.make(), publish: (s) => void signals.push(s) })
    return { knobs, stats, signals, limiter }
  })

const throttled = new Failure.SinkFailure({
  failureClass: "Throttled",
  code: "SlowDown",
  status: 503,
  stage: "object_upload",
  retryAfterMillis: undefined,
  message: "slow down"
})

describe("Limiter (alone)", () => {
  it.effect("the gate bounds permits held; a shrink lets holders finish and admits no one until below the new limit", () =>
    Effect.gen(function*() {
      const { limiter, stats } = yield* setup({ concurrency: 3 })
      const done = [yield* Deferred.make<void>(), yield* Deferred.make<void>(), yield* Deferred.make<void>()]
      for (const d of done) {
        yield* limiter.acquire
        yield* Effect.forkChild(limiter.holding(Deferred.await(d)))
      }
      const fourth = yield* Effect.forkChild(limiter.acquire)
      yield* TestClock.adjust(1)
      expect(fourth.pollUnsafe()).toBeUndefined()
      expect(stats.uploading).toBe(3)
      yield* limiter.resize(1)
      for (const d of done.slice(0, 2)) yield* Deferred.succeed(d, undefined)
      yield* TestClock.adjust(1)
      expect(stats.uploading).toBe(1)
      expect(fourth.pollUnsafe()).toBeUndefined() // 1 held, limit 1: the shrink let holders finish
      yield* Deferred.succeed(done[2] as Deferred.Deferred<void>, undefined)
      yield* Fiber.join(fourth)
      expect(limiter.inflight()).toBe(0)
    }))

  it.effect("the rate spaces acquisitions at 1000 / rate ms and never exceeds it", () =>
    Effect.gen(function*() {
      const { limiter } = yield* setup({ concurrency: 100, rate: 10 })
      const starts: Array<number> = []
      const fiber = yield* Effect.forkChild(Effect.forEach(Array.from({ length: 20 }), () =>
        Effect.andThen(limiter.acquire, Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => void starts.push(t))))))
      for (let t = 0; t < 3_000; t += 10) yield* TestClock.adjust(10)
      yield* Fiber.join(fiber)
      expect(starts.length).toBe(20)
      for (let i = 1; i < starts.length; i++) expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBeGreaterThanOrEqual(100)
    }))

  it.effect("a rate released wakes the acquisition waiting on it (retime): it starts at once; a raise or a cut leaves it due when it was", () =>
    Effect.gen(function*() {
      // The real-server trickle (adapters-s3 PolicyReaction): a batch sealed
      // under a cut rate of 0.78/s slept 1.3 s after Throttle released the
      // rate, and the dispatcher, and every batch behind it, with it.
      const { knobs, limiter } = yield* setup({ concurrency: 100, rate: 1 })
      yield* limiter.acquire // at 0: the next start is due at 1 000 ms under 1/s
      const second = yield* Effect.forkChild(limiter.acquire)
      yield* TestClock.adjust(100)
      expect(second.pollUnsafe()).toBeUndefined()
      knobs.set({ rate: null })
      yield* limiter.retime
      yield* TestClock.adjust(1)
      expect(second.pollUnsafe()).toBeDefined() // released: it goes now (101 ms), not at 1 000 ms
      // A raise or a cut while waiting leaves the start due when it was:
      // 1/s at 101 → due at 1 101, whatever the rate becomes meanwhile.
      knobs.set({ rate: 1 })
      yield* limiter.acquire // at 101
      const third = yield* Effect.forkChild(Effect.andThen(limiter.acquire, Clock.currentTimeMillis))
      yield* TestClock.adjust(50)
      knobs.set({ rate: 10 })
      yield* limiter.retime
      yield* TestClock.adjust(50)
      knobs.set({ rate: 0.5 })
      yield* limiter.retime
      for (let i = 0; i < 100; i++) yield* TestClock.adjust(10)
      expect(yield* Fiber.join(third)).toBe(1_101)
    }))

  it.effect("runningUploads holds each object upload while it runs (when it began, its bytes, the in-flight then) and drops it however it ends", () =>
    Effect.gen(function*() {
      const { limiter, stats } = yield* setup({ concurrency: 4 })
      const release = yield* Deferred.make<void>()
      const running = (bytes: number, outcome: Effect.Effect<string, Failure.SinkFailure>) =>
        Effect.forkChild(limiter.holding(limiter.measure("object_upload", bytes, 1, Effect.andThen(Deferred.await(release), outcome))))
      yield* limiter.acquire
      const ok = yield* running(1_000, Effect.succeed("ok"))
      yield* TestClock.adjust(10)
      yield* limiter.acquire
      const fails = yield* running(2_000, Effect.fail(throttled))
      yield* limiter.acquire
      const interrupted = yield* running(3_000, Effect.never)
      // A manifest is not an object upload.
      const manifest = yield* Effect.forkChild(limiter.measure("manifest_upload", 0, 1, Deferred.await(release)))
      yield* TestClock.adjust(5)
      expect([...stats.runningUploads.values()]).toEqual([
        { startedAt: 0, bytes: 1_000, inflightAtStart: 1 },
        { startedAt: 10, bytes: 2_000, inflightAtStart: 2 },
        { startedAt: 10, bytes: 3_000, inflightAtStart: 3 }
      ])
      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(ok)).toBe("ok")
      expect(Exit.isFailure(yield* Fiber.await(fails))).toBe(true)
      yield* Fiber.join(manifest)
      expect([...stats.runningUploads.values()].map((r) => r.bytes)).toEqual([3_000])
      yield* Fiber.interrupt(interrupted)
      expect(stats.runningUploads.size).toBe(0)
    }))

  it.effect("attributes every sample: success → UploadSample, throttle → dropped, other failures → ignored; counted", () =>
    Effect.gen(function*() {
      const { limiter, signals, stats } = yield* setup({ concurrency: 4 })
      yield* limiter.acquire
      const ok = yield* Effect.forkChild(limiter.holding(limiter.measure("object_upload", 1_000, 1, Effect.as(Effect.sleep(25), "ok"))))
      yield* TestClock.adjust(25)
      expect(yield* Fiber.join(ok)).toBe("ok")
      const failed = yield* Effect.exit(limiter.measure("verify", 0, 2, Effect.fail(throttled)))
      const transient = new Failure.SinkFailure({
        failureClass: "Transient",
        code: "InternalError",
        status: 500,
        stage: "verify",
        retryAfterMillis: undefined,
        message: "internal error"
      })
      yield* Effect.exit(limiter.measure("verify", 0, 2, Effect.fail(transient)))
      expect(Exit.isFailure(failed)).toBe(true)
      expect(signals.map((s) => s._tag)).toEqual(["UploadSample", "Failure", "Failure"])
      const sample = signals[0]
      expect(sample?._tag === "UploadSample" && sample).toMatchObject({ latencyMillis: 25, bytes: 1_000, inflightAtStart: 1, limitAtStart: 4 })
      expect(stats).toMatchObject({ requests: 3, failures: 2, throttles: 1 })
      expect(Limiter.attribute(undefined)).toBe("success")
      expect(Limiter.attribute(Failure.classify(throttled))).toBe("dropped")
      expect(Limiter.attribute(Failure.classify(transient))).toBe("ignored")
    }))

  it.effect("through the pipeline: a configured 10/s stays at most 10/s when a policy proposes 20/s", () =>
    Effect.gen(function*() {
      const eager = Layer.effectDiscard(Effect.gen(function*() {
        const knobs = yield* Knob.Knobs
        yield* knobs.propose("eager", { rate: 20 })
      }))
      const source = Memory.source({ name: "t", partitions: 4, records: 500, recordBytes: 16 })
      const starts: Array<number> = []
      const memory = Memory.sink()
      const sink = {
        ...memory,
        putObject: (batch: Parameters<typeof memory.putObject>[0]) =>
          Effect.flatMap(Clock.currentTimeMillis, (t) => (starts.push(t), memory.putObject(batch)))
      }
      const fiber = yield* Effect.forkChild(Pipeline.run({ source, sink, config: { rate: 10, batch: { stagger: 0, records: 50 } }, policies: eager }))
      for (let t = 0; t < 10_000 && fiber.pollUnsafe() === undefined; t += 10) yield* TestClock.adjust(10)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(starts.length).toBe(40)
      for (let i = 1; i < starts.length; i++) expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBeGreaterThanOrEqual(100)
    }))

  it.effect("a put's local checksum time is taken out of its latency sample; a failure is timed whole", () =>
    Effect.gen(function*() {
      const { limiter, signals } = yield* setup({})
      const put = Effect.as(Effect.sleep(100), { key: "k", objectBytes: 1, checksum: { algorithm: "CRC32", value: "x" }, checksumMillis: 30 })
      const fiber = yield* Effect.forkChild(limiter.measure("object_upload", 1, 1, put))
      yield* TestClock.adjust(100)
      yield* Fiber.join(fiber)
      const sample = signals.find((s) => s._tag === "UploadSample")
      expect(sample?._tag === "UploadSample" ? sample.latencyMillis : undefined).toBe(70)
      // An answer without it (a manifest put, a verify) is timed whole.
      const verify = yield* Effect.forkChild(limiter.measure("verify", 1, 1, Effect.as(Effect.sleep(40), { checksumMillis: "no" })))
      yield* TestClock.adjust(40)
      yield* Fiber.join(verify)
      const samples = signals.filter((s) => s._tag === "UploadSample")
      expect(samples.at(-1)?._tag === "UploadSample" ? samples.at(-1)?.latencyMillis : undefined).toBe(40)
    }))
})
