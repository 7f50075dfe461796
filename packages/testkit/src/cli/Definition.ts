/**
 * The `sluice-sim` command line as an `effect/cli` definition: its commands,
 * their arguments and typed flags, the help generated from them, shell
 * completions, and `parseArgs`, which reads an argument list with that
 * definition into a {@link Parsed} (what `Cli.main` then runs).
 *
 * `effect/cli` parses; this module keeps the messages the hand-written parser
 * gave: each of its errors is mapped to the sentence `sluice-sim` has always
 * printed (`unknown option --polciy (did you mean --policy?)`, `--plot needs a
 * value`, `unexpected argument x: schema takes none`, …).
 *
 * @since 0.5.0
 */
import { Context, Effect, Option } from "effect"
import { Argument, CliError, Command, Completions, Flag } from "effect/cli"
import type { HelpDoc } from "effect/cli"
import { Config, Suggestion } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import * as Family from "../Family.ts"

/**
 * The longest virtual duration a scenario may ask for unless `--max-duration`
 * raises it: 24 hours. The shipped scenarios last at most 300 s, and knee-24
 * (1 M records/s) simulates ~230× faster than real time, so a day of virtual
 * time at that load is minutes of wall time and a trace of 864 000 rows; a slip
 * like `"300 hours"` for `"300 seconds"` is refused instead of running for hours.
 *
 * @since 0.2.0
 */
export const defaultMaxDuration = 24 * 3_600_000

/**
 * What the arguments ask for: a command to run, the help (of the whole CLI or
 * of one command), the version, a shell completion script, or bad usage (with
 * the reason).
 *
 * @since 0.2.0
 */
export type Parsed =
  | {
    readonly _tag: "Command"
    readonly command: string | undefined
    readonly target: string | undefined
    readonly policies: ReadonlyArray<string>
    readonly json: boolean
    readonly trace: string | undefined
    readonly plot: string | undefined
    /** The `--max-duration` cap in virtual milliseconds ({@link defaultMaxDuration} when absent). */
    readonly maxDuration: number
    /** `generate`: the family, how many, its seed, where to write. */
    readonly family?: string | undefined
    readonly count?: string | undefined
    readonly seed?: string | undefined
    readonly out?: string | undefined
  }
  | {
    readonly _tag: "Help"
    /** The command whose help was asked for (`run --help`); absent for the whole CLI. */
    readonly command?: string | undefined
  }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Completions"; readonly shell: Completions.Shell }
  | { readonly _tag: "Invalid"; readonly message: string }

type Args = Extract<Parsed, { readonly _tag: "Command" }>

/**
 * ` (did you mean --policy?)` when exactly one known word is within two edits.
 *
 * @internal
 */
export const suggestion = (word: string, known: ReadonlyArray<string>): string => {
  const near = known.filter((k) => Suggestion.distance(word, k) <= 2)
  return near.length === 1 ? ` (did you mean ${near[0]}?)` : ""
}

/**
 * The message for a missing or unknown `generate --family`.
 *
 * @internal
 */
export const familyMessage = (kind: string | undefined): string =>
  `generate needs --family, one of ${Family.kinds.join(", ")}${
    kind === undefined ? "" : `; got ${JSON.stringify(kind)}${suggestion(kind, Family.kinds)}`
  }`

// ---------------------------------------------------------------------------
// The definition
// ---------------------------------------------------------------------------

/** Records what a command line asks for while `effect/cli` runs the definition. */
class Captured extends Context.Service<Captured, CommandLine.Recorder<Args>>()(
  "@sluice/testkit/cli/Definition/Captured"
) {}

const policy = Flag.String("policy").pipe(
  Flag.withMetavar("spec"),
  Flag.withDescription(
    "fixed:N | base | a composition of @sluice/policies (e.g. aimd+throttle+shared+batch),\n" +
      "with policy modules as members: ./my-policy.js, some-package (e.g. ./arc.js+throttle+shared);\n" +
      "a module's default export is a policies Layer, { layer, floors? }, a Policy (with a named\n" +
      "export \"config\"), or { policy, config }. run takes one; matrix and family take several"
  ),
  Flag.atLeast(0)
)

