/**
 * Read throughput from the real broker: 150-byte records over 24 partitions,
 * drained through `KafkaSource.events` (with `recordFormat` "value" and
 * "envelope") and through the same client's plain `consume()` loop, in the
 * same run.
 *
 *   npm run bench:read -w @sluice/adapter-kafka
 *   SLUICE_BENCH_RECORDS=2000000 SLUICE_BENCH_ROUNDS=3 npm run bench:read -w @sluice/adapter-kafka
 *
 * Needs SLUICE_KAFKA_BROKERS (`bash scripts/kafka-broker.sh up`, then source
 * `.services/kafka.env`).
 */
import { Admin, Consumer, Producer } from "@platformatic/kafka"
import { Effect, Stream } from "effect"
import { KafkaSource, RecordEnvelope } from "../src/index.ts"

const RECORD_BYTES = 150
const PARTITIONS = 24
const records = Number(process.env["SLUICE_BENCH_RECORDS"] ?? 1_000_000)
const rounds = Number(process.env["SLUICE_BENCH_ROUNDS"] ?? 2)
const brokersEnv = process.env["SLUICE_KAFKA_BROKERS"]
if (brokersEnv === undefined || brokersEnv === "") {
  console.error("SLUICE_KAFKA_BROKERS is not set: run `bash scripts/kafka-broker.sh up` and `set -a; . .services/kafka.env; set +a`")
  process.exit(1)
}
const [firstBroker, ...otherBrokers] = brokersEnv.split(",")
const brokers: [string, ...Array<string>] = [firstBroker ?? brokersEnv, ...otherBrokers]
const fetch = { maxWait: 500, minBytes: 1, maxBytes: 16 * 1024 * 1024, partitionMaxBytes: 1024 * 1024 }

const produce = async (topic: string): Promise<number> => {
  const producer = new Producer({ clientId: "bench-producer", bootstrapBrokers: brokers })
  const value = Buffer.alloc(RECORD_BYTES, 0x61)
  const perSend = 24_000
  const started = performance.now()
  const inflight: Array<Promise<unknown>> = []
  for (let sent = 0; sent < records; sent += perSend) {
    const n = Math.min(perSend, records - sent)
    const messages = new Array(n)
    for (let i = 0; i < n; i++) messages[i] = { topic, partition: (sent + i) % PARTITIONS, value }
    inflight.push(producer.send({ messages }))
    if (inflight.length >= 4) await inflight.shift()
  }
  await Promise.all(inflight)
  await producer.close()
  return performance.now() - started
}

/** The client's plain loop: `consume()` from earliest, `for await` over messages. */
const plainLoop = async (topic: string, round: number): Promise<number> => {
  const consumer = new Consumer({
    clientId: "bench-plain",
    groupId: `${topic}-plain-${round}`,
    bootstrapBrokers: brokers,
    maxWaitTime: fetch.maxWait,
    minBytes: fetch.minBytes,
    maxBytes: fetch.maxBytes,
    maxBytesPerPartition: fetch.partitionMaxBytes
  })
  const started = performance.now()
  const stream = await consumer.consume({ topics: [topic], mode: "earliest", autocommit: false })
  let n = 0
  let bytes = 0
  for await (const message of stream) {
    bytes += message.value.byteLength
    if (++n === records) break
  }
  const elapsed = performance.now() - started
  await stream.close()
  await consumer.close(true)
  if (bytes !== records * RECORD_BYTES) throw new Error(`plain loop read ${bytes} bytes`)
  return elapsed
}

/** Envelope bytes of a bench record: no key, no headers. */
const ENVELOPE_BYTES = RecordEnvelope.encodedSize({ key: null, headers: [], value: new Uint8Array(RECORD_BYTES) })

/** `KafkaSource.events` drained (assign mode, every partition, until caught up). */
const sourceDrain = (topic: string, recordFormat: "value" | "envelope"): Promise<number> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const started = performance.now()
    const source = yield* KafkaSource.make({
      brokers,
      topic,
      clientId: "bench-source",
      mode: { kind: "assign" },
      until: "caught-up",
      recordFormat,
      fetch
    })
    let n = 0
    let bytes = 0
    yield* Stream.runForEach(source.events, (event) =>
      Effect.sync(() => {
        if (event._tag === "RecordChunk") {
          n += event.count
          bytes += event.bytes
        }
      }))
    const elapsed = performance.now() - started
    const perRecord = recordFormat === "value" ? RECORD_BYTES : ENVELOPE_BYTES
    if (n !== records || bytes !== records * perRecord) throw new Error(`source (${recordFormat}) read ${n} records, ${bytes} bytes`)
    return elapsed
  })))

const main = async () => {
  const topic = `sluice-bench-read-${Date.now().toString(36)}`
  const admin = new Admin({ clientId: "bench-admin", bootstrapBrokers: brokers })
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 })
  const produceMs = await produce(topic)
  console.log(`topic ${topic}: ${records} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions, produced in ${(produceMs / 1000).toFixed(1)} s`)

  const rate = (ms: number) => records / (ms / 1000)
  const readers: ReadonlyArray<readonly [string, (round: number) => Promise<number>]> = [
    ["plain consume loop", (round) => plainLoop(topic, round)],
    ["KafkaSource.events (value)", () => sourceDrain(topic, "value")],
    ["KafkaSource.events (envelope)", () => sourceDrain(topic, "envelope")]
  ]
  const results = readers.map(() => new Array<number>())
  for (let round = 0; round < rounds; round++) {
    // Rotate the order so that no reader always reads a warmer page cache.
    for (let i = 0; i < readers.length; i++) {
      const at = (i + round) % readers.length
      const reader = readers[at]
      if (reader === undefined) continue
      results[at]?.push(rate(await reader[1](round)))
    }
    console.log(`round ${round + 1}: ${readers.map(([label], i) => `${label} ${fmt(results[i]?.[round] ?? 0)} rec/s`).join(", ")}`)
  }
  const best = (xs: ReadonlyArray<number>) => Math.max(...xs)
  const plain = best(results[0] ?? [])
  console.log(`best of ${rounds}:`)
  readers.forEach(([label], i) => {
    const r = best(results[i] ?? [])
    console.log(`  ${label.padEnd(30)} ${fmt(r).padStart(10)} rec/s (${mb(r)} MB/s of values)${i === 0 ? "" : `, ratio to plain ${(r / plain).toFixed(2)}`}`)
  })
  await admin.deleteTopics({ topics: [topic] })
  await admin.close()
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")
const mb = (recordsPerSecond: number) => (recordsPerSecond * RECORD_BYTES / 1e6).toFixed(1)

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
