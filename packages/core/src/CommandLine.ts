/**
 * Reading a command line with an `effect/cli` definition without running it:
 * the definition's handlers only record what was asked for, the global flags
 * (`--help`, `--version`, `--completions`) are recorded instead of printing,
 * and the help documents `effect/cli` generates are kept for a CLI's own
 * help layout (`flagUsage`, `table`, `flagRows`). Also the flags every Sluice
 * CLI reads the same way (`lastValue`, `switchFlag`, `globalFlags`).
 *
 * Every Sluice command line (`sluice-sim`, `sluice audit`, `sluice calibrate`)
 * reads its arguments this way, then maps what it read to its own messages.
 * A subpath (`@sluice/core/CommandLine`), not in the index: `effect/cli` is
 * loaded only by the CLIs, never by a pipeline that imports `@sluice/core`
 * (~40 ms of every archiver's start).
 *
 * @since 0.5.0
 */
import { Context, Effect, FileSystem, Layer, Option, Path, Result, Stdio, Terminal } from "effect"
import { CliConfig, CliError, CliOutput, Command, Completions, Flag, GlobalFlag } from "effect/cli"
import type { HelpDoc } from "effect/cli"
import { ChildProcessSpawner } from "effect/process"

// ---------------------------------------------------------------------------
// Flags
// ---------------------------------------------------------------------------

/**
 * A value flag that may be absent or given several times, the last value
 * winning; `undefined` when absent.
 *
 * **When to use**: for an option a hand-written parser read as "the last one
 * wins" (`--out a --out b` writes to `b`).
 *
 * **Example**
 *
 * ```ts
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * const out = CommandLine.lastValue("out", "dir", "where to write the files") // --out <dir>
 * ```
 *
 * @since 0.5.0
 */
export const lastValue = (name: string, metavar: string, description: string): Flag.Flag<string | undefined> =>
  Flag.String(name).pipe(
    Flag.withMetavar(metavar),
    Flag.withDescription(description),
    Flag.atLeast(0),
    Flag.map((values) => values.at(-1))
  )

/**
 * A flag without a value (`--json`), with no `--no-` form, that may be given
 * more than once; `--json=false` as the last turns it off, absent is `false`.
 *
 * **When to use**: for an on/off option of a command.
 *
 * **Example**
 *
 * ```ts
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * const json = CommandLine.switchFlag("json", "print the report as JSON")
 * ```
 *
 * @since 0.5.0
 */
export const switchFlag = (name: string, description: string): Flag.Flag<boolean> =>
  Flag.Boolean(name).pipe(
    Flag.withoutNegation,
    Flag.withDescription(description),
    Flag.atLeast(0),
    Flag.map((values) => values.at(-1) ?? false)
  )

// ---------------------------------------------------------------------------
// Global flags
// ---------------------------------------------------------------------------

/**
 * The global flags of a command line: `--help`/`-h`, `--version` when it has
 * one, and `--completions <shell>` (no wizard, no log level).
 *
 * @since 0.5.0
 */
export interface GlobalFlags {
  /** `--help`/`-h`: presents the help document, which a {@link reader} keeps. */
  readonly help: GlobalFlag.Action<boolean>
  /** `--version`, when the command line has one. */
  readonly version: GlobalFlag.Action<boolean> | undefined
  /** `--completions`: recorded by {@link reader} rather than printing the script as the built-in does. */
  readonly completions: Flag.Flag<Option.Option<Completions.Shell>>
}

/**
 * The global flags of a command line, described in the words of the rest of
 * its help: `--help`/`-h` (`effect/cli`'s built-in), `--version` with the
 * given alias when `version` is given, `--completions <shell>` (bash, zsh,
 * fish, powershell; sh and pwsh as aliases).
 *
 * **When to use**: once per command line, for {@link reader}.
 *
 * **Example**
 *
 * ```ts
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * const globals = CommandLine.globalFlags({
 *   help: "print this help (of the whole CLI, or of one command: tool run --help)",
 *   version: { alias: "V", description: "print the version of tool" },
 *   completions: "print the shell completion script, e.g. tool --completions bash >> ~/.bashrc"
 * })
 * ```
 *
 * @since 0.5.0
 */
