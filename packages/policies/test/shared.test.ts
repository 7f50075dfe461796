import { Policy } from "@sluice/core"
import { SharedPressure } from "@sluice/policies"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import * as Ablation from "./ablation.ts"
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

  it("does not pause when sealed and uploading batches already hold the low-water share (a store that got slower: memory bounds the uploads)", () => {
    // The concurrency limit (256 × 50 bytes) is far above what the budget
    // (1000) holds: with 700 sealed/uploading the uploads are memory-bound. A
    // pause would drain them to the low-water mark (500) before reading again
    // — fewer uploads in flight, not more (wide-slowdown-10x: ~60 → ~35).
    const held = (at: number, bytes: number, openBytes: number) => ({ ...inflight(at, bytes), openBytes })
    const memoryBound = Policy.replay(SharedPressure.policy, config(), [
      [sample(50, 40, { bytes: 50, limitAtStart: 256, inflightAtStart: 14 }), 50],
      [held(100, 900, 200), 100]
    ])
    expect(gates(memoryBound)).toEqual([[0, "open"]])
    // Open batches hold most of it (400 sealed/uploading < 500): pause and seal.
    const starved = Policy.replay(SharedPressure.policy, config(), [
      [sample(50, 40, { bytes: 50, limitAtStart: 256, inflightAtStart: 8 }), 50],
      [held(100, 900, 500), 100]
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

  it("the probe ends once the pressure is over: re-opened, then down to low water → open (not probing for the rest of the run)", () => {
    const r = Policy.replay(SharedPressure.policy, config({ maxPauseMillis: 1_000 }), [
      [inflight(100, 900), 100],
      [sample(500, 50), 500],
      [inflight(1_200, 700), 1_200],
      [inflight(1_300, 600), 1_300],
      [inflight(1_400, 450), 1_400]
    ])
    expect(gates(r)).toEqual([[0, "open"], [100, "paused"], [1_200, "open"]])
    expect(r.state.mode).toBe("open")
    // …and a later crossing of high water pauses again, as from open.
    const again = Policy.replay(SharedPressure.policy, config({ maxPauseMillis: 1_000 }), [
      [inflight(100, 900), 100],
      [sample(500, 50), 500],
      [inflight(1_200, 700), 1_200],
      [inflight(1_400, 450), 1_400],
      [inflight(1_500, 850), 1_500]
    ])
    expect(gates(again)).toEqual([[0, "open"], [100, "paused"], [1_200, "open"], [1_500, "paused"]])
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

// The ablation in the real pipeline (virtual clock): SharedPressure alone, 4
// uploads, a 1 GiB budget and 50 MB/s inflow over 128 partitions whose
// batches (8 MiB, maxAge 60 s) stay open long enough to hold the high-water
// mark; the storm and the slower store after it leave the store behind for
// good. Paused reads seal the open batches and uploads drain what is held, so
// the pressure does clear here — slowly: without the re-open probe a pause
// lasts until 30 % of the budget has drained at the store's pace. Measured
// (seeds 1–3): probed, a pause of 3.3–3.4 s before the storm (the open
// batches reach the mark), one of 5.0 s in it, then reading for the rest of
// the run; ablated, the same first pause, then one of 27.7–30.6 s while
// uploads progressed. Goodput against the oracle is the same in both (0.49:
// the store is the bottleneck); what the probe buys is reading, not bytes.
// (Until age seals waited for the uploader's room, 8 partitions with a 200 ms
// maxAge paused here: their small sealed batches queued. Now those batches
// stay open and fill, what is sealed feeds the uploads, and SharedPressure
// rightly does not pause — the pause would only seal small objects early.)
describe("SharedPressure in the simulated pipeline: its re-open probe is what ends a pause", () => {
  const maxPause = 5_000
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: pauses when the store falls behind; with the probe no pause outlasts maxPause while uploads progress, without it they do`, async () => {
      const scenario = await Effect.runPromise(Ablation.stormThenSlower(seed, {
        source: { recordsPerSecond: 333_000, recordBytes: 150, partitions: 128 },
        // Partitions sealing in step (`stagger` 0): their open batches reach
        // the high-water mark together. Staggered, they seal and free memory
        // at different moments and the storm pauses nothing in this world.
        pipeline: { memoryBudget: "1 GiB", concurrency: 4, batch: { records: 50_000, bytes: "8 MiB", maxAge: "60 seconds", stagger: 0 } }
      }))
      const { probed, ablated } = await Ablation.ablation(scenario, (options) => SharedPressure.layer({}, options))
      const withProbe = Ablation.pauses(probed)
      const without = Ablation.pauses(ablated)
      // Backoff: reads pause once the store is behind (the storm), in both runs.
      expect(withProbe.some((p) => p.from >= Ablation.stormFrom)).toBe(true)
      expect(without.some((p) => p.from >= Ablation.stormFrom)).toBe(true)
      // Floor and re-open: with the probe every pause during which uploads
      // progressed ends within maxPause (+ one 100 ms sample) …
      for (const p of withProbe) if (p.progressing) expect(p.millis).toBeLessThanOrEqual(maxPause + 200)
      // … without it, a pause lasts at least three times that.
      expect(Math.max(...without.filter((p) => p.progressing).map((p) => p.millis))).toBeGreaterThanOrEqual(3 * maxPause)
      // The probe costs no goodput.
      expect(Ablation.goodputShare(probed, 0, 120_000)).toBeGreaterThanOrEqual(Ablation.goodputShare(ablated, 0, 120_000) - 0.02)
    })
  }
})
