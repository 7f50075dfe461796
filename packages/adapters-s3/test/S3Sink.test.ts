import { Worker } from "node:worker_threads"
import type { Transferable } from "node:worker_threads"
import { crc32 } from "node:zlib"
import { Crc32c } from "@aws-sdk/checksums/crc"
import { GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { Batch, Crc32, ObjectKey } from "@sluice/core"
import { Effect, Schema } from "effect"
import { beforeEach, describe, expect, it, vi } from "vitest"
import * as Checksums from "../src/Checksums.ts"
import * as S3Errors from "../src/S3Errors.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf, bigBatch } from "./support/Batches.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

const run = <A, E>(effect: Effect.Effect<A, E, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

beforeEach(Env.requireServer)

describe("S3Sink against the real server", () => {
  it.each(["CRC32", "CRC64NVME", "CRC32C", "SHA256"] as const)("put → manifest → verify round trip (%s)", async (checksumAlgorithm) => {
    const bucket = await Env.newBucket("roundtrip")
    const batch = batchOf({ count: 500, recordBytes: 100 })
    const { receipt, verified, manifest } = await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { checksumAlgorithm, fullReadVerify: true }))
      const receipt = yield* sink.putObject(batch)
      yield* sink.putManifest(Batch.manifestOf(batch, receipt.checksum))
      const verified = yield* sink.verify(receipt)
      const manifest = yield* sink.readManifest(batch.key)
      return { receipt, verified, manifest }
    }))
    expect(receipt.objectBytes).toBe(Batch.bodyBytes(batch))
    expect(receipt.checksum.algorithm).toBe(checksumAlgorithm)
    expect(verified.checksum).toEqual(receipt.checksum)
    // The manifest is stored next to the object and decodes with the core schema.
    expect(await Env.listKeys(bucket)).toEqual([batch.key, ObjectKey.manifestKey(batch.key)].sort())
    expect(manifest).toEqual(Batch.manifestOf(batch, receipt.checksum))
    const c = Env.client()
    const raw = await c.send(new GetObjectCommand({ Bucket: bucket, Key: ObjectKey.manifestKey(batch.key) }))
    const text = await raw.Body?.transformToString()
    expect(Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(text)).toEqual(manifest)
    const body = await c.send(new GetObjectCommand({ Bucket: bucket, Key: batch.key }))
    const records = Batch.decodeBody(await body.Body!.transformToByteArray())
    c.destroy()
    expect(records.length).toBe(500)
    expect(new TextDecoder().decode(records[7])).toMatch(/^orders\/0\/7\.+$/)
  })

  it.each(["CRC32", "CRC64NVME", "CRC32C", "SHA256"] as const)("multipart upload above the threshold verifies (%s)", async (checksumAlgorithm) => {
    const bucket = await Env.newBucket("multipart")
    const batch = bigBatch(12)
    const { receipt, verified } = await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket, {
        checksumAlgorithm,
        multipartThreshold: "5 MiB",
        partSize: "5 MiB",
        fullReadVerify: true
      }))
      const receipt = yield* sink.putObject(batch)
      const verified = yield* sink.verify(receipt)
      return { receipt, verified }
    }))
    if (checksumAlgorithm === "SHA256") expect(receipt.checksum.value).toMatch(/-3$/)
    else expect(receipt.checksum.value).not.toMatch(/-/)
    expect(verified.checksum).toEqual(receipt.checksum)
    expect(receipt.checksumMillis).toBeGreaterThan(0)
  })

  it("CRC32 is the default; a multipart object's CRC32 (combined from its parts) is what the store computes over the body", async () => {
    const bucket = await Env.newBucket("crc32")
    const batch = bigBatch(12)
    const body = Batch.encodeBody(batch)
    const c = Env.client()
    try {
      const out = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { multipartThreshold: "5 MiB", partSize: "5 MiB" }))
        const receipt = yield* sink.putObject(batch)
        const head = yield* Effect.promise(() =>
          c.send(new HeadObjectCommand({ Bucket: bucket, Key: batch.key, ChecksumMode: "ENABLED" }))
        )
        const verified = yield* sink.verify(receipt)
        return { receipt, head, verified }
      }))
      // zlib over the whole body, in one pass: independent of the sink's combine.
      const whole = Buffer.alloc(4)
      whole.writeUInt32BE(crc32(body))
      expect(out.receipt.checksum).toEqual({ algorithm: "CRC32", value: whole.toString("base64") })
      expect(out.head.ETag).toMatch(/-3"?$/)
      expect(out.head.ChecksumType).toBe("FULL_OBJECT")
      expect(out.head.ChecksumCRC32).toBe(whole.toString("base64"))
      expect(out.verified.checksum).toEqual(out.receipt.checksum)
    } finally {
      c.destroy()
    }
  })

  it.each(["CRC32", "CRC32C"] as const)("a large pooled body's %s, computed with the CPU's CRC instructions (not core's helper), is what the store computes over the body", async (algorithm) => {
    const bucket = await Env.newBucket(`simd-${algorithm.toLowerCase()}`)
    // Start core's helper and let it come online: the adapter must not hand it work while the native module is loaded.
    Crc32.of(new Uint8Array(new SharedArrayBuffer(Crc32.SPLIT_FROM_BYTES)))
    await new Promise((resolve) => setTimeout(resolve, 500))
    const batch = bigBatch(3)
    const body = Batch.encodeBody(batch)
    expect(body.buffer).toBeInstanceOf(SharedArrayBuffer)
    const jobs: Array<number> = []
    const post = Worker.prototype.postMessage
    const spy = vi.spyOn(Worker.prototype, "postMessage").mockImplementation(function(this: Worker, message: unknown, transfer?: ReadonlyArray<Transferable>) {
      jobs.push((message as { readonly length: number }).length)
      return post.call(this, message, transfer)
    })
    const c = Env.client()
    try {
      const out = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { checksumAlgorithm: algorithm }))
        const receipt = yield* sink.putObject(batch)
        const head = yield* Effect.promise(() =>
          c.send(new HeadObjectCommand({ Bucket: bucket, Key: batch.key, ChecksumMode: "ENABLED" }))
        )
        return { receipt, head }
      }))
      expect(jobs).toEqual([])
      // From outside the adapter: zlib's CRC-32, the SDK's pure-JS CRC-32C.
      let expected: Uint8Array
      if (algorithm === "CRC32") {
        const raw = Buffer.alloc(4)
        raw.writeUInt32BE(crc32(body))
        expected = raw
      } else {
        const sdk = new Crc32c()
        sdk.update(body)
        expected = await sdk.digest()
      }
      const base64 = Buffer.from(expected).toString("base64")
      expect(out.receipt.checksum).toEqual({ algorithm, value: base64 })
      expect(algorithm === "CRC32" ? out.head.ChecksumCRC32 : out.head.ChecksumCRC32C).toBe(base64)
    } finally {
      spy.mockRestore()
      c.destroy()
    }
  })

  it("a failed part aborts the multipart upload (no orphans)", async () => {
    const bucket = await Env.newBucket("abort")
    const proxy = await FaultProxy.start(Env.env().endpoint, [
      { method: "PUT", query: /partNumber=2\b/, fault: FaultProxy.internalError }
    ])
    try {
      const error = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { multipartThreshold: "5 MiB", partSize: "5 MiB" }, proxy.endpoint))
        return yield* Effect.flip(sink.putObject(bigBatch(12)))
      }))
      expect(error).toMatchObject({ failureClass: "Transient", code: "InternalError", status: 500, stage: "object_upload" })
      expect(proxy.hits.some((h) => h.method === "DELETE" && /uploadId=/.test(h.path))).toBe(true)
      const c = Env.client()
      const uploads = await c.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
      c.destroy()
      expect(uploads.Uploads ?? []).toEqual([])
      expect(await Env.listKeys(bucket)).toEqual([])
    } finally {
      await proxy.close()
    }
  })

  it("a reset on complete also aborts", async () => {
    const bucket = await Env.newBucket("abort-complete")
    const proxy = await FaultProxy.start(Env.env().endpoint, [
      { method: "POST", query: /uploadId=/, fault: FaultProxy.reset }
    ])
    try {
      const error = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { multipartThreshold: "5 MiB", partSize: "5 MiB" }, proxy.endpoint))
        return yield* Effect.flip(sink.putObject(bigBatch(11)))
      }))
      expect(error.failureClass).toBe("Transient")
      const c = Env.client()
      const uploads = await c.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
      c.destroy()
      expect(uploads.Uploads ?? []).toEqual([])
    } finally {
      await proxy.close()
    }
  })

  it("a replay overwrites the same deterministic key", async () => {
    const bucket = await Env.newBucket("replay")
    const batch = batchOf({ partition: 3, firstOffset: 1000, count: 200, recordBytes: 50 })
    await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      for (let i = 0; i < 2; i++) {
        const receipt = yield* sink.putObject(batch)
        yield* sink.putManifest(Batch.manifestOf(batch, receipt.checksum))
        yield* sink.verify(receipt)
      }
    }))
    expect(await Env.listKeys(bucket)).toEqual([batch.key, ObjectKey.manifestKey(batch.key)].sort())
  })

  it.each([false, true])("a body corrupted in flight is refused (Fatal, nothing stored), signPayload %s", async (signPayload) => {
    const bucket = await Env.newBucket("baddigest")
    const proxy = await FaultProxy.start(Env.env().endpoint, [{ method: "PUT", fault: FaultProxy.corrupt }])
    try {
      const error = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { signPayload }, proxy.endpoint))
        return yield* Effect.flip(sink.putObject(batchOf({ count: 100, recordBytes: 100 })))
      }))
      // Unsigned, the additional checksum alone catches it; signed, the server
      // may notice the signed SHA-256 first: either way a digest refusal,
      // Fatal, and nothing stored.
      expect(error).toMatchObject({ failureClass: "Fatal", status: 400 })
      expect(S3Errors.DIGEST_CODES.has(error.code)).toBe(true)
      if (!signPayload) expect(error.code).toBe("BadDigest")
      expect(await Env.listKeys(bucket)).toEqual([])
    } finally {
      await proxy.close()
    }
  })

  it("bodies go up as UNSIGNED-PAYLOAD unless signPayload is set (single puts and parts); other requests are untouched", async () => {
    const bucket = await Env.newBucket("payloadsig")
    const proxy = await FaultProxy.start(Env.env().endpoint)
    try {
      const hashesOf = (signPayload: boolean) =>
        run(Effect.gen(function*() {
          proxy.hits.length = 0
          const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { signPayload, multipartThreshold: "5 MiB", partSize: "5 MiB" }, proxy.endpoint))
          const small = yield* sink.putObject(batchOf({ count: 100, recordBytes: 100, firstOffset: signPayload ? 1000 : 0 }))
          const big = yield* sink.putObject(bigBatch(6, signPayload ? 100_000 : 0))
          yield* sink.verify(small)
          yield* sink.verify(big)
          return proxy.hits.map((h) => [h.method, h.contentSha256] as const)
        }))
      const unsigned = await hashesOf(false)
      const bodies = (hits: ReadonlyArray<readonly [string, string | undefined]>) => hits.filter(([m]) => m === "PUT").map(([, h]) => h)
      // One single put, two parts.
      expect(bodies(unsigned)).toEqual(["UNSIGNED-PAYLOAD", "UNSIGNED-PAYLOAD", "UNSIGNED-PAYLOAD"])
      expect(unsigned.filter(([m]) => m !== "PUT").every(([, h]) => h !== "UNSIGNED-PAYLOAD")).toBe(true)
      const signed = await hashesOf(true)
      expect(bodies(signed)).toHaveLength(3)
      for (const h of bodies(signed)) expect(h).toMatch(/^[0-9a-f]{64}$/)
    } finally {
      await proxy.close()
    }
  })

  it.each([
    ["CRC64NVME", { ChecksumCRC64NVME: "AAAAAAAAAAA=" }],
    ["CRC32", { ChecksumCRC32: "AAAAAA==" }]
  ] as const)("a wrong additional checksum (%s) gets 400 BadDigest, classified Fatal", async (_, field) => {
    const bucket = await Env.newBucket("wrongsum")
    const c = Env.client()
    const error = await c.send(new PutObjectCommand({
      Bucket: bucket, Key: "x.rec", Body: new Uint8Array(100), ...field
    })).then(() => undefined, (e: unknown) => e)
    c.destroy()
    expect(S3Errors.classify(error, "object_upload")).toMatchObject({ failureClass: "Fatal", code: "BadDigest", status: 400 })
    expect(await Env.listKeys(bucket)).toEqual([])
  })

  it.each(["CRC32", "CRC64NVME", "CRC32C", "SHA256"] as const)(
    "verify compares the store's checksum with ours: same size, same algorithm, other bytes → ChecksumMismatch (%s)",
    async (checksumAlgorithm) => {
      const bucket = await Env.newBucket("mismatch")
      const batch = batchOf({ count: 100, recordBytes: 100 })
      const body = Batch.encodeBody(batch)
      // Same record count and sizes, other offsets: other bytes of exactly the same length.
      const otherBody = Batch.encodeBody(batchOf({ firstOffset: 5, count: 100, recordBytes: 100 }))
      expect(otherBody.byteLength).toBe(body.byteLength)
      expect(Buffer.from(otherBody).equals(Buffer.from(body))).toBe(false)
      const otherValue = await Checksums.objectChecksum(checksumAlgorithm, otherBody, undefined)
      const c = Env.client()
      try {
        const out = await run(Effect.gen(function*() {
          const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { checksumAlgorithm }))
          const receipt = yield* sink.putObject(batch)
          // The untouched object verifies: the failure below is caused by the overwrite alone.
          const before = yield* sink.verify(receipt)
          // Someone replaces it with the other bytes and their own valid checksum of
          // the same algorithm (the server checks it, so the store computed it too).
          yield* Effect.promise(() =>
            c.send(new PutObjectCommand({
              Bucket: bucket,
              Key: batch.key,
              Body: otherBody,
              ContentLength: otherBody.byteLength,
              [`Checksum${checksumAlgorithm}`]: otherValue
            }))
          )
          const head = yield* Effect.promise(() =>
            c.send(new HeadObjectCommand({ Bucket: bucket, Key: batch.key, ChecksumMode: "ENABLED" }))
          )
          const mismatch = yield* Effect.flip(sink.verify(receipt))
          return { receipt, before, head, mismatch }
        }))
        expect(out.before.checksum).toEqual(out.receipt.checksum)
        // Size and algorithm match; only the store-computed value differs.
        expect(out.head.ContentLength).toBe(out.receipt.objectBytes)
        expect(out.head[`Checksum${checksumAlgorithm}`]).toBe(otherValue)
        expect(otherValue).not.toBe(out.receipt.checksum.value)
        expect(out.mismatch).toMatchObject({
          _tag: "VerificationFailed",
          key: batch.key,
          reason: "ChecksumMismatch",
          expected: `${checksumAlgorithm}:${out.receipt.checksum.value}`,
          actual: `${checksumAlgorithm}:${otherValue}`
        })
      } finally {
        c.destroy()
      }
    }
  )

  it("verify does not compare ETags: the same bytes re-uploaded as multipart (new ETag) still verify", async () => {
    const bucket = await Env.newBucket("etag")
    const batch = bigBatch(11)
    const c = Env.client()
    try {
      const out = await run(Effect.gen(function*() {
        // First a single PUT (threshold above the body), then the same bytes as a
        // FULL_OBJECT multipart upload: another ETag ("…-3"), the same CRC32 (the default).
        const single = yield* S3Sink.make(Env.sinkConfig(bucket, { multipartThreshold: "64 MiB" }))
        const multi = yield* S3Sink.make(Env.sinkConfig(bucket, { multipartThreshold: "5 MiB", partSize: "5 MiB" }))
        const receipt = yield* single.putObject(batch)
        const head = () => c.send(new HeadObjectCommand({ Bucket: bucket, Key: batch.key, ChecksumMode: "ENABLED" }))
        const first = yield* Effect.promise(head)
        const again = yield* multi.putObject(batch)
        const second = yield* Effect.promise(head)
        const verified = yield* single.verify(receipt)
        return { receipt, again, first, second, verified }
      }))
      expect(out.second.ETag).not.toBe(out.first.ETag)
      expect(out.second.ETag).toMatch(/-3"?$/)
      expect(out.again.checksum).toEqual(out.receipt.checksum)
      expect(out.verified.checksum).toEqual(out.receipt.checksum)
    } finally {
      c.destroy()
    }
  })

  it("verify of a missing object fails with Missing", async () => {
    const bucket = await Env.newBucket("missing")
    const batch = batchOf({ count: 10, recordBytes: 10 })
    const missing = await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      const receipt = yield* sink.putObject(batch)
      return yield* Effect.flip(sink.verify({ ...receipt, key: "nope.rec" }))
    }))
    expect(missing).toMatchObject({ _tag: "VerificationFailed", key: "nope.rec", reason: "Missing" })
  })

  it("keyPrefix is applied in the bucket", async () => {
    const bucket = await Env.newBucket("prefix")
    const batch = batchOf({ count: 10, recordBytes: 10 })
    await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket, { keyPrefix: "tenant-a/" }))
      const receipt = yield* sink.putObject(batch)
      yield* sink.putManifest(Batch.manifestOf(batch, receipt.checksum))
      yield* sink.verify(receipt)
    }))
    expect(await Env.listKeys(bucket)).toEqual([`tenant-a/${batch.key}`, `tenant-a/${ObjectKey.manifestKey(batch.key)}`].sort())
  })
})
