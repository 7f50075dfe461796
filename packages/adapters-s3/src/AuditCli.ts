/**
 * The `sluice` command line (the `sluice` bin of `@sluice/adapter-s3`); its
 * one command is `audit`:
 *
 * ```
 * sluice audit --bucket <b> [--prefix <p>] [--endpoint <url>] [--region <r>]
 *              [--committed <topic>:<partition>=<offset>,...] [--part-size <size>]
 *              [--concurrency <n>] [--abort-orphans [--older-than <duration>]] [--json]
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
 * message names the flag and value). The flags are decoded with an
 * `effect/Schema` ({@link AuditConfig}), every bad input is a tagged error,
 * printed without a stack trace.
 *
 * @since 0.3.0
 */
import { Config } from "@sluice/core"
import { Cause, Effect, Exit, Result, Schema } from "effect"
import type * as Audit from "./Audit.ts"
import * as AuditS3 from "./AuditS3.ts"

/**
 * The usage text (`sluice --help`; printed after a usage error).
 *
 * @since 0.3.0
 */
export const usage = `usage:
  sluice audit --bucket <bucket> [--prefix <prefix>] [--endpoint <url>] [--region <region>]
               [--committed <topic>:<partition>=<offset>,...] [--part-size <size>] [--concurrency <n>]
               [--abort-orphans [--older-than <duration>]] [--json]
  sluice --help

  audit: proves, per partition, that every offset from the first archived to the last (or to the
  committed offset) is in an object whose checksum, recomputed from its bytes, and record count match
  its manifest; reports holes, overlapping objects (duplicates are harmless, different content is a
  conflict), retention gaps recorded in manifests, and incomplete multipart uploads.

  --bucket <bucket>     the bucket to audit (required)
  --prefix <prefix>     only keys under this prefix (default: the whole bucket)
  --endpoint <url>      S3 endpoint, e.g. http://127.0.0.1:19000 (default: AWS); path-style addressing
  --region <region>     signing region (default: $SLUICE_S3_REGION, $AWS_REGION, else us-east-1)
  --committed <list>    committed offsets (the next offset to read), e.g. orders:0=1200,orders:1=980;
                        each partition must be archived up to offset - 1
  --part-size <size>    part size of SHA256 multipart uploads (default 8 MiB; others are tried too)
  --concurrency <n>     objects read (and uploads aborted) at once, 1..64 (default 4)
  --abort-orphans       first abort (AbortMultipartUpload) the orphaned multipart uploads initiated longer
                        ago than --older-than, one line each, then audit: that audit is printed and sets the
                        exit code; at most ${AuditS3.MAX_UPLOADS_LISTED} uploads a run. The operator does this, not the archiver
                        at start: another archiver of the same consumer group may own the partition and be
                        mid-upload. A bucket lifecycle rule (AbortIncompleteMultipartUpload) is the
                        store-side alternative
  --older-than <dur>    with --abort-orphans: only uploads initiated longer ago than this, e.g. 30m, 2h, 0s
                        (default 1h: 60 x the sink's 60 s request timeout; a live upload is younger)
  --json                print the report as one JSON object on the last line

  credentials: $SLUICE_S3_ACCESS_KEY and $SLUICE_S3_SECRET_KEY when both are set, else the AWS SDK's
  default chain (AWS_ACCESS_KEY_ID, profiles, instance roles)

exit codes: 0 clean, 1 findings (or the bucket could not be read, or an abort failed), 2 bad usage`

/**
 * The command line is wrong: an unknown command or flag, a missing or bad
 * value. `flag` names it (`""` when the command itself is wrong).
 *
 * **Example**
 *
 * ```ts
 * import { AuditCli } from "@sluice/adapter-s3"
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
 * import { AuditCli } from "@sluice/adapter-s3"
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
const valueFlags = [
  "--bucket",
  "--prefix",
  "--endpoint",
  "--region",
  "--committed",
  "--part-size",
  "--concurrency",
  "--older-than"
] as const
const switches = ["--json", "--abort-orphans"] as const
type Switch = typeof switches[number]
const isSwitch = (s: string): s is Switch => (switches as ReadonlyArray<string>).includes(s)
type ValueFlag = typeof valueFlags[number]
const isValueFlag = (s: string): s is ValueFlag => (valueFlags as ReadonlyArray<string>).includes(s)

/**
 * Parses `--committed`'s value (`topic:partition=offset`, comma-separated;
 * the topic is everything before the last `:`).
 *
 * **Example**
 *
 * ```ts
 * import { AuditCli } from "@sluice/adapter-s3"
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
 * What the arguments ask for.
 *
 * @since 0.3.0
 */
