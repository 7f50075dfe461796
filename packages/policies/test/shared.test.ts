import { Policy } from "@sluice/core"
import { SharedPressure } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { inflight, sample } from "./helpers.ts"

const config = (input: unknown = {}) => Schema.decodeUnknownSync(SharedPressure.SharedPressureConfig)(input)
const gates = (r: { proposals: ReadonlyArray<readonly [number, { readGate?: string }]> }) => r.proposals.map(([t, p]) => [t, p.readGate])

describe("SharedPressure", () => {
  it("pauses above high water and resumes below low water (hysteresis)", () => {
    const r = Policy.replay(SharedPressure.policy, config(), [
      [inflight(100, 700), 100],
      [inflight(200, 850), 200],
      [inflight(300, 600), 300],
      [inflight(400, 450), 400]
    ])
    expect(gates(r)).toEqual([[0, "open"], [200, "paused"], [400, "open"]])
  })

  it("does not pause when what is sealed or uploading already feeds the uploads (wide-knee)", () => {
    // 8 uploads of 50 bytes need 400 bytes held: with 800 sealed/uploading the
    // store is behind, a pause would only seal the 100 open bytes early, small.
    const held = (at: number, bytes: number, openBytes: number) => ({ ...inflight(at, bytes), openBytes })
    const fed = Policy.replay(SharedPressure.policy, config(), [
      [sample(50, 40, { bytes: 50, limitAtStart: 8, inflightAtStart: 8 }), 50],
      [held(100, 900, 100), 100]
    ])
    expect(gates(fed)).toEqual([[0, "open"]])
    // Open batches hold the memory (300 sealed/uploading < 400): pause and seal.
    const starved = Policy.replay(SharedPressure.policy, config(), [
      [sample(50, 40, { bytes: 50, limitAtStart: 8, inflightAtStart: 8 }), 50],
      [held(100, 900, 600), 100]
    ])
    expect(gates(starved)).toEqual([[0, "open"], [100, "paused"]])
  })

  it("floor: re-opens after maxPause while uploads progress", () => {
    const r = Policy.replay(SharedPressure.policy, config({ maxPauseMillis: 1_000 }), [
      [inflight(100, 900), 100],
      [sample(500, 50), 500],
      [inflight(1_200, 700), 1_200]
    ])
    expect(gates(r)).toEqual([[0, "open"], [100, "paused"], [1_200, "open"]])
    expect(r.state.mode).toBe("probing")
  })

  it("stays paused while nothing progresses", () => {
    const r = Policy.replay(SharedPressure.policy, config({ maxPauseMillis: 1_000 }), [
      [inflight(100, 900), 100],
      [inflight(5_000, 700), 5_000],
      [inflight(60_000, 700), 60_000]
    ])
    expect(r.state.mode).toBe("paused")
  })

  it("never pauses longer than maxPause while uploads progress (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 200 }), (fills) => {
        const signals = fills.flatMap((bytes, i) => [
          [inflight(i * 100, bytes), i * 100] as const,
          [sample(i * 100 + 50, 20), i * 100 + 50] as const
        ])
        const r = Policy.replay(SharedPressure.policy, config({ maxPauseMillis: 500 }), signals)
        let pausedAt: number | undefined
        for (const [t, p] of r.proposals) {
          if (p.readGate === "paused") pausedAt = t
          else if (pausedAt !== undefined) {
            expect(t - pausedAt).toBeLessThanOrEqual(600)
            pausedAt = undefined
          }
        }
      }),
      { seed: 7, numRuns: 100 }
    )
  })

  it("rejects lowWater above highWater, naming the field", () => {
    expect(() => config({ lowWater: 0.9, highWater: 0.5 })).toThrow(/lowWater/)
  })
})
