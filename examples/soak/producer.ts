/**
 * soak — the load for `--source kafka`: a child process producing records of
 * `recordBytes` bytes to `topic` at `rate` records/s (paced in real time,
 * round-robin over its partitions, one send in flight, up to 10 000 records
 * a send), until SIGTERM. Each second it prints `PRODUCED <n>` (records
 * acknowledged so far); on SIGTERM it finishes the send in flight, prints the
 * last count and exits. A child, so that its CPU and memory are not the
 * archiver's.
 *
 *   node --conditions=@sluice/source examples/soak/producer.ts <brokers> <topic> <partitions> <rate> <recordBytes>
 */
import { Producer } from "@platformatic/kafka"
import { performance } from "node:perf_hooks"

const [brokers = "", topic = "", partitionsText = "8", rateText = "1000", bytesText = "150"] = process.argv.slice(2)
const partitions = Number(partitionsText)
const rate = Number(rateText)
const recordBytes = Number(bytesText)
const MAX_SEND = 10_000

const producer = new Producer({ clientId: "sluice-soak-producer", bootstrapBrokers: brokers.split(","), retries: 3 })
let stopping = false
process.on("SIGTERM", () => {
  stopping = true
})

const main = async () => {
  const value = Buffer.alloc(recordBytes, "x")
  const started = performance.now()
  let sent = 0
  let lastReport = started
  const report = () => process.stdout.write(`PRODUCED ${sent}\n`)
  while (!stopping) {
    const now = performance.now()
    const due = Math.min(MAX_SEND, Math.floor((rate * (now - started)) / 1000) - sent)
    if (due <= 0) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    } else {
      const messages = new Array(due)
      for (let i = 0; i < due; i++) messages[i] = { topic, partition: (sent + i) % partitions, value }
      await producer.send({ messages })
      sent += due
    }
    if (now - lastReport >= 1000) {
      report()
      lastReport = now
    }
  }
  report()
  await producer.close().catch(() => undefined)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`soak producer: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
)
