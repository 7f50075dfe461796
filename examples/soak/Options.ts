/**
 * soak — the command line: `--rate R --duration D [--source synthetic|kafka]
 * [--sink memory|s3] [--json] [--partitions P] [--out DIR]`, read into plain
 * data and decoded with an `effect/Schema` (through `Config.decode`, so every
 * bad flag is reported at once, naming it: `soak: Expected a rate of records
 * per second greater than 0, got "-1"\n  at ["rate"]`).
 *
 * Rates accept `250000`, `250_000`, `2.5e5`, `250k` or `1M`; durations `60`
 * (seconds), `60s`, `5m` or `90 seconds`.
 */
import { Config } from "@sluice/core"
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"

/** Where records come from: the rate-paced generator in this process, or a topic on the local broker fed by a producer at the rate. */
export type SourceKind = "synthetic" | "kafka"
/** Where batches go: an in-process store that keeps checksums until verified, or a bucket on the local S3 server. */
export type SinkKind = "memory" | "s3"

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
 * The soak's options, decoded. Defaults: synthetic source, memory sink, 8
 * partitions, 150-byte records, reports under `reports/`.
 */
export const Options = Schema.Struct({
  rate: parsed("a rate of records per second (250000, 250k, 1M)", parseCount, (n) =>
    n > 0 ? undefined : `Expected a rate of records per second greater than 0, got ${n}`),
  duration: parsed("a duration (60, 60s, 5m)", parseDuration, (n) =>
    n >= 1000 ? undefined : `Expected a duration of at least 1 second, got ${n} ms`),
  source: Schema.Literals(["synthetic", "kafka"]).pipe(Schema.withDecodingDefaultKey(Effect.succeed<SourceKind>("synthetic"))),
  sink: Schema.Literals(["memory", "s3"]).pipe(Schema.withDecodingDefaultKey(Effect.succeed<SinkKind>("memory"))),
  json: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  partitions: parsed("a whole number of partitions", parseCount, (n) =>
    Number.isInteger(n) && n >= 1 && n <= 1024 ? undefined : `Expected a whole number of partitions from 1 to 1024, got ${n}`).pipe(
      Schema.withDecodingDefaultKey(Effect.succeed("8"))
    ),
  recordBytes: parsed("a record size in bytes", parseCount, (n) =>
    Number.isInteger(n) && n >= 16 ? undefined : `Expected a whole number of bytes ≥ 16, got ${n}`).pipe(
      Schema.withDecodingDefaultKey(Effect.succeed("150"))
    ),
  out: Schema.NonEmptyString.pipe(Schema.withDecodingDefaultKey(Effect.succeed("reports")))
})

/** The decoded options. */
export type Options = typeof Options.Type

/** Flags that take no value. */
const FLAGS: ReadonlySet<string> = new Set(["json"])

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())

/**
 * Decodes the command line (`process.argv.slice(2)`): `--name value` pairs
 * and the `--json` flag. A flag given twice, a value without a flag, or a
 * flag the schema does not know fails with a `ConfigError` naming it.
 *
 * **Example**
 *
 * ```ts
 * const options = Options.fromArgv(["--rate", "1M", "--duration", "60s", "--json"])
 * // Result.succeed({ rate: 1000000, duration: 60000, source: "synthetic", sink: "memory", json: true, … })
 * ```
 */
export const fromArgv = (argv: ReadonlyArray<string>): Result.Result<Options, Config.ConfigError> => {
  const data: Record<string, string | boolean> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ""
    const m = /^--([a-z][a-z-]*)(?:=(.*))?$/.exec(arg)
    if (m === null) return Result.fail(new Config.ConfigError({ component: "soak", message: `soak: unexpected argument ${JSON.stringify(arg)} (flags are --name value)` }))
    const name = camel(m[1] ?? "")
    if (!(name in Options.fields)) return Result.fail(new Config.ConfigError({ component: "soak", message: `soak: unknown flag --${m[1]}` }))
    if (name in data) return Result.fail(new Config.ConfigError({ component: "soak", message: `soak: --${m[1]} given twice` }))
    if (FLAGS.has(name)) {
      data[name] = true
    } else {
      const value = m[2] ?? argv[++i]
      if (value === undefined) return Result.fail(new Config.ConfigError({ component: "soak", message: `soak: --${m[1]} needs a value` }))
      data[name] = value
    }
  }
  return Config.decodeResult("soak", Options, data as unknown)
}

/** What `--help` prints. */
export const usage = `usage: npm run soak -- --rate R --duration D [--source synthetic|kafka] [--sink memory|s3] [--json]
                      [--partitions 8] [--record-bytes 150] [--out reports]
  --rate        records per second offered (250000, 250k, 1M)
  --duration    how long to offer them (60, 60s, 5m); then the pipeline drains
  --source      synthetic (rate-paced, in process; default) or kafka (local broker, fed by a producer at the rate)
  --sink        memory (in process; default) or s3 (local S3 server)
  --json        the last stdout line is one JSON object
Writes reports/soak-<time>/: samples.csv (one row a second), *.svg, summary.md.`