const json = CommandLine.switchFlag("json", "also print the summary as JSON on the last line (matrix: an array)")

/** `--max-duration`: every value must be a positive duration; the last one is the cap. */
const maxDuration = Flag.String("max-duration").pipe(
  Flag.withMetavar("d"),
  Flag.withDescription(`refuse scenarios longer than d of virtual time (default 24h), e.g. 48h, "7 days"`),
  Flag.atLeast(0),
  Flag.mapEffect((values) =>
    Effect.gen(function*() {
      let cap = defaultMaxDuration
      for (const v of values) {
        const millis = Config.parseMillis(v)
        if (millis === undefined || millis <= 0) {
          return yield* new CliError.ValidationError({
            message: `--max-duration needs a positive duration like 48h or "7 days", got ${JSON.stringify(v)}`
          })
        }
        cap = millis
      }
      return cap
    })
  )
)

const family = Flag.Literals("family", Family.kinds).pipe(
  Flag.withMetavar("kind"),
  Flag.withDescription("the family to draw from"),
  Flag.atLeast(0),
  Flag.map((values) => values.at(-1))
)

const record = (parsed: Args) => Captured.use((captured) => Effect.sync(() => captured.set(parsed)))

/** The fields of a `Command` that a command has no flag for. */
const base = { policies: [], json: false, trace: undefined, plot: undefined, maxDuration: defaultMaxDuration } as const

const run = Command.make("run", {
  scenario: Argument.String("scenario.json").pipe(Argument.withDescription("the scenario file")),
  policy,
  json,
  trace: CommandLine.lastValue("trace", "csv", "write the trace (one row per 100 virtual ms) as CSV"),
  plot: CommandLine.lastValue("plot", "svg", "write the trace as an SVG plot"),
  maxDuration
}, (c) =>
  record({
    _tag: "Command",
    command: "run",
    target: c.scenario,
    policies: c.policy,
    json: c.json,
    trace: c.trace,
    plot: c.plot,
    maxDuration: c.maxDuration
  })).pipe(
    Command.withDescription("run one scenario with one policy (default base); print its summary")
  )

const directory = Argument.String("dir").pipe(Argument.withDescription("a directory of scenario files (*.json)"))

const matrix = Command.make("matrix", { dir: directory, policy, json, maxDuration }, (c) =>
  record({ ...base, _tag: "Command", command: "matrix", target: c.dir, policies: c.policy, json: c.json, maxDuration: c.maxDuration }))
  .pipe(Command.withDescription("every scenario of a directory × every --policy, as a table"))

const generate = Command.make("generate", {
  family,
  count: CommandLine.lastValue("count", "N", "how many scenarios to draw (1 to 10000)"),
  seed: CommandLine.lastValue("seed", "S", "the seed that fixes the draw (0 to 2147483647)"),
  out: CommandLine.lastValue("out", "dir", "where to write the scenario files")
}, (c) =>
  record({ ...base, _tag: "Command", command: "generate", target: undefined, family: c.family, count: c.count, seed: c.seed, out: c.out }))
  .pipe(Command.withDescription("draw scenarios of a family (--family, --count, --seed and --out are all needed)"))

const familyCommand = Command.make("family", { dir: directory, policy, json, maxDuration }, (c) =>
  record({ ...base, _tag: "Command", command: "family", target: c.dir, policies: c.policy, json: c.json, maxDuration: c.maxDuration }))
  .pipe(Command.withDescription("run a directory of one family's scenarios per policy; print the distribution"))

const schema = Command.make("schema", {}, () => record({ ...base, _tag: "Command", command: "schema", target: undefined }))
  .pipe(Command.withDescription("print the JSON Schema of scenario files"))

/** What bad usage of each command is called: its missing argument, what it takes. */
const arity: Record<string, { readonly needs?: string; readonly takes: string }> = {
  run: { needs: "run needs a scenario file", takes: "one scenario file" },
  matrix: { needs: "matrix needs a directory of scenario files", takes: "one directory" },
  family: { needs: "family needs a directory of scenario files", takes: "one directory" },
  generate: { takes: "none" },
  schema: { takes: "none" }
}

