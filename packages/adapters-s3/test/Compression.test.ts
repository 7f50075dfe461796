/**
 * A zstd pipeline (Memory.source → S3 sink) on the real server: every object
 * is verified by the store's own checksum of the compressed bytes, and reads
 * back — decompressed as its manifest says — to exactly the records produced.
 */
import { crc32 } from "node:zlib"
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3"
import { Batch, Fixed, Memory, ObjectKey, Pipeline } from "@sluice/core"
import { Effect, Schema } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import * as Checksums from "../src/Checksums.ts"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"

beforeEach(Env.requireServer)

const crc32Base64 = (bytes: Uint8Array): string => {
  const raw = new Uint8Array(4)
  new DataView(raw.buffer).setUint32(0, crc32(bytes))
  return Checksums.toBase64(raw)
}

describe("Compression → S3 sink against the real server", () => {
  it("a zstd pipeline: verified by the store's CRC32 of the compressed bytes, and read back record by record", async () => {
    const bucket = await Env.newBucket("zstd")
    const partitions = 2
    const records = 6_000
    const recordBytes = 150
    const stats = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { checksumAlgorithm: "CRC32" }))
      const source = Memory.source({ name: "orders", partitions, records, recordBytes, chunkRecords: 500 })
      // 2 500 records of 150 B: a 385 KB framed body, compressed off the event loop.
      return yield* Pipeline.run({
        source,
        sink,
        config: { batch: { records: 2_500 }, compression: "zstd", compressionLevel: 6 },
        policies: Fixed.layer({ concurrency: 4 })
      })
    })))
    expect(stats.recordsCommitted).toBe(partitions * records)

    const c = Env.client()
    const encoder = new TextEncoder()
    let read = 0
    try {
      const keys = (await Env.listKeys(bucket)).filter((k) => k.endsWith(".rec"))
      expect(keys.length).toBe(partitions * Math.ceil(records / 2_500))
      for (const key of keys) {
        const text = await (await c.send(new GetObjectCommand({ Bucket: bucket, Key: ObjectKey.manifestKey(key) }))).Body?.transformToString()
        const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(text)
        const stored = await (await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray()
        const head = await c.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: "ENABLED" }))
        expect(manifest).toMatchObject({ version: 2, compression: "zstd", objectBytes: stored.byteLength })
        expect(manifest.bodyBytes).toBe(manifest.payloadBytes + 4 * manifest.records)
        expect(stored.byteLength).toBeLessThan((manifest.bodyBytes ?? 0) / 4)
        // One checksum, over the stored bytes: computed here, recorded, and reported by the store.
        expect(manifest.checksum).toEqual({ algorithm: "CRC32", value: crc32Base64(stored) })
        expect(head.ChecksumCRC32).toBe(manifest.checksum.value)
        expect(head.ContentLength).toBe(stored.byteLength)
        const payloads = Batch.decodeObject(manifest, stored)
        const offsets = Batch.recordOffsets(manifest)
        expect(payloads.length).toBe(manifest.records)
        payloads.forEach((payload, i) => {
          const expected = Memory.recordPayload(encoder, "orders", manifest.partition, offsets[i] ?? -1, recordBytes)
          if (Buffer.compare(payload, expected) !== 0) throw new Error(`${key}: record ${i} is not the record produced at offset ${offsets[i]}`)
        })
        read += payloads.length
      }
    } finally {
      c.destroy()
    }
    expect(read).toBe(partitions * records)
  })
})
