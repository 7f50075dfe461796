/**
 * The `sluice` command line (the `sluice` bin of `@sluice/adapter-s3`); its
 * command here is `audit` (`sluice calibrate` is `CalibrateCli`):
 *
 * ```
 * sluice audit --bucket <bucket> [--prefix <prefix>] [--endpoint <url>] [--region <region>]
 *              [--committed <list>] [--part-size <size>] [--concurrency <n>] [--abort-orphans]
 *              [--older-than <duration>] [--json]
 * sluice --help | --completions <shell>
 * ```
 *
 * It reads the bucket (`AuditS3`), decides (`Audit`) and prints a summary;
 * with `--json` the last line of stdout is the report as one JSON object.
 * With `--abort-orphans` it first aborts the orphaned multipart uploads
 * initiated longer ago than `--older-than` (default 1h,
 * `AuditS3.DEFAULT_OLDER_THAN_MILLIS`), one line per upload, then audits:
 * that audit is what it prints and what sets the exit code.
 * Exit codes: 0 the archive is proven complete and intact, 1 it is not (or
 * the bucket could not be read, or an abort failed), 2 bad usage (the
 * message names the flag and value).
 *
 * The command line is an `effect/cli` definition (`cli/Definition.ts`): the
 * flags are declared there once, `--help` (of the whole CLI or of `audit`) and
 * `--completions bash|zsh|fish|powershell` are generated from it, and this
 * module maps its errors to the messages `sluice audit` has always printed.
 * The flags' text is decoded with an `effect/Schema` ({@link AuditConfig});
 * every bad input is a tagged error, printed without a stack trace.
 *
 * @since 0.3.0
 */
import { Config } from "@sluice/core"
import { Cause, Effect, Exit, Result, Schema } from "effect"
import type { CliError, Completions } from "effect/cli"
import type * as Audit from "./Audit.ts"
import * as AuditS3 from "./AuditS3.ts"
import * as Definition from "./cli/Definition.ts"

/**
 * The usage text of `sluice audit` (`sluice audit --help`; printed after a
 * usage error), generated from the `effect/cli` definition
 * (`cli/Definition.ts`): the synopsis, what the audit proves, every flag, the
 * global flags, the credentials and the exit codes.
 *
 * @since 0.3.0
 */
export const usage: string = Definition.help("audit")

/**
 * The command line is wrong: an unknown command or flag, a missing or bad
 * value. `flag` names it (`""` when the command itself is wrong).
 *
 * **Example**
 *
 * ```ts
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * const error = new AuditCli.UsageError({ flag: "--bucket", message: "--bucket is required" })
 * ```
 *
 * @since 0.3.0
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  flag: Schema.String,
  message: Schema.String
}) {}

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * The audit command's configuration, decoded from the flags' text: the
 * `--concurrency` and offsets as integers, `--part-size` as a byte size
 * (`"8 MiB"`, `"5242880"`), `--older-than` as milliseconds (`"2h"`).
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * const config = Schema.decodeUnknownSync(AuditCli.AuditConfig)({
 *   bucket: "archive",
 *   committed: [{ source: "orders", partition: 0, offset: 1200 }],
 *   concurrency: "8"
 * }) // { bucket: "archive", prefix: "", concurrency: 8, partSize: 8388608, abortOrphans: false, olderThan: 3600000, json: false, … }
 * ```
 *
 * @since 0.3.0
 */
export const AuditConfig = Schema.Struct({
  bucket: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
    message: "Expected a bucket name: 3-63 characters of a-z, 0-9, '.' and '-', starting and ending with a letter or digit"
  })),
  prefix: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed(""))),
  endpoint: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s/]+/, {
    message: "Expected an http:// or https:// URL"
  }))),
  region: Schema.NonEmptyString.pipe(Schema.withDecodingDefaultKey(Effect.succeed("us-east-1"))),
  committed: Schema.Array(Schema.Struct({
    source: Schema.NonEmptyString,
    partition: NonNegativeInt,
    offset: NonNegativeInt
  })).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
  partSize: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))),
  concurrency: Schema.FiniteFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 64 })).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed("4"))
  ),
  abortOrphans: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  olderThan: Config.Millis.pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<number | string>(AuditS3.DEFAULT_OLDER_THAN_MILLIS))
  ),
  json: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false)))
})