/**
 * The `sluice-sim` command tree: `run`, `matrix`, `generate`, `family`,
 * `schema`. Its handlers only record what was asked for (a {@link Parsed});
 * `Cli.main` runs it.
 *
 * **When to use**: to introspect the command line (its help documents, its
 * completion descriptor via `Completions.fromCommand`); to run it, use
 * `Cli.main`.
 *
 * **Example**
 *
 * ```ts
 * import { Completions } from "effect/cli"
 * import { Cli } from "@sluice/testkit"
 *
 * const names = Completions.fromCommand(Cli.sluiceSim).subcommands.map((c) => c.name)
 * // ["run", "matrix", "generate", "family", "schema"]
 * ```
 *
 * @since 0.5.0
 */
export const sluiceSim = Command.make("sluice-sim").pipe(
  Command.withDescription("Run scenarios on the virtual-clock simulator, one or a matrix of scenarios × policies."),
  Command.withSubcommands([run, matrix, generate, familyCommand, schema])
)

/**
 * The command names, in the order of the help.
 *
 * @internal
 */
export const commandNames: ReadonlyArray<string> = sluiceSim.subcommands.flatMap((group) => group.commands.map((c) => c.name))

/** `--help`/`-h`, `--version` with `-V` as before (the built-in's alias is `-v`), `--completions <shell>`. */
const globals = CommandLine.globalFlags({
  help: "print this help (of the whole CLI, or of one command: run --help)",
  version: { alias: "V", description: "print the version of @sluice/testkit" },
  completions: "print the shell completion script, e.g. sluice-sim --completions bash >> ~/.bashrc"
})

// ---------------------------------------------------------------------------
// Running the definition on an argument list
// ---------------------------------------------------------------------------

/** What one pass of `effect/cli` over an argument list gave (what a handler recorded: an `Args`). */
const interpret = CommandLine.reader(sluiceSim, Captured, globals)

// ---------------------------------------------------------------------------
// Generated help
// ---------------------------------------------------------------------------

/** `sluice-sim run <scenario.json> [--policy <spec>] [--json] …` */
const synopsis = (doc: HelpDoc.HelpDoc): string =>
  [
    (doc.commandPath ?? []).join(" "),
    ...(doc.args ?? []).map((a) => (a.required ? `<${a.name}>` : `[<${a.name}>]`)),
    ...doc.flags.map((f) => `[${CommandLine.flagUsage(f)}]`)
  ].join(" ")

const exitCodes = "exit codes: 0 every expect bound holds, 1 a bound failed, 2 bad usage, scenario or policy"

/** Asks the definition for the help document of `sluice-sim [command] --help`. */
const helpDocOf = (command: string | undefined): HelpDoc.HelpDoc =>
  CommandLine.helpDoc(
    interpret(command === undefined ? ["--help"] : [command, "--help"]),
    `sluice-sim: no help document for ${command ?? "the root command"}`
  )

const rootDoc = helpDocOf(undefined)
const commandDocs = commandNames.map((name) => [name, helpDocOf(name)] as const)

/** Every command's flags, each once (the first description). */
const allFlags = commandDocs.flatMap(([, doc]) => doc.flags).filter((f, i, all) => all.findIndex((g) => g.name === f.name) === i)

const globalLine = `${rootDoc.commandPath?.join(" ") ?? "sluice-sim"} ${
  (rootDoc.globalFlags ?? []).map(CommandLine.flagUsage).join(" | ")
}`

/**
 * The usage text `--help` prints (and bad usage prints to stderr), generated
 * from the `effect/cli` definition ({@link sluiceSim}): a synopsis per
 * command, the commands, every flag, the global flags and the exit codes.
 *
 * @since 0.2.0
 */
export const usage: string = [
  "usage:",
  ...commandDocs.map(([, doc]) => `  ${synopsis(doc)}`),
  `  ${globalLine}`,
  "",
  "commands:",
  ...CommandLine.table(commandDocs.map(([name, doc]) => [name, doc.description] as const)),
  "",
  "flags:",
  ...CommandLine.flagRows(allFlags),
  "",
  "global flags:",
  ...CommandLine.flagRows(rootDoc.globalFlags ?? []),
  "",
  exitCodes
].join("\n")

