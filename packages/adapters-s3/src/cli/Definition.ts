/**
 * The `sluice` command line as an `effect/cli` definition: its two commands
 * (`audit`, `calibrate`), their typed flags, the help generated from them, the
 * shell completions, and `interpret`, which reads an argument list with that
 * definition into what was asked for (a {@link Parsed}) or the `effect/cli`
 * error.
 *
 * `effect/cli` reads the line; `AuditCli` and `CalibrateCli` each map its
 * errors to the messages they have always printed (`unknown flag --prefx`,
 * `Unknown option '--nope'`, …) and decode the values (`AuditCli.AuditConfig`,
 * `CalibrateCli.parse`).
 *
 * @since 0.5.0
 */
import { Context, Effect, Option } from "effect"
import { CliError, Command, Completions, Flag } from "effect/cli"
import type { HelpDoc } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { MAX_UPLOADS_LISTED } from "../AuditS3.ts"
import { Bounds } from "../Calibrate.ts"

/**
 * The flags of one `sluice audit` line as written (each value flag given at
 * most once; `AuditCli` decodes the text with `AuditCli.AuditConfig`).
 *
 * @since 0.5.0
 */
export interface AuditFlags {
  readonly bucket: string | undefined
  readonly prefix: string | undefined
  readonly endpoint: string | undefined
  readonly region: string | undefined
  readonly committed: string | undefined
  readonly partSize: string | undefined
  readonly concurrency: string | undefined
  readonly abortOrphans: boolean
  readonly olderThan: string | undefined
  readonly json: boolean
}

/**
 * The flags of one `sluice calibrate` line as written (a flag given twice: the
 * last wins; `CalibrateCli.parse` checks the values).
 *
 * @since 0.5.0
 */
export interface CalibrateFlags {
  readonly bucket: string | undefined
  readonly endpoint: string | undefined
  readonly region: string | undefined
  readonly sizes: string | undefined
  readonly inflight: string | undefined
  readonly cellSeconds: string | undefined
  readonly json: boolean
}

/**
 * What a line asks for: a command with its flags, the help (of the whole CLI
 * or of one command), or a shell completion script.
 *
 * @since 0.5.0
 */
export type Parsed =
  | { readonly _tag: "Audit"; readonly flags: AuditFlags }
  | { readonly _tag: "Calibrate"; readonly flags: CalibrateFlags }
  | { readonly _tag: "Help"; readonly command: string | undefined }
  | { readonly _tag: "Completions"; readonly shell: Completions.Shell }

// ---------------------------------------------------------------------------
// The definition
// ---------------------------------------------------------------------------

/** What a command's handler records: the command and its flags. */
type Asked = Extract<Parsed, { readonly _tag: "Audit" | "Calibrate" }>

/** Records what a line asks for while `effect/cli` runs the definition. */
class Captured extends Context.Service<Captured, CommandLine.Recorder<Asked>>()(
  "@sluice/adapter-s3/cli/Definition/Captured"
) {}

const record = (parsed: Asked) => Captured.use((captured) => Effect.sync(() => captured.set(parsed)))

/** A value flag that may be absent and given at most once (`effect/cli` refuses a second value). */
const once = (name: string, metavar: string, description: string): Flag.Flag<string | undefined> =>
  Flag.String(name).pipe(
    Flag.withMetavar(metavar),
    Flag.withDescription(description),
    Flag.optional,
    Flag.map(Option.getOrUndefined)
  )

/** A value flag that may be absent and given several times, the last winning. */
const last = (name: string, metavar: string, description: string): Flag.Flag<string | undefined> =>
  CommandLine.lastValue(name, metavar, description).pipe(Flag.optional, Flag.map((value) => Option.getOrUndefined(value)))

/**
 * The `--bucket` both commands need. It is declared without a lower bound so
 * that a missing bucket is reported after what is wrong earlier on the line
 * (as the commands always did), yet the help shows it as required.
 */
const bucket = (description: string, atMostOnce: boolean): Flag.Flag<string | undefined> =>
  Flag.String("bucket").pipe(
    Flag.withMetavar("bucket"),
    Flag.withDescription(description),
    Flag.atLeast(0),
    Flag.mapEffect((values) =>
      atMostOnce && values.length > 1
        ? Effect.fail(
          new CliError.InvalidValue({ option: "bucket", value: `${values.length} occurrences`, expected: "at most 1 value", kind: "flag" })
        )
        : Effect.succeed(values.at(-1))
    )
  )

