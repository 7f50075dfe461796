import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Batch } from "@sluice/core"
import * as Store from "../src/Store.ts"

const batch = (records: number, recordBytes: number, offset = 0): Batch.SealedBatch => ({
  key: `k/${offset}`,
  source: "s",
  partition: 0,
  sequence: offset,
  firstOffset: offset,
  lastOffset: offset + records - 1,
  records,
  bytes: records * recordBytes,
  sealReason: "records",
  openedAt: 0,
  sealedAt: 0,
  chunks: []
})

const quiet: Store.StoreParams = { ...Store.defaultParams, jitter: 0, bandwidthBytesPerSecond: 1_000_000, baseLatencyMillis: 10, knee: 2 }

describe("Store", () => {
  it.effect("latency = base + bytes/bandwidth, unloaded", () =>
    Effect.gen(function*() {
      const store = Store.make(quiet, 1)
      const sink = store.sink(0)
      // 1000 records of 96 B -> body 100_000 B -> 100 ms at 1 MB/s, + 10 ms base
      const fiber = yield* Effect.forkChild(sink.putObject(batch(1000, 96)))
      yield* TestClock.adjust(109)
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      const receipt = yield* Fiber.join(fiber)
      expect(receipt.objectBytes).toBe(100_000)
      const [request] = store.requests
      expect(request).toMatchObject({ operation: "putObject", startedAt: 0, endedAt: 110, bytes: 100_000, outcome: "ok" })
    }))

  it.effect("an update reaches the requests in flight: their remaining share runs at the new latency (slower, and faster again)", () =>
    Effect.gen(function*() {
      const store = Store.make(quiet, 1)
      const sink = store.sink(0)
      // 110 ms unloaded (10 ms + 100 kB at 1 MB/s); 10× slower from 55 ms: half done, the other half takes 550 ms.
      const slowed = yield* Effect.forkChild(sink.putObject(batch(1000, 96)))
      yield* TestClock.adjust(55)
      store.update({ baseLatencyMillis: 100, bandwidthBytesPerSecond: 100_000 })
      yield* TestClock.adjust(549)
      expect(slowed.pollUnsafe(), "still running at 604 ms").toBeUndefined()
      yield* TestClock.adjust(1)
      yield* Fiber.join(slowed)
      expect(store.requests[0]).toMatchObject({ startedAt: 0, endedAt: 605 })
      // Started slow (1 100 ms), back to fast after 550 ms: the other half takes 55 ms.
      const sped = yield* Effect.forkChild(sink.putObject(batch(1000, 96, 1000)))
      yield* TestClock.adjust(550)
      store.update({ baseLatencyMillis: 10, bandwidthBytesPerSecond: 1_000_000 })
      yield* TestClock.adjust(55)
      yield* Fiber.join(sped)
      expect(store.requests[1]).toMatchObject({ startedAt: 605, endedAt: 605 + 550 + 55 })
      expect(store.drainLatencies().map((l) => l.millis)).toEqual([605, 605])
    }))

  it.effect("above the knee latency grows with inflight / knee", () =>
    Effect.gen(function*() {
      const store = Store.make(quiet, 1)
      const sink = store.sink(0)
      // 4 concurrent requests, knee 2: the 3rd is x1.5, the 4th x2
      const fibers = yield* Effect.forEach([0, 1, 2, 3], (i) => Effect.forkChild(sink.putObject(batch(1000, 96, i * 1000))))
      yield* TestClock.adjust(1000)
      yield* Effect.forEach(fibers, Fiber.join)
      expect(store.requests.map((r) => r.endedAt - r.startedAt)).toEqual([110, 110, 165, 220])
      expect(store.counters.maxInflight).toBe(4)
    }))

  it.effect("kneeQueue arrival: knee requests served at once, the others wait in arrival order (a manifest behind long uploads waits for one); interrupted waiters leave the line; a raised knee admits at once", () =>
    Effect.gen(function*() {
      const store = Store.make({ ...quiet, kneeQueue: "arrival" }, 1)
      const sink = store.sink(0)
      // Two 110 ms uploads hold the knee's 2 slots; a manifest (10 ms + 512 B) and a third upload wait.
      const uploads = yield* Effect.forEach([0, 1], (i) => Effect.forkChild(sink.putObject(batch(1000, 96, i * 1000))))
      const manifest = yield* Effect.forkChild(sink.putManifest(Batch.manifestOf(batch(1000, 96), { algorithm: "SIM", value: "k/0:100000" })))
      const third = yield* Effect.forkChild(sink.putObject(batch(1000, 96, 2000)))
      yield* TestClock.adjust(110)
      yield* Effect.forEach(uploads, Fiber.join)
      // Admitted at 110 ms, first in line: 10.512 ms of service.
      yield* TestClock.adjust(11)
      yield* Fiber.join(manifest)
      yield* TestClock.adjust(110)
      yield* Fiber.join(third)
      const took = store.requests.map((r) => [r.operation, r.endedAt - r.startedAt])
      expect(took).toEqual([["putObject", 110], ["putObject", 110], ["putManifest", 120.512], ["putObject", 220]])
      // A waiter interrupted leaves the line; a raised knee lets the next one through now.
      const holders = yield* Effect.forEach([0, 1], (i) => Effect.forkChild(sink.putObject(batch(1000, 96, 10_000 + i * 1000))))
      const gone = yield* Effect.forkChild(sink.putObject(batch(1000, 96, 12_000)))
      const next = yield* Effect.forkChild(sink.putObject(batch(1000, 96, 13_000)))
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(gone)
      store.update({ knee: 3 })
      yield* TestClock.adjust(110)
      yield* Effect.forEach([...holders, next], Fiber.join)
      const last = store.requests.slice(-1)[0]
      expect(last?.endedAt, "admitted when the knee rose, at 1 ms: 1 + 110").toBe(last === undefined ? NaN : last.startedAt + 111)
      expect(store.counters.inflight).toBe(0)
    }))

  it.effect("throttles above throttleAbove with 503 SlowDown, fails with 500 at errorRate", () =>
    Effect.gen(function*() {
      const store = Store.make({ ...quiet, throttleAbove: 1, throttleProbability: 1 }, 1)
      const sink = store.sink(0)
      const a = yield* Effect.forkChild(Effect.exit(sink.putObject(batch(10, 10, 0))))
      const b = yield* Effect.forkChild(Effect.exit(sink.putObject(batch(10, 10, 10))))
      yield* TestClock.adjust(1000)
      expect(Exit.isSuccess(yield* Fiber.join(a))).toBe(true)
      const throttled = yield* Fiber.join(b)
      expect(Exit.isFailure(throttled)).toBe(true)
      if (Exit.isFailure(throttled)) {
        const error = throttled.cause.reasons[0]
        expect(error?._tag === "Fail" && error.error).toMatchObject({ failureClass: "Throttled", code: "SlowDown", status: 503 })
      }
      store.update({ throttleAbove: null, errorRate: 1 })
      const c = yield* Effect.forkChild(Effect.flip(sink.putManifest({} as never)))
      yield* TestClock.adjust(1000)
      expect(yield* Fiber.join(c)).toMatchObject({ failureClass: "Transient", code: "InternalError", status: 500 })
      expect(store.counters).toMatchObject({ requests: 3, throttled: 1, errors: 1 })
    }))

  it.effect("throttleAbove 0 refuses a request with nothing else in flight (a store shedding all load)", () =>
    Effect.gen(function*() {
      const store = Store.make({ ...quiet, throttleAbove: 0, throttleProbability: 1 }, 1)
      const lone = yield* Effect.forkChild(Effect.flip(store.sink(0).putObject(batch(10, 10, 0))))
      yield* TestClock.adjust(1000)
      expect(yield* Fiber.join(lone)).toMatchObject({ failureClass: "Throttled", code: "SlowDown", status: 503 })
      store.update({ throttleAbove: 1 })
      const alone = yield* Effect.forkChild(Effect.exit(store.sink(0).putObject(batch(10, 10, 10))))
      yield* TestClock.adjust(1000)
      expect(Exit.isSuccess(yield* Fiber.join(alone))).toBe(true)
    }))

  it.effect("rate-limits object uploads with 429 and Retry-After", () =>
    Effect.gen(function*() {
      const store = Store.make({ ...quiet, rateLimit: 2 }, 1)
      const sink = store.sink(0)
      const fibers = yield* Effect.forEach([0, 1, 2], (i) => Effect.forkChild(Effect.exit(sink.putObject(batch(10, 10, i * 10)))))
      yield* TestClock.adjust(1000)
      const exits = yield* Effect.forEach(fibers, Fiber.join)
      expect(exits.map(Exit.isSuccess)).toEqual([true, true, false])
      const third = exits[2]
      if (third !== undefined && Exit.isFailure(third)) {
        const error = third.cause.reasons[0]
        expect(error?._tag === "Fail" && error.error).toMatchObject({ code: "TooManyRequests", status: 429, retryAfterMillis: 1000 })
      }
      expect(store.counters.rateLimited).toBe(1)
    }))

  it.effect("parameter changes apply to later requests; verify proves stored objects only", () =>
    Effect.gen(function*() {
      const store = Store.make(quiet, 1)
      const sink = store.sink(0)
      store.update({ baseLatencyMillis: 100 })
      const put = yield* Effect.forkChild(sink.putObject(batch(1000, 96)))
      yield* TestClock.adjust(200)
      const receipt = yield* Fiber.join(put)
      expect(store.requests[0]?.endedAt).toBe(200)
      const ok = yield* Effect.forkChild(sink.verify(receipt))
      const missing = yield* Effect.forkChild(Effect.flip(sink.verify({ ...receipt, key: "nope" })))
      yield* TestClock.adjust(200)
      expect((yield* Fiber.join(ok)).key).toBe(receipt.key)
      expect(yield* Fiber.join(missing)).toMatchObject({ _tag: "VerificationFailed", reason: "Missing" })
      expect(store.verified.get("s/0")).toEqual([[0, 999]])
    }))
})