/**
 * `AuditConfig` as a type: what the `AuditConfig` schema decodes to.
 *
 * @since 0.3.0
 */
export type AuditConfig = typeof AuditConfig.Type

/** Each config field's flag, for messages. */
const flags: { readonly [K in keyof AuditConfig]-?: string } = {
  bucket: "--bucket",
  prefix: "--prefix",
  endpoint: "--endpoint",
  region: "--region",
  committed: "--committed",
  partSize: "--part-size",
  concurrency: "--concurrency",
  abortOrphans: "--abort-orphans",
  olderThan: "--older-than",
  json: "--json"
}

/**
 * Parses `--committed`'s value (`topic:partition=offset`, comma-separated;
 * the topic is everything before the last `:`).
 *
 * **Example**
 *
 * ```ts
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * AuditCli.parseCommitted("orders:0=1200,orders:1=980")
 * // Result.succeed([{ source: "orders", partition: 0, offset: 1200 }, { source: "orders", partition: 1, offset: 980 }])
 * ```
 *
 * @since 0.3.0
 */
export const parseCommitted = (text: string): Result.Result<Array<Audit.Committed>, UsageError> => {
  const out: Array<Audit.Committed> = []
  for (const entry of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const m = /^(.+):(\d+)=(\d+)$/.exec(entry)
    if (m === null) {
      return Result.fail(
        new UsageError({ flag: "--committed", message: `--committed: "${entry}" is not <topic>:<partition>=<offset> (e.g. orders:0=1200)` })
      )
    }
    const [, source = "", partition = "", offset = ""] = m
    const entryOut = { source, partition: Number(partition), offset: Number(offset) }
    if (!Number.isSafeInteger(entryOut.offset)) {
      return Result.fail(new UsageError({ flag: "--committed", message: `--committed: offset ${offset} of "${entry}" is too large` }))
    }
    if (out.some((c) => c.source === source && c.partition === entryOut.partition)) {
      return Result.fail(new UsageError({ flag: "--committed", message: `--committed: ${source}:${partition} is given twice` }))
    }
    out.push(entryOut)
  }
  if (out.length === 0) return Result.fail(new UsageError({ flag: "--committed", message: "--committed: no <topic>:<partition>=<offset> entry" }))
  return Result.succeed(out)
}

/**
 * What the arguments ask for: the help (of the whole CLI, or of `audit`), a
 * shell completion script, or an audit.
 *
 * @since 0.3.0
 */
export type Parsed =
  | {
    readonly _tag: "Help"
    /** The command whose help was asked for (`audit --help`); absent for the whole CLI. */
    readonly command?: string | undefined
  }
  | { readonly _tag: "Completions"; readonly shell: Completions.Shell }
  | { readonly _tag: "Audit"; readonly config: AuditConfig }

const auditFlags = Definition.flagsOf("audit")

/**
 * The line as `effect/cli` reads it as `sluice audit` always did: a value flag
 * takes the next argument even when it starts with one `-` (`--older-than
 * -1h` is a bad duration, not a missing value), never one starting with `--`;
 * a switch never takes the next argument. What `effect/cli` would read
 * otherwise is a problem found here: a switch with a value, `--`, and `-xy`.
 */
const normalize = (argv: ReadonlyArray<string>) => {
  const tokens: Array<string> = []
  const origin: Array<number> = []
  const problems: Array<Definition.Problem> = []
  let help = false
  const push = (token: string, at: number) => {
    tokens.push(token)
    origin.push(at)
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ""
    const eq = arg.indexOf("=")
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg
    const next = argv[i + 1]
    if (arg === "--help" || arg === "-h") {
      if (!help) push("--help=true", i)
      help = true
    } else if (auditFlags.switches.has(name)) {
      if (name === arg) push(`${arg}=true`, i)
      else problems.push({ at: i, flag: name, message: `${name} takes no value` })
    } else if (name === "--" || name === "--help" || /^-[^-]./.test(arg)) {
      problems.push({ at: i, flag: name, message: `unknown flag ${name}` })
    } else if (auditFlags.values.has(arg) && next !== undefined && /^-([^-]|$)/.test(next) && next !== "-h") {
      push(`${arg}=${next}`, i)
      i++
    } else push(arg, i)
  }
  return { line: { tokens, origin }, problems, help }
}

