import { Policy } from "@sluice/core"
import { Classify, CubicRate, Throttle } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Ablation from "./ablation.ts"
import { failure, inflight, sample, tick } from "./helpers.ts"

const config = (input: unknown = {}) => Schema.decodeUnknownSync(Throttle.ThrottleConfig)(input)
/** Throttle.ts's PROBE_ABOVE_AFTER (a constant, not config): successes at the level below the throttle level before growing above it. */
const PROBE_ABOVE_AFTER = 72

describe("Classify", () => {
  const table: ReadonlyArray<readonly [string, unknown, string]> = [
    ["Unknown + 503 on HEAD (no body)", { name: "Unknown", $metadata: { httpStatusCode: 503 } }, "Throttled"],
    ["429 with any name", { name: "Unknown", $metadata: { httpStatusCode: 429 } }, "Throttled"],
    ["SlowDown 503", { name: "SlowDown", $metadata: { httpStatusCode: 503 } }, "Throttled"],
    ["ThrottlingException without status", { name: "ThrottlingException" }, "Throttled"],
    ["$retryable.throttling", { name: "Weird", $retryable: { throttling: true }, $metadata: { httpStatusCode: 400 } }, "Throttled"],
    ["500 InternalError", { name: "InternalError", $metadata: { httpStatusCode: 500 } }, "Transient"],
    ["502", { name: "Unknown", $metadata: { httpStatusCode: 502 } }, "Transient"],
    ["408 RequestTimeout", { name: "RequestTimeout", $metadata: { httpStatusCode: 408 } }, "Transient"],
    ["ECONNRESET", Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }), "Transient"],
    ["TimeoutError", { name: "TimeoutError" }, "Transient"],
    ["BadDigest 400", { name: "BadDigest", $metadata: { httpStatusCode: 400 } }, "Fatal"],
    ["ChecksumMismatch even on 500", { name: "ChecksumMismatch", $metadata: { httpStatusCode: 500 } }, "Fatal"],
    ["XAmzContentSHA256Mismatch", { name: "XAmzContentSHA256Mismatch", $metadata: { httpStatusCode: 400 } }, "Fatal"],
    ["VerificationFailed ChecksumMismatch", { _tag: "VerificationFailed", reason: "ChecksumMismatch" }, "Fatal"],
    ["403 AccessDenied", { name: "AccessDenied", $metadata: { httpStatusCode: 403 } }, "Fatal"],
    ["404 NoSuchBucket", { name: "NoSuchBucket", $metadata: { httpStatusCode: 404 } }, "Fatal"],
    ["unrecognised, no status", new TypeError("x is not a function"), "Fatal"]
  ]
  for (const [name, error, expected] of table) {
    it(`${name} → ${expected}`, () => {
      expect(Classify.classify(error, { stage: "verify" }).failureClass).toBe(expected)
    })
  }

  it("keeps the code and status", () => {
    const c = Classify.classify({ name: "Unknown", $metadata: { httpStatusCode: 503 } }, { stage: "verify" })
    expect(c).toEqual({ failureClass: "Throttled", code: "Unknown", status: 503, stage: "verify", retryAfterMillis: undefined })
  })

  it("honours Retry-After in seconds and as an HTTP date", () => {
    const seconds = { name: "SlowDown", $metadata: { httpStatusCode: 503 }, $response: { headers: { "Retry-After": "3" } } }
    expect(Classify.classify(seconds).retryAfterMillis).toBe(3000)
    const now = Date.parse("2025-01-01T00:00:00Z")
    const date = { name: "SlowDown", $metadata: { httpStatusCode: 503 }, $response: { headers: { "retry-after": "Wed, 01 Jan 2025 00:00:05 GMT" } } }
    expect(Classify.classify(date, { now }).retryAfterMillis).toBe(5000)
  })
})

describe("CubicRate", () => {
  const rc = { beta: 0.7, scale: 0.4, smooth: 0.8, minRate: 0.5, releaseAfterMillis: 30_000 }
  it("cuts below the throttled rate and climbs back cubically, never retrying at the same rate", () => {
    let r = CubicRate.init(rc)
    // 20 requests/s for 5 s.
    for (let t = 0; t < 5_000; t += 50) r = CubicRate.update(rc, r, t, false)
    expect(CubicRate.rate(r)).toBeNull()
    r = CubicRate.update(rc, r, 5_000, true)
    const cut = CubicRate.rate(r) ?? Infinity
    expect(cut).toBeLessThan(r.lastMaxRate)
    expect(cut).toBeCloseTo(r.lastMaxRate * 0.7, 5)
    const rates: Array<number> = []
    for (let t = 5_050; t < 12_000; t += 50) {
      r = CubicRate.update(rc, r, t, false)
      rates.push(CubicRate.rate(r) ?? Infinity)
    }
    // Recovers towards the old maximum within a few seconds (K = ∛(max·0.3/0.4)).
    expect(rates[rates.length - 1]).toBeGreaterThanOrEqual(r.lastMaxRate * 0.95)
  })

  it("is released after a quiet period at the old maximum", () => {
    let r = CubicRate.init(rc)
    for (let t = 0; t < 5_000; t += 50) r = CubicRate.update(rc, r, t, false)
    r = CubicRate.update(rc, r, 5_000, true)
    for (let t = 5_050; t < 40_000; t += 50) r = CubicRate.update(rc, r, t, false)
    expect(CubicRate.rate(r)).toBeNull()
  })
})

