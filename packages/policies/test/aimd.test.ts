import { Config, Policy } from "@sluice/core"
import { Aimd } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Ablation from "./ablation.ts"
import { at, closedLoop, failure, knee, objectStoreLoop, prng, range, sample, tick } from "./helpers.ts"

const config = (input: unknown = {}) => Schema.decodeUnknownSync(Aimd.AimdConfig)(input)

describe("Aimd", () => {
  it("re-enters slow start toward the limit before a throttle storm once clean requests run above the throttled level", () => {
    const c = config({ initial: 32, probe: { intervalMillis: 0 } })
    let s = Aimd.policy.init(c)
    const flat = (t: number, inflight: number) => {
      s = Aimd.policy.step(s, sample(t, 50, { startedAt: t - 50, inflightAtStart: inflight, bytes: 0 }), t).state
    }
    for (let i = 0; i < 20; i++) flat(100 + i, 32)
    const before = s.limit
    // The storm: throttles at 4 in flight cut it down, round after round.
    for (let r = 0; r < 20; r++) {
      const t = 1_000 + r * 100
      s = Aimd.policy.step(s, failure(t, "Throttled", { startedAt: t - 10, limitAtStart: 4 }), t).state
    }
    const low = s.limit
    expect(low).toBeLessThan(8)
    // Clean requests at or below the throttled level: additive only.
    for (let i = 0; i < 10; i++) flat(5_000 + i, 4)
    expect(s.limit).toBeLessThan(low + 3)
    // Three clean requests above it (started after the last throttle): slow start.
    for (let i = 0; i < 3; i++) flat(6_000 + i, 5)
    for (let i = 0; i < 30; i++) flat(7_000 + i, Math.floor(s.limit))
    expect(s.limit).toBeGreaterThanOrEqual(Math.min(before, 24))
  })

  it("grows while latency is flat and the limit is used, then settles near the knee", () => {
    const { series } = closedLoop(Aimd.policy, config({ probe: { intervalMillis: 0 } }), (_t, l) => knee(50, 24)(l), 30_000)
    const [lo, hi] = range(series, 20_000, 30_000)
    expect(lo).toBeGreaterThanOrEqual(20)
    expect(hi).toBeLessThanOrEqual(34)
  })

  it("slow start: at start it doubles per round until the first latency climb, then cuts from the in-flight count that climbed", () => {
    // Knee at 32 with 50 ms rounds: additive growth from 8 would need 24 rounds (1.2 s).
    const { series } = closedLoop(Aimd.policy, config({ probe: { intervalMillis: 0 } }), (_t, l) => knee(50, 32)(l), 3_000)
    // 8 → 16 → 32 → 64 in 3 rounds: past the knee by 200 ms …
    expect(Math.max(...series.filter(([t]) => t <= 200).map(([, v]) => v))).toBeGreaterThanOrEqual(32)
    // … the climb measured at 64 in flight cuts from 64 (not from the doubled limit) …
    expect(Math.max(...series.map(([, v]) => v))).toBeLessThanOrEqual(128)
    // … and it settles near the knee, additively (no second slow start).
    const [lo, hi] = range(series, 2_000, 3_000)
    expect(lo).toBeGreaterThanOrEqual(24)
    expect(hi).toBeLessThanOrEqual(48)
  })

  it("an idle limit does not inflate", () => {
    const samples = Array.from({ length: 500 }, (_, i) => [sample(i * 10, 50, { inflightAtStart: 2 }), i * 10] as const)
    const { state, proposals } = Policy.replay(Aimd.policy, config({ initial: 8 }), samples)
    expect(state.limit).toBe(8)
    expect(proposals).toEqual([[0, { concurrency: 8 }]])
  })

  it("backs off multiplicatively on a latency climb, once per round", () => {
    const { series } = closedLoop(
      Aimd.policy,
      config({ initial: 32, probe: { intervalMillis: 0 } }),
      (t, l) => (t < 5_000 ? 50 : 250) * Math.max(1, l / 64),
      7_000
    )
    expect(at(series, 4_999)).toBeGreaterThanOrEqual(32)
    // The first cut is a single ×0.9 (not one per sample of the round).
    const before = at(series, 4_999)
    const firstCut = series.find(([t, v]) => t >= 5_000 && v < before)
    expect(firstCut?.[1]).toBeGreaterThanOrEqual(Math.floor(before * 0.88))
    // Within 2 s (8 rounds) of the climb it has backed off by at least 40 %.
    expect(at(series, 7_000)).toBeLessThanOrEqual(before * 0.6)
  })

  it("cuts ×beta on a throttle, ignoring throttles of requests started before the cut", () => {
    const c = config({ initial: 40 })
    const { state } = Policy.replay(Aimd.policy, c, [
      [failure(100, "Throttled", { startedAt: 50 }), 100],
      [failure(110, "Throttled", { startedAt: 60 }), 110],
      [failure(120, "Transient", { startedAt: 115 }), 120],
      [failure(130, "Fatal", { startedAt: 125 }), 130]
    ])
    expect(state.limit).toBeCloseTo(36)
    expect(state.mode).toBe("backoff")
  })

  it("one cut per round: later stages of uploads admitted before the cut do not cut again", () => {
    const c = config({ initial: 40 })
    const { state } = Policy.replay(Aimd.policy, c, [
      [failure(100, "Throttled", { startedAt: 50, limitAtStart: 40 }), 100],
      // Started after the cut, but with 40 in flight: a manifest of an upload
      // admitted under the old limit.
      [failure(130, "Throttled", { startedAt: 120, limitAtStart: 40 }), 130],
      [failure(150, "Throttled", { startedAt: 140, limitAtStart: 37 }), 150]
    ])
    expect(state.limit).toBeCloseTo(36)
    // Once in-flight is within the cut limit, a throttle is news: cut again.
    const next = Aimd.policy.step(state, failure(900, "Throttled", { startedAt: 800, limitAtStart: 36 }), 900)
    expect(next.state.limit).toBeCloseTo(32.4)
  })

  it("the baseline does not ratchet upward under sustained load", () => {
    const { state } = closedLoop(
      Aimd.policy,
      config({ probe: { intervalMillis: 0, enabled: false } }),
      (t, l) => (t < 2_000 ? 50 : 400) * Math.max(1, l / 24),
      60_000
    )
    expect(state.baseline).toBeLessThanOrEqual(50)
  })

  it("recovers from a transient 10× slowdown (the shrinking-window trap)", () => {
    const { series } = closedLoop(
      Aimd.policy,
      config({ probe: { intervalMillis: 0 } }),
      (t, l) => (t >= 10_000 && t < 20_000 ? 500 : 50) * Math.max(1, l / 24),
      40_000
    )
    // Backed off within the slowdown…
    expect(range(series, 10_000, 20_000)[0]).toBeLessThanOrEqual(6)
    // …and back near the knee within 15 s of it clearing.
    expect(at(series, 35_000)).toBeGreaterThanOrEqual(18)
  })

  it("objects of mixed sizes below the knee never read as congestion (size normalisation)", () => {
    // The far store of wide-steady: 20 ms + 16 MiB/s per request, knee 32.
    // Adaptive batch grows the target from 8 MiB to 12 MiB at 5 s; the read gate
    // seals partial batches (256–768 KiB) now and then. Below the knee latency is
    // flat per byte: a controller capped at 24 must climb to its cap and never
    // cut. (With the reference learned from a least-squares intercept, it swung
    // 10× and drifted the baseline down: cut to the floor on 3 of these 6 seeds.)
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const partial = prng(7)
      const { series, state } = objectStoreLoop(Aimd.policy, config({ ceiling: 24, probe: { intervalMillis: 0 } }), {
        baseMillis: 20,
        bytesPerMilli: 16_777.216,
        knee: 32,
        size: (t) =>
          t % 7_000 < 400 && t > 7_000
            ? Math.round(256 * 1024 + partial() * 512 * 1024)
            : t < 5_000 ? 8 << 20 : 12 << 20,
        untilMillis: 60_000,
        seed
      })
      const values = series.map(([, v]) => v)
      expect(values).toEqual([...values].sort((x, y) => x - y))
      expect(at(series, 30_000)).toBe(24)
      // The learned reference is the store's a/b (20 ms × 16 MiB/s ≈ 328 KiB).
      expect(state.reference.bytes).toBeGreaterThan(0.8 * 335_544)
      expect(state.reference.bytes).toBeLessThan(1.25 * 335_544)
    }
  })

  describe("recovery needs the probe", () => {
    // The store's no-load latency moves from 50 ms to 300 ms and stays there:
    // without a probe the baseline (50 ms) says "congested" forever.
    const run = (enabled: boolean) =>
      closedLoop(
        Aimd.policy,
        config({ probe: { enabled, intervalMillis: 0 } }),
        (t, l) => (t < 5_000 ? 50 : 300) * Math.max(1, l / 24),
        60_000
      )

    it("without the probe it stays at the floor", () => {
      const { series, state } = run(false)
      expect(range(series, 20_000, 60_000)).toEqual([1, 1])
      expect(state.probe.probes).toBe(0)
    })

    it("with the probe it re-learns the baseline and recovers", () => {
      const { series, state } = run(true)
      expect(state.probe.probes).toBeGreaterThanOrEqual(1)
      expect(state.baseline).toBeGreaterThanOrEqual(290)
      expect(at(series, 60_000)).toBeGreaterThanOrEqual(18)
    })
  })

  it("discards probe samples of requests that began before the probe epoch", () => {
    const c = config({ initial: 1, probe: { forcedAfterWindowsAtFloor: 1, windowMillis: 100, samples: 2, jitter: 0 } })
    let s = Aimd.policy.init(c)
    s = Aimd.policy.step(s, sample(0, 50, { inflightAtStart: 0 }), 0).state
    s = Aimd.policy.step(s, tick(250), 250).state
    expect(s.mode).toBe("probing")
    const epoch = s.probe.epoch
    s = Aimd.policy.step(s, sample(260, 900, { startedAt: epoch - 1 }), 260).state
    expect(s.probe.remaining).toBe(2)
    s = Aimd.policy.step(s, sample(300, 80, { startedAt: epoch + 1 }), 300).state
    s = Aimd.policy.step(s, sample(310, 70, { startedAt: epoch + 2 }), 310).state
    expect(s.mode).toBe("steady")
    expect(s.baseline).toBeCloseTo(70 / (1 + 1024 / 1048576))
  })

  it("its periodic probe is cheap: 4 samples, every 120 s (jittered)", () => {
    const c = config()
    expect(c.probe.samples).toBe(4)
    expect(c.probe.intervalMillis).toBe(120_000)
    // Overriding one field keeps AIMD's other probe defaults.
    expect(config({ probe: { seed: 3 } }).probe.samples).toBe(4)
    const { state } = closedLoop(Aimd.policy, c, (_t, l) => knee(50, 24)(l), 600_000)
    expect(state.probe.probes).toBeGreaterThanOrEqual(4)
    expect(state.probe.probes).toBeLessThanOrEqual(6)
  })

  it("probe jitter is deterministic per seed", () => {
    const go = (seed: number) =>
      closedLoop(Aimd.policy, config({ probe: { seed, intervalMillis: 5_000 } }), (_t, l) => knee(50, 24)(l), 30_000).series
    expect(go(3)).toEqual(go(3))
    expect(go(3)).not.toEqual(go(4))
  })

  it("never proposes below the floor or above the ceiling (property)", () => {
    const signal = fc.oneof(
      fc.record({ kind: fc.constant("sample" as const), latency: fc.integer({ min: 1, max: 5_000 }), inflight: fc.integer({ min: 0, max: 300 }) }),
      fc.record({ kind: fc.constant("throttle" as const), latency: fc.constant(0), inflight: fc.constant(0) }),
      fc.record({ kind: fc.constant("tick" as const), latency: fc.constant(0), inflight: fc.constant(0) })
    )
    fc.assert(
      fc.property(fc.array(signal, { maxLength: 300 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 8, max: 64 }), (signals, floor, ceiling) => {
        const c = config({ floor, ceiling, initial: floor, probe: { windowMillis: 50, intervalMillis: 500 } })
        const input = signals.map((s, i) => {
          const t = i * 20
          const sig = s.kind === "sample"
            ? sample(t, s.latency, { inflightAtStart: s.inflight, startedAt: t - s.latency })
            : s.kind === "throttle"
            ? failure(t, "Throttled", { startedAt: t - 5 })
            : tick(t)
          return [sig, t] as const
        })
        for (const [, p] of Policy.replay(Aimd.policy, c, input).proposals) {
          expect(p.concurrency).toBeGreaterThanOrEqual(floor)
          expect(p.concurrency).toBeLessThanOrEqual(ceiling)
        }
      }),
      { seed: 42, numRuns: 200 }
    )
  })

  it("rejects bad config with a ConfigError naming the field", () => {
    const bad = Config.decodeResult("aimd", Aimd.AimdConfig, { beta: 2 })
    expect(Result.isFailure(bad) && bad.failure.message).toMatch(/beta/)
    const crossed = Config.decodeResult("aimd", Aimd.AimdConfig, { floor: 10, ceiling: 5, initial: 5 })
    expect(Result.isFailure(crossed) && crossed.failure.message).toMatch(/floor/)
    // @ts-expect-error — "stepp" is not an AIMD config key: tsc refuses it, and so does the decoder at run time
    const unknown = Config.decodeResult("aimd", Aimd.AimdConfig, { stepp: 1 })
    expect(Result.isFailure(unknown) && unknown.failure.message).toMatch(/stepp/)
  })

  it("declares floor, ceiling and a pinned probe", () => {
    const c = config({ floor: 2, ceiling: 50 })
    expect(Aimd.policy.bounds(c)).toEqual({ concurrency: { floor: 2, ceiling: 50 } })
    expect(Aimd.policy.probe(c)._tag).toBe("PinnedProbe")
  })
})

