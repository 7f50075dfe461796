/**
 * `npm run replay -- SCENARIO [--policy SPEC] [--scale X] [--cell-seconds S] [--oracle-repeats N] [--oracle-cache DIR] [--trace F.csv] [--plot F.svg] [--signals F.jsonl] [--json]`
 * (through scripts/replay.sh, which starts the S3 server and toxiproxy): see
 * Replay.ts. Progress on stderr; with --json the last stdout line is the summary.
 * Exit codes: 0 the run finished, 1 it failed, 2 bad options.
 */
import { parseArgs } from "node:util"
import { createWriteStream, writeFileSync } from "node:fs"
import { Plot, Trace } from "@sluice/testkit"
import { Effect } from "effect"
import { replay, simScenario } from "./Replay.ts"

const usage = "usage: npm run replay -- SCENARIO [--policy default] [--scale 1] [--record-bytes N] [--cell-seconds 2] [--oracle-repeats 3] [--oracle-cache DIR] [--trace F.csv] [--plot F.svg] [--signals F.jsonl] [--json] | SCENARIO [--scale X] [--record-bytes N] --write-sim F.json"
let parsed
try {
  parsed = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: {
      policy: { type: "string", default: "default" },
      scale: { type: "string", default: "1" },
      "cell-seconds": { type: "string", default: "2" },
      "oracle-repeats": { type: "string", default: "3" },
      "oracle-cache": { type: "string" },
      "record-bytes": { type: "string" },
      trace: { type: "string" },
      plot: { type: "string" },
      signals: { type: "string" },
      "write-sim": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false }
    }
  })
} catch (error) {
  process.stderr.write(`replay: ${error instanceof Error ? error.message : String(error)}\n${usage}\n`)
  process.exit(2)
}
const { values, positionals } = parsed
if (values.help) {
  process.stdout.write(`${usage}\n`)
  process.exit(0)
}
const scale = Number(values.scale)
const cellSeconds = Number(values["cell-seconds"])
const oracleRepeats = Number(values["oracle-repeats"])
const recordBytes = values["record-bytes"] === undefined ? undefined : Number(values["record-bytes"])
const [scenario] = positionals
if (scenario === undefined || positionals.length > 1 || !(scale > 0 && scale <= 1) || !(cellSeconds > 0 && cellSeconds <= 30) || (recordBytes !== undefined && !(Number.isInteger(recordBytes) && recordBytes >= 16)) || !(Number.isInteger(oracleRepeats) && oracleRepeats >= 1 && oracleRepeats <= 10)) {
  process.stderr.write(`replay: one scenario file, --scale in (0, 1], --cell-seconds in (0, 30], --record-bytes a whole number ≥ 16, --oracle-repeats 1–10\n${usage}\n`)
  process.exit(2)
}
const writeSim = values["write-sim"]
if (writeSim !== undefined) {
  // The simulator's side of the comparison: the scenario as this replay scales it, written for `sluice-sim run`.
  simScenario(scenario, scale, recordBytes).then(
    (scaled) => writeFileSync(writeSim, `${JSON.stringify(scaled, null, 2)}\n`),
    (error: unknown) => {
      process.stderr.write(`replay: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exitCode = 2
    }
  )
} else run(scenario)

function run(scenario: string) {
const env = (name: string) => {
  const v = process.env[name]
  if (v === undefined || v === "") {
    process.stderr.write(`replay: ${name} is not set (run through \`npm run replay\`, which starts the services)\n`)
    process.exit(2)
  }
  return v
}
const log = (line: string) => process.stderr.write(`${line}\n`)
const signals = values.signals === undefined ? undefined : createWriteStream(values.signals)
replay({
  scenario,
  policy: values.policy,
  scale,
  recordBytes,
  cellSeconds,
  oracleRepeats,
  oracleCache: values["oracle-cache"],
  s3: { endpoint: env("SLUICE_S3_ENDPOINT"), region: process.env["SLUICE_S3_REGION"] ?? "us-east-1", accessKeyId: env("SLUICE_S3_ACCESS_KEY"), secretAccessKey: env("SLUICE_S3_SECRET_KEY") },
  toxiproxy: env("SLUICE_TOXIPROXY_URL"),
  log,
  onSignal: signals === undefined ? undefined : (signal) => signals.write(`${JSON.stringify(signal)}\n`)
}).then(
  async ({ summary, trace }) => {
    if (values.trace !== undefined) writeFileSync(values.trace, Trace.toCsv(trace))
    if (values.plot !== undefined) writeFileSync(values.plot, await Effect.runPromise(Plot.toSvg(trace, `${summary.scenario} · ${summary.policy} · real (replay)`)))
    for (const p of summary.phases) {
      log(`phase ${p.from}-${p.to} s${p.degraded ? " (degraded)" : ""}: goodput ${p.goodputRatio} of the measured oracle, max lag ${p.maxLagSeconds} s, capacity ${(p.capacityBytesPerSecond / 1e6).toFixed(1)} MB/s, ` +
        `knee ${p.knee} (measured ${p.measuredKnee}${p.measuredKnee < p.knee ? ": the host's binds" : ""})`)
    }
    log(`not mapped: ${summary.notMapped.join("; ")}`)
    if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`)
    process.exitCode = summary.failure === null ? 0 : 1
  },
  (error: unknown) => {
    process.stderr.write(`replay failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
    process.exitCode = 1
  }
)
}
