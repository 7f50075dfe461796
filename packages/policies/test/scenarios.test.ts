/**
 * Scenario proofs: every scenario under `packages/policies/scenarios/` is run
 * with its intended policy through the testkit runner (virtual clock) and its
 * `expect` bounds are asserted.
 *
 * Where a bound is not met today the gap is listed in `KNOWN_GAPS` with the
 * metric that misses; the test then asserts that exactly those metrics miss
 * (any other failing bound still fails the test, and a gap that closes fails
 * it too, so the list must be kept honest). The scenarios are not weakened.
 */
import { Aimd, Composition } from "@sluice/policies"
import { Runner, Scenario, Summary } from "@sluice/testkit"
import type { Trace } from "@sluice/testkit"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync } from "node:fs"
import { join } from "node:path"

const dir = join(import.meta.dirname, "..", "scenarios")
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()

/** The policy each scenario proves (all: the default composition). */
const intended = (_name: string): string => "default"

/** Bounds the default composition does not meet yet (see README, "Targets"). */
const KNOWN_GAPS: Readonly<Record<string, ReadonlyArray<Summary.BoundFailure["metric"]>>> = {
}

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
  for (const file of files) {
    it(`${file} meets its expect bounds with its intended policy`, async () => {
      const scenario = await load(file)
      const spec = intended(scenario.name)
      const { summary } = await run(scenario, spec, Composition.parse(spec))
      expect(summary.failure).toBeNull()
      expect(summary.committedNotVerified).toBe(0)
      const failed = Summary.check(summary, scenario.expect).map((f) => f.metric).sort()
      expect(failed).toEqual([...(KNOWN_GAPS[scenario.name] ?? [])].sort())
    })
  }

  it("backs off within 10 s of a throttle storm: ≤ 1 % of requests throttled after that", async () => {
    const scenario = await load("wide-throttle-storm.json")
    const { trace } = await run(scenario, "default", Composition.parse("default"))
    // Storm from 30 s to 90 s: the target, ≤ 1 % (measured 0.95 %).
    expect(throttleRateBetween(trace, 40_000, 90_000)).toBeLessThanOrEqual(0.01)
  })

  // Was a known gap (AIMD alone climbed back from the floor +1 per round, ~20 s);
  // closed by re-entering slow start once the storm has cleared.
  it("the shrinking-window trap: AIMD driven to its floor by a transient storm comes back within the bound", async () => {
    const scenario = await load("trap-throttle-floor.json")
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
