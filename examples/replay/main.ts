/**
 * `npm run replay -- SCENARIO [--policy SPEC] [--scale X] [--cell-seconds S] [--oracle-repeats N] [--oracle-cache DIR] [--trace F.csv] [--plot F.svg] [--signals F.jsonl] [--json]`
 * (through scripts/replay.sh, which starts the S3 server and toxiproxy): see
 * Replay.ts. Progress on stderr; with --json the last stdout line is the summary.
 * Exit codes: 0 the run finished, 1 it failed, 2 bad options.
 */
import { createWriteStream, writeFileSync } from "node:fs"
import { Plot, Trace } from "@sluice/testkit"
import { Effect, Option } from "effect"
import { Argument, Flag } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { replay, simScenario } from "./Replay.ts"

const command = CommandLine.script(
  "replay",
  {
    scenario: Argument.String("scenario").pipe(Argument.withDescription("the scenario file (JSON) to replay")),
    policy: Flag.String("policy").pipe(
      Flag.withMetavar("SPEC"),
      Flag.withDescription("the policy, any spec sluice-sim accepts (default: default)"),
      Flag.withDefault("default")
    ),
    scale: Flag.Finite("scale").pipe(
      Flag.withMetavar("X"),
      Flag.withDescription("multiplies the inflow and every per-request bandwidth by X, in (0, 1] (default 1)"),
      Flag.withDefault(1)
    ),
    recordBytes: Flag.Int("record-bytes").pipe(
      Flag.withMetavar("N"),
      Flag.withDescription("carries the same bytes in records of N bytes, a whole number ≥ 16 (default: the scenario's)"),
      Flag.optional
    ),
    cellSeconds: Flag.Finite("cell-seconds").pipe(
      Flag.withMetavar("S"),
      Flag.withDescription("seconds per cell of the measured oracle, in (0, 30] (default 2)"),
      Flag.withDefault(2)
    ),
    oracleRepeats: Flag.Int("oracle-repeats").pipe(
      Flag.withMetavar("N"),
      Flag.withDescription("measurements of each phase's best cell, 1–10: their spread is in the summary (default 3)"),
      Flag.withDefault(3)
    ),
    oracleCache: CommandLine.lastValue("oracle-cache", "DIR", "keeps measured oracles per store state, scale and grid, and reuses them"),
    trace: CommandLine.lastValue("trace", "F.csv", "writes the run's trace, the simulator's columns (one row a second)"),
    plot: CommandLine.lastValue("plot", "F.svg", "writes the run's plot"),
    signals: CommandLine.lastValue("signals", "F.jsonl", "writes every signal the pipeline published, to replay through a policy offline"),
    writeSim: CommandLine.lastValue("write-sim", "F.json", "runs nothing: writes the scenario as scaled (--scale, --record-bytes), for sluice-sim run"),
    json: CommandLine.switchFlag("json", "the last stdout line is the summary")
  },
  "A scenario in real time through the real pipeline against the real S3 server behind toxiproxy and the store proxy. " +
    "Progress on stderr. Exit 0 the run finished, 1 it failed, 2 bad options.",
  { invocation: "npm run replay --" }
)

/** The line read, the ranges `effect/cli` does not check checked. */
const line = (() => {
  const line = command.read(process.argv.slice(2))
  if (line._tag !== "Run") return line
  const { scale, cellSeconds, recordBytes, oracleRepeats } = line.flags
  return !(scale > 0 && scale <= 1) || !(cellSeconds > 0 && cellSeconds <= 30) || Option.exists(recordBytes, (bytes) => !(bytes >= 16)) || !(oracleRepeats >= 1 && oracleRepeats <= 10)
    ? { _tag: "Invalid" as const, message: "replay: one scenario file, --scale in (0, 1], --cell-seconds in (0, 30], --record-bytes a whole number ≥ 16, --oracle-repeats 1–10" }
    : line
})()
const settled = CommandLine.settle(line, command.help)
if (settled === undefined) process.exit()
// Declared already narrowed: `run` below, a function declaration, would not see the narrowing of `settled`.
const values = settled
const { scenario, scale, cellSeconds, oracleRepeats } = values
const recordBytes = Option.getOrUndefined(values.recordBytes)
const writeSim = values.writeSim
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
  oracleCache: values.oracleCache,
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