/**
 * The help of one command (`sluice-sim run --help`), or {@link usage} for the
 * whole CLI, generated from the definition.
 *
 * **When to use**: to show what a command takes; `Cli.main` prints it for
 * `--help`.
 *
 * **Example**
 *
 * ```ts
 * import { Cli } from "@sluice/testkit"
 *
 * const text = Cli.help("run") // "usage:\n  sluice-sim run <scenario.json> [--policy <spec>] …"
 * ```
 *
 * @since 0.5.0
 */
export const help = (command?: string): string => {
  const doc = commandDocs.find(([name]) => name === command)?.[1]
  if (doc === undefined) return usage
  return [
    "usage:",
    `  ${synopsis(doc)}`,
    "",
    doc.description,
    ...((doc.args ?? []).length === 0 ? [] : ["", "arguments:", ...CommandLine.table((doc.args ?? []).map((a) => [`<${a.name}>`, Option.getOrElse(a.description, () => "")] as const))]),
    ...(doc.flags.length === 0 ? [] : ["", "flags:", ...CommandLine.flagRows(doc.flags)]),
    "",
    "global flags:",
    ...CommandLine.flagRows(doc.globalFlags ?? []),
    "",
    exitCodes
  ].join("\n")
}

/**
 * The shell completion script for `sluice-sim`, generated by `effect/cli`
 * from the definition (commands, flags, `--family` choices).
 *
 * **When to use**: `sluice-sim --completions bash >> ~/.bashrc` prints it; call
 * it to install completions from a script.
 *
 * **Example**
 *
 * ```ts
 * import { Cli } from "@sluice/testkit"
 *
 * const script = Cli.completions("zsh")
 * ```
 *
 * @since 0.5.0
 */
export const completions = (shell: Completions.Shell): string =>
  Completions.generate(sluiceSim.name, shell, Completions.fromCommand(sluiceSim))

// ---------------------------------------------------------------------------
// Today's messages for effect/cli's errors
// ---------------------------------------------------------------------------

const descriptor = Completions.fromCommand(sluiceSim)
const globalOptions = ["--help", "--version", "--completions"]

/** The long options a command takes (every command's at the root), for suggestions. */
const optionsOf = (command: string | undefined): ReadonlyArray<string> => [
  ...new Set(
    descriptor.subcommands.filter((c) => command === undefined || c.name === command).flatMap((c) => c.flags.map((f) => `--${f.name}`))
  ),
  ...globalOptions
]

const valueFlags = new Set(descriptor.subcommands.flatMap((c) => c.flags.filter((f) => f.type._tag !== "Boolean").map((f) => `--${f.name}`)))
const booleanFlags = new Set(descriptor.subcommands.flatMap((c) => c.flags.filter((f) => f.type._tag === "Boolean").map((f) => `--${f.name}`)))
const actions = new Set(["--help", "-h", "--version", "-V"])

/**
 * The argument list in the form `effect/cli` reads as the hand parser did: a
 * value flag takes the next argument even when it starts with `-`
 * (`--max-duration -5s` is a bad duration, not a missing value), unless that is
 * `--help` or `--version`; a bare boolean flag never takes the next argument
 * (`--json 1` is a flag and an argument).
 */
const normalize = (argv: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const next = argv[i + 1]
    if (valueFlags.has(a) && next !== undefined && next.startsWith("-") && !actions.has(next)) {
      out.push(`${a}=${next}`)
      i++
    } else out.push(booleanFlags.has(a) ? `${a}=true` : a)
  }
  return out
}

/** The argument as written (`--max-durration=2h`, `-xyz`) for an option `effect/cli` names (`--max-durration`, `-x`). */
const written = (option: string, argv: ReadonlyArray<string>): string =>
  argv.find((a) => a === option || a.startsWith(`${option}=`)) ??
    (option.startsWith("--") ? undefined : argv.find((a) => /^-[^-]/.test(a) && a.includes(option.slice(1)))) ??
    option

const rank = (error: CliError.CliError): number =>
  error._tag === "UnrecognizedOption" || error._tag === "InvalidValue" || error._tag === "ValidationError"
    ? 0
    : error._tag === "UnexpectedArgument"
    ? 1
    : error._tag === "UnknownSubcommand"
    ? 2
    : 3

