/**
 * chaos — the command line of `npm run chaos` (`chaos.ts`): its flags as an
 * `effect/cli` definition ({@link command}, with `--help` and
 * `--completions`), then the ranges `effect/cli` does not check, in the words
 * the command has always used (`chaos: --runs: expected a whole number in
 * [1, 1000], got 0`).
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Flag } from "effect/cli"
import * as WholeRange from "./WholeRange.ts"

/** What one chaos run is asked to do. */
export interface Options {
  /** Archiver runs SIGKILLed (then one more, left to finish). */
  readonly runs: number
  /** Records produced to the topic. */
  readonly records: number
  readonly partitions: number
  /** Seed of the kill moments, so that a run's moments can be replayed. */
  readonly seed: number
  /** Earliest kill moment, in ms after a run's first commit. */
  readonly minMs: number
  /** Latest kill moment, in ms after a run's first commit. */
  readonly maxMs: number
  /** The last stdout line is the result, one JSON object. */
  readonly json: boolean
}

/** The longest kill delay accepted, 10 minutes: every wait of a chaos run stays bounded. */
const MAX_DELAY_MS = 600_000

/**
 * The `npm run chaos` command line: its flags, the help generated from them,
 * and a reader of argument lists (before the ranges, see {@link fromArgv}).
 */
export const command = CommandLine.script("chaos", {
  runs: Flag.Int("runs").pipe(
    Flag.withDefault(20),
    Flag.withDescription("archiver runs SIGKILLed, then one more left to finish, 1 to 1000 (default 20)")
  ),
  records: Flag.Int("records").pipe(
    Flag.withDefault(3_000_000),
    Flag.withDescription("records produced to the topic, 1 to 10000000 (default 3000000)")
  ),
  partitions: Flag.Int("partitions").pipe(Flag.withDefault(8), Flag.withDescription("partitions of the topic, 1 to 64 (default 8)")),
  seed: Flag.Int("seed").pipe(
    Flag.withDefault(7),
    Flag.withDescription("seed of the kill moments, 0 to 2147483647, so a run can be replayed (default 7)")
  ),
  minMs: Flag.Int("min-ms").pipe(
    Flag.withDefault(0),
    Flag.withDescription("earliest kill moment, ms after a run's first commit, 0 to 600000 (default 0)")
  ),
  maxMs: Flag.Int("max-ms").pipe(
    Flag.withDefault(1000),
    Flag.withDescription("latest kill moment, ms after a run's first commit, --min-ms to 600000 (default 1000)")
  ),
  json: CommandLine.switchFlag("json", "the last stdout line is the result, one JSON object")
}, [
  "SIGKILLs the Kafka → S3 archiver at seeded random moments after its first commit and restarts it",
  "  on the same group, --runs times, then lets a last run finish; then the group's committed offsets",
  "  must be every partition's end and `sluice audit` must find every record, no orphaned upload.",
  "  Exit 0 when so, 1 otherwise (or when no kill landed), 2 bad options."
].join("\n"), { invocation: "npm run chaos --" })

/** `undefined` when `n` is a whole number in [min, max]; else the message, naming the flag. */
const outside = (flag: string, n: number, min: number, max: number): string | undefined => WholeRange.outside("chaos", flag, n, min, max)

/**
 * Reads the command line (`process.argv.slice(2)`) into what it asks for:
 * to run with the {@link Options}, the help, a completion script, or nothing
 * (`effect/cli` refused the line, or a value is out of its range: the first
 * such flag, as `chaos: --max-ms: expected a whole number in [500, 600000],
 * got 100`).
 *
 * **Example**
 *
 * ```ts
 * ChaosOptions.fromArgv(["--runs", "1", "--max-ms", "0"])
 * // { _tag: "Run", flags: { runs: 1, records: 3000000, partitions: 8, seed: 7, minMs: 0, maxMs: 0, json: false } }
 * ```
 */
export const fromArgv = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Options> => {
  const line = command.read(argv)
  if (line._tag !== "Run") return line
  const o = line.flags
  const problem = outside("--min-ms", o.minMs, 0, MAX_DELAY_MS) ??
    outside("--max-ms", o.maxMs, o.minMs, MAX_DELAY_MS) ??
    outside("--runs", o.runs, 1, 1000) ??
    outside("--records", o.records, 1, 10_000_000) ??
    outside("--partitions", o.partitions, 1, 64) ??
    outside("--seed", o.seed, 0, 2 ** 31 - 1)
  return problem === undefined ? line : { _tag: "Invalid", message: problem }
}
