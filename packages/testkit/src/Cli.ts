/**
 * The `sluice-sim` command line: run one scenario, or a matrix of scenarios ×
 * policy compositions.
 *
 * ```
 * sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace out.csv] [--plot out.svg]
 * sluice-sim matrix <dir> --policy <a> [--policy <b> …] [--json]
 * sluice-sim --help | --version
 * ```
 *
 * Exit codes: 0 all `expect` bounds hold (and for `--help`, `--version`), 1 some
 * bound failed, 2 bad usage, scenario or policy.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import { mkdir, readdir, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Plot from "./Plot.ts"
import * as PolicySpec from "./PolicySpec.ts"
import * as Runner from "./Runner.ts"
import * as Scenario from "./Scenario.ts"
import type { BoundFailure, PhaseSummary, Summary } from "./Summary.ts"
import * as Summaries from "./Summary.ts"
import * as Trace from "./Trace.ts"

/**
 * The usage text `--help` prints (and bad usage prints to stderr).
 *
 * @since 0.2.0
 */
export const usage = `usage:
  sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace out.csv] [--plot out.svg]
  sluice-sim matrix <dir> --policy <a> [--policy <b> ...] [--json]
  sluice-sim --help | --version

  <spec>: fixed:N | base | a composition of @sluice/policies (e.g. aimd+throttle+shared+batch),
          with policy modules as members: ./my-policy.js, some-package (e.g. ./arc.js+throttle+shared);
          a module's default export is a policies Layer, { layer, floors? }, a Policy (with a named
          export "config"), or { policy, config }
  --json          also print the summary as JSON on the last line (matrix: an array)
  --trace <csv>   write the trace (one row per 100 virtual ms) as CSV
  --plot <svg>    write the trace as an SVG plot

exit codes: 0 every expect bound holds, 1 a bound failed, 2 bad usage, scenario or policy`

/**
 * What the arguments ask for: a command to run, the help or version text, or
 * bad usage (with the reason).
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
  }
  | { readonly _tag: "Help" }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Invalid"; readonly message: string }

type Args = Extract<Parsed, { readonly _tag: "Command" }>

/**
 * Parses the arguments (after `node cli.js`).
 *
 * **When to use**: to check what a command line means without running it;
 * `main` calls it.
 *
 * **Details**: `--help`/`-h` and `--version`/`-V` win over everything else on
 * the line; an unknown option or a missing option value is `Invalid`, whose
 * message names it.
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
  if (argv.some((a) => a === "--help" || a === "-h")) return { _tag: "Help" }
  if (argv.some((a) => a === "--version" || a === "-V")) return { _tag: "Version" }
  const policies: Array<string> = []
  const positional: Array<string> = []
  let json = false
  let trace: string | undefined
  let plot: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const value = (): string | undefined => argv[++i]
    if (a === "--policy" || a === "--trace" || a === "--plot") {
      const v = value()
      if (v === undefined) return { _tag: "Invalid", message: `${a} needs a value` }
      if (a === "--policy") policies.push(v)
      else if (a === "--trace") trace = v
      else plot = v
    } else if (a.startsWith("--policy=")) policies.push(a.slice(9))
    else if (a === "--json") json = true
    else if (a.startsWith("-") && a !== "-") return { _tag: "Invalid", message: `unknown option ${a}` }
    else positional.push(a)
  }
  return { _tag: "Command", command: positional[0], target: positional[1], policies, json, trace, plot }
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

const runOne = (scenario: Scenario.Scenario, spec: string) =>
  Effect.gen(function*() {
    const policy = yield* PolicySpec.resolve(spec)
    const result = yield* Runner.run(scenario, { policy: policy.label, policies: policy.policies, floors: policy.floors })
    return { summary: result.summary, failures: Summaries.check(result.summary, scenario.expect), trace: result.trace } satisfies Cell
  })

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

const writeOut = (path: string, text: string) =>
  Effect.promise(async () => {
    await mkdir(dirname(path), { recursive: true })
    await writeFile(path, text)
  })

/** A progress line on stderr: what runs now, and how the last cell ended. */
const progressLine = (at: string, scenario: Scenario.Scenario, spec: string) =>
  `${at} ${scenario.name} × ${spec} (${Math.round(scenario.duration / 1000)} virtual s) …`

