/** Config decoding (no server needed: these run even when the S3 server is down). */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import * as S3Config from "../src/S3Config.ts"
import * as S3Sink from "../src/S3Sink.ts"

describe("S3Config", () => {
  it("a misspelled key fails tsc (the config is typed by its schema's encoded form)", () => {
    // @ts-expect-error — "chekcsumAlgorithm" is not an S3 sink config key
    const typo = () => S3Sink.make({ bucket: "b", chekcsumAlgorithm: "CRC32C" })
    expect(typeof typo).toBe("function")
  })

  it("fills defaults", async () => {
    const cfg = await Effect.runPromise(S3Config.decode({ bucket: "archive" }))
    expect(cfg).toMatchObject({
      region: "us-east-1",
      checksumAlgorithm: "CRC32",
      multipartThreshold: 16 * 1024 * 1024,
      partSize: 8 * 1024 * 1024,
      partConcurrency: 4,
      maxAttempts: 1,
      fullReadVerify: false,
      forcePathStyle: false
    })
  })
  it.each(["CRC32", "CRC64NVME", "CRC32C", "SHA256"] as const)("accepts checksumAlgorithm %s", async (checksumAlgorithm) => {
    const cfg = await Effect.runPromise(S3Config.decode({ bucket: "archive", checksumAlgorithm }))
    expect(cfg.checksumAlgorithm).toBe(checksumAlgorithm)
  })

  it.each([
    [{ bucket: "archive", checksumAlgorithm: "MD5" }, "checksumAlgorithm"],
    [{ bucket: "archive", partSize: "1 MiB" }, "partSize"],
    [{ bucket: "archive", partConcurrency: 0 }, "partConcurrency"],
    [{ bucket: "ab" }, "bucket"],
    [{ bucket: "archive", endpoint: "localhost:9000" }, "endpoint"],
    [{ bucket: "archive", credentials: { accessKeyId: "x" } }, "secretAccessKey"],
    [{ bucket: "archive", retries: 3 }, "retries"],
    [{ bucket: "archive", tls: { ca: "/path/to/ca.pem" } }, "ca"]
  ])("rejects %j naming the field", async (input, field) => {
    const error = await Effect.runPromise(Effect.flip(S3Config.decode(input)))
    expect(error._tag).toBe("ConfigError")
    expect(error.message).toContain(field)
  })
})
