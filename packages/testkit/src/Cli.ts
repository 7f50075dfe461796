/**
 * The `sluice-sim` command line: run one scenario, or a matrix of scenarios ×
 * policy compositions.
 *
 * ```
 * sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace <csv>] [--plot <svg>] [--max-duration <d>]
 * sluice-sim matrix <dir> [--policy <spec>] [--json] [--max-duration <d>]
 * sluice-sim generate [--family <kind>] [--count <N>] [--seed <S>] [--out <dir>]
 * sluice-sim family <dir> [--policy <spec>] [--json] [--max-duration <d>]
 * sluice-sim schema
 * sluice-sim --help | --version | --completions <shell>
 * ```
 *
 * The command line is an `effect/cli` definition (`cli/Definition.ts`, also
 * exported here as {@link sluiceSim}): its flags are typed, `--help` (of the
 * whole CLI or of one command, `run --help`) and `--completions
 * bash|zsh|fish|powershell` are generated from it. This module runs what it
 * parsed.
 *
 * Exit codes: 0 all `expect` bounds hold (and for `--help`, `--version`, `--completions`,
 * `schema`), 1 some bound failed, 2 bad usage, scenario or policy. Every bad
 * input is a tagged error whose message names the file, flag or value; `main`
 * prints it to stderr, without a stack trace.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Exit, Schema } from "effect"
import { readFileSync } from "node:fs"
import { mkdir, readdir, writeFile } from "node:fs/promises"
import { dirname, isAbsolute, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Plot from "./Plot.ts"
import { commandNames, completions, familyMessage, help, parseArgs, type Parsed, suggestion, usage } from "./cli/Definition.ts"
import * as Family from "./Family.ts"
import * as PolicySpec from "./PolicySpec.ts"
import * as Runner from "./Runner.ts"
import * as Scenario from "./Scenario.ts"
import type { BoundFailure, PhaseSummary, Summary } from "./Summary.ts"
import * as Summaries from "./Summary.ts"
import * as Trace from "./Trace.ts"

export {
  completions,
  defaultMaxDuration,
  help,
  type Parsed,
  parseArgs,
  sluiceSim,
  usage
} from "./cli/Definition.ts"

type Args = Extract<Parsed, { readonly _tag: "Command" }>

/**
 * The command line is wrong: an unknown command or option, a missing value or
 * argument. The CLI prints the message and the usage to stderr and exits 2.
 *
 * @since 0.2.0
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String
}) {}

/**
 * A scenario asks for more virtual time than the cap (`--max-duration`,
 * {@link defaultMaxDuration} by default). The message names the file, its
 * duration, the cap and the flag that raises it.
 *
 * @since 0.2.0
 */
export class ScenarioTooLong extends Schema.TaggedError<ScenarioTooLong>()("ScenarioTooLong", {
  path: Schema.String,
  duration: Schema.Number,
  maxDuration: Schema.Number,
  message: Schema.String
}) {}

/**
 * `matrix` was given a directory that does not exist, is not a directory or
 * holds no `*.json` file.
 *
 * @since 0.2.0
 */
export class ScenarioDirectoryError extends Schema.TaggedError<ScenarioDirectoryError>()("ScenarioDirectoryError", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The trace or the plot could not be written.
 *
 * @since 0.2.0
 */
export class OutputError extends Schema.TaggedError<OutputError>()("OutputError", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A duration in the words of the cap message: `300 s`, `720 h`. */
const durationText = (millis: number): string =>
  millis < 3_600_000 ? `${Math.round(millis) / 1_000} s` : `${Math.round(millis / 3_600) / 1_000} h`

/** The smallest `--max-duration` (whole seconds or hours) that admits `millis`. */
const capFor = (millis: number): string =>
  millis < 3_600_000 ? `${Math.ceil(millis / 1_000)}s` : `${Math.ceil(millis / 3_600_000)}h`

const checkDuration = (path: string, scenario: Scenario.Scenario, maxDuration: number): Effect.Effect<void, ScenarioTooLong> =>
  scenario.duration <= maxDuration ? Effect.void : Effect.fail(
    new ScenarioTooLong({
      path,
      duration: scenario.duration,
      maxDuration,
      message: `scenario ${path}: duration ${durationText(scenario.duration)} of virtual time is above the cap of ${
        durationText(maxDuration)
      }; raise the cap with --max-duration (e.g. --max-duration ${capFor(scenario.duration)})`
    })
  )

/** Where a relative path was looked for, for messages: `nope.json (in /work)`. */
const located = (path: string): string => (isAbsolute(path) ? path : `${path} (in ${process.cwd()})`)

const errorCode = (cause: unknown): unknown => (typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined)

const reasonOf = (cause: unknown): string => {
  const code = errorCode(cause)
  return code === "EACCES"
    ? "permission denied"
    : code === "EEXIST" || code === "ENOTDIR"
    ? "a parent of it is a file, not a directory"
    : cause instanceof Error
    ? cause.message
    : String(cause)
}

/**
 * The version of `@sluice/testkit` (from its `package.json`, found from this
 * module's location, so it works from `src/` and from `dist/src/`).
 *
 * @since 0.2.0
 */
export const version = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg: unknown = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
      if (
        typeof pkg === "object" && pkg !== null && "name" in pkg && pkg.name === "@sluice/testkit" &&
        "version" in pkg && typeof pkg.version === "string"
      ) return pkg.version
    } catch {
      // no package.json here: keep walking up
    }
    const parent = dirname(dir)
    if (parent === dir) return "unknown"
    dir = parent
  }
}

