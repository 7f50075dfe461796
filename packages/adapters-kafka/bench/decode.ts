/**
 * The decoder in memory: ns a record of `decodePartition` (fetch bytes of one
 * partition → one framed chunk), as `KafkaSource` calls it, on fetch answers
 * written by the client's own writer (`createRecordsBatch`): batches of 500
 * records of 150 B, no key, no header, timestamps a few ms apart, ~1 MiB per
 * answer (the source's `partitionMaxBytes`), both record formats. Rounds
 * alternate the formats; the median round is reported.
 *
 * ```sh
 * npm run bench:decode
 * ```
 */
import { createRecordsBatch } from "@platformatic/kafka"
import type { MessageRecord } from "@platformatic/kafka"
import type { RecordFormat } from "../src/internal/decode.ts"
import { decodePartition } from "../src/internal/decode.ts"

const RECORD_BYTES = 150
const PER_BATCH = 500
const BATCHES = 13 // ~1 MiB an answer
const ANSWERS = 40
const ROUNDS = 15

const value = Buffer.alloc(RECORD_BYTES, 0x61)
const messages: Array<MessageRecord> = Array.from({ length: PER_BATCH }, (_, i) => ({
  topic: "bench",
  value,
  timestamp: 1_765_000_000_000n + BigInt(Math.floor(i / 12))
}))
const answers = Array.from({ length: ANSWERS }, (_, a) => {
  const batches = Array.from({ length: BATCHES }, (_, b) => {
    const bytes = createRecordsBatch(messages).buffer
    // The writer numbers every batch from offset 0: place each at its own.
    bytes.writeBigInt64BE(BigInt((a * BATCHES + b) * PER_BATCH), 0)
    return bytes
  })
  return { from: a * BATCHES * PER_BATCH, bytes: new Uint8Array(Buffer.concat(batches)) }
})
const records = ANSWERS * BATCHES * PER_BATCH

const round = (format: RecordFormat): number => {
  const start = performance.now()
  let seen = 0
  for (const answer of answers) seen += decodePartition("bench", 0, answer.from, answer.bytes, 0, format).chunk?.count ?? 0
  const millis = performance.now() - start
  if (seen !== records) throw new Error(`decoded ${seen} records of ${records}`)
  return millis
}

const formats: ReadonlyArray<RecordFormat> = ["envelope", "value"]
const times = new Map<RecordFormat, Array<number>>(formats.map((f) => [f, []]))
for (const f of formats) round(f) // warm-up
for (let r = 0; r < ROUNDS; r++) for (const f of formats) times.get(f)?.push(round(f))
for (const f of formats) {
  const xs = [...(times.get(f) ?? [])].sort((a, b) => a - b)
  const median = xs[Math.floor(xs.length / 2)] ?? 0
  console.log(`${f.padEnd(8)} ${(median * 1e6 / records).toFixed(1)} ns a record (median of ${ROUNDS} rounds of ${records} records; best ${((xs[0] ?? 0) * 1e6 / records).toFixed(1)})`)
}
