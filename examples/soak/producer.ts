/**
 * soak — the load for `--source kafka`: a child process producing records of
 * `recordBytes` bytes to `topic` at `rate` records/s (paced in real time,
 * round-robin over its partitions, up to 4 sends of up to 10 000 records in
 * flight: one at a time it was bound by the broker's round trip at ~30 000
 * records/s here), until SIGTERM. Each second it prints `PRODUCED <n>` (records
 * acknowledged so far); on SIGTERM it finishes the send in flight, prints the
 * last count and exits. A child, so that its CPU and memory are not the
 * archiver's. `acks` is `leader` (the default) or `all` (every in-sync replica;
 * `npm run brokers` uses it against the 3-node cluster).
 *
 *   node --conditions=@sluice/source examples/soak/producer.ts <brokers> <topic> [<partitions>] [<rate>] [<record-bytes>] [<acks>]
 *
 * (`ProducerOptions.ts`; `--help` prints the help, a bad line exits 2.)
 */
import { ProduceAcks, Producer } from "@platformatic/kafka"
import * as CommandLine from "@sluice/core/CommandLine"
import { performance } from "node:perf_hooks"
import * as ProducerOptions from "./ProducerOptions.ts"

const flags = CommandLine.settle(ProducerOptions.command.read(process.argv.slice(2)), ProducerOptions.command.help)
if (flags === undefined) process.exit()
const { brokers, topic, partitions, rate, recordBytes, acks } = flags
/** The most records one send carries, so that a late schedule is caught up in several sends in flight rather than one. */
const MAX_SEND = 10_000
/** Sends in flight at once: one at a time was bound by the broker's round trip at ~30 000 records/s here. */
const IN_FLIGHT = 4

const producer = new Producer({
  clientId: "sluice-soak-producer",
  bootstrapBrokers: brokers.split(","),
  retries: 3,
  acks: acks === "all" ? ProduceAcks.ALL : ProduceAcks.LEADER
})
let stopping = false
process.on("SIGTERM", () => {
  stopping = true
})

const main = async () => {
  const value = Buffer.alloc(recordBytes, "x")
  const started = performance.now()
  let scheduled = 0
  let acknowledged = 0
  let failure: unknown
  const inFlight = new Set<Promise<void>>()
  let lastReport = started
  const report = () => process.stdout.write(`PRODUCED ${acknowledged}\n`)
  while (!stopping && failure === undefined) {
    const now = performance.now()
    const due = Math.min(MAX_SEND, Math.floor((rate * (now - started)) / 1000) - scheduled)
    if (due <= 0 || inFlight.size >= IN_FLIGHT) {
      await (inFlight.size >= IN_FLIGHT ? Promise.race(inFlight) : new Promise((resolve) => setTimeout(resolve, 5)))
    } else {
      const messages = new Array(due)
      for (let i = 0; i < due; i++) messages[i] = { topic, partition: (scheduled + i) % partitions, value }
      scheduled += due
      const send: Promise<void> = producer.send({ messages }).then(
        () => {
          acknowledged += due
        },
        (error: unknown) => {
          failure = error
        }
      ).finally(() => inFlight.delete(send))
      inFlight.add(send)
    }
    if (now - lastReport >= 1000) {
      report()
      lastReport = now
    }
  }
  await Promise.all(inFlight)
  report()
  if (failure !== undefined) throw failure
  await producer.close().catch(() => undefined)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`soak producer: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
)
