/**
 * `npm run bench:sim`: wall time to simulate 300 virtual seconds of the knee-24
 * scenario (1M records/s of 150 B, 24 partitions, knee 24, a 10x slowdown from
 * 60 s to 120 s) with `fixed:8`, reported as × real time. Also runs the issue's
 * example verbatim (the pipeline's default 10 000-record batches: 5x more
 * requests to simulate). It takes no flags ({@link command}: `-- --help`).
 *
 * @since 0.1.0
 */
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { Fixed } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"

/**
 * `bench:sim`'s command line: no flags, only `--help` and `--completions`;
 * anything else is refused, not ignored.
 *
 * @since 0.5.0
 */
export const command = CommandLine.script(
  "bench:sim",
  {},
  "Wall time to simulate 300 virtual seconds of knee-24 (1M records/s, 24 partitions, a 10x slowdown from 60 s to 120 s) with fixed:8, as × real time (target ≥ 100x); then the issue's example verbatim (10 000-record batches).",
  { invocation: "npm run bench:sim --" }
)

const scenarioPath = [new URL("../scenarios/knee-24.json", import.meta.url), new URL("../../scenarios/knee-24.json", import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((p) => existsSync(p))

const measure = (label: string, scenario: Scenario.Scenario) =>
  Effect.gen(function*() {
    const result = yield* Runner.run(scenario, { policy: "fixed:8", policies: Fixed.layer({ concurrency: 8 }), floors: { concurrency: 8 } })
    const s = result.summary
    const speedup = (s.durationSeconds * 1000) / s.wallMillis
    console.log(
      `${label}: ${s.durationSeconds} virtual s in ${s.wallMillis} ms wall = ${speedup.toFixed(0)}x real time ` +
        `(${s.requests} store requests, ${(s.bytesVerified / 1e9).toFixed(1)} GB verified, goodputRatio ${s.goodputRatio})`
    )
    return speedup
  })

const program = Effect.gen(function*() {
  if (scenarioPath === undefined) return yield* Effect.die(new Error("scenarios/knee-24.json not found"))
  const shipped = yield* Scenario.load(scenarioPath)
  const speedup = yield* measure("knee-24 (shipped, 50k-record batches)", shipped)
  const verbatim = yield* Scenario.decode({
    ...JSON.parse(JSON.stringify({ ...shipped, pipeline: undefined, expect: undefined })),
    duration: 300_000,
    pipeline: { memoryBudget: "256 MiB" }
  })
  yield* measure("knee-24 (issue example verbatim, default 10k-record batches)", verbatim)
  console.log(speedup >= 100 ? "target >= 100x: met" : "target >= 100x: NOT met")
})

if (import.meta.main) {
  if (CommandLine.settle(command.read(process.argv.slice(2)), command.help) !== undefined) Effect.runPromise(program)
}
