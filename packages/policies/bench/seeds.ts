/**
 * Held-out-seed measurements: runs scenario files × policy specs × seeds
 * through the testkit runner and prints one JSON line per run (the summary's
 * headline metrics, its phases, the throttle rate after the first 10 s of every
 * degraded phase, and the `expect` bounds that failed).
 *
 * ```sh
 * npm run build
 * npx node packages/policies/bench/seeds.ts --policy default --policy aimd \
 *   --seeds tuned,1001,1002,1003,1004,1005 [--shard 0/2] packages/policies/scenarios/*.json
 * ```
 *
 * `--seeds tuned` is the scenario's own seed. `--shard i/n` runs every n-th job
 * (to use several cores: one process per shard). `SLUICE_POLICIES=<path to a
 * built index.js>` measures another build of the policies (e.g. a copy of
 * yesterday's `dist`) against today's core and testkit.
 */
import { Effect, Layer } from "effect"
import type { Runner as RunnerTypes } from "@sluice/testkit"
import { PolicySpec, Runner, Scenario, Summary, Trace } from "@sluice/testkit"
import { writeFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const args = process.argv.slice(2)
const policies: Array<string> = []
const files: Array<string> = []
let seeds: Array<string> = ["tuned"]
let shard = [0, 1]
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === "--policy") policies.push(args[++i] ?? "default")
  else if (a === "--seeds") seeds = (args[++i] ?? "tuned").split(",")
  else if (a === "--shard") shard = (args[++i] ?? "0/1").split("/").map(Number)
  else if (a !== undefined) files.push(a)
}

const alternative = process.env["SLUICE_POLICIES"]

const resolve = (spec: string): Effect.Effect<RunnerTypes.PoliciesLayer<unknown> | undefined, unknown> =>
  alternative === undefined || spec.startsWith("fixed:")
    ? Effect.map(PolicySpec.resolve(spec), (r) => r.policies)
    : Effect.gen(function*() {
      const mod: { readonly Composition: { readonly parse: (spec: string) => unknown } } = yield* Effect.promise(() =>
        import(pathToFileURL(alternative).href)
      )
      const parsed = mod.Composition.parse(spec)
      return Layer.isLayer(parsed) ? (parsed as RunnerTypes.PoliciesLayer<unknown>) : undefined
    })

const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 1000) / 1000)

const job = (file: string, spec: string, seedText: string) =>
  Effect.gen(function*() {
    const loaded = yield* Scenario.load(file)
    const scenario = { ...loaded, seed: seedText === "tuned" ? loaded.seed : Number(seedText) }
    const layer = yield* resolve(spec)
    const { summary, trace } = yield* Runner.run(scenario, { policy: spec, policies: layer })
    // `TRACE_DIR=dir`: also writes each run's trace as CSV (dir/scenario@seed.policy.csv).
    const dir = process.env["TRACE_DIR"]
    if (dir !== undefined) writeFileSync(`${dir}/${scenario.name}@${scenario.seed}.${spec}.csv`, Trace.toCsv(trace))
    // Throttles ÷ requests after the first 10 s of each degraded phase (the storm budget).
    const stormRates = summary.phases.filter((p) => p.degraded && p.to - p.from > 10).map((p) => {
      let requests = 0
      let throttles = 0
      for (const row of trace.rows) {
        if (row.t <= (p.from + 10) * 1000 || row.t > p.to * 1000) continue
        requests += row.requests
        throttles += row.throttles
      }
      return requests === 0 ? 0 : throttles / requests
    })
    return {
      scenario: scenario.name,
      seed: scenario.seed,
      tuned: seedText === "tuned",
      policy: spec,
      goodputRatio: summary.goodputRatio,
      worstPhaseGoodput: summary.worstPhaseGoodput,
      maxLagSeconds: summary.maxLagSeconds,
      meanLagSeconds: summary.meanLagSeconds,
      throttleRate: summary.throttleRate,
      stormThrottleRate: stormRates.length === 0 ? null : round(Math.max(...stormRates)),
      recoverySeconds: summary.recoverySeconds,
      heldOk: summary.heldBytesMax <= scenario.pipeline.memoryBudget + summary.largestChunkBytes,
      heldOverBudget: summary.heldBytesMax - scenario.pipeline.memoryBudget,
      largestChunk: summary.largestChunkBytes,
      floorViolations: summary.floorViolations,
      failure: summary.failure,
      committedNotVerified: summary.committedNotVerified,
      failed: Summary.check(summary, scenario.expect).map((f) => f.metric),
      phases: summary.phases.map((p) => ({
        from: p.from,
        to: p.to,
        degraded: p.degraded,
        keepsUp: p.oracleKeepsUp,
        goodput: p.goodputRatio,
        maxLag: p.maxLagSeconds
      }))
    }
  })

const jobs = files.flatMap((file) => policies.flatMap((spec) => seeds.map((seed) => [file, spec, seed] as const)))
const [index = 0, count = 1] = shard
for (let i = 0; i < jobs.length; i++) {
  if (i % count !== index) continue
  const [file, spec, seed] = jobs[i] ?? ["", "", ""]
  const line = await Effect.runPromise(Effect.match(job(file, spec, seed), {
    onFailure: (e) => ({ file, policy: spec, seed, error: String(e) }),
    onSuccess: (r) => r
  }))
  console.log(JSON.stringify(line))
}