export const globalFlags = (options: {
  readonly help: string
  readonly completions: string
  readonly version?: { readonly alias: string; readonly description: string } | undefined
}): GlobalFlags => ({
  help: GlobalFlag.Action({
    flag: Flag.Boolean("help").pipe(Flag.withAlias("h"), Flag.withDescription(options.help), Flag.withDefault(false)),
    run: GlobalFlag.Help.run
  }),
  version: options.version === undefined ? undefined : GlobalFlag.Action({
    flag: Flag.Boolean("version").pipe(
      Flag.withAlias(options.version.alias),
      Flag.withDescription(options.version.description),
      Flag.withDefault(false)
    ),
    run: GlobalFlag.Version.run
  }),
  completions: GlobalFlag.Completions.flag.pipe(Flag.withMetavar("shell"), Flag.withDescription(options.completions))
})

// ---------------------------------------------------------------------------
// Reading a line
// ---------------------------------------------------------------------------

/**
 * What a global flag asks for: the help (of the whole CLI, or of the command
 * named by `command`: `run --help`), the version, or a completion script.
 *
 * @since 0.5.0
 */
export type BuiltIn =
  | { readonly _tag: "Help"; readonly command: string | undefined }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Completions"; readonly shell: Completions.Shell }

/**
 * What one pass of `effect/cli` over an argument list gave ({@link reader}): what it asks for
 * first (what a handler recorded, or a {@link BuiltIn}), the help document of
 * `--help`, or the error.
 *
 * @since 0.5.0
 */
export interface Reading<P> {
  /** What a handler recorded, or the global flag's {@link BuiltIn}; `undefined` after an error. */
  readonly parsed: P | BuiltIn | undefined
  /** The help document of `--help` (of the whole CLI, or of the command before it). */
  readonly helpDoc: HelpDoc.HelpDoc | undefined
  /** What `effect/cli` refused (a `ShowHelp` carries the errors of the line). */
  readonly error: CliError.CliError | undefined
}

const unused = Effect.die("@sluice/core/CommandLine: not used while parsing")

/** The services `effect/cli` asks for; parsing touches none of them. */
const environment = Layer.mergeAll(
  FileSystem.layerNoop({}),
  Path.layer,
  Stdio.layerTest({}),
  Layer.succeed(
    Terminal.Terminal,
    Terminal.make({ columns: Effect.succeed(80), rows: Effect.succeed(24), size: unused, readInput: unused, readLine: unused, display: () => Effect.void })
  ),
  Layer.succeed(ChildProcessSpawner.ChildProcessSpawner, ChildProcessSpawner.make(() => unused))
)

/**
 * What the handlers of a definition record what was asked for with: the
 * service a {@link reader} provides them.
 *
 * @since 0.5.0
 */
export interface Recorder<P> {
  /** Records what the line asks for; the first call of a reading wins. */
  readonly set: (parsed: P) => void
}

/**
 * Reads argument lists with an `effect/cli` definition, synchronously and
 * without running anything: the definition's handlers only record what was
 * asked for, with the `recorder` service (`Captured.set(...)`).
 *
 * **When to use**: to parse a command line with `effect/cli` and decide, and
 * print, what to do with the result yourself (messages of your own, help of
 * your own layout).
 *
 * **Details**: the first thing asked for wins. A global flag (`--help`/`-h`,
 * `--version`, `--completions <shell>`, see {@link globalFlags}) wins over
 * the rest of the line, as in every `effect/cli` program, and is recorded
 * instead of printing; `--help` also keeps its `HelpDoc`. Errors are not
 * rendered: the `effect/cli` error is returned. The services `effect/cli`
 * requires are stand-ins that parsing never touches.
 *
 * **Example**
 *
 * ```ts
 * import { Context, Effect } from "effect"
 * import { Argument, Command } from "effect/cli"
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * class Captured extends Context.Service<Captured, CommandLine.Recorder<string>>()("Captured") {}
 *
 * const tool = Command.make("tool").pipe(
 *   Command.withSubcommands([
 *     Command.make("run", { file: Argument.String("file") }, ({ file }) =>
 *       Captured.use((captured) => Effect.sync(() => captured.set(file))))
 *   ])
 * )
 * const read = CommandLine.reader(tool, Captured, CommandLine.globalFlags({ help: "print this help", completions: "print the completion script" }))
 *
 * read(["run", "a.json"]).parsed // "a.json"
 * read(["run", "--help"]).parsed // { _tag: "Help", command: "run" }
 * ```
 *
 * @since 0.5.0
 */