const cellDone = (cell: Cell) =>
  `  goodput ${fmt(cell.summary.goodputRatio)}, worst phase ${fmt(cell.summary.worstPhaseGoodput)}, max lag ${fmt(cell.summary.maxLagSeconds, 1)} s, ${cell.summary.wallMillis} ms`

const runCommand = (args: Args, print: (line: string) => void, progress: (line: string) => void) =>
  Effect.gen(function*() {
    if (args.target === undefined) return yield* Effect.fail(`sluice-sim: run needs a scenario file\n${usage}`)
    const scenario = yield* Scenario.load(args.target)
    if (args.policies.length > 1) return yield* Effect.fail("sluice-sim: run takes one --policy (use matrix for several)")
    const spec = args.policies[0] ?? "base"
    progress(progressLine("running", scenario, spec))
    const cell = yield* runOne(scenario, spec)
    if (args.trace !== undefined) yield* writeOut(args.trace, Trace.toCsv(cell.trace))
    if (args.plot !== undefined) {
      const svg = yield* Plot.toSvg(cell.trace, `${cell.summary.scenario} · ${cell.summary.policy}`)
      yield* writeOut(args.plot, svg)
    }
    for (const line of summaryLines(cell)) print(line)
    if (args.json) print(JSON.stringify(jsonOf(cell)))
    return cell.failures.length === 0 && cell.summary.failure === null ? 0 : 1
  })

const matrixCommand = (args: Args, print: (line: string) => void, progress: (line: string) => void) =>
  Effect.gen(function*() {
    const dir = args.target
    if (dir === undefined) return yield* Effect.fail(`sluice-sim: matrix needs a directory of scenario files\n${usage}`)
    const files = (yield* Effect.promise(() => readdir(dir))).filter((f) => f.endsWith(".json")).sort()
    const specs = args.policies.length > 0 ? args.policies : ["base"]
    const cells: Array<Cell> = []
    const total = files.length * specs.length
    for (const file of files) {
      const scenario = yield* Scenario.load(join(dir, file))
      for (const spec of specs) {
        progress(progressLine(`[${cells.length + 1}/${total}]`, scenario, spec))
        const cell = yield* runOne(scenario, spec)
        progress(cellDone(cell))
        cells.push(cell)
      }
    }
    print(markdownTable(matrixHeader, cells.map(matrixRow)).join("\n"))
    if (args.json) print(JSON.stringify(cells.map(jsonOf)))
    return cells.every((c) => c.failures.length === 0 && c.summary.failure === null) ? 0 : 1
  })

/**
 * Runs the CLI; resolves to the exit code.
 *
 * **When to use**: from the `sluice-sim` executable, or from a script or test
 * that wants the CLI's output without spawning a process.
 *
 * **Details**: results (the summary, the matrix table, `--help`, `--version`)
 * go to `print`; progress (the run, each matrix cell as it starts and ends),
 * bad usage and errors go to `printError`. Resolves to 0 when
 * every `expect` bound holds (and for `--help` and `--version`), 1 when a bound
 * failed or the pipeline failed, 2 on bad usage, scenario or policy.
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
      print(usage)
      return 0
    case "Version":
      print(version())
      return 0
    case "Invalid":
      printError(`sluice-sim: ${args.message}\n${usage}`)
      return 2
  }
  const program = args.command === "run"
    ? runCommand(args, print, printError)
    : args.command === "matrix"
    ? matrixCommand(args, print, printError)
    : Effect.fail(args.command === undefined ? usage : `sluice-sim: unknown command ${args.command}\n${usage}`)
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return exit.value
  const error = Cause.squash(exit.cause)
  printError(
    typeof error === "string"
      ? error
      : typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
      ? `sluice-sim: ${error.message}`
      : `sluice-sim: ${Cause.pretty(exit.cause)}`
  )
  return 2
}
