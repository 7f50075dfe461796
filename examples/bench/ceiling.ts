/**
 * bench:e2e — the S3 server's own ceiling: a flood of `PutObject`s of one
 * ready-made body (the size of the contenders' objects), `concurrency` in
 * flight, for a bounded time, each slot overwriting its own key so the bucket
 * never grows. `"bare"` sends no checksum (the server still computes its own
 * CRC64NVME); `"verified"` does per object what both contenders do: CRC32 of
 * the body (`@node-rs/crc32`, as the S3 sink), put with it, HEAD to check it,
 * which shows what that costs.
 */
import { randomFillSync } from "node:crypto"
import { performance } from "node:perf_hooks"
import { crc32 } from "@node-rs/crc32"
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import type { Services } from "./services.ts"
import { s3Client } from "./services.ts"

/** One flood. */
export interface FloodJob {
  readonly bucket: string
  readonly objectBytes: number
  readonly concurrency: number
  readonly seconds: number
  readonly mode: "bare" | "verified"
}

/** What a flood stored. */
export interface FloodResult {
  readonly puts: number
  readonly seconds: number
  readonly bytesPerSecond: number
  readonly p50Millis: number
}

/** Floods the server; every put started before the deadline is waited for and counted. */
export const run = async (job: FloodJob, services: Services): Promise<FloodResult> => {
  const client = s3Client(services)
  const body = randomFillSync(Buffer.allocUnsafe(job.objectBytes))
  const once = async (slot: number): Promise<number> => {
    const t = performance.now()
    const key = `flood/${job.mode}/${slot}`
    if (job.mode === "bare") {
      await client.send(new PutObjectCommand({ Bucket: job.bucket, Key: key, Body: body, ContentLength: body.byteLength }))
    } else {
      const sum = Buffer.alloc(4)
      sum.writeUInt32BE(crc32(body))
      const checksum = sum.toString("base64")
      await client.send(new PutObjectCommand({ Bucket: job.bucket, Key: key, Body: body, ContentLength: body.byteLength, ChecksumCRC32: checksum }))
      const head = await client.send(new HeadObjectCommand({ Bucket: job.bucket, Key: key, ChecksumMode: "ENABLED" }))
      if (head.ChecksumCRC32 !== checksum) throw new Error(`${key}: HEAD reports crc32 ${head.ChecksumCRC32}, sent ${checksum}`)
    }
    return performance.now() - t
  }
  try {
    await once(0) // warm-up: sockets, JIT
    const latencies: Array<number> = []
    const started = performance.now()
    const deadline = started + job.seconds * 1000
    const worker = async (slot: number) => {
      while (performance.now() < deadline) latencies.push(await once(slot))
    }
    await Promise.all(Array.from({ length: job.concurrency }, (_, slot) => worker(slot)))
    const seconds = (performance.now() - started) / 1000
    const sorted = [...latencies].sort((a, b) => a - b)
    return {
      puts: latencies.length,
      seconds,
      bytesPerSecond: (latencies.length * job.objectBytes) / seconds,
      p50Millis: sorted[Math.floor(sorted.length / 2)] ?? 0
    }
  } finally {
    client.destroy()
  }
}
