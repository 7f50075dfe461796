/**
 * The sink's parts that hold logic of their own, without a server: checksum
 * fields, the put path's choice, the manifest's stored form, and verify's
 * comparison (size first, then the store's checksum; never the ETag).
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Batch } from "@sluice/core"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Checksums from "../src/Checksums.ts"
import * as Manifest from "../src/internal/Manifest.ts"
import * as Put from "../src/internal/Put.ts"
import * as Request from "../src/internal/Request.ts"
import * as Verify from "../src/internal/Verify.ts"
import * as S3Config from "../src/S3Config.ts"
import { batchOf } from "./support/Batches.ts"

const config = (input: Record<string, unknown> = {}) => Effect.runSync(S3Config.decode({ bucket: "archive", ...input }))

describe("Checksums fields", () => {
  it.each(["CRC32", "CRC64NVME", "CRC32C", "SHA256"] as const)("%s: the request field is the one the response reports", (algorithm) => {
    const fields = Checksums.requestFields(algorithm, "v=")
    expect(Object.keys(fields)).toEqual([`Checksum${algorithm}`])
    expect(Checksums.reported(algorithm, fields)).toBe("v=")
    expect(Checksums.reported(algorithm === "SHA256" ? "CRC32C" : "SHA256", fields)).toBeUndefined()
  })
})

describe("Request", () => {
  it("applies keyPrefix once, whatever its trailing slashes", () => {
    const client = new S3Client({ region: "us-east-1" })
    expect(Request.make(config({ keyPrefix: "prod//" }), client).storageKey("a/b.rec")).toBe("prod/a/b.rec")
    expect(Request.make(config(), client).storageKey("a/b.rec")).toBe("a/b.rec")
    client.destroy()
  })
})

describe("Put", () => {
  it("goes multipart at the threshold, not below", () => {
    const client = new S3Client({ region: "us-east-1" })
    const request = Request.make(config({ multipartThreshold: 100 }), client)
    expect(Put.isMultipart(request, 99)).toBe(false)
    expect(Put.isMultipart(request, 100)).toBe(true)
    client.destroy()
  })
})

describe("Manifest", () => {
  const batch = batchOf({ count: 3, recordBytes: 10 })
  const manifest = Batch.manifestOf(batch, { algorithm: "CRC64NVME", value: "abc=" })

  it("round-trips through its stored bytes", () => {
    expect(Effect.runSync(Manifest.decode(batch.key, Manifest.encode(manifest)))).toEqual(manifest)
  })

  it("bytes that are not a manifest fail Fatal InvalidManifest, naming the key", () => {
    const exit = Effect.runSyncExit(Manifest.decode(batch.key, new TextEncoder().encode("{\"key\":1}")))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Effect.runSync(Effect.flip(Manifest.decode(batch.key, new TextEncoder().encode("not json"))))
    expect(error).toMatchObject({ failureClass: "Fatal", code: "InvalidManifest", stage: "verify" })
    expect(error.message).toContain(batch.key)
  })
})

describe("Verify.compare", () => {
  const receipt = { key: "k", objectBytes: 10, checksum: { algorithm: "CRC64NVME", value: "abc=" } }
  const run = (size: number | undefined, actual: string | undefined) =>
    Effect.runSync(Effect.result(Verify.compare(receipt, "CRC64NVME", size, actual)))

  it("passes when size and checksum match", () => {
    expect(run(10, "abc=")._tag).toBe("Success")
  })

  it("checks the size first", () => {
    expect(run(9, "other")).toMatchObject({ failure: { reason: "SizeMismatch", expected: "10", actual: "9" } })
  })

  it("a different or unreported checksum is a ChecksumMismatch naming the algorithm", () => {
    expect(run(10, "xyz=")).toMatchObject({ failure: { reason: "ChecksumMismatch", actual: "CRC64NVME:xyz=" } })
    expect(run(10, undefined)).toMatchObject({ failure: { reason: "ChecksumMismatch", actual: "CRC64NVME:(not reported)" } })
  })
})