const endpointDescription = "S3 endpoint, e.g. http://127.0.0.1:19000 (default: AWS); path-style addressing"
const regionDescription = "signing region (default: $SLUICE_S3_REGION, $AWS_REGION, else us-east-1)"

const audit = Command.make("audit", {
  bucket: bucket("the bucket to audit (required)", true),
  prefix: once("prefix", "prefix", "only keys under this prefix (default: the whole bucket)"),
  endpoint: once("endpoint", "url", endpointDescription),
  region: once("region", "region", regionDescription),
  committed: once(
    "committed",
    "list",
    "committed offsets (the next offset to read), e.g. orders:0=1200,orders:1=980;\n" +
      "each partition must be archived up to offset - 1"
  ),
  partSize: once("part-size", "size", "part size of SHA256 multipart uploads (default 8 MiB; others are tried too)"),
  concurrency: once("concurrency", "n", "objects read (and uploads aborted) at once, 1..64 (default 4)"),
  abortOrphans: CommandLine.switchFlag(
    "abort-orphans",
    "first abort (AbortMultipartUpload) the orphaned multipart uploads initiated longer\n" +
      "ago than --older-than, one line each, then audit: that audit is printed and sets the\n" +
      `exit code; at most ${MAX_UPLOADS_LISTED} uploads a run. The operator does this, not the archiver\n` +
      "at start: another archiver of the same consumer group may own the partition and be\n" +
      "mid-upload. A bucket lifecycle rule (AbortIncompleteMultipartUpload) is the\n" +
      "store-side alternative"
  ),
  olderThan: once(
    "older-than",
    "duration",
    "with --abort-orphans: only uploads initiated longer ago than this, e.g. 30m, 2h, 0s\n" +
      "(default 1h: 60 x the sink's 60 s request timeout; a live upload is younger)"
  ),
  json: CommandLine.switchFlag("json", "print the report as one JSON object on the last line")
}, (flags) => record({ _tag: "Audit", flags })).pipe(
  Command.withDescription(
    "proves, per partition, that every offset from the first archived to the last (or to the\n" +
      "committed offset) is in an object whose checksum, recomputed from its bytes, and record count match\n" +
      "its manifest; reports holes, overlapping objects (duplicates are harmless, different content is a\n" +
      "conflict), retention gaps recorded in manifests, and incomplete multipart uploads."
  )
)

const calibrate = Command.make("calibrate", {
  bucket: bucket("an existing bucket to write the sweep's objects in (required)", false),
  endpoint: last("endpoint", "url", endpointDescription),
  region: last("region", "region", regionDescription),
  sizes: last("sizes", "list", "object sizes (default 64KiB,1MiB,8MiB; at least two)"),
  inflight: last("inflight", "list", "uploads at once (default 1,2,4,8,16,32; must include 1)"),
  cellSeconds: last("cell-seconds", "s", `seconds per cell (default 3; at most ${Bounds.cellSeconds})`),
  json: CommandLine.switchFlag("json", "print the fit as one JSON object on the last line")
}, (flags) => record({ _tag: "Calibrate", flags })).pipe(
  Command.withDescription(
    "uploads objects of each size with each in-flight count in a closed loop for\n" +
      "--cell-seconds (each worker overwrites one key; every key is deleted at the end), fits the\n" +
      "simulator's store model (per-request latency, bandwidth per request, knee, jitter, throttle\n" +
      "onset) and prints each cell's measured and modelled throughput, then a scenario \"store\" block."
  )
)

/**
 * The `sluice` command tree: `audit` and `calibrate`, each with its flags. Its
 * handlers only record what was asked for (a {@link Parsed}); `AuditCli.main`
 * and `CalibrateCli.main` run it.
 *
 * **When to use**: to introspect the command line (its help documents, its
 * completion descriptor via `Completions.fromCommand`); to run it, use
 * `AuditCli.main` or `CalibrateCli.main`.
 *
 * **Example**
 *
 * ```ts
 * import { Completions } from "effect/cli"
 * import { sluice } from "@sluice/adapter-s3/cli/Definition"
 *
 * const names = Completions.fromCommand(sluice).subcommands.map((c) => c.name)
 * // ["audit", "calibrate"]
 * ```
 *
 * @since 0.5.0
 */
export const sluice = Command.make("sluice").pipe(
  Command.withDescription("Audit an archive bucket, or calibrate the simulator's store model against an S3-compatible store."),
  Command.withSubcommands([audit, calibrate])
)