/** An argument list as given, and as `effect/cli` read it. */
interface Line {
  readonly original: ReadonlyArray<string>
  readonly normalized: ReadonlyArray<string>
}

/** Today's message for one `effect/cli` error. */
const messageOf = (error: CliError.CliError, command: string | undefined, argv: Line): string => {
  switch (error._tag) {
    case "UnrecognizedOption": {
      const raw = written(error.option, argv.original)
      const eq = raw.indexOf("=")
      const name = raw.startsWith("--") && eq > 0 ? raw.slice(0, eq) : raw
      // Another command's option (or one before the command) is not a typo of itself.
      return `unknown option ${raw}${suggestion(name, optionsOf(command).filter((o) => o !== name))}`
    }
    case "InvalidValue": {
      const flag = `--${error.option}`
      if (error.value === "" && argv.normalized.includes(flag)) return `${flag} needs a value`
      if (error.option === "family") return familyMessage(error.value)
      return `${flag} needs ${error.expected}, got ${JSON.stringify(error.value)}`
    }
    case "ValidationError":
      return error.message
    case "UnexpectedArgument":
      return `unexpected argument ${error.arguments[0]}: ${command} takes ${arity[command ?? ""]?.takes ?? "none"}`
    case "UnknownSubcommand":
      return `unknown command ${error.subcommand}${suggestion(error.subcommand, commandNames)}`
    case "MissingArgument":
      return arity[command ?? ""]?.needs ?? `${command} needs <${error.argument}>`
    case "MissingOption":
      return `${command} needs --${error.option}`
    case "ShowHelp": {
      // After an unknown command, its options are unknown too (they are read at the root): name the command.
      const unknownCommand = error.errors.some((e) => e._tag === "UnknownSubcommand")
      const errors = error.errors.filter((e) => !(unknownCommand && e._tag === "UnrecognizedOption" && optionsOf(undefined).includes(e.option)))
      const first = [...errors].sort((a, b) => rank(a) - rank(b))[0]
      return first === undefined ? "a command is needed" : messageOf(first, error.commandPath[1], argv)
    }
    case "DuplicateOption":
    case "UserError":
      return error.message
  }
}

/**
 * Parses the arguments (after `node cli.js`) with the `effect/cli` definition
 * ({@link sluiceSim}); a thin adapter that records what its handlers receive
 * and maps its errors to `sluice-sim`'s messages.
 *
 * **When to use**: to check what a command line means without running it;
 * `main` calls it.
 *
 * **Details**: `--help`/`-h` and `--version`/`-V` win over everything else on
 * the line (`--help` first); `--completions <shell>` asks for the completion
 * script. Each command takes only its own flags. Options take their value as
 * the next argument or after `=` (`--policy=fixed:8`); given twice, the last
 * wins (`--policy` collects every value). An unknown command or option (with a
 * suggestion when one is near), a missing option value, a `--max-duration`
 * that is not a positive duration, a `--family` that is not a family, a
 * missing scenario or directory, an argument beyond the command's and `--`
 * are `Invalid`, whose message names them.
 *
 * **Example**
 *
 * ```ts
 * import { Cli } from "@sluice/testkit"
 *
 * const parsed = Cli.parseArgs(["run", "scenario.json", "--policy", "fixed:8"])
 * // { _tag: "Command", command: "run", target: "scenario.json", policies: ["fixed:8"], … }
 * ```
 *
 * @since 0.1.0
 */
export const parseArgs = (argv: ReadonlyArray<string>): Parsed => {
  const normalized = normalize(argv)
  const outcome = interpret(normalized)
  const asked = outcome.parsed
  if (asked !== undefined && asked._tag !== "Command") return asked
  // `--` ends options for effect/cli; sluice-sim has never taken it.
  if (argv.includes("--")) return { _tag: "Invalid", message: "unknown option --" }
  if (outcome.error !== undefined) return { _tag: "Invalid", message: messageOf(outcome.error, undefined, { original: argv, normalized }) }
  return asked ?? { _tag: "Invalid", message: "a command is needed" }
}
