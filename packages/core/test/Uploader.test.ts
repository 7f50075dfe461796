import { describe, expect, it } from "@effect/vitest"
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { Clock, Effect, Exit, Fiber, Layer, Logger, References, Scope } from "effect"
import { TestClock } from "effect/testing"
import { Batch, Failure, Memory, Pipeline, RetryPolicy } from "../src/index.ts"
import type { Sink } from "../src/index.ts"
import * as Uploader from "../src/stage/Uploader.ts"
import { runVirtual } from "./support.ts"

const failure = (failureClass: Failure.FailureClass, code: string, stage: Failure.Stage, status: number | undefined = 503) =>
  new Failure.SinkFailure({ failureClass, code, status, stage, retryAfterMillis: undefined, message: `${code} (${failureClass})` })

const failOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  return reason?._tag === "Fail" ? reason.error : undefined
}

/** Records every log line with its annotations. */
const captureLogs = () => {
  const lines: Array<{ readonly message: string; readonly level: string; readonly annotations: Record<string, unknown> }> = []
  const logger = Logger.make((options) => {
    const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
    lines.push({ message, level: options.logLevel, annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) } })
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("Uploader stage machine", () => {
  it("resumes at the stage that failed; a VerificationFailed starts again at put object", () => {
    const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(4)] })
    const receipt = { key: batch.key, objectBytes: 8, checksum: { algorithm: "SHA256", value: "x" } }
    const atVerify: Uploader.UploadState = { ...Uploader.initial(batch), stage: "verify", receipt }
    const throttled = failure("Throttled", "SlowDown", "verify")
    const next = Uploader.retried(atVerify, throttled, "SlowDown", 1_000)
    expect(next).toMatchObject({ attempt: 2, stage: "verify", receipt, firstFailureAt: 1_000, lastCode: "SlowDown", sameCode: 1 })
    const again = Uploader.retried(next, throttled, "SlowDown", 2_000)
    expect(again).toMatchObject({ attempt: 3, stage: "verify", firstFailureAt: 1_000, sameCode: 2 })
    const mismatch = new Failure.VerificationFailed({ key: batch.key, reason: "ChecksumMismatch", expected: "a", actual: "b" })
    expect(Uploader.retried(atVerify, mismatch, "ChecksumMismatch", 1_000)).toMatchObject({ stage: "object_upload", receipt: undefined })
  })

  it.effect("a throttled verify (HEAD) resumes at verify: each object is uploaded once", () =>
    Effect.gen(function*() {
      const verifies = new Map<string, number>()
      const source = Memory.source({ name: "t", partitions: 2, records: 1_000, recordBytes: 16 })
      const sink = Memory.sink({
        latencyMillis: () => 2,
        fault: (op, key) => {
          if (op !== "verify") return undefined
          const n = (verifies.get(key) ?? 0) + 1
          verifies.set(key, n)
          return n === 1 ? failure("Throttled", "SlowDown", "verify") : undefined
        }
      })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { stagger: 0, records: 100 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(sink.objects.size).toBe(20)
      expect(sink.requests.filter((r) => r.op === "putObject").length).toBe(20)
      expect(sink.requests.filter((r) => r.op === "putManifest").length).toBe(20)
      expect(sink.requests.filter((r) => r.op === "verify").length).toBe(40)
    }))

  it.effect("a failed put reuses the batch's encoded body: one body per batch across attempts", () =>
    Effect.gen(function*() {
      const bodies = new Map<string, Set<Uint8Array>>()
      const tries = new Map<string, number>()
      const memory = Memory.sink({
        fault: (op, key) => {
          if (op !== "putObject") return undefined
          const n = (tries.get(key) ?? 0) + 1
          tries.set(key, n)
          return n <= 2 ? failure("Throttled", "SlowDown", "object_upload") : undefined
        }
      })
      const batches = new Map<string, Batch.SealedBatch>()
      let heldUntilVerify = 0
      const sink: Sink.Sink = {
        ...memory,
        putObject: (batch) => {
          const seen = bodies.get(batch.key) ?? new Set()
          seen.add(Batch.encodeBody(batch))
          bodies.set(batch.key, seen)
          batches.set(batch.key, batch)
          return memory.putObject(batch)
        },
        verify: (receipt) => {
          // Stored: the body was released right after the put (encoding again builds a new one).
          const batch = batches.get(receipt.key)
          if (batch !== undefined && bodies.get(receipt.key)?.has(Batch.encodeBody(batch)) === true) heldUntilVerify++
          return memory.verify(receipt)
        }
      }
      const source = Memory.source({ name: "t", partitions: 2, records: 500, recordBytes: 16 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { records: 100 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect([...tries.values()].every((n) => n === 3)).toBe(true)
      expect([...bodies.values()].every((set) => set.size === 1)).toBe(true)
      expect(heldUntilVerify).toBe(0)
    }))
})

describe("Uploader retries", () => {
  it.effect("a store down for an hour ends the run with BatchFailed within the retry budget (15 minutes)", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 100, recordBytes: 16 })
      const sink = Memory.sink({ fault: (op) => failure("Transient", "InternalError", op === "putObject" ? "object_upload" : "verify", 500) })
      const logs = captureLogs()
      const started = yield* Clock.currentTimeMillis
      const exit = yield* runVirtual(Pipeline.run({ source, sink }).pipe(Effect.provide(logs.layer)), {
        stepMillis: 1_000,
        maxMillis: 3_600_000
      })
      const ended = yield* Clock.currentTimeMillis
      const error = failOf(exit)
      expect(error?._tag).toBe("BatchFailed")
      if (error?._tag === "BatchFailed") {
        expect(error.code).toBe("InternalError")
        expect(error.message).toContain("retry budget spent: failing for")
      }
      // The first failure is at ~0; the last retry starts before 15 min; the
      // run ends at the failure that finds the budget spent.
      expect(ended - started).toBeGreaterThanOrEqual(15 * 60_000)
      expect(ended - started).toBeLessThanOrEqual(15 * 60_000 + 31_000)
      expect(source.committed.size).toBe(0)
      expect(logs.lines.filter((l) => l.message.includes("retrying")).length).toBeGreaterThan(20)
    }))

  it.effect("connection refused and DNS failures end the run once they have lasted 30 s in a row (retry.unreachableFor)", () =>
    Effect.gen(function*() {
      for (const code of ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"]) {
        const source = Memory.source({ name: "t", partitions: 1, records: 100, recordBytes: 16 })
        const sink = Memory.sink({ fault: () => failure("Transient", code, "object_upload", undefined) })
        const started = yield* Clock.currentTimeMillis
        const exit = yield* runVirtual(Pipeline.run({ source, sink }), { stepMillis: 100, maxMillis: 120_000 })
        const ended = yield* Clock.currentTimeMillis
        const error = failOf(exit)
        expect(error?._tag).toBe("BatchFailed")
        expect(error?._tag === "BatchFailed" && error.message).toContain(`store unreachable: ${code} for`)
        // Not before the budget, and at the first failure after it (backoff ≤ 30 s).
        expect(ended - started).toBeGreaterThanOrEqual(30_000)
        expect(ended - started).toBeLessThanOrEqual(30_000 + 31_000)
      }
    }))

  it.effect("batches backing off because the store gave no answer retry as soon as it answers again, not after their grown backoff", () =>
    Effect.gen(function*() {
      // The store fails every PUT for the first 20 s; a batch is sealed every second.
      // The first batch's backoff (100 ms doubling) has it retry at ~25.5 s; a batch
      // sealed later is verified at ~21-23 s. With a no-answer code (refused, timed
      // out) the others retry then; with a 500 (an answer) they wait their backoff.
      const run = (code: string) =>
        Effect.gen(function*() {
          let down = true
          const source = Memory.source({ name: "t", partitions: 1, records: 10_000, recordBytes: 16, chunkRecords: 1_000, intervalMillis: 1_000 })
          const sink = Memory.sink({ fault: (op) => op === "putObject" && down ? failure("Transient", code, "object_upload", undefined) : undefined })
          const started = yield* Clock.currentTimeMillis
          const program = Effect.gen(function*() {
            yield* Effect.forkChild(Effect.sleep("20 seconds").pipe(Effect.andThen(Effect.sync(() => {
              down = false
            }))))
            return yield* Pipeline.run({ source, sink, config: { batch: { records: 1_000, maxAge: "500 millis" } } })
          })
          const exit = yield* runVirtual(program, { stepMillis: 100, maxMillis: 120_000 })
          expect(Exit.isSuccess(exit)).toBe(true)
          expect(source.committed.get(0)).toBe(10_000)
          return (yield* Clock.currentTimeMillis) - started
        })
      for (const code of ["ECONNREFUSED", "TimeoutError", "ECONNRESET"]) {
        const took = yield* run(code)
        expect(took, code).toBeGreaterThanOrEqual(20_000)
        expect(took, code).toBeLessThan(24_000)
      }
      expect(yield* run("InternalError")).toBeGreaterThanOrEqual(25_000)
    }))

  it.effect("a retry goes before the batches queued behind it: the partition's commits go on once the store answers", () =>
    Effect.gen(function*() {
      // The whole topic is read at once (100 batches) and uploads start at 4 a second;
      // the store refuses for the first 2 s. The first batch's retry, woken when the
      // store answers, goes first: partition 0 commits within seconds of the store's
      // return, not after the ~90 batches queued behind it (~25 s at 4 a second).
      let down = true
      const source = Memory.source({ name: "t", partitions: 1, records: 100_000, recordBytes: 16, chunkRecords: 1_000 })
      const sink = Memory.sink({ fault: (op) => op === "putObject" && down ? failure("Transient", "ECONNREFUSED", "object_upload", undefined) : undefined })
      const started = yield* Clock.currentTimeMillis
      let firstCommitAt: number | undefined
      const program = Effect.gen(function*() {
        yield* Effect.forkChild(Effect.sleep("2 seconds").pipe(Effect.andThen(Effect.sync(() => {
          down = false
        }))))
        yield* Effect.forkChild(Effect.gen(function*() {
          while (firstCommitAt === undefined) {
            if ((source.committed.get(0) ?? 0) > 0) firstCommitAt = yield* Clock.currentTimeMillis
            yield* Effect.sleep("100 millis")
          }
        }))
        return yield* Pipeline.run({ source, sink, config: { batch: { records: 1_000 }, rate: 4, memoryBudget: "64 MiB" } })
      })
      const exit = yield* runVirtual(program, { stepMillis: 100, maxMillis: 120_000 })
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(source.committed.get(0)).toBe(100_000)
      expect(firstCommitAt).toBeDefined()
      expect((firstCommitAt ?? Infinity) - started).toBeLessThan(6_000)
    }))

  it.effect("a throttled batch is taken again before the batches sealed after it (oldest first), not behind them", () =>
    Effect.gen(function*() {
      // One upload at a time, 3 s each (1 s a request); the whole topic (4 partitions
      // × 10 batches, a batch's chunk every 10 ms) is read within a second, so ~39
      // batches wait. Partition 0's first batch
      // is throttled once: its retry, due after a backoff of seconds, goes before the
      // batches still waiting (in arrival order it went behind all of them, last).
      const puts: Array<string> = []
      let throttled = false
      const source = Memory.source({ name: "t", partitions: 4, records: 1_000, recordBytes: 16, chunkRecords: 100, intervalMillis: 10 })
      const base = Memory.sink({
        latencyMillis: () => 1_000,
        fault: (op, key) => {
          if (op !== "putObject" || throttled || !key.includes("p=00000/00000000000000000000-")) return undefined
          throttled = true
          return failure("Throttled", "SlowDown", "object_upload")
        }
      })
      const sink: Sink.Sink = {
        ...base,
        putObject: (batch) => Effect.tap(base.putObject(batch), () => Effect.sync(() => puts.push(batch.key)))
      }
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { concurrency: 1, batch: { stagger: 0, records: 100 } } }), { stepMillis: 10, maxMillis: 600_000 })
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(throttled).toBe(true)
      expect(puts).toHaveLength(40)
      const first = puts.findIndex((key) => key.includes("p=00000/00000000000000000000-"))
      expect(first).toBeGreaterThanOrEqual(1)
      expect(first).toBeLessThanOrEqual(4)
      expect([...source.committed.values()]).toEqual([1_000, 1_000, 1_000, 1_000])
    }))

  it.effect("a store that refuses connections for seconds (a restart) is ridden through: every record committed", () =>
    Effect.gen(function*() {
      // 7 refusals in a row: ~12 s of backoff (100 ms doubling), within the 30 s.
      let refusals = 7
      const source = Memory.source({ name: "t", partitions: 1, records: 100, recordBytes: 16 })
      const sink = Memory.sink({ fault: (op) => op === "putObject" && refusals-- > 0 ? failure("Transient", "ECONNREFUSED", "object_upload", undefined) : undefined })
      const exit = yield* runVirtual(Pipeline.run({ source, sink }), { stepMillis: 100, maxMillis: 120_000 })
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(refusals).toBeLessThan(0)
      expect(source.committed.get(0)).toBe(100)
    }))

  it.effect("jitter is per batch: batches throttled on the same attempt retry at different instants", () =>
    Effect.gen(function*() {
      const at = new Map<string, Array<number>>()
      const source = Memory.source({ name: "t", partitions: 4, records: 100, recordBytes: 16 })
      const base = Memory.sink({
        fault: (op, key) => (op === "putObject" && (at.get(key)?.length ?? 0) <= 2 ? failure("Throttled", "SlowDown", "object_upload") : undefined)
      })
      const sink: Sink.Sink = {
        ...base,
        putObject: (batch) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            at.set(batch.key, [...(at.get(batch.key) ?? []), now])
            return base.putObject(batch)
          })
      }
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { stagger: 0, records: 100 } } }), { stepMillis: 1 })
      expect(Exit.isSuccess(exit)).toBe(true)
      const second = [...at.values()].map((times) => times[1])
      const third = [...at.values()].map((times) => times[2])
      expect(new Set(second).size).toBe(4)
      expect(new Set(third).size).toBe(4)
      // Deterministic: the delays are drawn from the key and the attempt.
      expect(RetryPolicy.jitter("k", 2)).toBe(RetryPolicy.jitter("k", 2))
    }))

  it.effect("every retry is logged (batch key, stage, class, code, attempt, delay) and counted in stats and sluice.retries", () =>
    Effect.gen(function*() {
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
      const meterProvider = new MeterProvider({ readers: [reader] })
      const verifies = new Map<string, number>()
      const sink = Memory.sink({
        fault: (op, key) => {
          if (op !== "verify") return undefined
          const n = (verifies.get(key) ?? 0) + 1
          verifies.set(key, n)
          return n <= 2 ? failure("Throttled", "SlowDown", "verify") : undefined
        }
      })
      const source = Memory.source({ name: "t", partitions: 1, records: 300, recordBytes: 16 })
      const logs = captureLogs()
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, meterProvider, config: { batch: { records: 100 } } }).pipe(Effect.provide(logs.layer))
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) expect(exit.value.retries).toBe(6)
      const retries = logs.lines.filter((l) => l.message.includes("retrying a failed batch"))
      expect(retries.length).toBe(6)
      expect(retries.every((l) => l.level === "Warn")).toBe(true)
      expect(retries[0]?.annotations).toMatchObject({
        batch: "t/p=00000/00000000000000000000-00000000000000000099.rec",
        stage: "verify",
        failureClass: "Throttled",
        code: "SlowDown",
        attempt: 1
      })
      expect(typeof retries[0]?.annotations["delayMillis"]).toBe("number")
      yield* Effect.promise(() => reader.forceFlush())
      const points = exporter.getMetrics().flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics)
        .filter((m) => m.descriptor.name === "sluice.retries")
        .flatMap((m) => m.dataPoints.map((dp) => ({ value: dp.value, attributes: dp.attributes })))
      expect(points.reduce((n, dp) => n + (typeof dp.value === "number" ? dp.value : 0), 0)).toBe(6)
      expect(points[0]?.attributes).toMatchObject({ "sluice.failure.class": "Throttled", "error.type": "SlowDown", "sluice.stage": "verify" })
    }))
})