/** `--help`/`-h` and `--completions <shell>` (no version, no wizard, no log level). */
const globals = CommandLine.globalFlags({
  help: "print this help (of the whole CLI, or of one command: sluice audit --help)",
  completions: "print the shell completion script, e.g. >> ~/.bashrc"
})

// ---------------------------------------------------------------------------
// Running the definition on an argument list
// ---------------------------------------------------------------------------

/**
 * What one pass of `effect/cli` over an argument list gave: what it asks for,
 * or the error.
 *
 * @since 0.5.0
 */
export interface Outcome {
  readonly parsed: Parsed | undefined
  readonly error: CliError.CliError | undefined
}

const run = CommandLine.reader(sluice, Captured, globals)

/**
 * Reads an argument list (after `sluice`) with the definition
 * ({@link sluice}): what its handlers recorded, or the `effect/cli` error.
 *
 * **When to use**: `AuditCli.parseArgs` and `CalibrateCli.parse` call it,
 * then map the error to their own messages.
 *
 * **Details**: `--help`/`-h` and `--completions <shell>` win over the rest of
 * the line, as in every `effect/cli` program. A value flag takes the next
 * argument only when it does not start with `-` (the callers join such values
 * as `--flag=value` when they accept them).
 *
 * **Example**
 *
 * ```ts
 * import { interpret } from "@sluice/adapter-s3/cli/Definition"
 *
 * const { parsed } = interpret(["audit", "--bucket", "archive", "--json=true"])
 * // { _tag: "Audit", flags: { bucket: "archive", json: true, … } }
 * ```
 *
 * @since 0.5.0
 */
export const interpret = (argv: ReadonlyArray<string>): Outcome => {
  const { parsed, error } = run(argv)
  // `sluice` has no `--version`, so a reading never asks for it.
  return { parsed: parsed?._tag === "Version" ? undefined : parsed, error }
}

/**
 * The errors an `effect/cli` error stands for (a `ShowHelp` carries several).
 *
 * @since 0.5.0
 */
export const errorsOf = (error: CliError.CliError): ReadonlyArray<CliError.CliError> =>
  error._tag === "ShowHelp" ? error.errors : [error]

// ---------------------------------------------------------------------------
// Generated help
// ---------------------------------------------------------------------------

const helpDocOf = (argv: ReadonlyArray<string>): HelpDoc.HelpDoc =>
  CommandLine.helpDoc(run(argv), `sluice: no help document for ${argv.join(" ")}`)

const rootDoc = helpDocOf(["--help"])
const commandDocs = [helpDocOf(["audit", "--help"]), helpDocOf(["calibrate", "--help"])] as const

/** `sluice audit --bucket <bucket> [--prefix <prefix>] …`, wrapped under its first flag past 100 columns. */
const synopsis = (doc: HelpDoc.HelpDoc): Array<string> => {
  const head = `  ${(doc.commandPath ?? []).join(" ")} `
  const lines: Array<string> = []
  let line = head
  for (const flag of doc.flags) {
    const word = flag.required ? CommandLine.flagUsage(flag) : `[${CommandLine.flagUsage(flag)}]`
    if (line.length > head.length && line.length + 1 + word.length > 100) {
      lines.push(line)
      line = `${" ".repeat(head.length)}${word}`
    } else line = line.length === head.length ? `${line}${word}` : `${line} ${word}`
  }
  return [...lines, line]
}

/** Notes beside each command's flags: what no flag declares. */
const notes: Record<string, ReadonlyArray<string>> = {
  audit: [
    "credentials: $SLUICE_S3_ACCESS_KEY and $SLUICE_S3_SECRET_KEY when both are set, else the AWS SDK's",
    "default chain (AWS_ACCESS_KEY_ID, profiles, instance roles)",
    "",
    "exit codes: 0 clean, 1 findings (or the bucket could not be read, or an abort failed), 2 bad usage"
  ],
  calibrate: [
    `bounds: at most ${Bounds.cells} cells, ${Bounds.inflight} in flight, objects of ${Bounds.objectBytes / 1024 / 1024} MiB`,
    "credentials: $SLUICE_S3_ACCESS_KEY and $SLUICE_S3_SECRET_KEY when both are set, else the AWS SDK's chain",
    "",
    "exit codes: 0 fitted, 1 the sweep or the fit failed, 2 bad usage"
  ]
}

