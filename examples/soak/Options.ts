/**
 * soak — the command line (`npm run soak -- --rate R --duration D [--source
 * synthetic|kafka] [--sink memory|s3] [--json] [--partitions P]
 * [--record-bytes B] [--out DIR]`): its flags as an `effect/cli` definition
 * ({@link command}, which also gives `--help` and `--completions`), and the
 * values it reads decoded with an `effect/Schema` (through
 * `Config.decodeResult`, so every bad value is reported at once, naming its
 * flag: `soak: Expected a rate of records per second greater than 0, got
 * -1\n  at ["rate"]`). An unknown flag, a missing value or a bad choice is
 * refused by `effect/cli`, in its words.
 *
 * Rates accept `250000`, `250_000`, `2.5e5`, `250k` or `1M`; durations `60`
 * (seconds), `60s`, `5m` or `90 seconds`.
 */
import { Config } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"
import { Flag } from "effect/cli"
import type { PayloadKind } from "./SyntheticSource.ts"

/** Where records come from: the rate-paced generator in this process, or a topic on the local broker fed by a producer at the rate. */
export type SourceKind = "synthetic" | "kafka"
/** Where batches go: an in-process store that keeps checksums until verified, or a bucket on the local S3 server. */
export type SinkKind = "memory" | "s3"

const SOURCES = ["synthetic", "kafka"] as const satisfies ReadonlyArray<SourceKind>
const SINKS = ["memory", "s3"] as const satisfies ReadonlyArray<SinkKind>
/** How the synthetic source makes its records' bytes (`SyntheticSource.PayloadKind`). */
const PAYLOADS = ["pooled", "fresh"] as const satisfies ReadonlyArray<PayloadKind>

const SUFFIX: ReadonlyMap<string, number> = new Map([["", 1], ["k", 1e3], ["m", 1e6], ["g", 1e9]])

/** Reads `250000`, `250_000`, `2.5e5`, `250k`, `1M`; `undefined` when the text is not a number. */
export const parseCount = (text: string): number | undefined => {
  const m = /^\s*(-?[\d_]*\.?\d+(?:e[+-]?\d+)?)\s*([kmg]?)\s*$/i.exec(text)
  if (m === null) return undefined
  const factor = SUFFIX.get((m[2] ?? "").toLowerCase())
  const n = Number((m[1] ?? "").replace(/_/g, ""))
  return factor === undefined || Number.isNaN(n) ? undefined : n * factor
}

/** Reads `60` (seconds), `60s`, `5m`, `90 seconds` to milliseconds. */
export const parseDuration = (text: string): number | undefined =>
  /^\s*-?\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) * 1000 : Config.parseMillis(text)

/** Text decoded by `parse`, then checked by `ok`; messages name the input as written. */
const parsed = (what: string, parse: (text: string) => number | undefined, ok: (n: number) => string | undefined) =>
  Schema.String.pipe(
    Schema.decodeTo(Schema.Finite, {
      decode: SchemaGetter.transformEffect<number, string>((text, options) => {
        const n = parse(text)
        const problem = n === undefined || !Number.isFinite(n) ? `Expected ${what}, got ${JSON.stringify(text)}` : ok(n)
        return problem === undefined ? Effect.succeed(n ?? 0) : Effect.fail(new SchemaIssue.InvalidValue({ message: problem }, text, options))
      }),
      encode: SchemaGetter.transform((n: number) => String(n))
    })
  )

/**
 * The soak's options, decoded from the values {@link command} read (its
 * defaults: synthetic source, memory sink, 8 partitions, 150-byte records,
 * reports under `reports/`).
 */
export const Options = Schema.Struct({
  rate: parsed("a rate of records per second (250000, 250k, 1M)", parseCount, (n) =>
    n > 0 ? undefined : `Expected a rate of records per second greater than 0, got ${n}`),
  duration: parsed("a duration (60, 60s, 5m)", parseDuration, (n) =>
    n >= 1000 ? undefined : `Expected a duration of at least 1 second, got ${n} ms`),
  source: Schema.Literals(SOURCES),
  sink: Schema.Literals(SINKS),
  payloads: Schema.Literals(PAYLOADS),
  json: Schema.Boolean,
  partitions: parsed("a whole number of partitions", parseCount, (n) =>
    Number.isInteger(n) && n >= 1 && n <= 1024 ? undefined : `Expected a whole number of partitions from 1 to 1024, got ${n}`),
  recordBytes: parsed("a record size in bytes", parseCount, (n) =>
    Number.isInteger(n) && n >= 16 ? undefined : `Expected a whole number of bytes ≥ 16, got ${n}`),
  out: Schema.NonEmptyString
})