/** One scenario × one policy. */
interface Cell {
  readonly summary: Summary
  readonly failures: ReadonlyArray<BoundFailure>
  readonly trace: Trace.Trace
}

const runOne = (scenario: Scenario.Scenario, policy: PolicySpec.ResolvedPolicy) =>
  Effect.gen(function*() {
    const result = yield* Runner.run(scenario, { policy: policy.label, policies: policy.policies, floors: policy.floors })
    return { summary: result.summary, failures: Summaries.check(result.summary, scenario.expect), trace: result.trace } satisfies Cell
  })

/** Every `--policy`, resolved before anything runs, so a bad spec fails at once. */
const resolvePolicies = (specs: ReadonlyArray<string>) =>
  Effect.forEach(specs, (spec) => Effect.map(PolicySpec.resolve(spec), (policy) => ({ spec, policy })))

/** Loads a scenario and holds it to the duration cap. */
const loadScenario = (path: string, maxDuration: number) =>
  Effect.tap(Scenario.load(path), (scenario) => checkDuration(path, scenario, maxDuration))

const fmt = (x: number | null, digits = 3): string => (x === null ? "-" : String(Math.round(x * 10 ** digits) / 10 ** digits))

const mib = (bytes: number): string => fmt(bytes / 1048576, 1)

/**
 * Renders rows under a header as a Markdown table (columns padded to line up).
 */
