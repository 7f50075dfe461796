/**
 * `npm run brokers -- [--scenario NAME]… [--duration S] [--phase-seconds S] [--json]`
 * (issue 13 item 6): broker-side scenarios on a real 3-node Kafka cluster —
 * replication-throttle, producer-flood, slow-beside-fast, mtls-long (see
 * `Scenarios.ts`). `scripts/brokers.sh` starts the cluster and the S3 server
 * and exports their environment; this runs the scenarios one after the other,
 * writes `reports/brokers-<time>/` (summary.md, result.json, a CSV per
 * scenario) and exits 0 only when every scenario passed (1 otherwise, 2 on a
 * usage error). With `--json` the last stdout line is `result.json`'s object.
 */
import { performance } from "node:perf_hooks"
import * as CommandLine from "@sluice/core/CommandLine"
import * as Cluster from "./Cluster.ts"
import * as Options from "./Options.ts"
import * as Report from "./Report.ts"
import * as Run from "./Run.ts"
import * as Scenarios from "./Scenarios.ts"

const argv = process.argv.slice(2)
/** The line {@link Options.parse} read, as `CommandLine.settle` takes it (a {@link Options.UsageError} refuses it). */
const line = ((): CommandLine.ScriptLine<Options.Options> => {
  try {
    const request = Options.parse(argv)
    return request._tag === "Run" ? { _tag: "Run", flags: request.options } : request
  } catch (error) {
    if (!(error instanceof Options.UsageError)) throw error
    return { _tag: "Invalid", message: error.message }
  }
})()
const options = CommandLine.settle(line, Options.command.help)
if (options === undefined) process.exit()

const started = new Date()
const t0 = performance.now()
const cluster = Cluster.fromEnv()
const s3 = Run.s3FromEnvironment()
const admin = Cluster.admin(cluster)
const outcomes: Array<Scenarios.Outcome> = []
const crashed: Array<Report.Crashed> = []
try {
  for (const name of options.scenarios) {
    Run.log(`${name}: starting`)
    const id = `${Date.now().toString(36)}-${process.pid}`
    try {
      const outcome = await Scenarios.byName[name]({ cluster, s3, admin, phaseSeconds: options.phaseSeconds, durationSeconds: options.durationSeconds, id })
      outcomes.push(outcome)
      Run.log(`${name}: ${outcome.verdict.pass ? "PASS" : "FAIL"}`)
      for (const c of outcome.verdict.checks) Run.log(`  ${c.ok ? "✓" : "✗"} ${c.name}: ${c.detail}`)
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error)
      crashed.push({ name, error: text })
      Run.log(`${name}: FAIL (did not finish): ${text}`)
    }
  }
} finally {
  await admin.close().catch(() => undefined)
}
const dir = Report.write(options.out, Report.folderName(started), argv, outcomes, crashed, started, (performance.now() - t0) / 1000)
const result = Report.result(outcomes, crashed, dir)
Run.log(`${result.pass ? "PASS" : "FAIL"}; report ${dir}/summary.md`)
if (options.json) console.log(JSON.stringify(result))
process.exitCode = result.pass ? 0 : 1
