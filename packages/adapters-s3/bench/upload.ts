/**
 * Upload benchmark against a real S3 server: objects/s, MB/s and per-object
 * latency of `S3Sink.putObject` (checksum computed locally, single PUT below the
 * multipart threshold, parallel parts above) followed by the HEAD verify, for
 * 1, 8 and 64 MiB objects at concurrency 1, 8 and 32.
 *
 * Each cell runs until `SLUICE_BENCH_SECONDS` (default 5) elapsed or
 * `SLUICE_BENCH_MIB` (default 1536) MiB were uploaded, whichever comes first,
 * after one warm-up object. Keys are reused per concurrency slot, so the bucket
 * never holds more than 32 objects per size.
 *
 *   bash scripts/s3-server.sh up && set -a && . .services/s3.env && set +a
 *   node --conditions=@sluice/source packages/adapters-s3/bench/upload.ts
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { Batch, ObjectKey, Record } from "@sluice/core"
import { Effect } from "effect"
import * as S3Sink from "../src/S3Sink.ts"

const MiB = 1024 * 1024
const sizes = [1, 8, 64]
const concurrencies = [1, 8, 32]
const seconds = Number(process.env["SLUICE_BENCH_SECONDS"] ?? 5)
const capMiB = Number(process.env["SLUICE_BENCH_MIB"] ?? 1536)
const algorithmName = process.env["SLUICE_BENCH_CHECKSUM"] ?? "CRC32"
const algorithm = (["CRC32", "CRC32C", "CRC64NVME", "SHA256"] as const).find((a) => a === algorithmName)
if (algorithm === undefined) {
  console.error(`SLUICE_BENCH_CHECKSUM must be CRC32, CRC32C, CRC64NVME or SHA256, not ${algorithmName}`)
  process.exit(2)
}

const endpoint = process.env["SLUICE_S3_ENDPOINT"]
const accessKeyId = process.env["SLUICE_S3_ACCESS_KEY"]
const secretAccessKey = process.env["SLUICE_S3_SECRET_KEY"]
if (endpoint === undefined || accessKeyId === undefined || secretAccessKey === undefined) {
  console.error("set SLUICE_S3_ENDPOINT / _ACCESS_KEY / _SECRET_KEY (bash scripts/s3-server.sh up; . .services/s3.env)")
  process.exit(1)
}

/** A batch whose body is exactly `mib` MiB: size-only records of 64 KiB minus the frame. */
const batchOf = (mib: number, slot: number): Batch.SealedBatch => {
  const records = mib * 16
  const recordBytes = 64 * 1024 - 4
  const firstOffset = slot * records
  const chunk = Record.syntheticChunk("bench", mib, firstOffset, records, recordBytes, 0)
  return {
    key: ObjectKey.make({ prefix: `bench-${mib}`, source: "bench", partition: mib, firstOffset, lastOffset: firstOffset + records - 1 }),
    source: "bench",
    partition: mib,
    sequence: slot,
    firstOffset,
    lastOffset: firstOffset + records - 1,
    records,
    bytes: chunk.bytes,
    sealReason: "bytes",
    openedAt: 0,
    sealedAt: 0,
    chunks: [chunk]
  }
}

interface Row {
  readonly mib: number
  readonly concurrency: number
  readonly objects: number
  readonly seconds: number
  readonly p50: number
  readonly p99: number
}

const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0
}

const cell = (sink: S3Sink.S3Sink, mib: number, concurrency: number) =>
  Effect.gen(function*() {
    const batches = Array.from({ length: concurrency }, (_, slot) => batchOf(mib, slot))
    const once = (slot: number) =>
      Effect.gen(function*() {
        const t = performance.now()
        const receipt = yield* sink.putObject(batches[slot] ?? batchOf(mib, slot))
        yield* sink.verify(receipt)
        return performance.now() - t
      })
    yield* once(0) // warm-up: sockets, JIT
    const latencies: Array<number> = []
    const maxObjects = Math.max(concurrency, Math.floor(capMiB / mib))
    const deadline = performance.now() + seconds * 1000
    let started = 0
    const start = performance.now()
    const worker = (slot: number) =>
      Effect.gen(function*() {
        while (performance.now() < deadline && started < maxObjects) {
          started++
          latencies.push(yield* once(slot))
        }
      })
    yield* Effect.forEach(Array.from({ length: concurrency }, (_, i) => i), worker, { concurrency: "unbounded", discard: true })
    const elapsed = (performance.now() - start) / 1000
    const row: Row = { mib, concurrency, objects: latencies.length, seconds: elapsed, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) }
    return row
  })

const program = Effect.scoped(Effect.gen(function*() {
  const bucket = `bench-${Date.now().toString(36)}`
  const admin = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } })
  yield* Effect.promise(() => admin.send(new CreateBucketCommand({ Bucket: bucket })))
  admin.destroy()
  const sink = yield* S3Sink.make({
    bucket,
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    checksumAlgorithm: algorithm
  })
  console.log(
    `S3 upload benchmark: ${endpoint}, checksum ${algorithm}, multipart ≥ ${sink.config.multipartThreshold / MiB} MiB ` +
      `(parts ${sink.config.partSize / MiB} MiB × ${sink.config.partConcurrency}), each cell ≤ ${seconds} s or ${capMiB} MiB; ` +
      `put + HEAD verify per object`
  )
  const rows: Array<Row> = []
  for (const mib of sizes) {
    for (const concurrency of concurrencies) {
      const row = yield* cell(sink, mib, concurrency)
      rows.push(row)
      console.log(
        `| ${String(mib).padStart(4)} MiB | ${String(concurrency).padStart(3)} | ${String(row.objects).padStart(5)} | ` +
          `${(row.objects / row.seconds).toFixed(1).padStart(7)} | ${((row.objects * mib * MiB) / 1e6 / row.seconds).toFixed(1).padStart(7)} | ` +
          `${row.p50.toFixed(0).padStart(6)} | ${row.p99.toFixed(0).padStart(6)} |`
      )
    }
  }
  return rows
}))

console.log("| size | conc | objects | objects/s | MB/s | p50 ms | p99 ms |")
console.log("|---|---|---|---|---|---|---|")
const t0 = performance.now()
await Effect.runPromise(program)
console.log(`total ${((performance.now() - t0) / 1000).toFixed(1)} s`)
