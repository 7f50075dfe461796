/**
 * `sluice calibrate`: measures an S3-compatible store with a bounded sweep
 * (`Calibrate.sweep`), fits the testkit's store model to it
 * (`Calibration.fit`) and prints, per cell, what was measured beside what the
 * fitted model predicts, then the scenario `store` block:
 *
 * ```
 * sluice calibrate --bucket <bucket> [--endpoint <url>] [--region <region>] [--sizes <list>]
 *                  [--inflight <list>] [--cell-seconds <s>] [--json]
 * ```
 *
 * The command line is the `calibrate` command of the `effect/cli` definition
 * (`cli/Definition.ts`), whose help (`sluice calibrate --help`) and shell
 * completions are generated from it; this module maps its errors to the
 * messages `sluice calibrate` has always printed (those of `node:util`'s
 * `parseArgs`: `Unknown option '--nope'`, `Option '--bucket <value>' argument
 * missing`, …) and checks the values.
 *
 * Exit codes: 0 fitted (and `--help`, `--completions`), 1 the sweep or the
 * fit failed, 2 bad usage.
 *
 * @since 0.3.0
 */
import { Config } from "@sluice/core"
import { Effect, Result } from "effect"
import type { CliError, Completions } from "effect/cli"
import { credentialsOf } from "./AuditCli.ts"
import * as Calibrate from "./Calibrate.ts"
import * as Calibration from "./Calibration.ts"
import * as Definition from "./cli/Definition.ts"
import * as S3Config from "./S3Config.ts"
import * as S3Sink from "./S3Sink.ts"

/**
 * The usage text (`sluice calibrate --help`; printed after a usage error),
 * generated from the `effect/cli` definition (`cli/Definition.ts`).
 *
 * @since 0.3.0
 */
export const usage: string = Definition.help("calibrate")

/**
 * What the flags ask for.
 *
 * @since 0.3.0
 */
export interface CalibrateArgs {
  readonly bucket: string
  readonly endpoint: string | undefined
  readonly region: string
  readonly sizes: ReadonlyArray<number>
  readonly inflights: ReadonlyArray<number>
  readonly cellSeconds: number
  readonly json: boolean
}

const calibrateFlags = Definition.flagsOf("calibrate")

/**
 * The line as `effect/cli` reads it as `sluice calibrate` always did (with
 * `node:util`'s `parseArgs`, strict): after `--` every argument is an operand;
 * a value flag never takes a next argument starting with `-` (other than `-`
 * itself); a short option is a run of single letters, of which only `-h`
 * exists; a switch never takes the next argument. `--help`/`-h` is noted
 * apart, as it only counts when nothing on the line is wrong.
 */
const normalize = (argv: ReadonlyArray<string>) => {
  const tokens: Array<string> = ["calibrate"]
  const origin: Array<number> = [-1]
  const problems: Array<Definition.Problem> = []
  let help = false
  let operands = false
  const problem = (at: number, message: string) => problems.push({ at, flag: "", message })
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ""
    const eq = arg.indexOf("=")
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg
    const next = argv[i + 1]
    if (operands || arg === "--") {
      operands = true
      tokens.push(arg)
      origin.push(i)
    } else if (arg === "--help") help = true
    else if (name === "--help") problem(i, "Option '-h, --help' does not take an argument")
    else if (/^-[^-]/.test(arg)) {
      const unknown = [...arg.slice(1)].find((c) => c !== "h")
      if (unknown === undefined) help = true
      else problem(i, `Unknown option '-${unknown}'`)
    } else if (arg.startsWith("--=")) problem(i, `Unknown option '${arg}'`)
    else if (calibrateFlags.switches.has(name) && name !== arg) problem(i, `Option '${name}' does not take an argument`)
    else if (calibrateFlags.values.has(arg) && next !== undefined && next.length > 1 && next.startsWith("-")) {
      problem(
        i,
        `Option '${arg}' argument is ambiguous.\nDid you forget to specify the option argument for '${arg}'?\n` +
          `To specify an option argument starting with a dash use '${arg}=-XYZ'.`
      )
    } else {
      tokens.push(calibrateFlags.switches.has(arg) ? `${arg}=true` : arg)
      origin.push(i)
    }
  }
  return { line: { tokens, origin }, problems, help }
}

