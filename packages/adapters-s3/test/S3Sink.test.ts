import { GetObjectCommand, ListMultipartUploadsCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { Batch, ObjectKey } from "@sluice/core"
import { Effect, Schema } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import * as S3Config from "../src/S3Config.ts"
import * as S3Errors from "../src/S3Errors.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf, bigBatch } from "./support/Batches.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

const run = <A, E>(effect: Effect.Effect<A, E, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

beforeAll(Env.requireServer)

describe("S3Config", () => {
  it("fills defaults", async () => {
    const cfg = await Effect.runPromise(S3Config.decode({ bucket: "archive" }))
    expect(cfg).toMatchObject({
      region: "us-east-1",
      checksumAlgorithm: "CRC64NVME",
      multipartThreshold: 16 * 1024 * 1024,
      partSize: 8 * 1024 * 1024,
      partConcurrency: 4,
      maxAttempts: 1,
      fullReadVerify: false,
      forcePathStyle: false
    })
  })
  it.each([
    [{ bucket: "archive", checksumAlgorithm: "MD5" }, "checksumAlgorithm"],
    [{ bucket: "archive", partSize: "1 MiB" }, "partSize"],
    [{ bucket: "archive", partConcurrency: 0 }, "partConcurrency"],
    [{ bucket: "ab" }, "bucket"],
    [{ bucket: "archive", endpoint: "localhost:9000" }, "endpoint"],
    [{ bucket: "archive", credentials: { accessKeyId: "x" } }, "secretAccessKey"],
    [{ bucket: "archive", retries: 3 }, "retries"]
  ])("rejects %j naming the field", async (input, field) => {
    const error = await Effect.runPromise(Effect.flip(S3Config.decode(input)))
    expect(error._tag).toBe("ConfigError")
    expect(error.message).toContain(field)
  })
})

describe("S3Sink against the real server", () => {
  it.each(["CRC64NVME", "CRC32C", "SHA256"] as const)("put → manifest → verify round trip (%s)", async (checksumAlgorithm) => {
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

  it.each(["CRC64NVME", "CRC32C", "SHA256"] as const)("multipart upload above the threshold verifies (%s)", async (checksumAlgorithm) => {
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

  it("a body corrupted in flight is refused (Fatal, nothing stored)", async () => {
    const bucket = await Env.newBucket("baddigest")
    const proxy = await FaultProxy.start(Env.env().endpoint, [{ method: "PUT", fault: FaultProxy.corrupt }])
    try {
      const error = await run(Effect.gen(function*() {
        const sink = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
        return yield* Effect.flip(sink.putObject(batchOf({ count: 100, recordBytes: 100 })))
      }))
      // Over plain http the SDK also signs the payload hash, so the server may
      // notice the signed SHA-256 before the additional checksum: either way a
      // digest refusal, Fatal, and nothing stored.
      expect(error).toMatchObject({ failureClass: "Fatal", status: 400 })
      expect(S3Errors.DIGEST_CODES.has(error.code)).toBe(true)
      expect(await Env.listKeys(bucket)).toEqual([])
    } finally {
      await proxy.close()
    }
  })

  it("a wrong additional checksum gets 400 BadDigest, classified Fatal", async () => {
    const bucket = await Env.newBucket("wrongsum")
    const c = Env.client()
    const error = await c.send(new PutObjectCommand({
      Bucket: bucket, Key: "x.rec", Body: new Uint8Array(100), ChecksumCRC64NVME: "AAAAAAAAAAA="
    })).then(() => undefined, (e: unknown) => e)
    c.destroy()
    expect(S3Errors.classify(error, "object_upload")).toMatchObject({ failureClass: "Fatal", code: "BadDigest", status: 400 })
    expect(await Env.listKeys(bucket)).toEqual([])
  })

  it("verify catches an object that differs from the receipt; a missing one too", async () => {
    const bucket = await Env.newBucket("mismatch")
    const batch = batchOf({ count: 100, recordBytes: 100 })
    const other = batchOf({ firstOffset: 5, count: 100, recordBytes: 100 })
    const c = Env.client()
    const errors = await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      const receipt = yield* sink.putObject(batch)
      // Someone replaces the object with same-size, different bytes.
      yield* Effect.promise(() => c.send(new PutObjectCommand({ Bucket: bucket, Key: batch.key, Body: Batch.encodeBody(other) })))
      const mismatch = yield* Effect.flip(sink.verify(receipt))
      const missing = yield* Effect.flip(sink.verify({ ...receipt, key: "nope.rec" }))
      return { mismatch, missing }
    }))
    c.destroy()
    expect(errors.mismatch).toMatchObject({ _tag: "VerificationFailed", reason: "ChecksumMismatch" })
    expect(errors.missing).toMatchObject({ _tag: "VerificationFailed", reason: "Missing" })
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
