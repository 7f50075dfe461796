import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Batch } from "@sluice/core"
import * as Oracle from "../src/Oracle.ts"
import * as Store from "../src/Store.ts"

const world: Oracle.OracleWorld = { recordBytes: 1000, budgetBytes: 256 * 1024 * 1024, partitions: 8, maxAgeMillis: 5_000 }

/**
 * Drives the simulated store directly, as the best possible pipeline would:
 * `c` workers, each uploading objects of `bytes` then a manifest then a verify,
 * retrying a failed request at once, for `millis` of virtual time. Returns the
 * payload bytes per second the store verified (the store's ground truth).
 */
const flood = (params: Store.StoreParams, c: number, bytes: number, millis: number) =>
  Effect.gen(function*() {
    const store = Store.make(params, 5)
    const sink = store.sink(0)
    const payload = new Uint8Array(world.recordBytes)
    const payloads = Array.from({ length: Math.max(1, Math.round(bytes / world.recordBytes)) }, () => payload)
    let verified = 0
    const retry = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A> =>
      Effect.catch(effect, () => Effect.suspend(() => retry(effect)))
    const worker = (w: number) =>
      Effect.gen(function*() {
        for (let i = 0; ; i++) {
          const batch = Batch.make({ source: "s", partition: w, firstOffset: i * payloads.length, payloads })
          const receipt = yield* retry(sink.putObject(batch))
          yield* retry(sink.putManifest(Batch.manifestOf(batch, receipt.checksum)))
          yield* retry(sink.verify(receipt))
          verified += batch.bytes
        }
      })
    const fibers = yield* Effect.forEach(Array.from({ length: c }, (_, w) => w), (w) => Effect.forkChild(worker(w)))
    yield* TestClock.adjust(millis)
    yield* Effect.forEach(fibers, Fiber.interrupt)
    return (verified * 1000) / millis
  })