describe("Throttle", () => {

  it("cuts concurrency from what was in flight, not from an unused limit (RFC 5681 FlightSize)", () => {
    const c = config()
    const throttled = { ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 34 }), inflightAtStart: 12 }
    const { state } = Policy.replay(Throttle.policy, c, [[throttled, 100]])
    expect(state.limit).toBeCloseTo(12 * c.beta)
  })

  it("above the known-clean level, after the plateau, regains +step per round (step / limit per success), not per success", () => {
    const c = config()
    let s = Policy.replay(Throttle.policy, c, [[failure(100, "Throttled", { startedAt: 50, limitAtStart: 24 }), 100]]).state
    s = { ...s, limit: Math.max(1, s.episode.throttledAt - 1), plateau: PROBE_ABOVE_AFTER }
    const from = s.limit
    // One round of `from` successes started after the cut: about one slot more, not `from`.
    for (let i = 0; i < from; i++) {
      s = Throttle.policy.step(s, sample(900 + i, 700, { startedAt: 200, inflightAtStart: from }), 900 + i).state
    }
    expect(s.limit).toBeGreaterThan(from + 0.9)
    expect(s.limit).toBeLessThan(from + 1.1)
  })

  it("restores early once the storm has cleared: clean requests above the level that was throttled", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    let s = Policy.replay(Throttle.policy, c, [[failure(100, "Throttled", { startedAt: 50, limitAtStart: 12 }), 100]]).state
    expect(s.limit).toBeCloseTo(6)
    // Successes at or below the throttled level (12) are no evidence.
    for (let i = 0; i < 5; i++) {
      s = Throttle.policy.step(s, sample(900 + i, 700, { startedAt: 200, inflightAtStart: 12 }), 900 + i).state
    }
    expect(s.mode).toBe("recovering")
    // Three in a row from above it, started after the last throttle, are.
    for (let i = 0; i < 3; i++) {
      s = Throttle.policy.step(s, sample(1_000 + i, 700, { startedAt: 300, inflightAtStart: 13 }), 1_000 + i).state
    }
    expect(s.mode).toBe("open")
    expect(s.limit).toBe(12)
  })

  it("an outage (a refusal at the floor) ends on requests accepted at the floor: three after the last refusal, manifests and verifies too, restore the pre-outage limit", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    let s = Policy.replay(Throttle.policy, c, [
      [{ ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 12 }), inflightAtStart: 12 }, 100],
      [{ ...failure(400, "Throttled", { startedAt: 350, limitAtStart: 6 }), inflightAtStart: 1 }, 400]
    ]).state
    expect(s.episode.throttledAt).toBe(c.floor)
    // Accepted before the last refusal: no evidence.
    s = Throttle.policy.step(s, sample(500, 200, { startedAt: 300, inflightAtStart: 1 }), 500).state
    expect(s.mode).not.toBe("open")
    // After it, at the floor, one batch's three requests.
    s = Throttle.policy.step(s, sample(600, 50, { startedAt: 550, inflightAtStart: 1 }), 600).state
    s = Throttle.policy.step(s, sample(620, 10, { startedAt: 610, inflightAtStart: 1, stage: "manifest_upload" }), 620).state
    expect(s.mode).not.toBe("open")
    s = Throttle.policy.step(s, sample(640, 10, { startedAt: 630, inflightAtStart: 1, stage: "verify" }), 640).state
    expect(s.mode).toBe("open")
    expect(s.limit).toBe(12)
  })

  it("an outage's end restores only a cut the batches fill (RESTORE_BUSY_SHARE, on the window so far): a backlog's, not a trickle's", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    const outage = Policy.replay(Throttle.policy, c, [
      [{ ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 8 }), inflightAtStart: 1 }, 100]
    ]).state
    expect(outage.episode.throttledAt).toBe(c.floor)
    /** The Inflight signal: `batches` uploading against the cut limit (the Tick's knob, 1 here). */
    const busy = (at: number, batches: number) => ({ ...inflight(at, 0), batches })
    const end = (s: typeof outage, batches: number) => {
      let next = Throttle.policy.step(s, { _tag: "Tick", at: 500, knobs: { ...tick(500).knobs, concurrency: 1 } }, 500).state
      for (let i = 0; i < 8; i++) next = Throttle.policy.step(next, busy(510 + i, batches), 510 + i).state
      for (const [i, stage] of (["object_upload", "manifest_upload", "verify"] as const).entries()) {
        next = Throttle.policy.step(next, sample(600 + i, 10, { startedAt: 590 + i, inflightAtStart: 1, stage }), 600 + i).state
      }
      return next
    }
    // A backlog behind the floor: the cut limit is full; the old limit comes back at once.
    const backlog = end(outage, 1)
    expect(backlog.mode).toBe("open")
    expect(backlog.limit).toBe(8)
    // A trickle that never fills it keeps the cut (a probe above it would cost throttles for nothing).
    const trickle = end(outage, 0)
    expect(trickle.mode).not.toBe("open")
    expect(trickle.limit).toBeLessThan(8)
  })

  it("an outage's end keeps a trickle's cut across window resets: a window just begun carries the last one's verdict, not 'no evidence'", () => {
    // The real-server trickle (adapters-s3 PolicyReaction) was restored on a
    // loaded CI machine: the episode had cleared at the floor, a Tick crossed
    // the window's end (the idle window reset, nothing observed in the new
    // one), and the next signal, before the next Inflight, read the empty
    // window as "filled".
    const c = config({ restoreAfterMillis: 1_000 })
    let s = Policy.replay(Throttle.policy, c, [
      [{ ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 8 }), inflightAtStart: 1 }, 100]
    ]).state
    const knob1 = (at: number) => ({ _tag: "Tick" as const, at, knobs: { ...tick(at).knobs, concurrency: 1 } })
    for (let t = 120; t < 1_100; t += 20) {
      s = Throttle.policy.step(s, { ...inflight(t, 0), batches: 0 }, t).state
      s = Throttle.policy.step(s, knob1(t), t).state
    }
    for (const [i, stage] of (["object_upload", "manifest_upload", "verify"] as const).entries()) {
      s = Throttle.policy.step(s, sample(600 + i, 10, { startedAt: 590 + i, inflightAtStart: 1, stage }), 600 + i).state
    }
    expect(s.mode).not.toBe("open")
    // The Tick at 1 100 ends the idle window; a sample comes before the next Inflight.
    s = Throttle.policy.step(s, knob1(1_100), 1_100).state
    s = Throttle.policy.step(s, sample(1_105, 10, { startedAt: 1_095, inflightAtStart: 1, stage: "verify" }), 1_105).state
    expect(s.mode).not.toBe("open")
    expect(s.limit).toBeLessThan(8)
    // A window with no Inflight signals at all (a starved ticker) is no new evidence either.
    s = Throttle.policy.step(s, sample(2_200, 10, { startedAt: 2_190, inflightAtStart: 1, stage: "verify" }), 2_200).state
    expect(s.mode).not.toBe("open")
    // A burst early in a later window (two batches the cut rate held back, sent
    // together: 3 of the window's first 10 observations full) is not a window
    // filled: later windows are judged whole.
    const window = s.busy.since
    for (let i = 1; i <= 10; i++) {
      const t = window + 20 * i
      s = Throttle.policy.step(s, { ...inflight(t, 0), batches: i > 7 ? 1 : 0 }, t).state
      s = Throttle.policy.step(s, knob1(t), t).state
    }
    s = Throttle.policy.step(s, sample(window + 205, 10, { startedAt: window + 195, inflightAtStart: 1, stage: "verify" }), window + 205).state
    expect(s.mode).not.toBe("open")
    // A window the batches fill whole restores it (the backlog the cut costs).
    for (let t = window + 220; t <= window + 1_020; t += 20) {
      s = Throttle.policy.step(s, { ...inflight(t, 0), batches: 1 }, t).state
      s = Throttle.policy.step(s, knob1(t), t).state
    }
    expect(s.mode).toBe("open")
    expect(s.limit).toBe(8)
  })

  it("a storm refused above the floor is not ended by requests accepted at the floor, nor by manifests and verifies", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    let s = Policy.replay(Throttle.policy, c, [[{ ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 12 }), inflightAtStart: 12 }, 100]]).state
    expect(s.episode.throttledAt).toBe(12)
    for (let i = 0; i < 5; i++) {
      s = Throttle.policy.step(s, sample(600 + i, 50, { startedAt: 550, inflightAtStart: c.floor }), 600 + i).state
      s = Throttle.policy.step(s, sample(700 + i, 10, { startedAt: 650, inflightAtStart: 13, stage: "manifest_upload" }), 700 + i).state
      s = Throttle.policy.step(s, sample(800 + i, 10, { startedAt: 750, inflightAtStart: 13, stage: "verify" }), 800 + i).state
    }
    expect(s.mode).not.toBe("open")
  })

  it("does not restore early when a throttle interrupts the clean run", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    let s = Policy.replay(Throttle.policy, c, [[failure(100, "Throttled", { startedAt: 50, limitAtStart: 12 }), 100]]).state
    s = Throttle.policy.step(s, sample(1_000, 700, { startedAt: 300, inflightAtStart: 13 }), 1_000).state
    s = Throttle.policy.step(s, sample(1_001, 700, { startedAt: 300, inflightAtStart: 13 }), 1_001).state
    s = Throttle.policy.step(s, failure(1_002, "Throttled", { startedAt: 900, limitAtStart: 6 }), 1_002).state
    s = Throttle.policy.step(s, sample(1_003, 700, { startedAt: 300, inflightAtStart: 13 }), 1_003).state
    expect(s.mode).not.toBe("open")
  })
  it("cuts concurrency ×beta and sets a rate on a throttle; withdraws once recovered", () => {
    const c = config({ restoreAfterMillis: 60_000 })
    const signals: Array<readonly [Parameters<typeof Throttle.policy.step>[1], number]> = []
    for (let t = 0; t < 2_000; t += 20) signals.push([sample(t, 20, { startedAt: t - 20, limitAtStart: 16 }), t])
    signals.push([failure(2_000, "Throttled", { startedAt: 1_990, limitAtStart: 16 }), 2_000])
    signals.push([failure(2_005, "Throttled", { startedAt: 1_995, limitAtStart: 16 }), 2_005])
    const mid = Policy.replay(Throttle.policy, c, signals)
    expect(mid.state.limit).toBe(8)
    expect(mid.state.mode).toBe("backoff")
    const last = mid.proposals[mid.proposals.length - 1]?.[1]
    expect(last?.concurrency).toBe(8)
    expect(last?.rate).toBeGreaterThan(0)
    for (let t = 2_100; t < 60_000; t += 20) signals.push([sample(t, 20, { startedAt: t - 20, limitAtStart: 8 }), t])
    const after = Policy.replay(Throttle.policy, c, signals)
    expect(after.state.mode).toBe("open")
    const final = after.proposals[after.proposals.length - 1]?.[1]
    expect(final?.concurrency).toBeUndefined()
    expect(final?.rate).toBeUndefined()
  })

  it("firstBeta and rateOnFirstCut: false: an episode's first round cuts concurrency ×0.7 and leaves the rate; a round throttled under the cut limit cuts ×beta and the rate", () => {
    const c = config({ firstBeta: 0.7, rateOnFirstCut: false, restoreAfterMillis: 60_000 })
    const signals: Array<readonly [Parameters<typeof Throttle.policy.step>[1], number]> = []
    for (let t = 0; t < 2_000; t += 20) signals.push([sample(t, 20, { startedAt: t - 20, limitAtStart: 40, inflightAtStart: 40 }), t])
    signals.push([failure(2_000, "Throttled", { startedAt: 1_990, limitAtStart: 40 }), 2_000])
    const first = Policy.replay(Throttle.policy, c, signals)
    expect(first.state.limit).toBe(28)
    expect(first.proposals[first.proposals.length - 1]?.[1]).toEqual({ concurrency: 28, rate: undefined })
    // Throttled again at the cut limit, by a request begun after the cut.
    signals.push([failure(2_500, "Throttled", { startedAt: 2_100, limitAtStart: 28 }), 2_500])
    const second = Policy.replay(Throttle.policy, c, signals)
    expect(second.state.limit).toBe(14)
    expect(second.proposals[second.proposals.length - 1]?.[1].rate).toBeGreaterThan(0)
    // The defaults keep the old first cut: ×beta and the rate.
    const classic = Policy.replay(Throttle.policy, config({ restoreAfterMillis: 60_000 }), signals.slice(0, -1))
    expect(classic.state.limit).toBe(20)
    expect(classic.proposals[classic.proposals.length - 1]?.[1].rate).toBeGreaterThan(0)
  })

  it("one cut per round, taken from the round's lowest throttled in-flight: later stages admitted before the cut never cut twice", () => {
    const { state } = Policy.replay(Throttle.policy, config(), [
      [failure(100, "Throttled", { startedAt: 50, limitAtStart: 40 }), 100],
      // A later stage from as many in flight: the same evidence, no second cut.
      [failure(130, "Throttled", { startedAt: 120, limitAtStart: 40 }), 130]
    ])
    expect(state.limit).toBe(20)
    // One from fewer in flight (30): the cut is taken from there (30 × 0.5), not cut again (20 × 0.5).
    const rebased = Throttle.policy.step(state, failure(150, "Throttled", { startedAt: 140, limitAtStart: 30 }), 150).state
    expect(rebased.limit).toBe(15)
    expect(rebased.throttles).toBe(3)
    // A new round (begun after the cut, within the limit) cuts ×beta.
    const next = Throttle.policy.step(rebased, failure(900, "Throttled", { startedAt: 800, limitAtStart: 15 }), 900)
    expect(next.state.limit).toBe(7.5)
  })

  it("a round's throttles answering in any order cut to the same limit", () => {
    // A probe's 16 requests on a store that serves one at a time: the
    // throttles from 16 and from 2 in flight answer at once, either first.
    const round = (first: number, second: number) =>
      Policy.replay(Throttle.policy, config(), [
        [{ ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 16 }), inflightAtStart: first }, 100],
        [{ ...failure(101, "Throttled", { startedAt: 50, limitAtStart: 16 }), inflightAtStart: second }, 101]
      ]).state.limit
    expect(round(2, 16)).toBe(1)
    expect(round(16, 2)).toBe(1)
  })

  it("releasing the rate limit keeps the send-rate measurement: the next episode cuts from the rate in use", () => {
    const signals: Array<readonly [Parameters<typeof Throttle.policy.step>[1], number]> = []
    // 20 uploads/s; a throttle at 5 s; quiet until the restore probe releases
    // the limit (10 s later); another throttle just after that.
    for (let t = 0; t <= 15_000; t += 50) signals.push([sample(t, 50, { startedAt: t - 50, limitAtStart: 16 }), t])
    signals.push([failure(5_000, "Throttled", { startedAt: 4_990, limitAtStart: 16 }), 5_000])
    signals.sort((a, b) => a[1] - b[1])
    signals.push([failure(15_040, "Throttled", { startedAt: 15_030, limitAtStart: 16 }), 15_040])
    const { state, proposals } = Policy.replay(Throttle.policy, config(), signals)
    expect(state.mode).toBe("backoff")
    const rate = proposals[proposals.length - 1]?.[1].rate ?? 0
    // 0.7 × ~20/s, not the 0.5/s floor of a reset measurement.
    expect(rate).toBeGreaterThan(10)
    expect(rate).toBeLessThan(20)
  })

  it("never cuts on Transient or Fatal failures", () => {
    const { state, proposals } = Policy.replay(Throttle.policy, config(), [
      [failure(100, "Transient"), 100],
      [failure(200, "Fatal"), 200]
    ])
    expect(state.mode).toBe("open")
    expect(proposals).toEqual([[0, {}]])
  })

  it("restores the pre-throttle limit after a quiet period (restore probe)", () => {
    const { state } = Policy.replay(Throttle.policy, config({ floor: 1, restoreAfterMillis: 5_000 }), [
      [failure(100, "Throttled", { startedAt: 90, limitAtStart: 32 }), 100],
      [failure(200, "Throttled", { startedAt: 150, limitAtStart: 32 }), 200],
      [failure(300, "Throttled", { startedAt: 250, limitAtStart: 32 }), 300],
      [failure(5_400, "Transient", { startedAt: 5_300 }), 5_400]
    ])
    expect(state.mode).toBe("open")
    expect(state.limit).toBe(32)
  })

  describe("restores only a cut that costs something (RESTORE_BUSY_SHARE)", () => {
    // One throttle at 100 ms (a request begun at 16 in flight): the episode every case starts from.
    const cutAt100 = (c: Throttle.ThrottleConfig) =>
      Policy.replay(Throttle.policy, c, [[failure(100, "Throttled", { startedAt: 50, limitAtStart: 16 }), 100]]).state
    // Ticks every 100 ms with the combined concurrency 8 in force, and the
    // pipeline's batches uploading: `busy` of every 4 observations fill it.
    const run = (c: Throttle.ThrottleConfig, busy: (t: number) => number, until: number) => {
      let s = cutAt100(c)
      const opened: Array<number> = []
      for (let t = 200; t <= until; t += 100) {
        s = Throttle.policy.step(s, tick(t), t).state
        const full = (t / 100) % 4 < busy(t)
        s = Throttle.policy.step(s, { ...inflight(t, 0), batches: full ? 8 : 2 }, t).state
        if (s.mode === "open" && opened.length === 0) opened.push(t)
      }
      return { state: s, openedAt: opened[0] }
    }

    it("a cut limit the batches seldom fill is kept past restoreAfterMillis: a probe above it would cost throttles for nothing", () => {
      const c = config({ restoreAfterMillis: 10_000 })
      // One observation in four at the limit is the bar; none reach it here.
      const { state, openedAt } = run(c, () => 0, 60_000)
      expect(openedAt).toBeUndefined()
      expect(state.mode).not.toBe("open")
      expect(state.limit).toBeLessThan(16)
    })

    it("a window just measured idle is not passed by the next signal: its reset leaves no observations, which is no evidence to restore on", () => {
      const c = config({ restoreAfterMillis: 10_000 })
      let s = cutAt100(c)
      // The pipeline's order within a tick: Inflight, then Tick (and samples between ticks).
      for (let t = 200; t <= 60_000; t += 100) {
        s = Throttle.policy.step(s, { ...inflight(t, 0), batches: 2 }, t).state
        s = Throttle.policy.step(s, tick(t), t).state
        s = Throttle.policy.step(s, sample(t + 50, 20, { inflightAtStart: 2, limitAtStart: 8 }), t + 50).state
        expect(s.mode, `t = ${t}`).not.toBe("open")
      }
    })

    it("restores within a window of the batches filling it, and at restoreAfterMillis when they always did", () => {
      const c = config({ restoreAfterMillis: 10_000 })
      // Idle until 30 s, then filled 2 observations in 4 (above the 0.25 bar).
      const later = run(c, (t) => (t < 30_000 ? 0 : 2), 60_000)
      expect(later.openedAt).toBeGreaterThan(30_000)
      expect(later.openedAt).toBeLessThanOrEqual(30_000 + 2 * c.restoreAfterMillis)
      expect(later.state.limit).toBe(16)
      const always = run(c, () => 4, 60_000)
      expect(always.openedAt).toBeGreaterThanOrEqual(100 + c.restoreAfterMillis)
      expect(always.openedAt).toBeLessThan(100 + c.restoreAfterMillis + 200)
    })

    it("with rateOnFirstCut: false, a throttle after a quiet window the restore was withheld in cuts concurrency only, as a first round would; one soon after it cuts the rate", () => {
      const c = config({ restoreAfterMillis: 10_000, firstBeta: 0.7, rateOnFirstCut: false })
      const idle = run(c, () => 0, 30_000).state
      expect(idle.mode).not.toBe("open")
      expect(idle.proposed.rate).toBeUndefined()
      const probe = { ...failure(30_100, "Throttled", { startedAt: 30_050, limitAtStart: 16 }), inflightAtStart: Math.floor(idle.limit) }
      const crossed = Throttle.policy.step(idle, probe, 30_100).state
      expect(crossed.proposed.rate).toBeUndefined()
      expect(crossed.lastCutAt).toBe(30_100)
      const again = { ...failure(30_500, "Throttled", { startedAt: 30_200, limitAtStart: Math.floor(crossed.limit) }), inflightAtStart: Math.floor(crossed.limit) }
      const under = Throttle.policy.step(crossed, again, 30_500).state
      expect(under.proposed.rate).toBeDefined()
    })

    it("an idle limit is not grown above the known-clean level either, but the rate limit is released", () => {
      const c = config({ restoreAfterMillis: 10_000, rateOnFirstCut: true })
      let s = cutAt100(c)
      expect(s.proposed.rate).toBeDefined()
      const known = s.episode.throttledAt - 1
      // Until 25 s: before `RATE_RELEASE_AFTER_MILLIS` (30 s) could release the rate on its own.
      for (let t = 200, i = 0; t <= 25_000; t += 100, i++) {
        s = Throttle.policy.step(s, tick(t), t).state
        s = Throttle.policy.step(s, { ...inflight(t, 0), batches: 2 }, t).state
        // Successes at the known-clean level, far more than the plateau asks.
        if (i % 2 === 0) s = Throttle.policy.step(s, sample(t, 50, { startedAt: t - 50, inflightAtStart: known, limitAtStart: known }), t).state
      }
      expect(s.plateau).toBeGreaterThan(PROBE_ABOVE_AFTER)
      expect(s.limit).toBe(known)
      expect(s.proposed.rate).toBeUndefined()
    })
  })

  it("provides a retry policy: Retry-After honoured, fatal never retried", () => {
    const retry = Throttle.retryPolicy(config())
    const throttled = { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined } as const
    expect(retry.delayMillis({ ...throttled, failureClass: "Fatal" }, 1)).toBeUndefined()
    expect(retry.delayMillis({ ...throttled, retryAfterMillis: 7_000 }, 1)).toBe(7_000)
    const d1 = retry.delayMillis(throttled, 1) ?? 0
    const d3 = retry.delayMillis(throttled, 3) ?? 0
    expect(d1).toBeGreaterThanOrEqual(250)
    expect(d1).toBeLessThanOrEqual(500)
    expect(d3).toBeGreaterThan(d1)
    expect(retry.delayMillis(throttled, 3)).toBe(d3)
    const limited = Throttle.retryPolicy(config({ maxAttempts: 3 }))
    expect(limited.delayMillis(throttled, 3)).toBeUndefined()
  })

  it("retries within a stated budget — attempts and time since the batch first failed — then gives up (issue 10)", () => {
    const retry = Throttle.retryPolicy(config())
    const transient = { failureClass: "Transient", code: "InternalError", status: 500, stage: "object_upload", retryAfterMillis: undefined } as const
    const context = (now: number, sameCode = 1) => ({ key: "sim/p=00001/a.rec", firstFailureAt: 0, now, sameCode })
    // Within the budget: retried.
    expect(retry.delayMillis(transient, 10, context(60_000))).toBeGreaterThan(0)
    // 15 minutes of failures for one batch: given up (the core's default budget).
    expect(retry.delayMillis(transient, 10, context(15 * 60_000))).toBeUndefined()
    // 100 attempts: given up, however fast they failed.
    expect(retry.delayMillis(transient, 100, context(1_000))).toBeUndefined()
    // Connection refused in a row for 30 s: the store is unreachable; for 1 s: retried (a restart).
    const refused = { ...transient, code: "ECONNREFUSED", status: undefined }
    expect(retry.delayMillis(refused, 3, context(1_000, 3))).toBeGreaterThan(0)
    expect(retry.delayMillis(refused, 9, context(30_000, 9))).toBeUndefined()
    // A budget of its own.
    const short = Throttle.retryPolicy(config({ maxAttempts: 5, maxElapsedMillis: "1 minute" }))
    expect(short.delayMillis(transient, 2, context(61_000))).toBeUndefined()
    expect(short.delayMillis(transient, 5, context(1_000))).toBeUndefined()
  })

  it("jitters per batch: two batches throttled on the same attempt do not retry at the same instant (issue 10)", () => {
    const retry = Throttle.retryPolicy(config())
    const throttled = { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined } as const
    const delays = Array.from({ length: 20 }, (_, i) =>
      retry.delayMillis(throttled, 3, { key: `sim/p=${String(i).padStart(5, "0")}/0-99.rec`, firstFailureAt: 0, now: 1_000, sameCode: 1 })
    )
    // 20 batches: (nearly) all different, all within equal jitter of the 2 s backoff.
    expect(new Set(delays).size).toBeGreaterThanOrEqual(18)
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(1_000)
      expect(d).toBeLessThanOrEqual(2_000)
    }
    // Deterministic: the same batch and attempt, the same delay.
    const again = retry.delayMillis(throttled, 3, { key: "sim/p=00000/0-99.rec", firstFailureAt: 0, now: 9_999, sameCode: 1 })
    expect(again).toBe(delays[0])
  })
})

