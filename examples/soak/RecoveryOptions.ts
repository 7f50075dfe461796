/**
 * recovery — the command line of `npm run recovery` (`recovery.ts`): its
 * flags as an `effect/cli` definition ({@link command}, with `--help` and
 * `--completions`), then what `effect/cli` does not check (the lists and the
 * ranges), in the words the command has always used (`recovery:
 * --kill-fraction: expected a number in (0, 1), got 1`).
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Flag } from "effect/cli"

/** How the first run is stopped, and whether both runs are one static member. */
export const MODES = ["term", "kill-static", "kill"] as const
/** One of {@link MODES}. */
export type Mode = (typeof MODES)[number]

/** What one recovery run is asked to measure. */
export interface Options {
  /** Records in the topic at the start, one measurement (per mode) each. */
  readonly backlogs: ReadonlyArray<number>
  readonly modes: ReadonlyArray<Mode>
  /** The share of a backlog committed when the first run is stopped. */
  readonly killFraction: number
  /** The bound of every wait, and of each archiver run. */
  readonly timeoutMillis: number
  /** The last stdout line is the result, one JSON object. */
  readonly json: boolean
}

/**
 * The `npm run recovery` command line: its flags, the help generated from
 * them, and a reader of argument lists (before the lists and ranges, see
 * {@link fromArgv}).
 */
export const command = CommandLine.script("recovery", {
  backlogs: Flag.String("backlogs").pipe(
    Flag.withMetavar("N,N,…"),
    Flag.withDefault("50000,100000,200000,400000"),
    Flag.withDescription("backlog sizes in records, comma-separated, each 1000 to 10000000 (default 50000,100000,200000,400000)")
  ),
  modes: Flag.String("modes").pipe(
    Flag.withMetavar("mode,…"),
    Flag.withDefault(MODES.join(",")),
    Flag.withDescription(`restart modes, comma-separated, each one of ${MODES.join(", ")} (default all three)`)
  ),
  killFraction: Flag.Finite("kill-fraction").pipe(
    Flag.withDefault(0.25),
    Flag.withDescription("share of the backlog committed when the first run is stopped, in (0, 1) (default 0.25)")
  ),
  timeoutSeconds: Flag.Finite("timeout-seconds").pipe(
    Flag.withDefault(300),
    Flag.withDescription("bound of every wait and of each archiver run, 10 to 3600 s (default 300)")
  ),
  json: CommandLine.switchFlag("json", "the last stdout line is the result, one JSON object")
}, [
  "Restart recovery: for each backlog and mode, the Kafka → S3 archiver is stopped once --kill-fraction",
  "  of the backlog is committed, then restarted on the same group; measures the time to its first",
  "  commit and to lag 0. Writes reports/recovery-<time>/ (recovery.svg, result.json, summary.md)."
].join("\n"), { invocation: "npm run recovery --" })

const isMode = (text: string): text is Mode => (MODES as ReadonlyArray<string>).includes(text)

/**
 * Reads the command line (`process.argv.slice(2)`) into what it asks for:
 * to run with the {@link Options}, the help, a completion script, or nothing
 * (`effect/cli` refused the line, or a value is out of its range: the first
 * such flag, as `recovery: --backlogs: each must be a whole number of records
 * in [1000, 10000000], got 500`).
 *
 * **Example**
 *
 * ```ts
 * RecoveryOptions.fromArgv(["--backlogs", "1000", "--modes", "term,kill-static", "--json"])
 * // { _tag: "Run", flags: { backlogs: [1000], modes: ["term", "kill-static"], killFraction: 0.25, timeoutMillis: 300000, json: true } }
 * ```
 */
export const fromArgv = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Options> => {
  const line = command.read(argv)
  if (line._tag !== "Run") return line
  const { backlogs: backlogsText, modes: modesText, killFraction, timeoutSeconds, json } = line.flags
  const invalid = (message: string) => ({ _tag: "Invalid", message: `recovery: ${message}` }) as const
  const backlogs = backlogsText.split(",").map((b) => Number(b.trim()))
  const bad = backlogs.find((b) => !Number.isInteger(b) || b < 1000 || b > 10_000_000)
  if (bad !== undefined) return invalid(`--backlogs: each must be a whole number of records in [1000, 10000000], got ${bad}`)
  const texts = modesText.split(",").map((m) => m.trim())
  const modes = texts.filter(isMode)
  if (modes.length < texts.length) {
    return invalid(`--modes: each one of ${MODES.join(", ")}, got ${JSON.stringify(texts.find((m) => !isMode(m)) ?? "")}`)
  }
  if (!(killFraction > 0 && killFraction < 1)) return invalid(`--kill-fraction: expected a number in (0, 1), got ${killFraction}`)
  if (!(timeoutSeconds >= 10 && timeoutSeconds <= 3600)) return invalid(`--timeout-seconds: expected 10..3600, got ${timeoutSeconds}`)
  return { _tag: "Run", flags: { backlogs, modes, killFraction, timeoutMillis: timeoutSeconds * 1000, json } }
}
