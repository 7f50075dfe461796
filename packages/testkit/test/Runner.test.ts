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

  it.effect("onRow sees every trace row as it is produced, in order (live progress)", () =>
    Effect.gen(function*() {
      const seen: Array<Trace.TraceRow> = []
      const scenario = yield* Scenario.decode(base)
      const { trace } = yield* Runner.run(scenario, { policies: Fixed.layer({ concurrency: 8 }), onRow: (row) => seen.push(row) })
      expect(seen.length).toBe(300)
      expect(seen).toEqual(trace.rows)
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

  it.effect("counts bytes held outside the pipeline: never above the budget + one chunk", () =>
    Effect.gen(function*() {
      // A slow store and a fast source: the memory budget binds for the whole run.
      for (const seed of [21, 22, 23]) {
        const { summary, trace } = yield* run({
          ...base,
          seed,
          source: { ...base.source, recordsPerSecond: 2_000_000, fetchMaxBytes: "2 MiB" },
          store: { ...base.store, baseLatency: "200 millis", throttleAbove: null },
          pipeline: { ...base.pipeline, memoryBudget: "16 MiB" }
        }, 4)
        const budget = 16 * 1024 * 1024
        expect(summary.largestChunkBytes).toBeGreaterThan(0)
        expect(summary.largestChunkBytes).toBeLessThanOrEqual(2 * 1024 * 1024)
        // It binds: the pipeline really held close to the budget…
        expect(summary.heldBytesMax).toBeGreaterThan(0.75 * budget)
        // …and never more than one chunk over it.
        expect(summary.heldBytesMax).toBeLessThanOrEqual(budget + summary.largestChunkBytes)
        expect(Math.max(...trace.rows.map((r) => r.heldBytes))).toBeLessThanOrEqual(summary.heldBytesMax)
      }
    }))

  it.effect("freshness and phases: a store outage shows as lag and a degraded phase", () =>
    Effect.gen(function*() {
      const { summary, trace } = yield* run({
        ...base,
        duration: "40 seconds",
        store: { ...base.store, throttleAbove: null },
        events: [{ at: "10 seconds", store: { errorRate: 1 } }, { at: "20 seconds", store: { errorRate: 0 } }]
      })
      expect(summary.phases.map((p) => [p.from, p.to, p.degraded])).toEqual([[0, 10, false], [10, 20, true], [20, 40, false]])
      const [before, outage, after] = summary.phases
      // Nothing is verified while every request fails, and the oracle cannot serve either.
      expect(outage?.oracleKeepsUp).toBe(false)
      expect(summary.worstPhaseGoodput).toBeNull()
      // Records produced at the outage's start wait for all of it.
      expect(outage?.maxLagSeconds).toBeGreaterThan(9)
      expect(after?.maxLagSeconds).toBeGreaterThan(outage?.maxLagSeconds ?? Infinity)
      expect(before?.maxLagSeconds).toBeLessThan(5)
      expect(summary.maxLagSeconds).toBe(Math.max(...trace.rows.map((r) => r.lagSeconds)))
      expect(summary.meanLagSeconds).toBeLessThan(summary.maxLagSeconds)
      // Caught up by the end: the last sample is fresh again.
      expect(trace.rows.at(-1)?.lagSeconds).toBeLessThan(5)
    }))

  it.effect("worst phase: a slow store the oracle can keep up with", () =>
    Effect.gen(function*() {
      const { summary } = yield* run({
        ...base,
        duration: "40 seconds",
        store: { ...base.store, throttleAbove: null },
        events: [{ at: "10 seconds", store: { baseLatency: "80 millis" } }, { at: "25 seconds", store: { baseLatency: "8 millis" } }]
      }, 2)
      const slow = summary.phases[1]
      expect(slow?.degraded).toBe(true)
      expect(slow?.oracleKeepsUp).toBe(true)
      expect(summary.worstPhaseGoodput).toBe(slow?.goodputRatio)
      // Two uploads at 10x the latency cannot carry 30 MB/s: the phase shows it.
      expect(summary.worstPhaseGoodput).toBeLessThan(0.9)
    }))

  it.effect("the oracle's bytes count when the store would verify them: none early in a phase whose batches take seconds", () =>
    Effect.gen(function*() {
      const { summary, trace } = yield* run({
        ...base,
        duration: "40 seconds",
        store: { ...base.store, throttleAbove: null, jitter: 0 },
        pipeline: { ...base.pipeline, memoryBudget: "1 GiB" },
        events: [{ at: "10 seconds", store: { baseLatency: "1500 millis" } }]
      })
      expect(summary.phases[1]?.oracleKeepsUp).toBe(true)
      // 30 MB/s arrive; a batch now takes three 1.5 s requests, so nothing the
      // oracle sends in the slow phase's first second is verified in it.
      const early = trace.rows.filter((r) => r.t > 10_000 && r.t <= 11_000)
      let oracleBytes = 0
      for (const r of early) oracleBytes += ((r.oracleVerifiedBytesPerSecond ?? Infinity) * trace.sampleMillis) / 1000
      expect(oracleBytes).toBeLessThan(0.05 * 30e6)
      // What it serves is unchanged: the inflow, from the phase's first row.
      let served = 0
      for (const r of early) served += (r.oracleBytesPerSecond * trace.sampleMillis) / 1000
      expect(served).toBeCloseTo(30e6, -5)
      // …and all of it is counted later: over the run it serves the inflow.
      let total = 0
      for (const r of trace.rows) total += ((r.oracleVerifiedBytesPerSecond ?? 0) * trace.sampleMillis) / 1000
      expect(total).toBeGreaterThan(30e6 * (40 - 6))
      // The summary judges the slow phase against the bytes verified, not those served.
      const slow = trace.rows.filter((r) => r.t > 10_000 && r.t <= 40_000)
      const good = slow.reduce((sum, r) => sum + r.goodputBytesPerSecond, 0)
      const verified = slow.reduce((sum, r) => sum + (r.oracleVerifiedBytesPerSecond ?? 0), 0)
      const servedInPhase = slow.reduce((sum, r) => sum + r.oracleBytesPerSecond, 0)
      expect(summary.phases[1]?.goodputRatio).toBeCloseTo(good / verified, 2)
      expect(Math.abs(good / verified - good / servedInPhase)).toBeGreaterThan(0.02)
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
  })
})
