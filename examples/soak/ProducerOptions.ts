/**
 * soak — the producer child's command line (`producer.ts`, started by
 * `ProducerChild.start`): its positional arguments as an `effect/cli`
 * definition, with `--help` and `--completions`:
 *
 *   node --conditions=@sluice/source examples/soak/producer.ts <brokers> <topic> [<partitions>] [<rate>] [<record-bytes>] [<acks>]
 *
 * `effect/cli` checks the numbers and the acks (`leader` or `all`) and names
 * what is wrong in its words.
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Argument } from "effect/cli"

/** How many replicas acknowledge a send: the partition's leader, or every in-sync replica. */
export type Acks = "leader" | "all"

const ACKS = ["leader", "all"] as const satisfies ReadonlyArray<Acks>

/**
 * The producer child's command line: brokers and topic, then partitions
 * (default 8), records per second (default 1000), bytes a record (default
 * 150) and acks (default `leader`), as `ProducerChild.start` passes them.
 */
export const command = CommandLine.script("soak-producer", {
  brokers: Argument.String("brokers").pipe(Argument.withDescription("bootstrap brokers, comma-separated (host:port,…)")),
  topic: Argument.String("topic").pipe(Argument.withDescription("the topic to produce to")),
  partitions: Argument.Int("partitions").pipe(
    Argument.withDefault(8),
    Argument.withDescription("partitions of the topic, written round-robin (default 8)")
  ),
  rate: Argument.Finite("rate").pipe(
    Argument.withDefault(1000),
    Argument.withDescription("records per second, paced in real time (default 1000; a huge rate: as fast as 4 sends in flight go)")
  ),
  recordBytes: Argument.Int("record-bytes").pipe(Argument.withDefault(150), Argument.withDescription("bytes a record (default 150)")),
  acks: Argument.Literals("acks", ACKS).pipe(
    Argument.withDefault("leader"),
    Argument.withDescription("leader (default) or all (every in-sync replica)")
  )
}, [
  "Produces records to a topic at a rate until SIGTERM, printing PRODUCED <n> (records acknowledged)",
  "  each second; on SIGTERM it finishes the send in flight, prints the last count and exits."
].join("\n"), { invocation: "node --conditions=@sluice/source examples/soak/producer.ts" })