describe("Uploader: a batch that always fails", () => {
  it.effect("holds back only its partition: past maxVerifiedAhead its new batches wait (logged), the age of the oldest uncommitted batch grows, and the run ends with BatchFailed", () =>
    Effect.gen(function*() {
      const head = "t/p=00000/00000000000000000000-00000000000000000099.rec"
      const puts = new Set<string>()
      const base = Memory.sink({
        latencyMillis: () => 10,
        fault: (op, key) => (op === "putObject" && key === head ? failure("Transient", "InternalError", "object_upload", 500) : undefined)
      })
      const sink: Sink.Sink = { ...base, putObject: (batch) => Effect.suspend(() => (puts.add(batch.key), base.putObject(batch))) }
      const source = Memory.source({ name: "t", partitions: 2, records: 5_000, recordBytes: 16, chunkRecords: 100, intervalMillis: 100 })
      const logs = captureLogs()
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({
        source,
        sink,
        config: { batch: { records: 100 }, maxVerifiedAhead: 5, retry: { maxElapsed: "2 minutes" } }
      }).pipe(Scope.provide(scope), Effect.provide(logs.layer))
      for (let t = 0; t < 60_000; t += 100) yield* TestClock.adjust(100)
      const mid = handle.stats()
      // Partition 1 went on; partition 0 stopped at the cap (5 verified behind the head, plus the head).
      expect(source.committed.get(1)).toBe(5_000)
      expect(source.committed.get(0)).toBeUndefined()
      const p0 = [...puts].filter((k) => k.startsWith("t/p=00000/"))
      expect(p0.length).toBeLessThanOrEqual(1 + 5 + 8)
      expect(mid.partitionsHeld).toBe(1)
      expect(mid.oldestUncommittedAgeMillis).toBeGreaterThanOrEqual(59_000)
      expect(logs.lines.filter((l) => l.message.includes("partition t/0 held")).length).toBe(1)
      expect(handle.knobs.current().concurrency).toBe(8)
      const exit = yield* Effect.exit(handle.await).pipe(Effect.forkChild, Effect.flatMap((fiber) =>
        Effect.gen(function*() {
          for (let t = 0; t < 120_000; t += 1_000) yield* TestClock.adjust(1_000)
          return yield* Fiber.await(fiber)
        })
      ))
      yield* Scope.close(scope, Exit.void)
      const error = Exit.isSuccess(exit) ? failOf(exit.value) : undefined
      expect(error?._tag === "BatchFailed" && error.key).toBe(head)
      expect(source.committed.get(0)).toBeUndefined()
    }))
})