export const reader = <const Name extends string, Input, ContextInput, I, P>(
  command: Command.Command<Name, Input, ContextInput, never, I>,
  recorder: Context.Key<I, Recorder<P>>,
  globals: GlobalFlags
): (argv: ReadonlyArray<string>) => Reading<P> => {
  const run = Command.runWith(command, { version: "", renderErrors: false })
  return (argv) => {
    let parsed: P | BuiltIn | undefined
    let helpDoc: HelpDoc.HelpDoc | undefined
    const set = (p: P | BuiltIn) => {
      parsed ??= p
    }
    const presenter: CliOutput.Presenter = {
      present: (event) =>
        Effect.sync(() => {
          if (event._tag === "Version") set({ _tag: "Version" })
          else if (event._tag === "Help" && event.reason === "Requested") {
            helpDoc = event.helpDoc
            set({ _tag: "Help", command: event.commandPath[1] })
          }
        })
    }
    // The built-in `--completions` prints the script itself; this one records the shell.
    const completions = GlobalFlag.Action({
      flag: globals.completions,
      run: (shell) =>
        Effect.sync(() => {
          if (Option.isSome(shell)) set({ _tag: "Completions", shell: shell.value })
        })
    })
    const builtIns = globals.version === undefined ? [globals.help, completions] : [globals.help, globals.version, completions]
    const result = Effect.runSync(
      run(argv).pipe(
        Effect.provideService(recorder, { set }),
        Effect.provide(Layer.mergeAll(environment, CliOutput.layerPresenter(presenter), CliConfig.layer({ builtIns }))),
        Effect.result
      )
    )
    return { parsed, helpDoc, error: Result.isFailure(result) ? result.failure : undefined }
  }
}

/**
 * The help document a {@link reader} kept for a `--help` line.
 *
 * **When to use**: to build a CLI's help text from its definition, at load.
 *
 * **Details**: throws `new Error(missing)` when the line asked for no help:
 * the definition is broken, not the user's line.
 *
 * **Example**
 *
 * ```ts
 * import { Context, Effect } from "effect"
 * import { Command } from "effect/cli"
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * class Captured extends Context.Service<Captured, CommandLine.Recorder<"ran">>()("Captured") {}
 *
 * const tool = Command.make("tool", {}, () => Captured.use((captured) => Effect.sync(() => captured.set("ran"))))
 * const read = CommandLine.reader(tool, Captured, CommandLine.globalFlags({ help: "print this help", completions: "print the completion script" }))
 *
 * const doc = CommandLine.helpDoc(read(["--help"]), "tool: no help document") // doc.commandPath: ["tool"]
 * ```
 *
 * @since 0.5.0
 */
export const helpDoc = <P>(reading: Reading<P>, missing: string): HelpDoc.HelpDoc => {
  if (reading.helpDoc === undefined) throw new Error(missing)
  return reading.helpDoc
}

// ---------------------------------------------------------------------------
// Help layout
// ---------------------------------------------------------------------------

const metavar = (type: string): string => (type.startsWith("<") ? type : `<${type}>`)

/**
 * How a flag is written: `--json`, `--policy <spec>`.
 *
 * **When to use**: in a synopsis or a flag table laid out from a `HelpDoc`.
 *
 * **Example**
 *
 * ```ts
 * import { Option } from "effect"
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * CommandLine.flagUsage({ name: "policy", aliases: [], type: "spec", description: Option.none(), required: false })
 * // "--policy <spec>"
 * ```
 *
 * @since 0.5.0
 */