describe("Throttle regrowth toward the throttled level", () => {
  const episode = () => {
    let s = Throttle.policy.init(config())
    // Throttled at 13 in flight: the lowest throttled level is 13, the cut ×0.5.
    s = Throttle.policy.step(s, { ...failure(100, "Throttled", { startedAt: 50, limitAtStart: 72 }), inflightAtStart: 13 }, 100).state
    return s
  }

  it("regains the level just below the throttled one at once, then plateaus before probing above it", () => {
    let s = episode()
    expect(s.limit).toBe(6.5)
    for (let i = 0; i < 6; i++) s = Throttle.policy.step(s, sample(200 + i, 700, { startedAt: 150, inflightAtStart: 6 }), 200 + i).state
    expect(s.limit).toBe(12)
    for (let i = 0; i < 60; i++) s = Throttle.policy.step(s, sample(300 + i, 700, { startedAt: 150, inflightAtStart: 12 }), 300 + i).state
    expect(s.limit).toBe(12)
    for (let i = 0; i < 20; i++) s = Throttle.policy.step(s, sample(400 + i, 700, { startedAt: 150, inflightAtStart: 12 }), 400 + i).state
    expect(s.limit).toBeGreaterThan(12)
  })

  it("a throttle at the known level cuts to just below it; one below it cuts ×beta", () => {
    const s = episode()
    const at = Throttle.policy.step(s, { ...failure(500, "Throttled", { startedAt: 400, limitAtStart: 13 }), inflightAtStart: 13 }, 500).state
    expect(at.limit).toBe(6.5) // limit 6.5 < in flight 13: measured the old regime, no cut
    const grown = { ...s, limit: 13 }
    const probe = Throttle.policy.step(grown, { ...failure(500, "Throttled", { startedAt: 400, limitAtStart: 13 }), inflightAtStart: 13 }, 500).state
    expect(probe.limit).toBe(12)
    const moved = Throttle.policy.step(grown, { ...failure(500, "Throttled", { startedAt: 400, limitAtStart: 13 }), inflightAtStart: 10 }, 500).state
    expect(moved.limit).toBe(5)
  })

  it("the level outlives the episode: the throttle that answers the restore probe at or above it cuts to just below it, a 429 or one below it ×firstBeta", () => {
    const c = config({ firstBeta: 0.7 })
    // An episode that found 6 throttled, ended by the restore probe (10 s quiet, the cut limit filled).
    let s = Throttle.policy.init(c)
    s = Throttle.policy.step(s, { ...failure(1_000, "Throttled", { startedAt: 900, limitAtStart: 40 }), inflightAtStart: 6 }, 1_000).state
    expect(s.limit).toBeCloseTo(4.2)
    s = Throttle.policy.step(s, { ...tick(1_100), knobs: { ...tick(1_100).knobs, concurrency: 4 } }, 1_100).state
    for (let t = 1_200; t < 11_500; t += 100) s = Throttle.policy.step(s, { ...inflight(t, 0), batches: 4 }, t).state
    expect(s.mode).toBe("open")
    expect(s.episode.lastLevel).toBe(6)
    // The probe's throttles, at or above the level 6: to 5 (the level below), never deeper than ×firstBeta.
    const from10 = Throttle.policy.step(s, { ...failure(12_000, "Throttled", { startedAt: 11_600, limitAtStart: 40 }), inflightAtStart: 10 }, 12_000).state
    expect(from10.limit).toBe(7) // ×0.7 = 7 is above the level's 5: the cut is never deeper than ×firstBeta
    const from7 = Throttle.policy.step(s, { ...failure(12_000, "Throttled", { startedAt: 11_600, limitAtStart: 40 }), inflightAtStart: 7 }, 12_000).state
    expect(from7.limit).toBe(5) // ×0.7 would be 4.9: one below the level the store serves
    const rate = Throttle.policy.step(s, { ...failure(12_000, "Throttled", { startedAt: 11_600, limitAtStart: 40, status: 429, code: "TooManyRequests" }), inflightAtStart: 7 }, 12_000).state
    expect(rate.limit).toBeCloseTo(4.9) // a 429 caps a rate, not a level
    const below = Throttle.policy.step(s, { ...failure(12_000, "Throttled", { startedAt: 11_600, limitAtStart: 40 }), inflightAtStart: 5 }, 12_000).state
    expect(below.limit).toBeCloseTo(3.5) // the level moved: ×0.7
  })
})

