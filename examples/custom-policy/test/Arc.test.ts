/**
 * ARC's pure core, signal by signal: its config (defaults, ranges, errors), the
 * additive increase, the once-per-window multiplicative decrease, the floor,
 * and the forced probe (epoch, re-learning, restore) — and that the ablated
 * core never probes.
 */
import { Config, Policy } from "@sluice/core"
import type { SignalBus } from "@sluice/core"
import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Arc } from "../src/index.ts"

const config = (input: Arc.ArcInput = {}) => Schema.decodeUnknownSync(Arc.ArcConfig)(input)

const sample = (at: number, latencyMillis: number, inflightAtStart: number, startedAt = at - latencyMillis): SignalBus.UploadSample => ({
  _tag: "UploadSample",
  at,
  stage: "object_upload",
  startedAt,
  latencyMillis,
  bytes: 0,
  inflightAtStart,
  limitAtStart: inflightAtStart
})

const throttle = (at: number): SignalBus.FailureSignal => ({
  _tag: "Failure",
  at,
  failure: { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined },
  startedAt: at - 10,
  latencyMillis: 10,
  inflightAtStart: 8,
  limitAtStart: 8,
  attempt: 1
})

const tick = (at: number): SignalBus.TickSignal => ({
  _tag: "Tick",
  at,
  knobs: { concurrency: 8, batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 }, readGate: "open", rate: null }
})

/** Rounds of 100 ms (one window each): `perRound(t, limit)` signals, then a tick that ends the window. */
const rounds = (c: Arc.ArcConfig, n: number, perRound: (t: number, limit: number) => ReadonlyArray<SignalBus.Signal>, from: Arc.ArcState = Arc.policy.init(c)) => {
  let s = from
  const limits: Array<number> = []
  for (let r = 0; r < n; r++) {
    const t = (from.window.start + r * 100)
    for (const signal of [...perRound(t + 50, s.proposed), tick(t + 100)]) s = Arc.policy.step(s, signal, signal.at).state
    limits.push(s.proposed)
  }
  return { state: s, limits }
}

describe("ARC config", () => {
  it("every field has its default", () => {
    expect(config()).toEqual({
      initial: 8, floor: 1, ceiling: 256, decrease: 0.9, smoothing: 0.4, deviations: 2.5, tolerance: 0.05,
      minWindow: 100, referenceBytes: 256 * 1024, stage: "object_upload",
      probe: true, probeAfterWindows: 8, probeSamples: 4, probeTimeout: 30_000
    })
  })

  it("rejects bad values, crossed bounds and unknown keys with a ConfigError naming the field", () => {
    const message = (input: unknown) => {
      const r = Config.decodeResult("arc", Arc.ArcConfig, input)
      return Result.isFailure(r) ? r.failure.message : "ok"
    }
    expect(message({ decrease: 1.5 })).toMatch(/decrease/)
    expect(message({ floor: 0 })).toMatch(/floor/)
    expect(message({ minWindow: 0 })).toMatch(/minWindow/)
    expect(message({ floor: 9, ceiling: 4, initial: 4 })).toContain("floor (9) must be ≤ ceiling (4)")
    expect(message({ probeSample: 3 })).toMatch(/probeSample/)
    expect(message({ minWindow: "250 millis", referenceBytes: "1 MiB" })).toBe("ok")
  })
})

describe("ARC core", () => {
  it("grows by 1 per window while latency is flat and the limit is used; an idle limit does not grow", () => {
    const c = config({ initial: 4 })
    const used = rounds(c, 10, (t, limit) => Array.from({ length: limit }, () => sample(t, 50, limit)))
    expect(used.limits).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
    const idle = rounds(c, 10, (t) => [sample(t, 50, 2)])
    expect(idle.limits.every((l) => l === 4)).toBe(true)
  })

  it("cuts ×0.9 at most once per window however many throttles it holds, and never below the floor", () => {
    const c = config({ initial: 40, floor: 3, probe: false })
    const storm = rounds(c, 40, (t) => [throttle(t), throttle(t + 1), throttle(t + 2)])
    expect(storm.limits.slice(0, 3)).toEqual([36, 32, 28])
    expect(storm.state.mode).toBe("backoff")
    expect(Math.min(...storm.limits)).toBe(3)
    expect(storm.limits.at(-1)).toBe(3)
  })

  it("cuts when the window's latency rises above mean · (1 + tolerance) + deviations · deviation", () => {
    const c = config({ initial: 20, probe: false })
    const flat = rounds(c, 5, (t, limit) => [sample(t, 50, limit)])
    const slow = rounds(c, 3, (t) => [sample(t, 80, 1)], flat.state)
    expect(slow.limits).toEqual([22, 19, 17])
    expect(slow.state.longRun.mean).toBeCloseTo(50) // a rising window never teaches the mean
  })

  it("forced probe: after probeAfterWindows windows at the floor it pins, discards samples started before the pin, re-learns the mean and restores the last good limit", () => {
    const c = config({ initial: 12, probeAfterWindows: 3, probeSamples: 2 })
    const good = rounds(c, 4, (t, limit) => [sample(t, 50, limit)]) // steady: good = 15
    expect(good.state.good).toBe(15)
    // The store becomes 4× slower for good: every window reads as rising, down to the floor.
    const slower = rounds(c, 40, (t, limit) => (limit === 1 ? [] : [sample(t, 200, limit)]), good.state)
    let s = slower.state
    // Windows at the floor with no sample still count: the probe pinned at the floor.
    expect(s.probes).toBe(0)
    expect(s.mode).toBe("probing")
    expect(s.proposed).toBe(1)
    const epoch = s.probe?.epoch ?? Number.NaN
    const at = epoch + 10
    s = Arc.policy.step(s, sample(at, 900, 1, epoch - 1), at).state // began before the pin: discarded
    expect(s.probe?.values).toEqual([])
    s = Arc.policy.step(s, sample(at + 200, 200, 1), at + 200).state
    const end = Arc.policy.step(s, sample(at + 400, 200, 1), at + 400)
    expect(end.state.mode).toBe("steady")
    expect(end.state.longRun.mean).toBe(200)
    expect(end.proposal).toEqual({ concurrency: 15 })
    expect(end.state.probes).toBe(1)
    // Flat at the new latency, it grows again from the restored limit.
    const after = rounds(c, 3, (t, limit) => [sample(t, 200, limit)], { ...end.state, window: { ...end.state.window, millis: 100 } })
    expect(after.limits.at(-1)).toBeGreaterThanOrEqual(15)
  })

  it("with its probe disabled (Policy.ablate) it stays at the floor", () => {
    const c = config({ initial: 12, probeAfterWindows: 3, probeSamples: 2 })
    const ablated = Policy.ablate(Arc.policy)
    let s = ablated.init(c)
    for (let r = 0; r < 200; r++) {
      const t = r * 100
      for (const signal of [sample(t + 50, r < 4 ? 50 : 200, s.proposed), tick(t + 100)]) s = ablated.step(s, signal, signal.at).state
    }
    expect(s.probes).toBe(0)
    expect(s.proposed).toBe(1)
  })
})