export const flagUsage = (flag: HelpDoc.FlagDoc): string => (flag.type === "boolean" ? `--${flag.name}` : `--${flag.name} ${metavar(flag.type)}`)

/**
 * Two columns, indented by two spaces, the second starting two spaces past
 * the widest first and its extra lines indented under it.
 *
 * **When to use**: for the commands, arguments and flags sections of a help.
 *
 * **Example**
 *
 * ```ts
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * CommandLine.table([["run", "run one scenario"], ["schema", "print the schema"]])
 * // ["  run     run one scenario", "  schema  print the schema"]
 * ```
 *
 * @since 0.5.0
 */
export const table = (rows: ReadonlyArray<readonly [string, string]>): Array<string> => {
  const width = Math.max(...rows.map(([left]) => left.length)) + 2
  return rows.map(([left, right]) => `  ${left.padEnd(width)}${right.split("\n").join(`\n  ${" ".repeat(width)}`)}`)
}

/**
 * A {@link table} of flags: each flag as written ({@link flagUsage}) with its
 * aliases, and its description.
 *
 * **When to use**: for the flags and global flags sections of a help.
 *
 * **Example**
 *
 * ```ts
 * import { Option } from "effect"
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * CommandLine.flagRows([{ name: "help", aliases: ["-h"], type: "boolean", description: Option.some("print this help"), required: false }])
 * // ["  --help, -h  print this help"]
 * ```
 *
 * @since 0.5.0
 */
export const flagRows = (flags: ReadonlyArray<HelpDoc.FlagDoc>): Array<string> =>
  table(flags.map((f) => [[flagUsage(f), ...f.aliases].join(", "), Option.getOrElse(f.description, () => "")] as const))

// ---------------------------------------------------------------------------
// A command of its own
// ---------------------------------------------------------------------------

/**
 * What one argument list of a {@link Script} asks for: to run with the flags
 * as `effect/cli` typed them, its help, a shell completion script, or nothing
 * (the line is wrong: `message` says how, in `effect/cli`'s words).
 *
 * @since 0.5.0
 */
export type ScriptLine<A> =
  | { readonly _tag: "Run"; readonly flags: A }
  | { readonly _tag: "Help"; readonly text: string }
  | { readonly _tag: "Completions"; readonly script: string }
  | { readonly _tag: "Invalid"; readonly message: string }

/**
 * A command without subcommands, read with its `effect/cli` definition: the
 * help generated from it, and a reader of argument lists.
 *
 * @since 0.5.0
 */
export interface Script<A> {
  /** The command's name, as the help and the completion script spell it. */
  readonly name: string
  /** The help (`--help`), generated from the definition: usage, description, flags. */
  readonly help: string
  /** Reads an argument list (without node and the script) into what it asks for. */
  readonly read: (argv: ReadonlyArray<string>) => ScriptLine<A>
}

const plain = CliOutput.defaultFormatter({ colors: false })

/**
 * A command of its own (an npm script, a tool): its flags and positional
 * arguments (`Flag`s and `Argument`s) as an `effect/cli` definition, read
 * without running anything, with `--help`/`-h` and `--completions <shell>`.
 *
 * **When to use**: for a command without subcommands, whose own code decides
 * what to do with a {@link ScriptLine} ({@link settle} prints and sets the
 * exit code). A CLI of several commands uses {@link reader} with its own tree.
 *
 * **Details**: the help is `effect/cli`'s default layout without colours,
 * computed once, at the call. A wrong line's message is every error
 * `effect/cli` found, one a line (an unknown flag with its "did you mean").
 * Values are checked by the flags' own types (`Flag.Integer`, `Flag.Choice`,
 * `Flag.mapEffect`); what only the command can check, it checks after.
 * `effect/cli`'s layout does not indent the later lines of a description:
 * keep each description on one line.
 *
 * **Example**
 *
 * ```ts
 * import { Flag } from "effect/cli"
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * const bench = CommandLine.script("bench", {
 *   rounds: Flag.Int("rounds").pipe(Flag.withDefault(3), Flag.withDescription("rounds of each contender")),
 *   json: CommandLine.switchFlag("json", "print the result as one JSON line, last")
 * }, "Times the pipeline against a plain loop.")
 *
 * bench.read(["--rounds", "5"]) // { _tag: "Run", flags: { rounds: 5, json: false } }
 * bench.read(["--rouns", "5"])._tag // "Invalid"
 * ```
 *
 * @since 0.5.0
 */
