/**
 * brokers — the command line of `npm run brokers -- [--scenario NAME]…
 * [--duration 120] [--phase-seconds 20] [--json] [--out reports]`, read into
 * plain data by a pure function (no process exit here: `main.ts` prints the
 * error and exits 2), so it is tested on its own.
 */
import { parseArgs } from "node:util"

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
  readonly json: boolean
  /** Where `brokers-<time>/` goes. */
  readonly out: string
  readonly help: boolean
}

/** What the command line was wrong about. */
export class UsageError extends Error {
  readonly _tag = "UsageError"
}

export const usage = `usage: npm run brokers -- [--scenario NAME]... [--duration SECONDS] [--phase-seconds SECONDS] [--json] [--out DIR]

  --scenario NAME      one of ${SCENARIOS.join(", ")} (repeat for several; default: all four)
  --duration S         length of the mtls-long run, 10..3600 (default 120)
  --phase-seconds S    length of each measured phase of the other scenarios, 5..600 (default 20)
  --json               the last stdout line is one JSON object with every scenario's verdict and figures
  --out DIR            reports go to DIR/brokers-<time>/ (default reports)`

const whole = (flag: string, text: string, min: number, max: number): number => {
  const n = Number(text)
  if (text.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag}: expected a whole number of seconds in [${min}, ${max}], got ${JSON.stringify(text)}`)
  }
  return n
}

const isScenario = (name: string): name is ScenarioName => (SCENARIOS as ReadonlyArray<string>).includes(name)

/**
 * Decodes `argv` (without node and the script); throws {@link UsageError}.
 *
 * **Example**
 *
 * ```ts
 * parse(["--scenario", "mtls-long", "--duration", "30"]).scenarios // ["mtls-long"]
 * ```
 */
export const parse = (argv: ReadonlyArray<string>): Options => {
  let values
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        scenario: { type: "string", multiple: true },
        duration: { type: "string", default: "120" },
        "phase-seconds": { type: "string", default: "20" },
        json: { type: "boolean", default: false },
        out: { type: "string", default: "reports" },
        help: { type: "boolean", short: "h", default: false }
      }
    }).values
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
  const named = values.scenario ?? []
  for (const name of named) {
    if (!isScenario(name)) throw new UsageError(`--scenario: unknown scenario ${JSON.stringify(name)} (expected one of ${SCENARIOS.join(", ")})`)
  }
  return {
    scenarios: named.length === 0 ? [...SCENARIOS] : SCENARIOS.filter((s) => named.includes(s)),
    durationSeconds: whole("--duration", values.duration, 10, 3600),
    phaseSeconds: whole("--phase-seconds", values["phase-seconds"], 5, 600),
    json: values.json,
    out: values.out,
    help: values.help
  }
}