// The ablation in the real pipeline (virtual clock): a throttle storm drives
// AIMD to its floor, and the store comes back slower for good (40 ms + 8 MiB/s
// per request instead of 10 ms + 32 MiB/s). Its baseline only moves down
// between probes, so without the probe the new store reads as congested
// forever. Measured (seeds 1–3): at most 3 uploads from 8 s into the storm (6 at 5 s on seed 3)
// (×`beta` 0.9 per round, and the storm's store serves one request at a time,
// so 17 in flight make a round ~17× longer); probed back to 0.8× its pre-storm
// limit in 9.4–14.0 s and to 90 % of the oracle in 23.3–26.6 s; ablated at 1
// from 15 s after the storm to the end (60 s), 4–5 % of the oracle.
describe("Aimd in the simulated pipeline: its forced probe is what recovers", () => {
  const concurrency = (r: { readonly concurrency: number }) => r.concurrency
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: backs off in a throttle storm, keeps its floor, and only the probed run re-learns a store slower for good`, async () => {
      // Batches sealed at maxAge whatever the uploader holds (`ageSealWaits:
      // false`): AIMD steps once per upload, and held-open batches make every
      // upload the full 8 MiB target, ~1 s on the slower store. With them it
      // comes back later: to 90 % of the oracle in 34.3, 46.5 and 31.3 s on
      // these seeds (Ticker's SEALED_PER_PERMIT).
      const scenario = await Effect.runPromise(Ablation.stormThenSlower(seed, {
        pipeline: { memoryBudget: "512 MiB", concurrency: 32, batch: { records: 50_000, bytes: "8 MiB", maxAge: "2 seconds", ageSealWaits: false } }
      }))
      const { probed, ablated } = await Ablation.ablation(scenario, (options) => Aimd.layer({}, options), { concurrency: 1 })
      const before = Ablation.at(probed, Ablation.stormFrom, concurrency)
      expect(before).toBeGreaterThanOrEqual(12)
      // Backoff: within 8 s of the storm, a handful of uploads at most.
      expect(Ablation.max(Ablation.rows(probed, Ablation.stormFrom + 8_000, Ablation.stormUntil), concurrency)).toBeLessThanOrEqual(5)
      // Floor: never below 1, in either run.
      for (const run of [probed, ablated]) {
        expect(run.summary.floorViolations).toBe(0)
        expect(Ablation.min(Ablation.rows(run), concurrency)).toBeGreaterThanOrEqual(1)
      }
      // The probed run probes after the storm and comes back (bound 40 s) …
      expect(Ablation.rows(probed, Ablation.stormUntil).some((r) => r.probing > 0)).toBe(true)
      expect(Ablation.secondsUntil(probed, Ablation.stormUntil, (r) => r.concurrency >= 0.8 * before)).toBeLessThanOrEqual(40)
      expect(Ablation.recoverySeconds(probed, Ablation.stormUntil)).toBeLessThanOrEqual(40)
      // … the ablated one does not, within the whole 60 s after the storm.
      expect(Ablation.max(Ablation.rows(ablated, Ablation.stormUntil + 15_000), concurrency)).toBeLessThanOrEqual(2)
      expect(Ablation.secondsUntil(ablated, Ablation.stormUntil, (r) => r.concurrency >= 0.8 * before)).toBeNull()
      expect(Ablation.recoverySeconds(ablated, Ablation.stormUntil)).toBeNull()
      expect(Ablation.goodputShare(ablated, Ablation.stormUntil, 120_000)).toBeLessThan(0.2)
    })
  }
})
