/**
 * scaleout — the command line of `npm run scaleout` (`scaleout.ts`): its
 * flags as an `effect/cli` definition ({@link command}, with `--help` and
 * `--completions`), then the ranges `effect/cli` does not check, in the words
 * the command has always used (`scaleout: --instances: expected a whole
 * number in [2, 16], got 1`).
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Flag } from "effect/cli"
import * as WholeRange from "./WholeRange.ts"

/** What one scale-out run is asked to do. */
export interface Options {
  /** Archivers in the group at its largest (at most the partitions, and 16). */
  readonly instances: number
  /** Partitions of the topic. */
  readonly partitions: number
  /** Records per second the producer offers throughout. */
  readonly rate: number
  /** How long each step is held once the group has settled. */
  readonly holdMillis: number
  /** The bound of every wait. */
  readonly timeoutMillis: number
  /** Whether the capacity runs (1…N instances from the topic's start) follow the steps. */
  readonly capacity: boolean
  /** The consumer group protocol the archivers run: `classic`, or `consumer` (KIP-848). */
  readonly protocol: "classic" | "consumer"
  /** The last stdout line is the result, one JSON object. */
  readonly json: boolean
}

/** The most instances a run starts, 16: each is a Node process of its own on this one machine, and the capacity runs start 1…N of them at once. */
const MAX_INSTANCES = 16

/**
 * The `npm run scaleout` command line: its flags, the help generated from
 * them, and a reader of argument lists (before the ranges, see
 * {@link fromArgv}).
 */
export const command = CommandLine.script("scaleout", {
  instances: Flag.Int("instances").pipe(
    Flag.withDefault(3),
    Flag.withDescription(`archivers at the largest, 2 to ${MAX_INSTANCES} and at most --partitions (default 3)`)
  ),
  partitions: Flag.Int("partitions").pipe(Flag.withDefault(24), Flag.withDescription("partitions of the topic, 2 to 256 (default 24)")),
  rate: Flag.Int("rate").pipe(
    Flag.withDefault(20_000),
    Flag.withDescription("records per second produced throughout, 100 to 1000000 (default 20000)")
  ),
  holdSeconds: Flag.Int("hold-seconds").pipe(
    Flag.withDefault(10),
    Flag.withDescription("how long each step is held once the group settled, 1 to 600 s (default 10)")
  ),
  timeoutSeconds: Flag.Int("timeout-seconds").pipe(
    Flag.withDefault(120),
    Flag.withDescription("bound of each wait, 10 to 3600 s (default 120)")
  ),
  capacity: Flag.Boolean("capacity").pipe(
    Flag.withDefault(true),
    Flag.withDescription("after the steps, archive the topic again with 1, 2, … N instances (default on; --no-capacity skips it)")
  ),
  protocol: Flag.Literals("protocol", ["classic", "consumer"]).pipe(
    Flag.withDefault("classic"),
    Flag.withDescription("the consumer group protocol of the archivers: classic, or consumer (KIP-848) (default classic)")
  ),
  json: CommandLine.switchFlag("json", "the last stdout line is the result, one JSON object")
}, [
  "Scale-out on a real consumer group: N archivers (static members) on a topic fed throughout;",
  "  scale 1 → N, a rolling restart, a SIGKILL, scale N → 1, then an audit of the bucket (lost and",
  "  duplicated records). Writes reports/scaleout-<time>/ (scaleout.svg, result.json, summary.md)."
].join("\n"), { invocation: "npm run scaleout --" })

/** `undefined` when `n` is a whole number in [min, max]; else the message, naming the flag. */
const outside = (flag: string, n: number, min: number, max: number): string | undefined => WholeRange.outside("scaleout", flag, n, min, max)

/**
 * Reads the command line (`process.argv.slice(2)`) into what it asks for:
 * to run with the {@link Options}, the help, a completion script, or nothing
 * (`effect/cli` refused the line, or a value is out of its range: the first
 * such flag, as `scaleout: --instances: expected a whole number in [2, 6],
 * got 8` with `--partitions 6`).
 *
 * **Example**
 *
 * ```ts
 * ScaleoutOptions.fromArgv(["--instances", "2", "--partitions", "6", "--no-capacity"])
 * // { _tag: "Run", flags: { instances: 2, partitions: 6, rate: 20000, holdMillis: 10000, timeoutMillis: 120000, capacity: false, protocol: "classic", json: false } }
 * ```
 */
export const fromArgv = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Options> => {
  const line = command.read(argv)
  if (line._tag !== "Run") return line
  const { instances, partitions, rate, holdSeconds, timeoutSeconds, capacity, protocol, json } = line.flags
  const problem = outside("--partitions", partitions, 2, 256) ??
    outside("--instances", instances, 2, Math.min(MAX_INSTANCES, partitions)) ??
    outside("--rate", rate, 100, 1_000_000) ??
    outside("--hold-seconds", holdSeconds, 1, 600) ??
    outside("--timeout-seconds", timeoutSeconds, 10, 3600)
  return problem !== undefined
    ? { _tag: "Invalid", message: problem }
    : { _tag: "Run", flags: { instances, partitions, rate, holdMillis: holdSeconds * 1000, timeoutMillis: timeoutSeconds * 1000, capacity, protocol, json } }
}