/** Today's message for one `effect/cli` error, and where it is. */
const problemOf = (error: CliError.CliError, line: Definition.Line, argv: ReadonlyArray<string>): Definition.Problem => {
  const at = Definition.locate(error, line) ?? argv.length
  switch (error._tag) {
    case "UnrecognizedOption": {
      const raw = argv[at] ?? error.option
      const eq = raw.indexOf("=")
      const name = raw.startsWith("--") && eq > 0 ? raw.slice(0, eq) : raw
      return { at, flag: name, message: `unknown flag ${name}` }
    }
    case "InvalidValue": {
      const flag = `--${error.option}`
      if (error.value === "") return { at, flag, message: `${flag} needs a value` }
      if (error.expected === "at most 1 value") return { at, flag, message: `${flag} is given twice` }
      return { at, flag, message: `${flag} needs ${error.expected}, got ${JSON.stringify(error.value)}` }
    }
    case "UnexpectedArgument": {
      const name = error.arguments[0] ?? ""
      return { at, flag: name, message: name.startsWith("-") ? `unknown flag ${name}` : `unexpected argument ${name}` }
    }
    default:
      return { at, flag: "", message: error.message }
  }
}

/**
 * Parses and decodes the arguments (after `sluice`).
 *
 * **Details**: the `effect/cli` definition (`cli/Definition.ts`) reads the
 * line; `--help`/`-h` wins over everything else, `--completions <shell>` asks
 * for the completion script. Flags take their value as the next argument or
 * after `=` (`--bucket=archive`); a value flag given twice, an unknown flag,
 * a flag without its value, a switch with a value and an argument are usage
 * errors, the first on the line reported. Without `--region`,
 * `$SLUICE_S3_REGION` then `$AWS_REGION` are read from `env`.
 *
 * **Example**
 *
 * ```ts
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * AuditCli.parseArgs(["audit", "--bucket", "archive", "--json"], {})
 * // Result.succeed({ _tag: "Audit", config: { bucket: "archive", json: true, … } })
 * AuditCli.parseArgs(["audit", "--concurrency", "0", "--bucket", "archive"], {})
 * // Result.fail(UsageError: --concurrency: Expected a value between 1 and 64 (got "0"))
 * ```
 *
 * @since 0.3.0
 */
export const parseArgs = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env
): Result.Result<Parsed, UsageError | Config.ConfigError> => {
  const { line, problems, help } = normalize(argv)
  const { parsed, error } = Definition.interpret(line.tokens)
  if (parsed?._tag === "Help") return Result.succeed(parsed.command === undefined ? { _tag: "Help" } : { _tag: "Help", command: parsed.command })
  if (help) return Result.succeed({ _tag: "Help" })
  if (parsed?._tag === "Completions") return Result.succeed(parsed)
  const usageError = (flag: string, message: string) => Result.fail(new UsageError({ flag, message }))
  const [command] = argv
  if (command === undefined) return usageError("", "a command is needed (audit)")
  if (command !== "audit") return usageError("", `unknown command ${command}${command.startsWith("-") ? "" : " (the command is audit)"}`)
  const first = Definition.firstProblem(line, problems, error, (e, read) => problemOf(e, read, argv))
  if (first !== undefined) return usageError(first.flag, first.message)
  if (parsed?._tag !== "Audit") return usageError("", "a command is needed (audit)")
  const values = parsed.flags
  const bucket = values.bucket
  if (bucket === undefined) return usageError("--bucket", "--bucket is required")
  if (values.olderThan !== undefined && !values.abortOrphans) {
    return usageError("--older-than", "--older-than applies only with --abort-orphans")
  }
  let committed: Array<Audit.Committed> | undefined
  if (values.committed !== undefined) {
    const parsedCommitted = parseCommitted(values.committed)
    if (Result.isFailure(parsedCommitted)) return Result.fail(parsedCommitted.failure)
    committed = parsedCommitted.success
  }
  const region = values.region ?? env["SLUICE_S3_REGION"] ?? env["AWS_REGION"]
  const raw = {
    bucket,
    json: values.json,
    abortOrphans: values.abortOrphans,
    ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
    ...(values.endpoint !== undefined ? { endpoint: values.endpoint } : {}),
    ...(region !== undefined && region !== "" ? { region } : {}),
    ...(committed !== undefined ? { committed } : {}),
    ...(values.partSize !== undefined ? { partSize: values.partSize } : {}),
    ...(values.concurrency !== undefined ? { concurrency: values.concurrency } : {}),
    ...(values.olderThan !== undefined ? { olderThan: values.olderThan } : {})
  }
  const decoded = Schema.decodeUnknownResult(AuditConfig)(raw, { onExcessProperty: "error" })
  if (Result.isSuccess(decoded)) return Result.succeed({ _tag: "Audit", config: decoded.success })
  return Result.fail(configError(decoded.failure.message, raw))
}

