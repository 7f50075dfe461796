/**
 * The `sluice-sim` command line: run one scenario, or a matrix of scenarios ×
 * policy compositions.
 *
 * ```
 * sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace out.csv] [--plot out.svg]
 * sluice-sim matrix <dir> --policy <a> [--policy <b> …] [--json]
 * ```
 *
 * Exit codes: 0 all `expect` bounds hold, 1 some bound failed, 2 bad usage,
 * scenario or policy.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Exit } from "effect"
import { mkdir, readdir, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import * as Plot from "./Plot.ts"
import * as PolicySpec from "./PolicySpec.ts"
import * as Runner from "./Runner.ts"
import * as Scenario from "./Scenario.ts"
import type { BoundFailure, Summary } from "./Summary.ts"
import * as Summaries from "./Summary.ts"
import * as Trace from "./Trace.ts"

const usage = `usage:
  sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace out.csv] [--plot out.svg]
  sluice-sim matrix <dir> --policy <a> [--policy <b> ...] [--json]

  <spec>: fixed:N | base | a composition of @sluice/policies (e.g. aimd+throttle+shared+batch)`

interface Args {
  readonly command: string | undefined
  readonly target: string | undefined
  readonly policies: Array<string>
  readonly json: boolean
  readonly trace: string | undefined
  readonly plot: string | undefined
}

/**
 * Parses the arguments (after `node cli.js`).
 *
 * @since 0.1.0
 */
export const parseArgs = (argv: ReadonlyArray<string>): Args | string => {
  const policies: Array<string> = []
  const positional: Array<string> = []
  let json = false
  let trace: string | undefined
  let plot: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${a} needs a value`)
      return v
    }
    try {
      if (a === "--policy") policies.push(value())
      else if (a.startsWith("--policy=")) policies.push(a.slice(9))
      else if (a === "--json") json = true
      else if (a === "--trace") trace = value()
      else if (a === "--plot") plot = value()
      else if (a === "--help" || a === "-h") return usage
      else if (a.startsWith("--")) return `unknown option ${a}\n${usage}`
      else positional.push(a)
    } catch (e) {
      return `${e instanceof Error ? e.message : String(e)}\n${usage}`
    }
  }
  return { command: positional[0], target: positional[1], policies, json, trace, plot }
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

const summaryLines = (cell: Cell): Array<string> => {
  const s = cell.summary
  return [
    `${s.scenario} · ${s.policy} · seed ${s.seed} · ${s.durationSeconds} virtual s in ${s.wallMillis} ms`,
    `  goodputRatio ${fmt(s.goodputRatio)}  latencyInflation ${fmt(s.latencyInflation)}  throttleRate ${fmt(s.throttleRate)}`,
    `  floorViolations ${s.floorViolations}  recoverySeconds ${fmt(s.recoverySeconds, 1)}  maxInflightBytes ${s.maxInflightBytes}`,
    `  lostRecords ${s.lostRecords} (undetected ${s.undetectedLostRecords})  committedNotVerified ${s.committedNotVerified}  fairness ${fmt(s.fairness)}`,
    `  probeSeconds ${fmt(s.probeSeconds, 1)}  probeCost ${fmt(s.probeCost)}`,
    ...(s.failure !== null ? [`  pipeline failed: ${s.failure}`] : []),
    ...(cell.failures.length === 0 ? ["  expect: ok"] : cell.failures.map((f) => `  expect FAILED: ${Summaries.describeFailure(f)}`))
  ]
}

const jsonOf = (cell: Cell) => ({ ...cell.summary, pass: cell.failures.length === 0, failed: cell.failures.map(Summaries.describeFailure) })

const header = ["scenario", "policy", "goodput", "latInfl", "throttle", "floorV", "recov s", "maxInfl MiB", "lost", "cnv", "fair", "probe s", "wall ms", "expect"]

const tableRow = (cell: Cell): Array<string> => {
  const s = cell.summary
  return [
    s.scenario,
    s.policy,
    fmt(s.goodputRatio),
    fmt(s.latencyInflation, 2),
    fmt(s.throttleRate),
    String(s.floorViolations),
    fmt(s.recoverySeconds, 1),
    fmt(s.maxInflightBytes / 1048576, 1),
    String(s.lostRecords),
    String(s.committedNotVerified),
    fmt(s.fairness),
    fmt(s.probeSeconds, 1),
    String(s.wallMillis),
    cell.failures.length === 0 ? "ok" : `FAIL ${cell.failures.map((f) => f.metric).join(",")}`
  ]
}

/**
 * Renders cells as a Markdown table.
 *
 * @since 0.1.0
 */
const table = (cells: ReadonlyArray<Cell>): string => {
  const rows = [header, ...cells.map(tableRow)]
  const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)))
  const line = (r: ReadonlyArray<string>) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.slice(1).map(line)].join("\n")
}

const writeOut = (path: string, text: string) =>
  Effect.promise(async () => {
    await mkdir(dirname(path), { recursive: true })
    await writeFile(path, text)
  })

const runCommand = (args: Args, print: (line: string) => void) =>
  Effect.gen(function*() {
    if (args.target === undefined) return yield* Effect.fail(usage)
    const scenario = yield* Scenario.load(args.target)
    if (args.policies.length > 1) return yield* Effect.fail("run takes one --policy (use matrix for several)")
    const cell = yield* runOne(scenario, args.policies[0] ?? "base")
    if (args.trace !== undefined) yield* writeOut(args.trace, Trace.toCsv(cell.trace))
    if (args.plot !== undefined) {
      const svg = yield* Plot.toSvg(cell.trace, `${cell.summary.scenario} · ${cell.summary.policy}`)
      yield* writeOut(args.plot, svg)
    }
    for (const line of summaryLines(cell)) print(line)
    if (args.json) print(JSON.stringify(jsonOf(cell)))
    return cell.failures.length === 0 && cell.summary.failure === null ? 0 : 1
  })

const matrixCommand = (args: Args, print: (line: string) => void) =>
  Effect.gen(function*() {
    const dir = args.target
    if (dir === undefined) return yield* Effect.fail(usage)
    const files = (yield* Effect.promise(() => readdir(dir))).filter((f) => f.endsWith(".json")).sort()
    const specs = args.policies.length > 0 ? args.policies : ["base"]
    const cells: Array<Cell> = []
    for (const file of files) {
      const scenario = yield* Scenario.load(join(dir, file))
      for (const spec of specs) cells.push(yield* runOne(scenario, spec))
    }
    print(table(cells))
    if (args.json) print(JSON.stringify(cells.map(jsonOf)))
    return cells.every((c) => c.failures.length === 0 && c.summary.failure === null) ? 0 : 1
  })

/**
 * Runs the CLI; resolves to the exit code.
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
  if (typeof args === "string") {
    printError(args)
    return 2
  }
  const program = args.command === "run"
    ? runCommand(args, print)
    : args.command === "matrix"
    ? matrixCommand(args, print)
    : Effect.fail(usage)
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
