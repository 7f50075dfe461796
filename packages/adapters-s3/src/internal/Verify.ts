/**
 * Proving an object landed intact: `HeadObject` with `ChecksumMode: ENABLED`,
 * comparing the size and the store-computed checksum with the receipt (never
 * the ETag); with `fullReadVerify`, also reading the object back and
 * recomputing its checksum.
 *
 * @internal
 */
import { HeadObjectCommand } from "@aws-sdk/client-s3"
import type { HeadObjectCommandOutput } from "@aws-sdk/client-s3"
import { Failure } from "@sluice/core"
import type { Sink } from "@sluice/core"
import { Effect, Schema } from "effect"
import * as Checksums from "../Checksums.ts"
import * as S3Config from "../S3Config.ts"
import type { ChecksumAlgorithm } from "../S3Config.ts"
import type { Request } from "./Request.ts"
import { compute, getBytes, send } from "./Request.ts"

const isAlgorithm = Schema.is(S3Config.ChecksumAlgorithm)

/**
 * Compares what the store reports (`size`, checksum `actual` of `algorithm`)
 * with the receipt: size first, then the checksum.
 */
export const compare = (
  receipt: Sink.PutReceipt,
  algorithm: ChecksumAlgorithm,
  size: number | undefined,
  actual: string | undefined
): Effect.Effect<void, Failure.VerificationFailed> => {
  if (size !== receipt.objectBytes) {
    return Effect.fail(
      new Failure.VerificationFailed({
        key: receipt.key,
        reason: "SizeMismatch",
        expected: String(receipt.objectBytes),
        actual: String(size)
      })
    )
  }
  if (actual !== receipt.checksum.value) {
    return Effect.fail(
      new Failure.VerificationFailed({
        key: receipt.key,
        reason: "ChecksumMismatch",
        expected: `${algorithm}:${receipt.checksum.value}`,
        actual: actual === undefined ? `${algorithm}:(not reported)` : `${algorithm}:${actual}`
      })
    )
  }
  return Effect.void
}

/** `HeadObject` with the checksum; a 404 is a `Missing` verification failure. */
const head = (request: Request, key: string, receipt: Sink.PutReceipt) =>
  send("verify", (abortSignal) =>
    request.client.send(new HeadObjectCommand({ Bucket: request.bucket, Key: key, ChecksumMode: "ENABLED" }), {
      abortSignal
    })).pipe(
      Effect.catchIf(
        (e): e is Failure.SinkFailure => e.status === 404,
        () =>
          Effect.fail(
            new Failure.VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" })
          )
      )
    )

/** Reads the object back and recomputes its checksum (composite when the store says so). */
const fullRead = (
  request: Request,
  key: string,
  receipt: Sink.PutReceipt,
  algorithm: ChecksumAlgorithm,
  info: HeadObjectCommandOutput
) =>
  Effect.gen(function*() {
    const body = yield* getBytes(request, key, "verify")
    const composite = info.ChecksumType === "COMPOSITE" || /-\d+$/.test(receipt.checksum.value)
    const recomputed = yield* compute(() =>
      Checksums.objectChecksum(algorithm, body, composite ? request.config.partSize : undefined)
    )
    yield* compare(receipt, algorithm, body.byteLength, recomputed.value)
  })

/** Verifies the object of `receipt`; the store-reported checksum. */
export const verify = (
  request: Request,
  receipt: Sink.PutReceipt
): Effect.Effect<Sink.VerifiedReceipt, Failure.SinkFailure | Failure.VerificationFailed> =>
  Effect.gen(function*() {
    const key = request.storageKey(receipt.key)
    const algorithm = isAlgorithm(receipt.checksum.algorithm) ? receipt.checksum.algorithm : request.config.checksumAlgorithm
    const info = yield* head(request, key, receipt)
    const actual = Checksums.reported(algorithm, info)
    yield* compare(receipt, algorithm, info.ContentLength, actual)
    if (request.config.fullReadVerify) yield* fullRead(request, key, receipt, algorithm, info)
    return { key: receipt.key, objectBytes: receipt.objectBytes, checksum: { algorithm, value: actual ?? "" } }
  })