/** A schema failure as a usage error naming the flag and the value given. */
const configError = (message: string, raw: Readonly<Record<string, unknown>>): UsageError => {
  const at = /at \["(\w+)"\]/.exec(message)
  const field = at?.[1]
  const flag = field !== undefined && field in flags ? flags[field as keyof AuditConfig] : ""
  const given = field !== undefined ? raw[field] : undefined
  const reason = message.replace(/\s*at \[.*$/s, "").trim()
  const shown = typeof given === "string" ? ` (got "${given}")` : ""
  return new UsageError({ flag, message: flag === "" ? reason : `${flag}: ${reason}${reason.includes("got") ? "" : shown}` })
}

/**
 * The credentials from the environment, when both `SLUICE_S3_ACCESS_KEY` and
 * `SLUICE_S3_SECRET_KEY` are set (else the AWS SDK's default chain applies).
 *
 * @since 0.3.0
 */
export const credentialsOf = (env: Readonly<Record<string, string | undefined>>) => {
  const accessKeyId = env["SLUICE_S3_ACCESS_KEY"]
  const secretAccessKey = env["SLUICE_S3_SECRET_KEY"]
  return accessKeyId !== undefined && accessKeyId !== "" && secretAccessKey !== undefined && secretAccessKey !== ""
    ? { accessKeyId, secretAccessKey }
    : undefined
}

const partitionName = (p: { readonly prefix: string; readonly source: string; readonly partition: number }): string =>
  `${p.prefix}${p.source}:${p.partition}`

/**
 * The human summary of a report, one line per row.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * const lines = AuditCli.summarize("archive", Audit.audit({ listed: [], manifests: new Map(), contents: new Map(), uploads: [] }))
 * // ["audit of s3://archive: 0 partitions, 0 objects, 0 records", …, "CLEAN: …"]
 * ```
 *
 * @since 0.3.0
 */
export const summarize = (bucket: string, report: Audit.Report): Array<string> => {
  const lines = [`audit of s3://${bucket}: ${report.partitions} partitions, ${report.objects} objects, ${report.records} records`]
  for (const p of report.byPartition) {
    const committed = p.committed === undefined ? "" : ` (committed ${p.committed})`
    lines.push(
      `  ${partitionName(p)}  offsets ${p.from}..${p.to}${committed}: ${p.objects} objects, ${p.records} records, ` +
        `${p.holes} holes${p.lostRecords > 0 ? `, ${p.lostRecords} lost to retention` : ""}`
    )
  }
  for (const h of report.holes) {
    const past = h.where === "committed" ? " (committed past the archive)" : ""
    lines.push(`HOLE ${partitionName(h)} offsets ${h.from}..${h.to} (${h.count} records)${past}`)
  }
  for (const f of report.objectFailures) lines.push(`FAILED ${f.kind} ${f.key}: expected ${f.expected}, got ${f.actual}`)
  for (const k of report.missingObjects) lines.push(`MISSING object ${k} (its manifest is in the bucket)`)
  for (const o of report.overlaps) {
    const what = o.kind === "duplicate"
      ? "duplicate, harmless"
      : `CONFLICT: content differs at offset ${o.firstDifference ?? "?"}`
    lines.push(`${o.kind === "duplicate" ? "overlap" : "OVERLAP"} ${o.key} offsets ${o.from}..${o.to} with ${o.winners.join(", ")}: ${what}`)
  }
  for (const g of report.retentionGaps) {
    lines.push(`retention gap ${partitionName(g)} offsets ${g.expected}..${g.logStart - 1}: ${g.lostRecords} records deleted unread (${g.key})`)
  }
  for (const u of report.orphanedUploads) lines.push(`ORPHANED multipart upload ${uploadText(u)}`)
  if (report.orphanedUploadsTruncated) {
    lines.push(`listing stopped at ${report.orphanedUploads.length} multipart uploads: more may exist`)
  }
  for (const c of report.unarchived) lines.push(`UNARCHIVED ${c.source}:${c.partition} committed ${c.committed}, no object in the bucket`)
  if (report.unmanifested.length > 0) {
    lines.push(`${report.unmanifested.length} objects without a manifest (never verified, cover nothing): ${report.unmanifested.slice(0, 5).join(", ")}${report.unmanifested.length > 5 ? ", …" : ""}`)
  }
  if (report.unrecognized.length > 0) lines.push(`${report.unrecognized.length} other keys ignored`)
  const problems = report.holes.length + report.objectFailures.length + report.missingObjects.length + report.conflicts +
    report.orphanedUploads.length + report.unarchived.length
  lines.push(
    report.ok
      ? `CLEAN: every offset covered by a verified object (${report.duplicates} harmless duplicates, ${report.retentionGaps.length} retention gaps, ${report.lostRecords} records lost to retention)`
      : `NOT CLEAN: ${problems} findings (${report.holes.length} holes, ${report.checksumFailures} checksum failures, ` +
        `${report.objectFailures.length} object failures, ${report.conflicts} conflicts, ${report.orphanedUploads.length} orphaned uploads)`
  )
  return lines
}

const uploadText = (u: Audit.PendingUpload): string =>
  `${u.key} (upload ${u.uploadId}${u.initiated !== undefined ? `, started ${u.initiated}` : ""})`

/** Milliseconds as the largest whole unit of `--older-than` (`1h`, `90m`, `0s`). */
const durationText = (millis: number): string =>
  millis === 0
    ? "0s"
    : millis % 3_600_000 === 0
    ? `${millis / 3_600_000}h`
    : millis % 60_000 === 0
    ? `${millis / 60_000}m`
    : millis % 1_000 === 0
    ? `${millis / 1_000}s`
    : `${millis}ms`

/**
 * The lines of what `--abort-orphans` did: one per aborted upload (and per
 * upload already gone), one for those kept as possibly live, one per failed
 * abort (printed to stderr by {@link main}).
 *
 * **Example**
 *
 * ```ts
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * const { lines } = AuditCli.summarizeAborts(
 *   { aborted: [{ key: "orders/p=00000/a.rec", uploadId: "u1", initiated: "2026-12-01T10:00:00.000Z" }], gone: [], kept: [], failed: [], truncated: false },
 *   3_600_000
 * )
 * // ["ABORTED multipart upload orders/p=00000/a.rec (upload u1, started 2026-12-01T10:00:00.000Z)"]
 * ```
 *
 * @since 0.3.0
 */
export const summarizeAborts = (
  outcome: AuditS3.AbortOutcome,
  olderThanMillis: number
): { readonly lines: Array<string>; readonly errors: Array<string> } => {
  const lines = outcome.aborted.map((u) => `ABORTED multipart upload ${uploadText(u)}`)
  for (const u of outcome.gone) lines.push(`gone multipart upload ${uploadText(u)}: completed or aborted meanwhile`)
  if (outcome.kept.length > 0) {
    lines.push(
      `kept ${outcome.kept.length} multipart uploads not initiated more than ${durationText(olderThanMillis)} ago ` +
        `(--older-than): a live archiver may be writing them`
    )
  }
  if (outcome.truncated) lines.push(`listing stopped at ${AuditS3.MAX_UPLOADS_LISTED} multipart uploads: run again for the rest`)
  const errors = outcome.failed.map((f) =>
    `sluice: FAILED abort of multipart upload ${f.key} (upload ${f.uploadId}) in s3://${f.bucket}: ${f.code}: ${f.message}`
  )
  return { lines, errors }
}

/** The message printed for a failure: the flag or request first, never a stack. */
const describe = (error: unknown): { readonly message: string; readonly code: number } => {
  if (error instanceof UsageError) return { message: `sluice: ${error.message}\n${usage}`, code: 2 }
  if (error instanceof Config.ConfigError) return { message: `sluice: ${error.message}`, code: 2 }
  if (error instanceof AuditS3.AuditFailed) {
    if (error.code === "NoSuchBucket") {
      return { message: `sluice: --bucket ${error.bucket}: no such bucket (${error.operation})`, code: 2 }
    }
    return { message: `sluice: cannot read s3://${error.bucket} (${error.operation}): ${error.code}: ${error.message}`, code: 1 }
  }
  const message = typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? error.message
    : String(error)
  return { message: `sluice: ${message}`, code: 1 }
}

/**
 * Runs the command line; resolves to the exit code.
 *
 * **When to use**: from the `sluice` executable (`bin/sluice.js`), or from a
 * test or script that wants the output without spawning a process.
 *
 * **Details**: the summary goes to `print` (with `--json`, the report as one
 * JSON object last, with `aborts` under `--abort-orphans`); errors to
 * `printError`. 0 when the audit is clean, 1 when it is not, the bucket
 * could not be read or an abort failed, 2 on bad usage (including a bucket
 * that does not exist). With `--abort-orphans` the aborts' lines come
 * first, then the audit made after them.
 *
 * **Example**
 *
 * ```ts
 * import * as AuditCli from "@sluice/adapter-s3/AuditCli"
 *
 * const code = await AuditCli.main(["audit", "--bucket", "archive", "--endpoint", "http://127.0.0.1:19000", "--json"])
 * ```
 *
 * @since 0.3.0
 */
export const main = async (
  argv: ReadonlyArray<string>,
  print: (line: string) => void = (l) => console.log(l),
  printError: (line: string) => void = (l) => console.error(l),
  env: Readonly<Record<string, string | undefined>> = process.env
): Promise<number> => {
  const parsed = parseArgs(argv, env)
  if (Result.isFailure(parsed)) {
    const { message, code } = describe(parsed.failure)
    printError(message)
    return code
  }
  if (parsed.success._tag === "Help") {
    print(Definition.help(parsed.success.command))
    return 0
  }
  if (parsed.success._tag === "Completions") {
    print(Definition.completions(parsed.success.shell))
    return 0
  }
  const config = parsed.success.config
  const credentials = credentialsOf(env)
  const connection: AuditS3.Connection = {
    region: config.region,
    ...(config.endpoint !== undefined ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
    ...(credentials !== undefined ? { credentials } : {})
  }
  const program = Effect.scoped(Effect.gen(function*() {
    const client = yield* AuditS3.makeClient(connection, config.bucket)
    // aborts first, so the audit printed (and the exit code) is of the bucket after them
    const aborts = config.abortOrphans
      ? yield* AuditS3.abortOrphans(client, {
        bucket: config.bucket,
        prefix: config.prefix,
        olderThanMillis: config.olderThan,
        concurrency: config.concurrency
      })
      : undefined
    // printed before the audit, so they are reported even when the audit fails
    if (aborts !== undefined) {
      const { lines, errors } = summarizeAborts(aborts, config.olderThan)
      yield* Effect.sync(() => {
        for (const line of lines) print(line)
        for (const line of errors) printError(line)
      })
    }
    const report = yield* AuditS3.run(client, {
      bucket: config.bucket,
      prefix: config.prefix,
      committed: config.committed,
      partSize: config.partSize,
      concurrency: config.concurrency
    })
    return { aborts, report }
  }))
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    const { message, code } = describe(Cause.squash(exit.cause))
    printError(message)
    return code
  }
  const { aborts, report } = exit.value
  for (const line of summarize(config.bucket, report)) print(line)
  if (config.json) {
    const abortsJson = aborts === undefined ? {} : {
      aborts: {
        ...aborts,
        failed: aborts.failed.map((f) => ({ key: f.key, uploadId: f.uploadId, code: f.code, status: f.status, message: f.message }))
      }
    }
    print(JSON.stringify({ bucket: config.bucket, prefix: config.prefix, ...report, ...abortsJson }))
  }
  return report.ok && (aborts?.failed.length ?? 0) === 0 ? 0 : 1
}
