/**
 * brokers — the command line of `npm run brokers -- [--scenario NAME]…
 * [--duration 120] [--phase-seconds 20] [--json] [--out reports]`: its
 * `effect/cli` definition ({@link command}, which generates the help and the
 * completions) and {@link parse}, which reads an argument list into what it
 * asks for — a pure function (no process exit here: `main.ts` prints the
 * error and exits 2), so it is tested on its own.
 */
import { Flag } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"

/** The four scenarios, in the order a run without `--scenario` runs them. */
export const SCENARIOS = ["replication-throttle", "producer-flood", "slow-beside-fast", "mtls-long"] as const

/** A scenario's name. */
export type ScenarioName = (typeof SCENARIOS)[number]

/** The options, decoded. */
export interface Options {
  /** The scenarios to run, in {@link SCENARIOS} order, each once. */
  readonly scenarios: ReadonlyArray<ScenarioName>
  /** Seconds of the mtls-long run (producing while the archiver reads over mTLS). */
  readonly durationSeconds: number
  /** Seconds of each measured phase of the other scenarios. */
  readonly phaseSeconds: number
  /** The last stdout line is `result.json`'s object. */
  readonly json: boolean
  /** Where `brokers-<time>/` goes. */
  readonly out: string
}

/** What an argument list asks for: a run with its options, the help, or a shell completion script. */
export type Request =
  | { readonly _tag: "Run"; readonly options: Options }
  | { readonly _tag: "Help"; readonly text: string }
  | { readonly _tag: "Completions"; readonly script: string }

/** What the command line was wrong about; the message is the line to print (`brokers: …`). */
export class UsageError extends Error {
  readonly _tag = "UsageError"
}

/** A range of whole seconds a flag accepts, and its default. */
interface Seconds {
  readonly min: number
  readonly max: number
  readonly default: number
}

/**
 * `--duration`, the mtls-long run: at most an hour, which bounds the run and
 * its samples (one row a second, Scenarios.ts); 120 s by default.
 */
const DURATION: Seconds = { min: 10, max: 3600, default: 120 }
/**
 * `--phase-seconds`, each measured phase of the other scenarios: at most
 * 10 min, which bounds them too (replication-throttle runs three phases,
 * then waits up to three more for the ISR); 20 s by default.
 */
const PHASE: Seconds = { min: 5, max: 600, default: 20 }

const seconds = (name: string, range: Seconds, description: string) =>
  Flag.Int(name).pipe(
    Flag.withMetavar("S"),
    Flag.withDescription(`${description}, ${range.min}..${range.max} (default ${range.default})`),
    Flag.withDefault(range.default)
  )

/**
 * The `effect/cli` definition of `npm run brokers`: its flags, the help
 * generated from them, and its reader.
 */
export const command = CommandLine.script(
  "brokers",
  {
    scenario: Flag.String("scenario").pipe(
      Flag.withMetavar("NAME"),
      Flag.withDescription(`one of ${SCENARIOS.join(", ")} (repeat for several; default: all four)`),
      Flag.atLeast(0)
    ),
    duration: seconds("duration", DURATION, "length of the mtls-long run"),
    phaseSeconds: seconds("phase-seconds", PHASE, "length of each measured phase of the other scenarios"),
    json: CommandLine.switchFlag("json", "the last stdout line is one JSON object with every scenario's verdict and figures"),
    out: Flag.String("out").pipe(
      Flag.withMetavar("DIR"),
      Flag.withDescription("reports go to DIR/brokers-<time>/ (default reports)"),
      Flag.withDefault("reports")
    )
  },
  "Broker-side scenarios on a real 3-node Kafka cluster, one after the other; writes reports/brokers-<time>/. " +
    "Exit 0 when every scenario passed, 1 otherwise, 2 on a usage error.",
  { invocation: "npm run brokers --" }
)

const whole = (flag: string, n: number, range: Seconds): number => {
  if (n < range.min || n > range.max) {
    throw new UsageError(`brokers: ${flag}: expected a whole number of seconds in [${range.min}, ${range.max}], got ${JSON.stringify(String(n))}`)
  }
  return n
}

const isScenario = (name: string): name is ScenarioName => (SCENARIOS as ReadonlyArray<string>).includes(name)

/**
 * Reads `argv` (without node and the script) with {@link command}; throws
 * {@link UsageError} for a line `effect/cli` refuses (in its words) and for
 * an unknown scenario or a duration out of range.
 *
 * **Example**
 *
 * ```ts
 * parse(["--scenario", "mtls-long", "--duration", "30"]) // { _tag: "Run", options: { scenarios: ["mtls-long"], durationSeconds: 30, … } }
 * parse(["--help"])._tag // "Help"
 * ```
 */
export const parse = (argv: ReadonlyArray<string>): Request => {
  const line = command.read(argv)
  switch (line._tag) {
    case "Help":
    case "Completions":
      return line
    case "Invalid":
      throw new UsageError(line.message)
    case "Run": {
      const { scenario: named, duration, phaseSeconds, json, out } = line.flags
      for (const name of named) {
        if (!isScenario(name)) throw new UsageError(`brokers: --scenario: unknown scenario ${JSON.stringify(name)} (expected one of ${SCENARIOS.join(", ")})`)
      }
      return {
        _tag: "Run",
        options: {
          scenarios: named.length === 0 ? [...SCENARIOS] : SCENARIOS.filter((s) => named.includes(s)),
          durationSeconds: whole("--duration", duration, DURATION),
          phaseSeconds: whole("--phase-seconds", phaseSeconds, PHASE),
          json,
          out
        }
      }
    }
  }
}