// The ablation in the real pipeline (virtual clock): Throttle alone over a base
// concurrency of 32. A throttle storm (503 above 1 in flight, which is then all
// the store serves: `Store.servingLimit`) leaves 2 as the lowest throttled
// level; after it the store takes a second per 8 MiB. Without its restore probe
// the limit regrows to just below that level, plateaus there for
// `PROBE_ABOVE_AFTER` successes and then climbs a step per (~1 s) round.
// Measured (seeds 1–3): probed back to 0.8 × 32 in 8.4–10.0 s and to 90 % of
// the oracle in 9.8–11.8 s (bound: one `restoreAfterMillis` after the storm's
// last throttle, plus the drain of a probe the storm answered), 0.83–0.87 of
// the oracle over the minute after the storm; ablated back to 0.8 × 32 only
// after 23.1–23.6 s, or never (seed 3: a rate limit it never releases),
// 0.06–0.76 of the oracle. (Before the store served no more than it throttles
// above, the ablated run kept that rate limit on every seed: 5–6 % of the oracle.)
describe("Throttle in the simulated pipeline: its restore probe is what recovers", () => {
  const concurrency = (r: { readonly concurrency: number }) => r.concurrency
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: backs off in a throttle storm, keeps its floor, and only the probed run restores the pre-storm limit`, async () => {
      const scenario = await Effect.runPromise(Ablation.stormThenSlower(seed))
      const { probed, ablated } = await Ablation.ablation(scenario, (options) => Throttle.layer({}, options), { concurrency: 1 })
      const before = Ablation.at(probed, Ablation.stormFrom, concurrency)
      expect(before).toBe(32)
      // Backoff: at most 2 uploads for most of the storm (its restore probe
      // tries the old limit now and then and is cut at once).
      const storm = Ablation.rows(probed, Ablation.stormFrom + 5_000, Ablation.stormUntil)
      expect(storm.filter((r) => r.concurrency <= 2).length / storm.length).toBeGreaterThan(0.7)
      for (const run of [probed, ablated]) {
        expect(run.summary.floorViolations).toBe(0)
        expect(Ablation.min(Ablation.rows(run), concurrency)).toBeGreaterThanOrEqual(1)
      }
      // The probed run is back within 15 s of the storm …
      expect(Ablation.secondsUntil(probed, Ablation.stormUntil, (r) => r.concurrency >= 0.8 * before)).toBeLessThanOrEqual(15)
      expect(Ablation.recoverySeconds(probed, Ablation.stormUntil)).toBeLessThanOrEqual(15)
      // … the ablated one, regrowing a step per round, not within 20 s, and
      // further from the oracle over the minute after the storm.
      expect(Ablation.secondsUntil(ablated, Ablation.stormUntil, (r) => r.concurrency >= 0.8 * before) ?? Infinity).toBeGreaterThan(20)
      expect(Ablation.goodputShare(probed, Ablation.stormUntil, 120_000) - Ablation.goodputShare(ablated, Ablation.stormUntil, 120_000)).toBeGreaterThan(0.05)
    })
  }
})