export const script = <const Name extends string, const C extends Command.Command.Config>(
  name: Name,
  config: C,
  description: string,
  options?: {
    /** How the command is typed, for the help's usage line, when not by its name (`npm run soak --`). */
    readonly invocation?: string | undefined
  }
): Script<Command.Command.Config.Infer<C>> => {
  type A = Command.Command.Config.Infer<C>
  const Captured = Context.Service<Recorder<{ readonly _tag: "Run"; readonly flags: A }>>(`@sluice/core/CommandLine/script/${name}`)
  const command = Command.make(
    name,
    config,
    (flags) => Captured.use((captured) => Effect.sync(() => captured.set({ _tag: "Run", flags })))
  ).pipe(
    Command.withDescription(description)
  )
  const read = reader(command, Captured, globalFlags({ help: "print this help", completions: "print the shell completion script" }))
  const doc = helpDoc(read(["--help"]), `${name}: no help document`)
  const invocation = options?.invocation
  const help = plain.formatHelpDoc(invocation === undefined ? doc : { ...doc, usage: doc.usage.replace(name, invocation) }).trimEnd()
  const completion = (shell: Completions.Shell) => Completions.generate(name, shell, Completions.fromCommand(command))
  return {
    name,
    help,
    read: (argv) => {
      const reading = read(argv)
      const parsed = reading.parsed
      if (reading.error !== undefined) {
        const errors = reading.error._tag === "ShowHelp" ? reading.error.errors : [reading.error]
        return { _tag: "Invalid", message: errors.map((e) => `${name}: ${e.message.trim()}`).join("\n") }
      }
      if (parsed === undefined) return { _tag: "Invalid", message: `${name}: nothing was read from the line` }
      switch (parsed._tag) {
        case "Run":
          return parsed
        case "Completions":
          return { _tag: "Completions", script: completion(parsed.shell) }
        case "Help":
        case "Version":
          return { _tag: "Help", text: help }
      }
    }
  }
}

/**
 * The exit code of a line a command refuses: 2, as POSIX utilities and every
 * Sluice command use for bad usage (1 is a run that failed).
 *
 * @since 0.5.0
 */
export const BAD_USAGE = 2

/**
 * What a command's entry does with a line it read: the flags of a line that
 * asks to run; for any other, `undefined`, having written what it asks for
 * (the help or the completion script, on stdout; exit code 0) or why it is
 * refused (the message, a blank line and `help`, on stderr; exit code
 * {@link BAD_USAGE}, set as `process.exitCode`, so the process ends once the
 * caller returns).
 *
 * **When to use**: in the entry of a command read with {@link script}, after
 * any checks of its own that turned the line's flags into its options.
 *
 * **Example**
 *
 * ```ts
 * import * as CommandLine from "@sluice/core/CommandLine"
 *
 * const tool = CommandLine.script("tool", { json: CommandLine.switchFlag("json", "print JSON") }, "A tool.")
 * const flags = CommandLine.settle(tool.read(process.argv.slice(2)), tool.help)
 * if (flags !== undefined) console.log(flags.json ? "{}" : "ok")
 * ```
 *
 * @since 0.5.0
 */
export const settle = <A>(line: ScriptLine<A>, help: string): A | undefined => {
  switch (line._tag) {
    case "Run":
      return line.flags
    case "Help":
      process.stdout.write(`${line.text}\n`)
      return undefined
    case "Completions":
      process.stdout.write(line.script.endsWith("\n") ? line.script : `${line.script}\n`)
      return undefined
    case "Invalid":
      process.stderr.write(`${line.message}\n\n${help}\n`)
      process.exitCode = BAD_USAGE
      return undefined
  }
}
