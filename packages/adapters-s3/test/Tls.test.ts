/**
 * The S3 sink over HTTPS with a private CA, on the real server
 * (`scripts/s3-tls.sh`, started on demand: versitygw with a certificate for
 * 127.0.0.1 signed by a fresh CA no trust store knows). With the CA in the
 * sink's `tls.ca` it puts and verifies an object; without it every request
 * fails `Fatal` with the certificate error's code, and a pipeline over it ends
 * at once instead of retrying.
 */
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Batch, Failure, Fixed, Memory, ObjectKey, Pipeline } from "@sluice/core"
import { Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import * as Https from "node:https"
import { beforeAll, describe, expect, it } from "vitest"
import * as LazyService from "../../../scripts/lib/LazyService.ts"
import * as S3Errors from "../src/S3Errors.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf } from "./support/Batches.ts"

let env: Readonly<Record<string, string>> = {}
const need = (name: string): string => {
  const value = env[name]
  if (value === undefined || value === "") throw new Error(`${name} missing from .services/s3-tls.env`)
  return value
}

beforeAll(() => {
  env = LazyService.up("s3-tls")
})

const ca = () => readFileSync(need("SLUICE_S3_TLS_CA"), "utf8")
const credentials = () => ({ accessKeyId: need("SLUICE_S3_TLS_ACCESS_KEY"), secretAccessKey: need("SLUICE_S3_TLS_SECRET_KEY") })
const sinkConfig = (bucket: string, tls: { readonly ca?: string } | undefined) => ({
  bucket,
  endpoint: need("SLUICE_S3_TLS_ENDPOINT"),
  region: need("SLUICE_S3_TLS_REGION"),
  forcePathStyle: true,
  credentials: credentials(),
  ...(tls === undefined ? {} : { tls })
})

/** The test's own client, trusting the CA, for set-up and listing. */
const trustingClient = () =>
  new S3Client({
    endpoint: need("SLUICE_S3_TLS_ENDPOINT"),
    region: need("SLUICE_S3_TLS_REGION"),
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: credentials(),
    requestHandler: { httpsAgent: new Https.Agent({ ca: ca() }) }
  })

let seq = 0
const newBucket = async (label: string): Promise<string> => {
  const bucket = `tls-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`
  const c = trustingClient()
  try {
    await c.send(new CreateBucketCommand({ Bucket: bucket }))
  } finally {
    c.destroy()
  }
  return bucket
}

const keysOf = async (bucket: string): Promise<Array<string>> => {
  const c = trustingClient()
  try {
    const out = await c.send(new ListObjectsV2Command({ Bucket: bucket }))
    return (out.Contents ?? []).map((o) => o.Key ?? "").sort()
  } finally {
    c.destroy()
  }
}

describe("S3Sink over HTTPS with a private CA", () => {
  it("with the CA in tls.ca: puts, writes the manifest and verifies an object", async () => {
    const bucket = await newBucket("ok")
    const batch = batchOf({ count: 200, recordBytes: 100 })
    const { receipt, verified } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(sinkConfig(bucket, { ca: ca() }))
      const receipt = yield* sink.putObject(batch)
      yield* sink.putManifest(Batch.manifestOf(batch, receipt.checksum))
      const verified = yield* sink.verify(receipt)
      return { receipt, verified }
    })))
    expect(need("SLUICE_S3_TLS_ENDPOINT")).toMatch(/^https:\/\/127\.0\.0\.1:/)
    expect(verified.checksum).toEqual(receipt.checksum)
    expect(await keysOf(bucket)).toEqual([batch.key, ObjectKey.manifestKey(batch.key)].sort())
  })

  it("without the CA: the put fails Fatal with the certificate error's code (untrusted), nothing stored", async () => {
    const bucket = await newBucket("untrusted")
    const failure = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(sinkConfig(bucket, undefined))
      return yield* Effect.flip(sink.putObject(batchOf({ count: 10, recordBytes: 100 })))
    })))
    expect(failure).toBeInstanceOf(Failure.SinkFailure)
    expect(failure.failureClass).toBe("Fatal")
    expect(S3Errors.UNTRUSTED_CERTIFICATE_CODES.has(failure.code)).toBe(true)
    expect(S3Errors.isUntrustedCertificate(failure)).toBe(true)
    expect(failure.message).toMatch(/certificate is not trusted; for a private CA, give it in tls\.ca/)
    expect(await keysOf(bucket)).toEqual([])
  })

  it("without the CA: a pipeline ends within seconds with that failure (not retried as a store fault)", async () => {
    const bucket = await newBucket("pipeline")
    const started = Date.now()
    const exit = await Effect.runPromiseExit(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(sinkConfig(bucket, undefined))
      return yield* Pipeline.run({
        source: Memory.source({ name: "orders", partitions: 2, records: 1_000, recordBytes: 100 }),
        sink,
        config: { batch: { records: 100 } },
        policies: Fixed.layer({ concurrency: 2 })
      })
    })).pipe(Effect.timeout("30 seconds")))
    const elapsed = Date.now() - started
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
    // The pipeline's BatchFailed: the class, the code and the attempt count of the batch that failed.
    expect(error).toMatchObject({ _tag: "BatchFailed", failureClass: "Fatal", stage: "object_upload", attempts: 1 })
    const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
    expect(S3Errors.UNTRUSTED_CERTIFICATE_CODES.has(code)).toBe(true)
    expect(elapsed).toBeLessThan(5_000)
    expect(await keysOf(bucket)).toEqual([])
  })
})