/** `node:util`'s message for one `effect/cli` error, and where it is. */
const problemOf = (error: CliError.CliError, line: Definition.Line, argv: ReadonlyArray<string>): Definition.Problem => {
  const at = Definition.locate(error, line) ?? argv.length
  switch (error._tag) {
    case "UnrecognizedOption":
      return { at, flag: error.option, message: `Unknown option '${error.option}'` }
    case "InvalidValue":
      return error.value === ""
        ? { at, flag: `--${error.option}`, message: `Option '--${error.option} <value>' argument missing` }
        : { at, flag: `--${error.option}`, message: `Option '--${error.option}' needs ${error.expected}, got '${error.value}'` }
    case "UnexpectedArgument":
      return { at, flag: "", message: `Unexpected argument '${error.arguments[0] ?? ""}'. This command does not take positional arguments` }
    default:
      return { at, flag: "", message: error.message }
  }
}

/**
 * Parses the flags (after `calibrate`): the args, `"help"`, the shell of a
 * completion script, or a message naming the bad flag and value.
 *
 * **Details**: the `calibrate` command of the `effect/cli` definition
 * (`cli/Definition.ts`) reads the line, with the rules and messages of
 * `node:util`'s strict `parseArgs` it replaced: the first thing wrong on the
 * line is reported, even with `--help`; a flag given twice takes the last
 * value. Then `--help`/`-h` and `--completions <shell>` win; then the values
 * are checked (`--bucket` is required, `--sizes`, `--inflight`,
 * `--cell-seconds` and the number of cells within `Calibrate.Bounds`).
 * Without `--region`, `$SLUICE_S3_REGION` then `$AWS_REGION` are read from
 * `env`.
 *
 * **Example**
 *
 * ```ts
 * import * as CalibrateCli from "@sluice/adapter-s3/CalibrateCli"
 *
 * CalibrateCli.parse(["--bucket", "cal", "--inflight", "1,4"], {})
 * // { bucket: "cal", region: "us-east-1", sizes: [65536, 1048576, 8388608], inflights: [1, 4], cellSeconds: 3, … }
 * CalibrateCli.parse(["--bucket", "cal", "--nope"], {})
 * // { usageError: "Unknown option '--nope'" }
 * ```
 *
 * @since 0.3.0
 */
export const parse = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): CalibrateArgs | "help" | { readonly completions: Completions.Shell } | { readonly usageError: string } => {
  const { line, problems, help } = normalize(argv)
  const { parsed, error } = Definition.interpret(line.tokens)
  const first = Definition.firstProblem(line, problems, error, (e, read) => problemOf(e, read, argv))
  if (first !== undefined) return { usageError: first.message }
  if (help) return "help"
  if (parsed?._tag === "Completions") return { completions: parsed.shell }
  if (parsed?._tag !== "Calibrate") return { usageError: "a command is needed" }
  const values = parsed.flags
  if (values.bucket === undefined || values.bucket === "") return { usageError: "--bucket: required" }
  const sizesText = values.sizes ?? "64KiB,1MiB,8MiB"
  const inflightText = values.inflight ?? "1,2,4,8,16,32"
  const cellSecondsText = values.cellSeconds ?? "3"
  const sizes = sizesText.split(",").map((t) => ({ t, n: Config.parseBytes(t) }))
  const badSize = sizes.find((s) => s.n === undefined || !(s.n >= 1 && s.n <= Calibrate.Bounds.objectBytes))
  if (badSize !== undefined) return { usageError: `--sizes: "${badSize.t}" is not a size of 1 B to 256 MiB (e.g. 64KiB, 8MiB)` }
  if (new Set(sizes.map((s) => s.n)).size < 2) return { usageError: `--sizes: at least two different sizes are needed to fit latency and bandwidth (got "${sizesText}")` }
  const inflights = inflightText.split(",").map((t) => ({ t, n: Number(t) }))
  const badInflight = inflights.find((i) => !Number.isInteger(i.n) || i.n < 1 || i.n > Calibrate.Bounds.inflight)
  if (badInflight !== undefined) return { usageError: `--inflight: "${badInflight.t}" is not a whole number of 1 to ${Calibrate.Bounds.inflight}` }
  if (!inflights.some((i) => i.n === 1)) return { usageError: `--inflight: must include 1 (the per-request cost is fitted there; got "${inflightText}")` }
  if (sizes.length * inflights.length > Calibrate.Bounds.cells) {
    return { usageError: `--sizes × --inflight: ${sizes.length * inflights.length} cells, at most ${Calibrate.Bounds.cells}` }
  }
  const cellSeconds = Number(cellSecondsText)
  if (!(cellSeconds > 0 && cellSeconds <= Calibrate.Bounds.cellSeconds)) {
    return { usageError: `--cell-seconds: "${cellSecondsText}" is not a number of seconds above 0 and at most ${Calibrate.Bounds.cellSeconds}` }
  }
  return {
    bucket: values.bucket,
    endpoint: values.endpoint,
    region: values.region ?? env["SLUICE_S3_REGION"] ?? env["AWS_REGION"] ?? "us-east-1",
    sizes: sizes.map((s) => s.n ?? 0),
    inflights: inflights.map((i) => i.n),
    cellSeconds,
    json: values.json
  }
}