export type Parsed =
  | { readonly _tag: "Help" }
  | { readonly _tag: "Audit"; readonly config: AuditConfig }

/**
 * Parses and decodes the arguments (after `sluice`).
 *
 * **Details**: `--help`/`-h` wins over everything else. Flags take their
 * value as the next argument or after `=` (`--bucket=archive`). Without
 * `--region`, `$SLUICE_S3_REGION` then `$AWS_REGION` are read from `env`.
 *
 * **Example**
 *
 * ```ts
 * import { AuditCli } from "@sluice/adapter-s3"
 *
 * AuditCli.parseArgs(["audit", "--bucket", "archive", "--json"], {})
 * // Result.succeed({ _tag: "Audit", config: { bucket: "archive", json: true, … } })
 * AuditCli.parseArgs(["audit", "--concurrency", "0", "--bucket", "archive"], {})
 * // Result.fail(UsageError: --concurrency: Expected a value between 1 and 64, got 0)
 * ```
 *
 * @since 0.3.0
 */
export const parseArgs = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env
): Result.Result<Parsed, UsageError | Config.ConfigError> => {
  if (argv.some((a) => a === "--help" || a === "-h")) return Result.succeed({ _tag: "Help" })
  const usageError = (flag: string, message: string) => Result.fail(new UsageError({ flag, message }))
  const [command, ...rest] = argv
  if (command === undefined) return usageError("", "a command is needed (audit)")
  if (command !== "audit") return usageError("", `unknown command ${command}${command.startsWith("-") ? "" : " (the command is audit)"}`)
  const values = new Map<ValueFlag, string>()
  const on = new Set<Switch>()
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] ?? ""
    const eq = arg.indexOf("=")
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg
    if (isSwitch(name)) {
      if (name !== arg) return usageError(name, `${name} takes no value`)
      on.add(name)
      continue
    }
    if (!isValueFlag(name)) {
      return usageError(name, name.startsWith("-") ? `unknown flag ${name}` : `unexpected argument ${name}`)
    }
    let value: string | undefined
    if (name !== arg) {
      value = arg.slice(eq + 1)
    } else {
      value = rest[i + 1]
      i++
    }
    if (value === undefined || (name === arg && value.startsWith("--"))) return usageError(name, `${name} needs a value`)
    if (values.has(name)) return usageError(name, `${name} is given twice`)
    values.set(name, value)
  }
  const bucket = values.get("--bucket")
  if (bucket === undefined) return usageError("--bucket", "--bucket is required")
  if (values.has("--older-than") && !on.has("--abort-orphans")) {
    return usageError("--older-than", "--older-than applies only with --abort-orphans")
  }
  let committed: Array<Audit.Committed> | undefined
  const committedText = values.get("--committed")
  if (committedText !== undefined) {
    const parsed = parseCommitted(committedText)
    if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
    committed = parsed.success
  }
  const region = values.get("--region") ?? env["SLUICE_S3_REGION"] ?? env["AWS_REGION"]
  const raw = {
    bucket,
    json: on.has("--json"),
    abortOrphans: on.has("--abort-orphans"),
    ...(values.has("--prefix") ? { prefix: values.get("--prefix") } : {}),
    ...(values.has("--endpoint") ? { endpoint: values.get("--endpoint") } : {}),
    ...(region !== undefined && region !== "" ? { region } : {}),
    ...(committed !== undefined ? { committed } : {}),
    ...(values.has("--part-size") ? { partSize: values.get("--part-size") } : {}),
    ...(values.has("--concurrency") ? { concurrency: values.get("--concurrency") } : {}),
    ...(values.has("--older-than") ? { olderThan: values.get("--older-than") } : {})
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
 * import { Audit, AuditCli } from "@sluice/adapter-s3"
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
 * import { AuditCli } from "@sluice/adapter-s3"
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
 * import { AuditCli } from "@sluice/adapter-s3"
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
    print(usage)
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
