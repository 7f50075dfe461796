/**
 * Read throughput from the real broker: 150-byte records over 24 partitions,
 * drained through `KafkaSource.events` and through the same client's plain
 * `consume()` loop, in the same run.
 *
 *   npm run bench:read -w @sluice/adapter-kafka
 *   SLUICE_BENCH_RECORDS=2000000 SLUICE_BENCH_ROUNDS=3 npm run bench:read -w @sluice/adapter-kafka
 *
 * Needs SLUICE_KAFKA_BROKERS (`bash scripts/kafka-broker.sh up`, then source
 * `.services/kafka.env`).
 */
import { Admin, Consumer, Producer } from "@platformatic/kafka"
import { Effect, Stream } from "effect"
import { KafkaSource } from "../src/index.ts"

const RECORD_BYTES = 150
const PARTITIONS = 24
const records = Number(process.env["SLUICE_BENCH_RECORDS"] ?? 1_000_000)
const rounds = Number(process.env["SLUICE_BENCH_ROUNDS"] ?? 2)
const brokersEnv = process.env["SLUICE_KAFKA_BROKERS"]
if (brokersEnv === undefined || brokersEnv === "") {
  console.error("SLUICE_KAFKA_BROKERS is not set: run `bash scripts/kafka-broker.sh up` and `set -a; . .services/kafka.env; set +a`")
  process.exit(1)
}
const brokers = brokersEnv.split(",")
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

/** `KafkaSource.events` drained (assign mode, every partition, until caught up). */
const sourceDrain = (topic: string): Promise<number> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const started = performance.now()
    const source = yield* KafkaSource.make({
      brokers,
      topic,
      clientId: "bench-source",
      mode: { kind: "assign" },
      until: "caught-up",
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
    if (n !== records || bytes !== records * RECORD_BYTES) throw new Error(`source read ${n} records, ${bytes} bytes`)
    return elapsed
  })))

const main = async () => {
  const topic = `sluice-bench-read-${Date.now().toString(36)}`
  const admin = new Admin({ clientId: "bench-admin", bootstrapBrokers: brokers })
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 })
  const produceMs = await produce(topic)
  console.log(`topic ${topic}: ${records} records of ${RECORD_BYTES} B over ${PARTITIONS} partitions, produced in ${(produceMs / 1000).toFixed(1)} s`)

  const rate = (ms: number) => records / (ms / 1000)
  const plain: Array<number> = []
  const source: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    // Alternate the order so that neither always reads a warmer page cache.
    if (round % 2 === 0) {
      plain.push(rate(await plainLoop(topic, round)))
      source.push(rate(await sourceDrain(topic)))
    } else {
      source.push(rate(await sourceDrain(topic)))
      plain.push(rate(await plainLoop(topic, round)))
    }
    console.log(`round ${round + 1}: plain consume loop ${fmt(plain[round] ?? 0)} rec/s, KafkaSource.events ${fmt(source[round] ?? 0)} rec/s`)
  }
  const best = (xs: Array<number>) => Math.max(...xs)
  const p = best(plain)
  const s = best(source)
  console.log(`best of ${rounds}: plain consume loop ${fmt(p)} rec/s (${mb(p)} MB/s), KafkaSource.events ${fmt(s)} rec/s (${mb(s)} MB/s), ratio source/plain ${(s / p).toFixed(2)}`)
  await admin.deleteTopics({ topics: [topic] })
  await admin.close()
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")
const mb = (recordsPerSecond: number) => (recordsPerSecond * RECORD_BYTES / 1e6).toFixed(1)

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
