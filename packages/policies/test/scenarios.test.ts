/**
 * Scenario proofs: every scenario under `packages/policies/scenarios/` is run
 * with its intended policy through the testkit runner (virtual clock) and its
 * `expect` bounds are asserted — on the scenario's own seed (the one its
 * constants were tuned on) and on five held-out seeds, {@link HELD_OUT_SEEDS},
 * that no constant was ever tuned on (every seed used while tuning was ≤ 16).
 * The margin of every bound on every seed is printed at the end.
 *
 * Every run also checks, from outside the pipeline, that bytes held never
 * exceeded the memory budget by more than one chunk and that nothing was
 * committed before it was verified.
 *
 * Where a bound is not met today the gap is listed in `KNOWN_GAPS` (per
 * scenario and seed) with the metric that misses; the test then asserts that
 * exactly those metrics miss (any other failing bound still fails the test, and
 * a gap that closes fails it too, so the list must be kept honest). The
 * scenarios are not weakened.
 */
import { Aimd, Composition } from "@sluice/policies"
import { Runner, Scenario, Summary } from "@sluice/testkit"
import type { Trace } from "@sluice/testkit"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync } from "node:fs"
import { join } from "node:path"

const dir = join(import.meta.dirname, "..", "scenarios")
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()

/** The policy each scenario proves (all: the default composition). */
const intended = (_name: string): string => "default"

/** Seeds never used to tune a constant. */
export const HELD_OUT_SEEDS = [1001, 1002, 1003, 1004, 1005] as const

/** Bounds the default composition does not meet yet, by `scenario@seed` (see the policies README, "Shipped scenarios"). */
const KNOWN_GAPS: Readonly<Record<string, ReadonlyArray<Summary.BoundFailure["metric"]>>> = {
  // (wide-knee, seeds 1001–1004: goodput 0.935–0.946 against 0.95 until the
  // oracle's bytes counted when the store would verify them, as the
  // pipeline's do — `Oracle.advance`; 0.962–0.983 on the six seeds since.)
  // (wide-fairness-3@1003: Jain 0.934 against 0.95 from partitions sealing
  // staggered, `batch.stagger`, until Throttle kept the level of the last
  // episode, `Throttle.cutTo`. The six seeds: 0.989, 0.963, 0.975, 0.994,
  // 0.961, 0.986 since; 0.950, 0.993, 0.971, 0.934, 0.977, 0.966 staggered
  // before it; 0.991, 0.997, 0.965, 0.976, 0.991, 0.939 in step, @1005 the gap.)
  // wide-knee@12 and @1005: 0.946 and 0.945 until the uploader took batches
  // oldest first (0.950 and 0.958 since; the other four 0.938–0.943, 0.935–0.944
  // before).
  // (wide-throttle-storm, seeds 14 and 1001–1005: 0.923, 0.948, 0.913, 0.915,
  // 0.942, 0.928 since the oracle's bytes count when verified; 0.894, 0.913,
  // 0.884, 0.886, 0.912, 0.898 since the uploader takes batches oldest first (mean 0.898);
  // 0.915, 0.893, 0.885, 0.922, 0.892, 0.863 before (mean 0.895); 0.788–0.836
  // before the store served no more than it throttles above —
  // `Store.servingLimit` — and Throttle cut from a round's lowest throttled
  // in-flight.)
  // (wide-fairness-3, the same six seeds: Jain 0.991, 0.997, 0.965, 0.976, 0.991,
  // 0.939 since age seals wait for the uploader's room; 0.998, 0.997, 0.975,
  // 0.975, 0.973, 0.952 since the uploader takes batches oldest first (mean 0.978); 0.984,
  // 0.945, 0.974, 0.967, 0.982, 0.973 before (mean 0.971), @1001 below the bound.)
}

/** How far each bound is from failing: actual − min, or max − actual (negative: failed). */
const margins = (summary: Summary.Summary, expect: Scenario.Scenario["expect"]): Array<string> =>
  Object.entries(expect).flatMap(([metric, bound]) => {
    const actual = summary[metric as Summary.BoundFailure["metric"]]
    const out: Array<string> = []
    if (bound?.min !== undefined) out.push(`${metric} ${actual} (min ${bound.min}, margin ${actual === null ? "-" : round(actual - bound.min)})`)
    if (bound?.max !== undefined) out.push(`${metric} ${actual} (max ${bound.max}, margin ${actual === null ? "-" : round(bound.max - actual)})`)
    return out
  })

const round = (x: number): number => Math.round(x * 1000) / 1000
const report: Array<string> = []

const load = (file: string) => Effect.runPromise(Scenario.load(join(dir, file)))

const run = (scenario: Scenario.Scenario, spec: string, policies: Runner.PoliciesLayer<unknown>) =>
  Effect.runPromise(Runner.run(scenario, { policy: spec, policies, floors: { concurrency: 1, batchBytes: 1 } }))

