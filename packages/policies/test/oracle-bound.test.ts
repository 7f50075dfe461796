/**
 * The oracle is an upper bound: no built-in policy or composition, and no
 * deliberately greedy configuration (the largest batches the memory budget
 * allows, concurrency at the store's knee), scores a `goodputRatio` above 1.02
 * on any shipped scenario. A ratio above ~1 would mean the oracle's capacity
 * model is wrong, and then no ratio below 1 means anything either.
 *
 * Every spec on every scenario is 253 runs (23 scenarios; ~450 s of one core). Inside
 * `npm test` this file runs the greedy configuration and the default composition
 * on every scenario plus two more specs per scenario, rotating through the list
 * so each spec meets 5-6 scenarios (92 runs); `npm run test:oracle-bound` sets
 * `SLUICE_ORACLE_FULL=1` and runs all of them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Fixed } from "@sluice/core"
import { PolicySpec, Runner, Scenario } from "@sluice/testkit"
import { readdirSync } from "node:fs"
import { join } from "node:path"

const dirs = [
  join(import.meta.dirname, "../../testkit/scenarios"),
  join(import.meta.dirname, "../scenarios")
]
const files = dirs.flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => join(dir, f)))
const specs = ["default", "classic", "aimd", "deliveryrate", "throttle", "shared", "batch", "gradient2", "vegas", "fixed:8"]
const full = process.env["SLUICE_ORACLE_FULL"] === "1"
/** The specs run on the i-th scenario: all of them, or the default plus two rotating others. */
const specsFor = (i: number): ReadonlyArray<string> => {
  if (full) return specs
  const others = specs.slice(1)
  return ["default", others[(2 * i) % others.length]!, others[(2 * i + 1) % others.length]!]
}

/** Concurrency at the knee, batches as large as the budget allows at that concurrency. */
const greedy = (scenario: Scenario.Scenario) => {
  const concurrency = scenario.store.knee
  return Fixed.layer({
    concurrency,
    batchRecords: 1_000_000_000,
    batchBytes: Math.max(scenario.source.recordBytes, Math.floor(scenario.pipeline.memoryBudget / (concurrency + 1)))
  })
}

describe(full ? "the oracle bounds every policy" : "the oracle bounds every policy (rotating smoke; the full run is npm run test:oracle-bound)", () => {
  it("the rotation meets every spec", () => {
    const met = new Set(files.flatMap((_, i) => specsFor(i)))
    expect([...met].sort()).toEqual([...specs].sort())
  })
  files.forEach((file, i) => {
    it(`${file.split("/").slice(-2).join("/")}: ${specsFor(i).join(", ")}, greedy`, () =>
      Effect.gen(function*() {
        const scenario = yield* Scenario.load(file)
        const ratios: Array<string> = []
        let worst = 0
        for (const spec of specsFor(i)) {
          const policy = yield* PolicySpec.resolve(spec)
          const { summary } = yield* Runner.run(scenario, { policy: spec, policies: policy.policies })
          ratios.push(`${spec} ${summary.goodputRatio}`)
          worst = Math.max(worst, summary.goodputRatio)
        }
        const { summary } = yield* Runner.run(scenario, { policy: "greedy", policies: greedy(scenario) })
        ratios.push(`greedy ${summary.goodputRatio}`)
        worst = Math.max(worst, summary.goodputRatio)
        expect(worst, ratios.join(", ")).toBeLessThanOrEqual(1.02)
        // The greedy configuration is a real contender, not a straw man.
        expect(summary.failure, `greedy failed: ${summary.failure}`).toBeNull()
      }).pipe(Effect.runPromise), 600_000)
  })
})