/** The decoded options. */
export type Options = typeof Options.Type

/**
 * The `npm run soak` command line: its flags (the counts and durations as
 * text, decoded by {@link Options}), the help generated from them, and a
 * reader of argument lists.
 */
export const command = CommandLine.script("soak", {
  rate: Flag.String("rate").pipe(
    Flag.withMetavar("R"),
    Flag.withDescription("records per second offered, required (250000, 250_000, 2.5e5, 250k, 1M)")
  ),
  duration: Flag.String("duration").pipe(
    Flag.withMetavar("D"),
    Flag.withDescription("how long to offer them, at least 1 s, required (60 = seconds, 60s, 5m); then the pipeline drains")
  ),
  // Choices as text, decoded by the schema with the other values: every bad value is named at once.
  source: Flag.String("source").pipe(
    Flag.withMetavar(SOURCES.join("|")),
    Flag.withDefault("synthetic"),
    Flag.withDescription("synthetic (default): rate-paced, in process; kafka: the local broker, fed by a producer at the rate")
  ),
  sink: Flag.String("sink").pipe(
    Flag.withMetavar(SINKS.join("|")),
    Flag.withDefault("memory"),
    Flag.withDescription("memory (default): in process; s3: a bucket on the local S3 server")
  ),
  payloads: Flag.String("payloads").pipe(
    Flag.withMetavar(PAYLOADS.join("|")),
    Flag.withDefault("pooled"),
    Flag.withDescription(
      "the synthetic source's record bytes: pooled (default; a 40 MiB pool reused at later offsets, so the soak " +
        "measures the pipeline) or fresh (a new buffer a chunk, a new view a record: at 5 M/s a third of the event loop)"
    )
  ),
  json: CommandLine.switchFlag("json", "the last stdout line is one JSON object (the result)"),
  partitions: Flag.String("partitions").pipe(
    Flag.withMetavar("P"),
    Flag.withDefault("8"),
    Flag.withDescription("partitions of the source, 1 to 1024 (default 8)")
  ),
  recordBytes: Flag.String("record-bytes").pipe(
    Flag.withMetavar("B"),
    Flag.withDefault("150"),
    Flag.withDescription("bytes a record, at least 16 (default 150)")
  ),
  out: Flag.String("out").pipe(
    Flag.withMetavar("DIR"),
    Flag.withDefault("reports"),
    Flag.withDescription("where the report folder soak-<time>/ is written (default reports)")
  )
}, [
  "Offers records at --rate for --duration to the archiving pipeline in real time, then drains it;",
  "  a progress line a second on stderr. Writes reports/soak-<time>/: samples.csv (one row a second),",
  "  *.svg, summary.md. Exit 0 when verified = committed and nothing lost, 1 otherwise, 2 bad options."
].join("\n"), { invocation: "npm run soak --" })

/**
 * Reads the command line (`process.argv.slice(2)`) into what it asks for:
 * to run with the decoded {@link Options}, the help, a completion script, or
 * nothing: `effect/cli` refused the line, or a value failed to decode (every
 * bad value named, `soak: Expected … got -1\n  at ["rate"]`).
 *
 * **Example**
 *
 * ```ts
 * const line = Options.fromArgv(["--rate", "1M", "--duration", "60s", "--json"])
 * // { _tag: "Run", flags: { rate: 1000000, duration: 60000, source: "synthetic", sink: "memory", json: true, … } }
 * ```
 */
export const fromArgv = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Options> => {
  const line = command.read(argv)
  if (line._tag !== "Run") return line
  const decoded = Config.decodeResult("soak", Options, line.flags as unknown)
  return Result.isSuccess(decoded) ? { _tag: "Run", flags: decoded.success } : { _tag: "Invalid", message: decoded.failure.message }
}