const globalLine = `  sluice ${(rootDoc.globalFlags ?? []).map(CommandLine.flagUsage).join(" | ")}`

const nameOf = (doc: HelpDoc.HelpDoc): string => doc.commandPath?.[1] ?? ""

/** What a command does, its flags and its notes. */
const section = (doc: HelpDoc.HelpDoc, flagsTitle: string): Array<string> => [
  `  ${nameOf(doc)}: ${doc.description.split("\n").join("\n  ")}`,
  "",
  flagsTitle,
  ...CommandLine.flagRows(doc.flags),
  ""
]

const globalRows = CommandLine.flagRows(rootDoc.globalFlags ?? [])

/**
 * The help of one command (`sluice audit --help`), or of the whole CLI
 * (`sluice --help`: every command's synopsis, description, flags and exit
 * codes), generated from the definition ({@link sluice}).
 *
 * **When to use**: to show what a command takes; `AuditCli.main` and
 * `CalibrateCli.main` print it for `--help`, and after a usage error.
 *
 * **Example**
 *
 * ```ts
 * import { help } from "@sluice/adapter-s3/cli/Definition"
 *
 * const text = help("audit") // "usage:\n  sluice audit --bucket <bucket> [--prefix <prefix>] …"
 * ```
 *
 * @since 0.5.0
 */
export const help = (command?: string): string => {
  const doc = commandDocs.find((d) => nameOf(d) === command)
  if (doc !== undefined) {
    return ["usage:", ...synopsis(doc), "", ...section(doc, "flags:"), "global flags:", ...globalRows, "", ...(notes[nameOf(doc)] ?? [])].join("\n")
  }
  return [
    "usage:",
    ...commandDocs.flatMap(synopsis),
    globalLine,
    "",
    `  ${rootDoc.description}`,
    "",
    ...commandDocs.flatMap((d) => [...section(d, `${nameOf(d)} flags:`), ...(notes[nameOf(d)] ?? []), ""]),
    "global flags:",
    ...globalRows
  ].join("\n")
}

/**
 * The shell completion script for `sluice`, generated by `effect/cli` from the
 * definition (the commands and their flags).
 *
 * **When to use**: `sluice --completions bash >> ~/.bashrc` prints it; call it
 * to install completions from a script.
 *
 * **Example**
 *
 * ```ts
 * import { completions } from "@sluice/adapter-s3/cli/Definition"
 *
 * const script = completions("zsh")
 * ```
 *
 * @since 0.5.0
 */
export const completions = (shell: Completions.Shell): string =>
  Completions.generate(sluice.name, shell, Completions.fromCommand(sluice))

// ---------------------------------------------------------------------------
// Where an error is on the line
// ---------------------------------------------------------------------------

/**
 * An argument list as handed to `effect/cli` (`tokens`, the command first),
 * with, for each token, the index of the argument it came from (`origin`).
 *
 * @since 0.5.0
 */
export interface Line {
  readonly tokens: ReadonlyArray<string>
  readonly origin: ReadonlyArray<number>
}

const isOccurrence = (token: string, option: string) => token === option || token.startsWith(`${option}=`)

/**
 * Where on the line (an index into the arguments as given) an `effect/cli`
 * error is: the unknown option, the flag without its value, the second value
 * of a flag given twice, the unexpected argument. `undefined` when it names
 * no argument.
 *
 * **When to use**: to report, of several errors, the first on the line, as
 * the hand-written parsers did.
 *
 * **Example**
 *
 * ```ts
 * import { CliError } from "effect/cli"
 * import { locate } from "@sluice/adapter-s3/cli/Definition"
 *
 * const at = locate(new CliError.UnrecognizedOption({ option: "--nope", suggestions: [] }), {
 *   tokens: ["audit", "--nope"],
 *   origin: [0, 1]
 * }) // 1
 * ```
 *
 * @since 0.5.0
 */
export const locate = (error: CliError.CliError, line: Line): number | undefined => {
  const { tokens, origin } = line
  const at = (i: number): number | undefined => (i < 0 ? undefined : origin[i])
  switch (error._tag) {
    case "UnrecognizedOption":
      return at(tokens.findIndex((t) => isOccurrence(t, error.option)))
    case "InvalidValue": {
      const option = `--${error.option}`
      if (error.value === "") {
        return at(tokens.findIndex((t, i) => t === option && (tokens[i + 1] === undefined || (tokens[i + 1] ?? "").startsWith("-"))))
      }
      const occurrences = tokens.flatMap((t, i) => (isOccurrence(t, option) ? [i] : []))
      return at(occurrences[1] ?? occurrences[0] ?? -1)
    }
    case "UnexpectedArgument": {
      const argument = error.arguments[0]
      // not the value of the flag before it
      return at(tokens.findIndex((t, i) => i > 0 && t === argument && !/^--[^=]+$/.test(tokens[i - 1] ?? "")))
    }
    default:
      return undefined
  }
}

