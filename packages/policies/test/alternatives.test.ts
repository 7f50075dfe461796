import { Policy } from "@sluice/core"
import { Gradient2, Vegas } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { at, closedLoop, failure, range, sample, tick } from "./helpers.ts"

const cores = [
  ["gradient2", Gradient2.policy, (i: unknown) => Schema.decodeUnknownSync(Gradient2.Gradient2Config)(i)],
  ["vegas", Vegas.policy, (i: unknown) => Schema.decodeUnknownSync(Vegas.VegasConfig)(i)]
] as const

for (const [name, policy, decode] of cores) {
  describe(name, () => {
    const run = <C, S>(p: Policy.Policy<C, S>, c: C, latency: (t: number, l: number) => number, until: number) =>
      closedLoop(p, c, latency, until)

    it("grows towards the knee and backs off when latency climbs", () => {
      const c = decode({ initial: 4, probe: { intervalMillis: 0 } })
      const { series } = run(policy as Policy.Policy<unknown, unknown>, c, (t, l) => (t < 20_000 ? 50 : 500) * Math.max(1, l / 24), 30_000)
      expect(at(series, 19_000)).toBeGreaterThanOrEqual(16)
      expect(range(series, 20_000, 30_000)[0]).toBeLessThan(at(series, 19_000))
    })

    it("does not grow an idle limit", () => {
      const c = decode({ initial: 10 })
      const signals = Array.from({ length: 300 }, (_, i) => [sample(i * 10, 50, { inflightAtStart: 1 }), i * 10] as const)
      const { proposals } = Policy.replay(policy as Policy.Policy<unknown, unknown>, c, signals)
      for (const [, p] of proposals) expect(p.concurrency ?? 10).toBeLessThanOrEqual(10)
    })

    it("re-learns the no-load latency through its probe after the store's latency moves", () => {
      // Forced from the floor (Gradient2) or periodic (Vegas settles above the floor on a stale baseline).
      const go = (enabled: boolean) =>
        run(policy as Policy.Policy<unknown, unknown>, decode({ initial: 16, probe: { enabled } }), (t, l) => (t < 5_000 ? 50 : 300) * Math.max(1, l / 24), 120_000)
      expect(at(go(true).series, 120_000)).toBeGreaterThanOrEqual(12)
      // Vegas's no-load minimum never rises without the probe; Gradient2's long
      // average adapts by itself (its own decay), so only Vegas depends on it.
      if (name === "vegas") expect(at(go(false).series, 120_000)).toBeLessThan(12)
    })

    it("cuts on throttles and never leaves [floor, ceiling] (property)", () => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: 0, max: 400 })), { maxLength: 300 }),
          (steps) => {
            const c = decode({ floor: 2, ceiling: 40, initial: 10, probe: { windowMillis: 50, intervalMillis: 700 } })
            const signals = steps.map(([k, lat, inflight], i) => {
              const t = i * 20
              return [k === 0 ? sample(t, lat, { inflightAtStart: inflight }) : k === 1 ? failure(t, "Throttled") : tick(t), t] as const
            })
            for (const [, p] of Policy.replay(policy as Policy.Policy<unknown, unknown>, c, signals).proposals) {
              expect(p.concurrency).toBeGreaterThanOrEqual(2)
              expect(p.concurrency).toBeLessThanOrEqual(40)
            }
          }
        ),
        { seed: 11, numRuns: 150 }
      )
    })
  })
}

describe("vegas: throttles", () => {
  it("cuts once per round: N throttles of requests that began before the cut are one cut, not N (issue 10)", () => {
    const c = Schema.decodeUnknownSync(Vegas.VegasConfig)({ initial: 20 })
    // Five throttles of one round: all five requests began at 900, before any cut.
    const storm = [1, 2, 3, 4, 5].map((i) => [failure(1_000 + i, "Throttled", { startedAt: 900, limitAtStart: 20 }), 1_000 + i] as const)
    const { proposals } = Policy.replay(Vegas.policy, c, storm)
    // One cut of log10(20) = 1: 20 → 19 (it was 20 → 15).
    expect(proposals.map(([, p]) => p.concurrency)).toEqual([20, 19])
    // A throttle of a request begun after the cut is a new round: it cuts again.
    const next = Policy.replay(Vegas.policy, c, [...storm, [failure(2_000, "Throttled", { startedAt: 1_500, limitAtStart: 19 }), 2_000]])
    expect(next.proposals.at(-1)?.[1].concurrency).toBe(18)
  })
})
