/**
 * bench:pipeline — records/s of the in-memory pipeline against a plain
 * TypeScript loop doing the same work, measured in the same run.
 *
 * Work per record, in both: seal into per-partition batches of 10 000 records,
 * encode the object body, SHA-256 it, store it, verify it (compare checksums),
 * commit the partition offset. Records (150 B, 8 partitions) are generated once
 * up front and shared, so generation is not measured.
 *
 *   npm run bench:pipeline [-- --records 2000000 --rounds 3]
 */
import { createHash } from "node:crypto"
import { Effect, Layer, Stream } from "effect"
import { Batch, Fixed, Memory, Pipeline, Record } from "../src/index.ts"
import type { Source } from "../src/index.ts"

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const totalRecords = arg("records", 2_000_000)
const rounds = arg("rounds", 3)
const partitions = 8
const recordBytes = 150
const chunkRecords = 1_000
const batchRecords = 10_000

const encoder = new TextEncoder()
const chunks: Array<Record.RecordChunk> = []
{
  const perPartition = Math.floor(totalRecords / partitions)
  for (let from = 0; from < perPartition; from += chunkRecords) {
    for (let p = 0; p < partitions; p++) {
      const n = Math.min(chunkRecords, perPartition - from)
      const payloads = new Array<Uint8Array>(n)
      for (let i = 0; i < n; i++) payloads[i] = Memory.recordPayload(encoder, "bench", p, from + i, recordBytes)
      chunks.push(Record.chunkOf("bench", p, from, payloads))
    }
  }
}
const records = chunks.reduce((n, c) => n + c.count, 0)
const sha256 = (body: Uint8Array): string => createHash("sha256").update(body).digest("base64")

/** The baseline: a plain loop doing the same work. */
const plainLoop = (): number => {
  const open = new Map<number, Array<Record.RecordChunk>>()
  const openCount = new Map<number, number>()
  const store = new Map<string, { body: Uint8Array; checksum: string }>()
  const committed = new Map<number, number>()
  const flush = (partition: number, list: Array<Record.RecordChunk>) => {
    let n = 0
    let bytes = 0
    for (const c of list) {
      n += c.count
      bytes += c.bytes
    }
    const first = list[0]?.firstOffset ?? 0
    const batch: Batch.SealedBatch = {
      key: `bench/${partition}/${first}`,
      source: "bench",
      partition,
      sequence: 0,
      firstOffset: first,
      lastOffset: first + n - 1,
      records: n,
      bytes,
      sealReason: "records",
      openedAt: 0,
      sealedAt: 0,
      chunks: list
    }
    const body = Batch.encodeBody(batch)
    const checksum = sha256(body)
    store.set(batch.key, { body, checksum })
    if (store.get(batch.key)?.checksum !== checksum) throw new Error("verify failed")
    committed.set(partition, batch.lastOffset + 1)
  }
  for (const chunk of chunks) {
    const list = open.get(chunk.partition) ?? []
    list.push(chunk)
    open.set(chunk.partition, list)
    const n = (openCount.get(chunk.partition) ?? 0) + chunk.count
    openCount.set(chunk.partition, n)
    if (n >= batchRecords) {
      flush(chunk.partition, list)
      open.set(chunk.partition, [])
      openCount.set(chunk.partition, 0)
    }
  }
  for (const [p, list] of open) if (list.length > 0) flush(p, list)
  let total = 0
  for (const v of committed.values()) total += v
  return total
}

const source = (): Source.Source => {
  const committed = new Map<number, number>()
  return {
    name: "bench",
    events: Stream.fromIterable(chunks),
    commit: (p, o) => Effect.sync(() => void committed.set(p, o)),
    pause: Effect.void,
    resume: Effect.void,
    lag: Effect.succeed(new Map())
  }
}

const pipeline = (): Promise<number> =>
  Effect.runPromise(
    Pipeline.run({
      source: source(),
      sink: Memory.sink(),
      config: { batch: { records: batchRecords, bytes: "64 MiB" }, memoryBudget: "512 MiB" },
      policies: Layer.mergeAll(Fixed.layer({ concurrency: 8 }))
    })
  ).then((stats) => stats.recordsCommitted)

const time = async (f: () => number | Promise<number>): Promise<number> => {
  const t0 = performance.now()
  const n = await f()
  if (n !== records) throw new Error(`expected ${records} records, got ${n}`)
  return performance.now() - t0
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const plain: Array<number> = []
const effect: Array<number> = []
await time(plainLoop) // warm-up
await time(pipeline)
for (let r = 0; r < rounds; r++) {
  plain.push(await time(plainLoop))
  effect.push(await time(pipeline))
}
const plainRate = records / (median(plain) / 1000)
const effectRate = records / (median(effect) / 1000)
console.log(`records: ${records} × ${recordBytes} B, ${partitions} partitions, batches of ${batchRecords}, ${rounds} rounds (median)`)
console.log(`plain loop        ${(plainRate / 1e6).toFixed(2)} M records/s  (${median(plain).toFixed(0)} ms)`)
console.log(`sluice pipeline   ${(effectRate / 1e6).toFixed(2)} M records/s  (${median(effect).toFixed(0)} ms)`)
console.log(`ratio pipeline / plain = ${(effectRate / plainRate).toFixed(2)}`)