const mb = (bytesPerSecond: number) => (bytesPerSecond / 1e6).toFixed(1)
const size = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${+(bytes / 1024 / 1024).toFixed(2)} MiB` : bytes >= 1024 ? `${+(bytes / 1024).toFixed(1)} KiB` : `${bytes} B`

/**
 * Runs `sluice calibrate` (the arguments after `calibrate`); returns the exit
 * code.
 *
 * **When to use**: from the `sluice` executable (`bin/sluice.js`), or from a
 * test or script that wants the output without spawning a process.
 *
 * **Details**: the per-cell progress goes to `printError`, the fit (the
 * model, the per-cell table, the `"store"` block; with `--json`, the fit as
 * one JSON object last) to `print`. 0 when fitted (and for `--help`,
 * `--completions`), 1 when the sweep or the fit failed, 2 on bad usage (the
 * message, then the usage, on `printError`).
 *
 * **Example**
 *
 * ```ts
 * import * as CalibrateCli from "@sluice/adapter-s3/CalibrateCli"
 *
 * const code = await CalibrateCli.main(["--bucket", "cal", "--endpoint", "http://127.0.0.1:19000", "--json"])
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
  const args = parse(argv, env)
  if (args === "help") {
    print(usage)
    return 0
  }
  if ("completions" in args) {
    print(Definition.completions(args.completions))
    return 0
  }
  if ("usageError" in args) {
    printError(`sluice calibrate: ${args.usageError}\n\n${usage}`)
    return 2
  }
  const credentials = credentialsOf(env)
  const decoded = Effect.runSync(Effect.result(S3Config.decode({
    bucket: args.bucket,
    region: args.region,
    maxAttempts: 1,
    ...(args.endpoint !== undefined ? { endpoint: args.endpoint, forcePathStyle: true } : {}),
    ...(credentials !== undefined ? { credentials } : {})
  })))
  if (Result.isFailure(decoded)) {
    printError(`sluice calibrate: ${decoded.failure.message}\n\n${usage}`)
    return 2
  }
  const config = decoded.success
  const client = S3Sink.makeClient(config)
  try {
    const cells = await Calibrate.sweep({
      client,
      bucket: args.bucket,
      prefix: `sluice-calibrate/${Date.now().toString(36)}`,
      sizes: args.sizes,
      inflights: args.inflights,
      cellSeconds: args.cellSeconds,
      onCell: (c) => printError(`calibrate: ${c.inflight} × ${size(c.objectBytes)}: ${mb(c.bytesPerSecond)} MB/s, ${c.latencyMeanMillis.toFixed(1)} ms, ${c.throttles}/${c.requests} throttled`)
    })
    const fit = Calibration.fit(cells)
    const m = fit.model
    print(`model: a = ${m.baseLatencyMillis.toFixed(2)} ms per request, b = 1 / (${mb(m.bandwidthBytesPerSecond)} MB/s), knee ${m.knee}, jitter ${m.jitter.toFixed(3)}, ` +
      (m.throttleAbove === null ? "no throttles" : `throttles above ${m.throttleAbove} in flight (${(100 * m.throttleProbability).toFixed(1)} %)`))
    print("in-flight  object     measured MB/s  model MB/s  error   mean ms  throttled")
    for (const f of fit.cells) {
      const c = f.cell
      print(`${String(c.inflight).padStart(9)}  ${size(c.objectBytes).padEnd(9)}  ${mb(c.bytesPerSecond).padStart(13)}  ${mb(f.modelBytesPerSecond).padStart(10)}  ${(100 * f.error).toFixed(1).padStart(5)} %  ${c.latencyMeanMillis.toFixed(1).padStart(7)}  ${c.throttles}/${c.requests}`)
    }
    print(`error: mean ${(100 * fit.meanError).toFixed(1)} %, max ${(100 * fit.maxError).toFixed(1)} %`)
    const store = Calibration.storeBlock(m)
    print(`"store": ${JSON.stringify(store)}`)
    if (args.json) print(JSON.stringify({ store, model: m, cells: fit.cells, meanError: fit.meanError, maxError: fit.maxError }))
    return 0
  } catch (error) {
    printError(`sluice calibrate: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  } finally {
    client.destroy()
  }
}