/**
 * Something wrong on a line: where (`at`, an index into the arguments as
 * given), the flag or argument it is about, and the message the command
 * prints for it.
 *
 * @since 0.5.0
 */
export interface Problem {
  readonly at: number
  readonly flag: string
  readonly message: string
}

const earliest = (problems: ReadonlyArray<Problem>): Problem | undefined => [...problems].sort((a, b) => a.at - b.at)[0]

/** The tokens of `line` that come from arguments before `at` (the command always kept). */
const before = (line: Line, at: number): Line => {
  const cut = line.origin.findIndex((o, i) => i > 0 && o >= at)
  return cut < 0 ? line : { tokens: line.tokens.slice(0, cut), origin: line.origin.slice(0, cut) }
}

/**
 * The first problem on a line, as a parser reading it left to right and
 * stopping at the first would report it.
 *
 * **When to use**: to keep the message a hand-written parser gave when a line
 * has several problems; `AuditCli` and `CalibrateCli` call it.
 *
 * **Details**: `problems` are those found before `effect/cli` read the line
 * (arguments it would read otherwise, left out of `line`); only the part of
 * the line before the first of them is read, since what follows a left-out
 * argument may read differently. `effect/cli` reports an unknown option or a
 * missing value without looking further, and a flag given twice before an
 * argument the command does not take, so the part before what it reported is
 * read again until nothing earlier is wrong. `describe` gives each
 * `effect/cli` error its message and place (see {@link locate}).
 *
 * **Example**
 *
 * ```ts
 * import { firstProblem, interpret, locate } from "@sluice/adapter-s3/cli/Definition"
 *
 * const line = { tokens: ["audit", "x", "--nope"], origin: [0, 1, 2] }
 * const first = firstProblem(line, [], interpret(line.tokens).error, (error, read) => ({
 *   at: locate(error, read) ?? 3,
 *   flag: "",
 *   message: error._tag
 * })) // { at: 1, flag: "", message: "UnexpectedArgument" }
 * ```
 *
 * @since 0.5.0
 */
export const firstProblem = (
  line: Line,
  problems: ReadonlyArray<Problem>,
  error: CliError.CliError | undefined,
  describe: (error: CliError.CliError, line: Line) => Problem
): Problem | undefined => {
  const problemsOf = (e: CliError.CliError | undefined, read: Line) => (e === undefined ? [] : errorsOf(e).map((x) => describe(x, read)))
  const found = earliest(problems)
  const read = found === undefined ? line : before(line, found.at)
  let best = earliest([...problems, ...problemsOf(found === undefined ? error : interpret(read.tokens).error, read)])
  while (best !== undefined) {
    const at = best.at
    const prefix = before(read, at)
    if (prefix.tokens.length <= 1) return best
    const earlier = earliest(problemsOf(interpret(prefix.tokens).error, prefix).filter((p) => p.at < at))
    if (earlier === undefined) return best
    best = earlier
  }
  return best
}

/**
 * The long flags of a command as written (`--bucket`), those taking a value
 * and the switches, read from the definition.
 *
 * **When to use**: to prepare a line for `effect/cli` the way a command has
 * always read it (`AuditCli`, `CalibrateCli`).
 *
 * **Example**
 *
 * ```ts
 * import { flagsOf } from "@sluice/adapter-s3/cli/Definition"
 *
 * flagsOf("audit").switches // Set { "--abort-orphans", "--json" }
 * ```
 *
 * @since 0.5.0
 */
export const flagsOf = (command: string): { readonly values: ReadonlySet<string>; readonly switches: ReadonlySet<string> } => {
  const flags = Completions.fromCommand(sluice).subcommands.find((c) => c.name === command)?.flags ?? []
  return {
    values: new Set(flags.filter((f) => f.type._tag !== "Boolean").map((f) => `--${f.name}`)),
    switches: new Set(flags.filter((f) => f.type._tag === "Boolean").map((f) => `--${f.name}`))
  }
}
