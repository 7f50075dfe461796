import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Fixed } from "@sluice/core"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"
import * as Summary from "../src/Summary.ts"
import * as Trace from "../src/Trace.ts"

const base = {
  name: "small",
  seed: 11,
  duration: "30 seconds",
  source: { recordsPerSecond: 200_000, recordBytes: 150, partitions: 4 },
  store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.2, throttleAbove: 6, throttleProbability: 0.3 },
  pipeline: { memoryBudget: "64 MiB", batch: { records: 20_000, bytes: "16 MiB", maxAge: "2 seconds" } }
}

const run = (input: unknown, concurrency = 8) =>
  Effect.flatMap(Scenario.decode(input), (s) =>
    Runner.run(s, { policy: `fixed:${concurrency}`, policies: Fixed.layer({ concurrency }), floors: { concurrency } }))

describe("Runner", () => {
  it.effect("same seed gives a byte-identical trace; another seed does not", () =>
    Effect.gen(function*() {
      const a = yield* run(base)
      const b = yield* run(base)
      const c = yield* run({ ...base, seed: 12 })
      expect(a.trace.rows.length).toBe(300)
      expect(Trace.toCsv(a.trace)).toBe(Trace.toCsv(b.trace))
      expect(Trace.toCsv(c.trace)).not.toBe(Trace.toCsv(a.trace))
      expect({ ...a.summary, wallMillis: 0 }).toEqual({ ...b.summary, wallMillis: 0 })
    }))

  it.effect("under capacity: delivers the inflow, commits only what is verified", () =>
    Effect.gen(function*() {
      const { summary, trace } = yield* run({ ...base, store: { ...base.store, throttleAbove: null } })
      expect(summary.goodputRatio).toBeGreaterThan(0.9)
      expect(summary.committedNotVerified).toBe(0)
      expect(summary.throttleRate).toBe(0)
      expect(summary.floorViolations).toBe(0)
      expect(summary.maxInflightBytes).toBeLessThanOrEqual(64 * 1024 * 1024)
      expect(trace.rows.every((r) => r.concurrency === 8)).toBe(true)
    }))

  it.effect("throttles above throttleAbove and counts them", () =>
    Effect.gen(function*() {
      // 8 uploads against throttleAbove 6 with p = 0.3
      const { summary, trace, store } = yield* run({ ...base, source: { ...base.source, recordsPerSecond: 2_000_000, partitions: 16 } })
      expect(summary.throttleRate).toBeGreaterThan(0)
      expect(summary.throttleRate).toBeCloseTo(store.counters.throttled / store.requests.length, 3)
      let throttles = 0
      for (const r of trace.rows) throttles += r.throttles
      expect(throttles).toBe(store.counters.throttled)
    }))

  it.effect("retention loss is found, reported and never committed", () =>
    Effect.gen(function*() {
      const { summary } = yield* run({
        ...base,
        duration: "60 seconds",
        source: { ...base.source, retention: "10 seconds" },
        events: [{ at: "5 seconds", store: { errorRate: 1 } }, { at: "30 seconds", store: { errorRate: 0 } }]
      })
      expect(summary.lostRecords).toBeGreaterThan(0)
      expect(summary.undetectedLostRecords).toBe(0)
      expect(summary.committedNotVerified).toBe(0)
      expect(summary.recoverySeconds).not.toBeNull()
    }))

  it.effect("several instances share one store; Jain's index over their goodput", () =>
    Effect.gen(function*() {
      const { summary } = yield* run({ ...base, instances: 2 }, 4)
      expect(summary.instances).toBe(2)
      expect(summary.fairness).toBeGreaterThan(0.95)
      expect(summary.goodputRatio).toBeGreaterThan(0.9)
    }))

  it("checks expect bounds and names the failing metric", () => {
    const s = { goodputRatio: 0.5, recoverySeconds: null } as unknown as Summary.Summary
    const failures = Summary.check(s, { goodputRatio: { min: 0.9 }, recoverySeconds: { max: 10 } })
    expect(failures.map(Summary.describeFailure)).toEqual([
      "goodputRatio = 0.5, expected >= 0.9",
      "recoverySeconds = null, expected <= 10"
    ])
    expect(Summary.jain([1, 1, 1])).toBe(1)
    expect(Summary.jain([3, 0, 0])).toBeCloseTo(1 / 3, 9)
    expect(Summary.uncovered(10, [[0, 3], [6, 9]])).toBe(2)
  })
})