describe("RetryPolicy", () => {
  it("the budget: attempts, elapsed time since the first failure, consecutive unreachable codes", () => {
    const budget = RetryPolicy.defaultBudget
    const transient: Failure.ClassifiedFailure = { failureClass: "Transient", code: "InternalError", status: 500, stage: "object_upload", retryAfterMillis: undefined }
    const ctx = { key: "k", firstFailureAt: 0, now: 1_000, sameCode: 1 }
    expect(RetryPolicy.exhausted(budget, transient, 1, ctx)).toBeUndefined()
    expect(RetryPolicy.exhausted(budget, transient, 100, ctx)).toContain("100 attempts")
    expect(RetryPolicy.exhausted(budget, transient, 2, { ...ctx, now: 15 * 60_000 })).toContain("failing for 900 s")
    const refused = { ...transient, code: "ECONNREFUSED" }
    // Refused in a row for less than 30 s: retried, however many attempts; from 30 s: unreachable.
    expect(RetryPolicy.exhausted(budget, refused, 9, { ...ctx, now: 29_999, sameCode: 9, sameCodeSince: 0 })).toBeUndefined()
    expect(RetryPolicy.exhausted(budget, refused, 9, { ...ctx, now: 30_000, sameCode: 9, sameCodeSince: 0 })).toContain("store unreachable: ECONNREFUSED for 30 s")
    // The run of refusals counts from its own first failure, not the batch's.
    expect(RetryPolicy.exhausted(budget, refused, 9, { ...ctx, now: 40_000, sameCode: 2, sameCodeSince: 20_000 })).toBeUndefined()
    // bounded() applies the same budget to any policy.
    const forever: RetryPolicy.RetryPolicy = { delayMillis: () => 10 }
    expect(RetryPolicy.bounded(forever).delayMillis(transient, 100, ctx)).toBeUndefined()
    expect(RetryPolicy.bounded(forever).delayMillis(transient, 1, ctx)).toBe(10)
  })
  it("standard: equal jitter from the batch key, never below Retry-After, Fatal not retried", () => {
    const throttled: Failure.ClassifiedFailure = { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined }
    const ctx = (key: string) => ({ key, firstFailureAt: 0, now: 0, sameCode: 1 })
    const d = (key: string, attempt: number) => RetryPolicy.standard.delayMillis(throttled, attempt, ctx(key)) ?? -1
    for (let attempt = 1; attempt <= 10; attempt++) {
      const backoff = Math.min(30_000, 100 * 2 ** (attempt - 1))
      expect(d("a", attempt)).toBeGreaterThanOrEqual(backoff / 2)
      expect(d("a", attempt)).toBeLessThanOrEqual(backoff)
    }
    expect(d("a", 5)).not.toBe(d("b", 5))
    expect(RetryPolicy.standard.delayMillis({ ...throttled, retryAfterMillis: 60_000 }, 1, ctx("a"))).toBe(60_000)
    expect(RetryPolicy.standard.delayMillis({ ...throttled, failureClass: "Fatal" }, 1, ctx("a"))).toBeUndefined()
  })
  it("a policy written before the context existed still works (the context is optional)", () => {
    const legacy: RetryPolicy.RetryPolicy = { delayMillis: (failure, attempt) => (failure.failureClass === "Fatal" || attempt >= 3 ? undefined : 20) }
    expect(legacy.delayMillis({ failureClass: "Transient", code: "x", status: 500, stage: "verify", retryAfterMillis: undefined }, 1)).toBe(20)
    const layer: Layer.Layer<never> = Layer.empty
    expect(layer).toBeDefined()
  })
})