const markdownTable = (header: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const rows = [header, ...body]
  const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)))
  const line = (r: ReadonlyArray<string>) => `| ${header.map((_, i) => (r[i] ?? "").padEnd(widths[i] ?? 0)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...body.map(line)]
}

const phaseHeader = ["from s", "to s", "degraded", "oracle keeps up", "goodput", "max lag s"]

const phaseRow = (p: PhaseSummary): Array<string> => [
  fmt(p.from, 1),
  fmt(p.to, 1),
  p.degraded ? "yes" : "no",
  p.oracleKeepsUp ? "yes" : "no",
  fmt(p.goodputRatio),
  fmt(p.maxLagSeconds, 1)
]

const summaryLines = (cell: Cell): Array<string> => {
  const s = cell.summary
  return [
    `${s.scenario} · ${s.policy} · seed ${s.seed} · ${s.durationSeconds} virtual s in ${s.wallMillis} ms`,
    `  goodputRatio ${fmt(s.goodputRatio)}  worstPhaseGoodput ${fmt(s.worstPhaseGoodput)}  latencyInflation ${fmt(s.latencyInflation)}  throttleRate ${fmt(s.throttleRate)}`,
    `  floorViolations ${s.floorViolations}  recoverySeconds ${fmt(s.recoverySeconds, 1)}  maxLagSeconds ${fmt(s.maxLagSeconds, 1)}  meanLagSeconds ${fmt(s.meanLagSeconds, 2)}`,
    `  maxInflightBytes ${s.maxInflightBytes} (${mib(s.maxInflightBytes)} MiB)  heldBytesMax ${s.heldBytesMax} (${mib(s.heldBytesMax)} MiB)  largestChunkBytes ${s.largestChunkBytes}`,
    `  lostRecords ${s.lostRecords} (undetected ${s.undetectedLostRecords})  committedNotVerified ${s.committedNotVerified}  fairness ${fmt(s.fairness)}`,
    `  probeSeconds ${fmt(s.probeSeconds, 1)}  probeCost ${fmt(s.probeCost)}`,
    ...(s.phases.length === 0
      ? []
      : ["  phases (windows between events):", ...markdownTable(phaseHeader, s.phases.map(phaseRow)).map((l) => `    ${l}`)]),
    ...(s.failure !== null ? [`  pipeline failed: ${s.failure}`] : []),
    ...(cell.failures.length === 0 ? ["  expect: ok"] : cell.failures.map((f) => `  expect FAILED: ${Summaries.describeFailure(f)}`))
  ]
}

const jsonOf = (cell: Cell) => ({ ...cell.summary, pass: cell.failures.length === 0, failed: cell.failures.map(Summaries.describeFailure) })

/**
 * The matrix columns. Goodput is verified bytes ÷ the oracle's; "worst phase"
 * is the lowest of it over degraded phases the oracle keeps up in; "lag" is the
 * age of the oldest uncommitted record; "in flight" is what the pipeline counts
 * (open + sealed + uploading), "held" what the simulator counts from outside.
 */
const matrixHeader = [
  "scenario",
  "policy",
  "goodput",
  "worst-phase goodput",
  "latency inflation",
  "throttle rate",
  "floor violations",
  "recovery s",
  "max lag s",
  "mean lag s",
  "in-flight MiB",
  "held MiB",
  "lost records",
  "committed unverified",
  "fairness",
  "probe s",
  "wall ms",
  "expect"
]

const matrixRow = (cell: Cell): Array<string> => {
  const s = cell.summary
  return [
    s.scenario,
    s.policy,
    fmt(s.goodputRatio),
    fmt(s.worstPhaseGoodput),
    fmt(s.latencyInflation, 2),
    fmt(s.throttleRate),
    String(s.floorViolations),
    fmt(s.recoverySeconds, 1),
    fmt(s.maxLagSeconds, 1),
    fmt(s.meanLagSeconds, 2),
    mib(s.maxInflightBytes),
    mib(s.heldBytesMax),
    String(s.lostRecords),
    String(s.committedNotVerified),
    fmt(s.fairness),
    fmt(s.probeSeconds, 1),
    String(s.wallMillis),
    cell.failures.length === 0 ? "ok" : `FAIL ${cell.failures.map((f) => f.metric).join(",")}`
  ]
}

const writeOut = (flag: string, path: string, text: string) =>
  Effect.tryPromise({
    try: async () => {
      await mkdir(dirname(path), { recursive: true })
      await writeFile(path, text)
    },
    catch: (cause) => new OutputError({ path, message: `cannot write ${flag} ${path}: ${reasonOf(cause)}` })
  })

/** Creates the directories of `--trace` and `--plot` before the run, so a bad path fails at once. */
const prepareOut = (flag: string, path: string | undefined) =>
  path === undefined ? Effect.void : Effect.tryPromise({
    try: () => mkdir(dirname(path), { recursive: true }),
    catch: (cause) => new OutputError({ path, message: `cannot write ${flag} ${path}: ${reasonOf(cause)}` })
  })

/** A progress line on stderr: what runs now, and how the last cell ended. */
const progressLine = (at: string, scenario: Scenario.Scenario, spec: string) =>
  `${at} ${scenario.name} × ${spec} (${Math.round(scenario.duration / 1000)} virtual s) …`

const cellDone = (cell: Cell) =>
  `  goodput ${fmt(cell.summary.goodputRatio)}, worst phase ${fmt(cell.summary.worstPhaseGoodput)}, max lag ${fmt(cell.summary.maxLagSeconds, 1)} s, ${cell.summary.wallMillis} ms`

const runCommand = (args: Args, print: (line: string) => void, progress: (line: string) => void) =>
  Effect.gen(function*() {
    if (args.target === undefined) return yield* new UsageError({ message: "run needs a scenario file" })
    if (args.policies.length > 1) return yield* new UsageError({ message: "run takes one --policy (use matrix for several)" })
    const scenario = yield* loadScenario(args.target, args.maxDuration)
    const spec = args.policies[0] ?? "base"
    const policy = yield* PolicySpec.resolve(spec)
    yield* prepareOut("--trace", args.trace)
    yield* prepareOut("--plot", args.plot)
    if (args.plot !== undefined) yield* Plot.available
    progress(progressLine("running", scenario, spec))
    const cell = yield* runOne(scenario, policy)
    if (args.trace !== undefined) yield* writeOut("--trace", args.trace, Trace.toCsv(cell.trace))
    if (args.plot !== undefined) {
      const svg = yield* Plot.toSvg(cell.trace, `${cell.summary.scenario} · ${cell.summary.policy}`)
      yield* writeOut("--plot", args.plot, svg)
    }
    for (const line of summaryLines(cell)) print(line)
    if (args.json) print(JSON.stringify(jsonOf(cell)))
    return cell.failures.length === 0 && cell.summary.failure === null ? 0 : 1
  })

/** The `*.json` files of a matrix directory, sorted. */
const scenarioFiles = (dir: string) =>
  Effect.gen(function*() {
    const entries = yield* Effect.tryPromise({
      try: () => readdir(dir),
      catch: (cause) => {
        const code = errorCode(cause)
        return new ScenarioDirectoryError({
          path: dir,
          message: code === "ENOENT"
            ? `scenario directory not found: ${located(dir)}`
            : code === "ENOTDIR"
            ? `${dir} is not a directory (matrix takes a directory of scenario files; run takes one file)`
            : `cannot read scenario directory ${dir}: ${reasonOf(cause)}`
        })
      }
    })
    const files = entries.filter((f) => f.endsWith(".json")).sort()
    if (files.length === 0) return yield* new ScenarioDirectoryError({ path: dir, message: `no scenario files (*.json) in ${dir}` })
    return files
  })

/**
 * Every scenario of `args.target` × every `--policy`, each checked before the
 * first cell runs, run scenario by scenario (progress on stderr); the cells in
 * that order.
 */
const runDirectory = (args: Args, command: string, progress: (line: string) => void) =>
  Effect.gen(function*() {
    const dir = args.target
    if (dir === undefined) return yield* new UsageError({ message: `${command} needs a directory of scenario files` })
    const files = yield* scenarioFiles(dir)
    const scenarios = yield* Effect.forEach(files, (file) => loadScenario(join(dir, file), args.maxDuration))
    const policies = yield* resolvePolicies(args.policies.length > 0 ? args.policies : ["base"])
    const cells: Array<Cell & { readonly spec: string }> = []
    const total = scenarios.length * policies.length
    for (const scenario of scenarios) {
      for (const { policy, spec } of policies) {
        progress(progressLine(`[${cells.length + 1}/${total}]`, scenario, spec))
        const cell = yield* runOne(scenario, policy)
        progress(cellDone(cell))
        cells.push({ ...cell, spec })
      }
    }
    return { cells, specs: policies.map((p) => p.spec) }
  })

const matrixCommand = (args: Args, print: (line: string) => void, progress: (line: string) => void) =>
  Effect.gen(function*() {
    const { cells } = yield* runDirectory(args, "matrix", progress)
    print(markdownTable(matrixHeader, cells.map(matrixRow)).join("\n"))
    if (args.json) print(JSON.stringify(cells.map(jsonOf)))
    return cells.every((c) => c.failures.length === 0 && c.summary.failure === null) ? 0 : 1
  })

/** A whole number within `[min, max]`, or a usage error naming the flag. */
const wholeArg = (flag: string, v: string | undefined, min: number, max: number) => {
  const n = Number(v)
  return v !== undefined && Number.isInteger(n) && n >= min && n <= max
    ? Effect.succeed(n)
    : Effect.fail(new UsageError({ message: `${flag} needs a whole number from ${min} to ${max}, got ${v === undefined ? "nothing" : JSON.stringify(v)}` }))
}

/** The most scenarios one `generate` writes. */
const MAX_GENERATE = 10_000

const generateCommand = (args: Args, print: (line: string) => void) =>
  Effect.gen(function*() {
    const kind = args.family
    if (kind === undefined || !(Family.kinds as ReadonlyArray<string>).includes(kind)) {
      return yield* new UsageError({ message: familyMessage(kind) })
    }
    const count = yield* wholeArg("--count", args.count, 1, MAX_GENERATE)
    const seed = yield* wholeArg("--seed", args.seed, 0, 2 ** 31 - 1)
    const out = args.out
    if (out === undefined) return yield* new UsageError({ message: "generate needs --out <dir>" })
    const scenarios = yield* Family.generate(kind as Family.Kind, count, seed)
    for (const scenario of scenarios) {
      yield* writeOut("--out", join(out, `${String(scenario["name"])}.json`), `${JSON.stringify(scenario, null, 2)}\n`)
    }
    print(`${scenarios.length} scenarios of family ${kind} (seed ${seed}) in ${out}`)
    return 0
  })

const familyCommand = (args: Args, print: (line: string) => void, progress: (line: string) => void) =>
  Effect.gen(function*() {
    const { cells, specs } = yield* runDirectory(args, "family", progress)
    const results = specs.map((spec) => Family.distribution(spec, cells.filter((c) => c.spec === spec).map((c) => c.summary)))
    print(markdownTable(
      ["policy", "scenarios", "judged", `worst phase ≥ ${Family.GOOD_PHASE}`, "p10", "median", "max lag p90", "max lag", "throttle p90", "worst"],
      results.map((d) => [
        d.policy,
        String(d.scenarios),
        String(d.judged),
        fmt(d.goodShare, 2),
        fmt(d.worstPhaseP10),
        fmt(d.worstPhaseMedian),
        fmt(d.maxLagP90, 1),
        fmt(d.maxLagMax, 1),
        fmt(d.throttleRateP90),
        d.worst.map(([name, w, lag]) => `${name} ${fmt(w, 2)} (${fmt(lag, 0)} s)`).join(", ")
      ])
    ).join("\n"))
    if (args.json) print(JSON.stringify(results))
    return 0
  })

/** The message `main` prints for a failure: the flag or file first, never a stack. */
const describeFailure = (error: unknown): string => {
  if (error instanceof UsageError) return `sluice-sim: ${error.message}\n${usage}`
  if (error instanceof PolicySpec.PolicySpecError || error instanceof PolicySpec.DuplicateEffect) {
    const spec = /^\S*[^\s:]$/.test(error.spec) ? error.spec : JSON.stringify(error.spec)
    return `sluice-sim: --policy ${spec}: ${error.message}`
  }
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
    return `sluice-sim: ${error.message}`
  }
  return `sluice-sim: ${String(error)}`
}

/**
 * Runs the CLI; resolves to the exit code.
 *
 * **When to use**: from the `sluice-sim` executable, or from a script or test
 * that wants the CLI's output without spawning a process.
 *
 * **Details**: results (the summary, the matrix table, `--help`, `--version`,
 * `--completions`, `schema`) go to `print`; progress (the run, each matrix cell as it starts and
 * ends), bad usage and errors go to `printError`. Resolves to 0 when every
 * `expect` bound holds (and for `--help`, `--version`, `--completions` and `schema`), 1 when a
 * bound failed or the pipeline failed, 2 on bad usage, scenario or policy.
 *
 * Scenarios and policies are all checked before anything runs. Each bad input
 * prints one message naming it, without a stack trace: a {@link UsageError}
 * (followed by the usage), `Scenario.ScenarioNotFound`,
 * `Scenario.ScenarioSyntaxError` (`file:line:column`), a `ConfigError` naming
 * the file, the field path and the value, {@link ScenarioTooLong} (naming
 * `--max-duration`), `PolicySpec.PolicySpecError` (`--policy fixed:-3: N must be
 * a whole number ≥ 1, got -3`; also a module policy whose config is refused or
 * whose layer cannot be built, found before the first cell runs),
 * `PolicySpec.DuplicateEffect` (a policy module that resolves another copy of
 * `effect`, naming both), {@link ScenarioDirectoryError} and {@link OutputError}.
 *
 * **Example**
 *
 * ```ts
 * import { Cli } from "@sluice/testkit"
 *
 * const code = await Cli.main(["run", "packages/testkit/scenarios/knee-24.json", "--policy", "fixed:8", "--json"])
 * ```
 *
 * @since 0.1.0
 */
export const main = async (
  argv: ReadonlyArray<string>,
  print: (line: string) => void = (l) => console.log(l),
  printError: (line: string) => void = (l) => console.error(l)
): Promise<number> => {
  const args = parseArgs(argv)
  switch (args._tag) {
    case "Help":
      print(help(args.command))
      return 0
    case "Version":
      print(version())
      return 0
    case "Completions":
      print(completions(args.shell))
      return 0
    case "Invalid":
      printError(describeFailure(new UsageError({ message: args.message })))
      return 2
  }
  const program = args.command === "run"
    ? runCommand(args, print, printError)
    : args.command === "matrix"
    ? matrixCommand(args, print, printError)
    : args.command === "generate"
    ? generateCommand(args, print)
    : args.command === "family"
    ? familyCommand(args, print, printError)
    : args.command === "schema"
    ? Effect.sync(() => {
      print(JSON.stringify(Scenario.jsonSchema(), null, 2))
      return 0
    })
    : Effect.fail(
      new UsageError({
        message: args.command === undefined ? "a command is needed" : `unknown command ${args.command}${suggestion(args.command, commandNames)}`
      })
    )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return exit.value
  printError(describeFailure(Cause.squash(exit.cause)))
  return 2
}