describe("Oracle", () => {
  it("costs a batch as object upload + manifest + verify at the mean service time", () => {
    const p: Store.StoreParams = { ...Store.defaultParams, baseLatencyMillis: 10, bandwidthBytesPerSecond: 1e6, knee: 4, jitter: 0 }
    // 1000 records of 96 B: put 110 ms (+ 4 B framing each), manifest 10.512, verify 10
    expect(Oracle.batchMillis(p, 96_000, 1000, 0)).toBeCloseTo(110 + 10.512 + 10, 6)
    // The mean jitter factor counts: a jittery store has less capacity.
    expect(Oracle.batchMillis({ ...p, jitter: 0.25 }, 96_000, 1000, 0)).toBeCloseTo((110 + 10.512 + 10) * 1.25, 6)
    // A failure probability f adds f / (1 - f) base-latency retries per request.
    expect(Oracle.batchMillis(p, 96_000, 1000, 0.5)).toBeCloseTo(110 + 10.512 + 10 + 3 * 10, 6)
  })

  it("picks the largest object the budget, maxAge and queue allow", () => {
    // 1 MB/s over 8 partitions for 5 s: 625 kB objects; a queue fills larger ones.
    expect(Oracle.largestObjectBytes(world, 4, 0, 1e6)).toBeCloseTo(625_000, 6)
    expect(Oracle.largestObjectBytes(world, 4, 40e6, 1e6)).toBeCloseTo(10e6, 6)
    // The memory budget caps the queue's objects: c · s ≤ budget.
    expect(Oracle.largestObjectBytes(world, 32, Infinity, 1e6)).toBeCloseTo(world.budgetBytes / 32, 6)
  })

  it("grows with the queue (larger objects), and a rate limit caps objects per second", () => {
    const p = { ...Store.defaultParams, knee: 8, jitter: 0 }
    expect(Oracle.capacity(p, world, 1e9, 1e6)).toBeGreaterThan(Oracle.capacity(p, world, 0, 1e6))
    const limited = { ...p, rateLimit: 2 }
    const s = Oracle.largestObjectBytes(world, 1, Infinity, 0)
    expect(Oracle.capacity(limited, world, Infinity, 0)).toBeLessThanOrEqual(2 * s)
  })

  it("finds the smallest object that sustains a rate, at the highest concurrency that can", () => {
    const p = { ...Store.defaultParams, knee: 8, jitter: 0, baseLatencyMillis: 100, bandwidthBytesPerSecond: 4e6 }
    const rate = 0.5 * Oracle.capacity(p, world, Infinity, 0)
    const s = Oracle.fastestObjectBytes(p, world, Infinity, 0, rate)
    expect(s).not.toBeNull()
    const at = (bytes: number) => (8 * bytes * 1000) / Oracle.batchMillis(p, bytes, bytes / world.recordBytes, 0)
    expect(at(s ?? 0)).toBeGreaterThanOrEqual(rate * (1 - 1e-6))
    expect(at((s ?? 0) * 0.99)).toBeLessThan(rate)
    // Above capacity no object serves it.
    expect(Oracle.fastestObjectBytes(p, world, Infinity, 0, 2 * Oracle.capacity(p, world, Infinity, 0))).toBeNull()
  })

  it("counts sent bytes one batch's store time later, the rest re-timed when the store changes", () => {
    const p = { ...Store.defaultParams, knee: 8, jitter: 0, errorRate: 0, baseLatencyMillis: 1_000, bandwidthBytesPerSecond: 1e6 }
    const fast = { ...p, baseLatencyMillis: 10, bandwidthBytesPerSecond: 100e6 }
    const batch: Oracle.InFlight = { bytes: 5e6, objectBytes: 1e6, done: 0 }
    const slowMillis = Oracle.batchMillis(p, 1e6, 1e6 / world.recordBytes, 0) // ≈ 4 s
    const fastMillis = Oracle.batchMillis(fast, 1e6, 1e6 / world.recordBytes, 0) // ≈ 40 ms
    const before = Oracle.advance(p, world, [batch], slowMillis * 0.99)
    expect(before.verifiedBytes).toBe(0)
    expect(Oracle.advance(p, world, before.inFlight, slowMillis * 0.02).verifiedBytes).toBe(5e6)
    // Half its store time at the slow store; the other half at the fast one.
    const half = Oracle.advance(p, world, [batch], slowMillis / 2)
    expect(Oracle.advance(fast, world, half.inFlight, fastMillis * 0.49).verifiedBytes).toBe(0)
    expect(Oracle.advance(fast, world, half.inFlight, fastMillis * 0.51).verifiedBytes).toBe(5e6)
  })

  it("times its sent bytes with the failures capacity counts: a SlowDown outage's refusals too", () => {
    const p = { ...Store.defaultParams, knee: 8, jitter: 0, errorRate: 0, baseLatencyMillis: 100, bandwidthBytesPerSecond: 4e6 }
    const half = { ...p, throttleAbove: 0, throttleProbability: 0.5 }
    const outage = { ...p, throttleAbove: 0, throttleProbability: 1 }
    const batch: Oracle.InFlight = { bytes: 5e6, objectBytes: 1e6, done: 0 }
    // Half the requests refused: each of the batch's three costs one more base-latency round trip.
    const refusedMillis = Oracle.batchMillis(half, 1e6, 1e6 / world.recordBytes, 0.5)
    expect(refusedMillis).toBeCloseTo(Oracle.batchMillis(p, 1e6, 1e6 / world.recordBytes, 0) + 3 * 100, 6)
    expect(Oracle.advance(half, world, [batch], refusedMillis * 0.99).verifiedBytes).toBe(0)
    expect(Oracle.advance(half, world, [batch], refusedMillis * 1.01).verifiedBytes).toBe(5e6)
    // A batch under way when the outage begins waits through it, then finishes.
    const started = Oracle.advance(p, world, [batch], 100)
    const during = Oracle.advance(outage, world, started.inFlight, 60_000)
    expect(during.verifiedBytes).toBe(0)
    expect(Oracle.advance(p, world, during.inFlight, Oracle.batchMillis(p, 1e6, 1e6 / world.recordBytes, 0)).verifiedBytes).toBe(5e6)
    // The smallest object serving a rate on the refusing store is the one its capacity is reckoned with.
    const rate = 0.5 * Oracle.capacity(half, world, Infinity, 0)
    const s = Oracle.fastestObjectBytes(half, world, Infinity, 0, rate) ?? 0
    // (Refusing however few are in flight, the store serves one at a time: its serving limit is 1.)
    const at = (bytes: number) => (Store.servingLimit(half) * bytes * 1000) / Oracle.batchMillis(half, bytes, bytes / world.recordBytes, 0.5)
    expect(at(s)).toBeGreaterThanOrEqual(rate * (1 - 1e-6))
    expect(at(s * 0.99)).toBeLessThan(rate)
  })

  it("stops at the in-flight the store throttles above: requests let through above it add no throughput", () => {
    const p = { ...Store.defaultParams, knee: 16, throttleAbove: 4, jitter: 0 }
    const capped = Oracle.capacity({ ...p, knee: 4, throttleAbove: null }, world, Infinity, 0)
    const never = Oracle.capacity({ ...p, throttleAbove: null }, world, Infinity, 0)
    for (const throttleProbability of [0, 0.3, 0.9, 1]) {
      expect(Oracle.capacity({ ...p, throttleProbability }, world, Infinity, 0)).toBe(capped)
    }
    expect(capped).toBeLessThan(never)
  })

  it.effect("a store refusing every request (throttleAbove 0, p = 1: a SlowDown outage) has no capacity, and verifies nothing", () =>
    Effect.gen(function*() {
      const outage: Store.StoreParams = { ...Store.defaultParams, knee: 8, throttleAbove: 0, throttleProbability: 1 }
      expect(Oracle.capacity(outage, world, Infinity, 0)).toBe(0)
      expect(yield* flood(outage, 1, 4_000_000, 10_000)).toBe(0)
      expect(yield* flood(outage, 8, 4_000_000, 10_000)).toBe(0)
    }))

  // The store model itself (outside the oracle): requests in flight above
  // throttleAbove that are let through wait, so 16 in flight verify no more than
  // 4, with 90 % of the requests above it refused.
  for (const kneeQueue of ["shared", "arrival"] as const) {
    it.effect(`a store that throttles above 4 serves no more at 16 in flight than at 4 (${kneeQueue})`, () =>
      Effect.gen(function*() {
        const params: Store.StoreParams = { ...Store.defaultParams, knee: 16, kneeQueue, throttleAbove: 4, throttleProbability: 0.9 }
        const atLimit = yield* flood(params, 4, 4_000_000, 20_000)
        const hammering = yield* flood(params, 16, 4_000_000, 20_000)
        const unthrottled = yield* flood({ ...params, throttleAbove: null }, 16, 4_000_000, 20_000)
        expect(hammering).toBeLessThanOrEqual(atLimit * 1.02)
        expect(unthrottled).toBeGreaterThan(atLimit * 2)
        // …nor much less: the refused requests take no share of the store (they
        // cost only their own round trips and retries).
        // (Measured: 0.93–0.94 of it; 0.61 in the shared queue when refused requests counted.)
        expect(hammering).toBeGreaterThan(atLimit * 0.85)
      }), 120_000)
  }

  // The bound must hold against the store model itself, for any concurrency and
  // object size a pipeline could pick: flood the store and compare.
  const cases: ReadonlyArray<readonly [string, Store.StoreParams]> = [
    ["plain", { ...Store.defaultParams, knee: 8 }],
    ["slow", { ...Store.defaultParams, knee: 8, baseLatencyMillis: 80, jitter: 0.3 }],
    ["throttles above 4 (p = 0.5)", { ...Store.defaultParams, knee: 12, throttleAbove: 4, throttleProbability: 0.5 }],
    ["errors 10 %", { ...Store.defaultParams, knee: 8, errorRate: 0.1 }],
    ["rate limited", { ...Store.defaultParams, knee: 8, rateLimit: 20 }],
    ["refuses half of all requests, however few (throttleAbove 0, p = 0.5)", { ...Store.defaultParams, knee: 8, throttleAbove: 0, throttleProbability: 0.5 }]
  ]
  for (const [name, params] of cases) {
    it.effect(`no concurrency or object size beats it: ${name}`, () =>
      Effect.gen(function*() {
        const bound = Oracle.capacity(params, world, Infinity, 0)
        let best = 0
        for (const c of [1, 4, 8, 12, 16]) {
          for (const bytes of [100_000, 4_000_000, Math.floor(world.budgetBytes / c)]) {
            if (c * bytes > world.budgetBytes) continue
            best = Math.max(best, yield* flood(params, c, bytes, 20_000))
          }
        }
        expect(best).toBeLessThanOrEqual(bound * 1.02)
        // …and it is not a loose bound: the best flood reaches most of it.
        expect(best).toBeGreaterThan(bound * 0.8)
      }), 120_000)
  }
})
