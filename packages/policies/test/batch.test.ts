import { Policy } from "@sluice/core"
import { AdaptiveBatch } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { inflight, sample } from "./helpers.ts"

const config = (input: unknown = {}) => Schema.decodeUnknownSync(AdaptiveBatch.AdaptiveBatchConfig)(input)
const MiB = 1024 * 1024

/** Drives the core with a store whose latency is `a + b·bytes` for batches of the current target. */
const drive = (c: AdaptiveBatch.AdaptiveBatchConfig, a: number, bPerMiB: number, until: number, fill = 0.1) => {
  let s = AdaptiveBatch.policy.init(c)
  let target = s.target
  const series: Array<readonly [number, number]> = [[0, target]]
  for (let t = 0, i = 0; t < until; t += 100, i++) {
    // Batches vary: some seal early (age, pressure), so sizes spread.
    const bytes = Math.round(target * (i % 3 === 0 ? 0.5 : 1))
    const signals = [sample(t, a + (bPerMiB * bytes) / MiB, { bytes }), inflight(t + 1, fill * 256 * MiB, 256 * MiB)]
    for (const signal of signals) {
      const r = AdaptiveBatch.policy.step(s, signal, signal.at)
      s = r.state
      if (r.proposal?.batchTarget?.bytes !== undefined) {
        target = r.proposal.batchTarget.bytes
        series.push([t, target])
      }
    }
  }
  return { s, target, series }
}

describe("AdaptiveBatch", () => {
  it("fits latency ≈ a + b·bytes", () => {
    let f = AdaptiveBatch.emptyFit
    for (const bytes of [1, 2, 4, 8, 16].map((m) => m * MiB)) f = AdaptiveBatch.addSample(f, bytes, 40 + (15 * bytes) / MiB, 1)
    const fit = AdaptiveBatch.solve(f)
    expect(fit?.a).toBeCloseTo(40, 6)
    expect((fit?.b ?? 0) * MiB).toBeCloseTo(15, 6)
    expect(AdaptiveBatch.solve(AdaptiveBatch.addSample(AdaptiveBatch.addSample(AdaptiveBatch.emptyFit, MiB, 5, 1), MiB, 6, 1))).toBeUndefined()
  })

  it("grows while per-request overhead dominates, up to the memory share", () => {
    // a = 200 ms, 1 ms per MiB: overhead dominates until 200 MiB; the ceiling is 256 MiB / 16 = 16 MiB.
    const { target } = drive(config(), 200, 1, 60_000)
    expect(target).toBe(16 * MiB)
  })

  it("shrinks when transfer dominates", () => {
    // a = 1 ms, 100 ms per MiB: a < 0.1·b·target for any target above 0.1 MiB.
    const { target } = drive(config(), 1, 100, 60_000)
    expect(target).toBe(256 * 1024)
  })

  it("holds where a ≈ b·target", () => {
    // a = 40 ms, 10 ms per MiB: grow while target < 4 MiB, shrink below 0.4 MiB.
    const { target } = drive(config({ initialBytes: "1 MiB" }), 40, 10, 60_000)
    expect(target).toBeGreaterThanOrEqual(2 * MiB)
    expect(target).toBeLessThanOrEqual(6 * MiB)
  })

  it("shrinks under memory pressure, never below the floor, and restores after it passes", () => {
    const c = config({ restoreAfterMillis: 3_000 })
    const pressed = drive(c, 200, 1, 30_000, 0.95)
    expect(pressed.target).toBe(c.minBytes)
    let s = pressed.s
    for (let t = 30_000; t < 34_000; t += 100) s = AdaptiveBatch.policy.step(s, inflight(t, 0.1 * 256 * MiB, 256 * MiB), t).state
    expect(s.target).toBeGreaterThan(c.minBytes)
  })

  it("proposes records and maxAge so batches seal on fill, age only as a staleness bound", () => {
    const r = Policy.replay(AdaptiveBatch.policy, config(), [])
    expect(r.proposals[0]?.[1]).toEqual({ batchTarget: { bytes: 8 * MiB, records: 1_000_000, maxAgeMillis: 60_000 } })
  })

  it("rejects inconsistent sizes, naming the field", () => {
    expect(() => config({ minBytes: "64 MiB", maxObjectBytes: "1 MiB" })).toThrow(/minBytes/)
  })
})
