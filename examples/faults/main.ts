/**
 * `npm run faults` (issue 27): the example archiver (`examples/kafka-to-s3/main.ts`,
 * a child process) against each fault of its dependencies, for real — the S3
 * server and the broker killed and restarted, connections stalled, reset and
 * cut through toxiproxy, kills aimed at the gaps between PUT, manifest, verify
 * and commit, the S3 server's disk full — and after each, the bucket audited
 * against the group's committed offsets (`sluice audit`), from outside.
 *
 *   npm run faults -- [--only NAME[,NAME…]] [--smoke] [--json]
 *
 * `scripts/faults.sh` starts the services in a folder of their own
 * (`.services/faults/`, ports of their own), so the faults never touch the
 * instances the test suite shares. `--smoke`: one fault of each class, each a
 * few seconds (what `npm test` runs). Writes `reports/faults-<time>/` (each
 * fault's archiver logs, settings and audits, and `result.json`); with
 * `--json` the last stdout line is `{ faults: [FaultRow…], lost }`. Exit 0
 * only when every fault is `ok`.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as CommandLine from "@sluice/core/CommandLine"
import type { FaultRow } from "./FaultRow.ts"
import * as Faults from "./Faults.ts"
import type { Endpoints } from "./Run.ts"

const command = CommandLine.script(
  "faults",
  {
    only: CommandLine.lastValue("only", "NAME[,NAME…]", `run only these faults, comma-separated: ${Faults.all.map((f) => f.name).join(", ")}`),
    smoke: CommandLine.switchFlag("smoke", "one fault of each class, each a few seconds (what npm test runs)"),
    json: CommandLine.switchFlag("json", "the last stdout line is { faults: [FaultRow…], lost }")
  },
  "The example archiver against each fault of its dependencies, for real, each run audited against the group's committed offsets. " +
    "Writes reports/faults-<time>/. Exit 0 only when every fault is ok, 2 on a usage error.",
  { invocation: "npm run faults --" }
)

/** The line read, `--only`'s names checked against the faults. */
const line = ((): CommandLine.ScriptLine<{ readonly only: ReadonlyArray<string> | undefined; readonly smoke: boolean; readonly json: boolean }> => {
  const line = command.read(process.argv.slice(2))
  if (line._tag !== "Run") return line
  const { smoke, json } = line.flags
  const only = line.flags.only?.split(",").map((n) => n.trim()).filter((n) => n !== "")
  const unknown = only?.filter((n) => !Faults.all.some((f) => f.name === n)) ?? []
  return unknown.length > 0
    ? { _tag: "Invalid", message: `faults: --only: no fault named ${unknown.join(", ")}` }
    : { _tag: "Run", flags: { only, smoke, json } }
})()
const options = CommandLine.settle(line, command.help)
if (options === undefined) process.exit()

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value.trim() === "") {
    console.error(`faults: ${name} is not set: run it with \`npm run faults\` (scripts/faults.sh starts the services)`)
    process.exit(2)
  }
  return value.trim()
}
const [broker, ...more] = env("SLUICE_KAFKA_BROKERS").split(",")
const endpoints: Endpoints = {
  brokers: [broker ?? "", ...more],
  s3: { endpoint: env("SLUICE_S3_ENDPOINT"), region: process.env["SLUICE_S3_REGION"] ?? "us-east-1", accessKeyId: env("SLUICE_S3_ACCESS_KEY"), secretAccessKey: env("SLUICE_S3_SECRET_KEY") },
  toxiproxyUrl: env("SLUICE_TOXIPROXY_URL")
}

const chosen = Faults.all.filter((f) => options.only !== undefined ? options.only.includes(f.name) : !options.smoke || f.smoke)
const reportDir = join("reports", `faults-${new Date().toISOString().replace(/[:.]/g, "-")}`)
mkdirSync(reportDir, { recursive: true })
const log = (line: string) => process.stderr.write(`faults: ${line}\n`)
const rows: Array<FaultRow> = []
for (const fault of chosen) {
  const started = Date.now()
  log(`${fault.name}: start`)
  try {
    const out = await fault.run({ endpoints, reportDir, scale: options.smoke ? "smoke" : "full", log })
    rows.push(...(Array.isArray(out) ? out : [out]))
  } catch (error) {
    // A fault whose harness failed (a service that would not restart, …) is a failed row, not a crash of the run.
    rows.push({
      name: fault.name,
      injected: 0,
      records: 0,
      found: 0,
      lost: 0,
      duplicates: 0,
      recoverySeconds: null,
      exit: null,
      ok: false,
      detail: `FAILED: the fault run itself failed: ${error instanceof Error ? error.message : String(error)}`
    })
  }
  const row = rows[rows.length - 1]
  log(`${fault.name}: ${row?.ok === true ? "ok" : "NOT OK"} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${JSON.stringify(row)}`)
}
const lost = rows.reduce((s, r) => s + r.lost, 0)
const result = { faults: rows, lost }
writeFileSync(join(reportDir, "result.json"), JSON.stringify(result, null, 2))
const table = [
  "| fault | injected | records | found | lost | duplicates | recovery s | exit | ok |",
  "|---|---|---|---|---|---|---|---|---|",
  ...rows.map((r) => `| ${r.name} | ${r.injected} | ${r.records} | ${r.found} | ${r.lost} | ${r.duplicates} | ${r.recoverySeconds === null ? "—" : r.recoverySeconds.toFixed(1)} | ${String(r.exit)} | ${r.ok ? "ok" : "NOT OK"} |`)
]
writeFileSync(join(reportDir, "summary.md"), `${table.join("\n")}\n\n${rows.map((r) => `- ${r.name}: ${r.detail}`).join("\n")}\n`)
console.error(table.join("\n"))
for (const r of rows.filter((r) => !r.ok)) console.error(`${r.name}: ${r.detail}`)
log(`report in ${reportDir}`)
if (options.json) console.log(JSON.stringify(result))
process.exitCode = rows.length > 0 && rows.every((r) => r.ok) && lost === 0 ? 0 : 1