/** Throttled ÷ all requests over `[from, to)` (ms) of a trace. */
const throttleRateBetween = (trace: Trace.Trace, from: number, to: number): number => {
  let requests = 0
  let throttles = 0
  for (const row of trace.rows) {
    if (row.t <= from || row.t > to) continue
    requests += row.requests
    throttles += row.throttles
  }
  return requests === 0 ? 0 : throttles / requests
}

describe("scenarios", () => {
  afterAll(() => {
    console.log(`scenario proofs, margin to each bound (held-out seeds ${HELD_OUT_SEEDS.join(", ")}):\n${report.join("\n")}`)
  })
  for (const file of files) {
    it(`${file} meets its expect bounds with its intended policy, on its seed and 5 held-out seeds`, async () => {
      const tuned = await load(file)
      const spec = intended(tuned.name)
      const misses: Record<string, Array<string>> = {}
      const expected: Record<string, Array<string>> = {}
      for (const seed of [tuned.seed, ...HELD_OUT_SEEDS]) {
        const scenario = { ...tuned, seed }
        const { summary } = await run(scenario, spec, Composition.parse(spec))
        const id = `${tuned.name}@${seed}`
        expect(summary.failure, id).toBeNull()
        expect(summary.committedNotVerified, id).toBe(0)
        expect(summary.heldBytesMax, `${id}: held bytes`).toBeLessThanOrEqual(scenario.pipeline.memoryBudget + summary.largestChunkBytes)
        misses[id] = Summary.check(summary, scenario.expect).map((f) => f.metric).sort()
        expected[id] = [...(KNOWN_GAPS[id] ?? [])].sort()
        report.push(`${id}${seed === tuned.seed ? " (tuned)" : ""}: ${margins(summary, scenario.expect).join("; ")}`)
      }
      expect(misses).toEqual(expected)
    }, 300_000)
  }

  it("backs off within 10 s of a throttle storm: ≤ 1 % of requests throttled after that", async () => {
    const scenario = await load("wide-throttle-storm.json")
    const { trace } = await run(scenario, "default", Composition.parse("default"))
    // Storm from 30 s to 90 s: the target, ≤ 1 % (measured 0.8 % with
    // the delivery-rate default, 0.95 % with the previous one).
    expect(throttleRateBetween(trace, 40_000, 90_000)).toBeLessThanOrEqual(0.01)
  })

  it("throttle-storm (the testkit's): ≤ 1 % of requests throttled after the storm's first 10 s, on its seed and the held-out seeds", async () => {
    const tuned = await Effect.runPromise(Scenario.load(join(import.meta.dirname, "..", "..", "testkit", "scenarios", "throttle-storm.json")))
    const rates: Record<string, number> = {}
    for (const seed of [tuned.seed, ...HELD_OUT_SEEDS]) {
      const { trace } = await run({ ...tuned, seed }, "default", Composition.parse("default"))
      // Storm from 30 s to 90 s. Measured 0–0.4 %; 1.4–5.1 % before Throttle
      // kept a cut limit the pipeline seldom filled (`RESTORE_BUSY_SHARE`).
      rates[`throttle-storm@${seed}`] = round(throttleRateBetween(trace, 40_000, 90_000))
    }
    for (const [id, rate] of Object.entries(rates)) expect(rate, id).toBeLessThanOrEqual(0.01)
  }, 120_000)

  // Was a known gap (AIMD alone climbed back from the floor +1 per round, ~20 s);
  // closed by re-entering slow start once the storm has cleared.
  it("the shrinking-window trap: AIMD driven to its floor by a transient storm comes back within the bound", async () => {
    const shipped = await load("trap-throttle-floor.json")
    // The trap needs the floor: partitions sealing in step (`batch.stagger`
    // 0) send the storm a burst of uploads each cycle, whose throttles drive
    // AIMD to it. Staggered seals (the default) spread the uploads, and AIMD
    // bottoms out at 7 instead, with no trap to come back from.
    const scenario = { ...shipped, pipeline: { ...shipped.pipeline, batch: { ...shipped.pipeline.batch, stagger: 0 } } }
    const { summary, trace } = await run(scenario, "aimd", Aimd.layer())
    expect(Summary.check(summary, scenario.expect)).toEqual([])
    // Concurrency reached the floor during the storm (20 s – 30 s) …
    const storm = trace.rows.filter((r) => r.t > 21_000 && r.t <= 30_000)
    expect(Math.min(...storm.map((r) => r.concurrency))).toBeLessThanOrEqual(2)
    // … and was back above 20 within 15 s of its end.
    const after = trace.rows.filter((r) => r.t > 30_000 && r.t <= 45_000)
    expect(Math.max(...after.map((r) => r.concurrency))).toBeGreaterThanOrEqual(20)
    // Known gap: here the comeback is AIMD's additive increase (short rounds), not
    // its forced probe — the run is identical with `probe.enabled: false`. The
    // test that fails without the probe is aimd.test.ts, "recovery needs the probe".
  })
})
