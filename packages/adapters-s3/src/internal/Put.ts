/**
 * Putting a batch's object: encode the body once, then a single `PutObject`
 * below `multipartThreshold` or a multipart upload at or above it, always with
 * the locally computed additional checksum, which the receipt carries along
 * with the time spent computing it.
 *
 * @internal
 */
import { PutObjectCommand } from "@aws-sdk/client-s3"
import { Batch } from "@sluice/core"
import type { Failure, Sink } from "@sluice/core"
import { Effect } from "effect"
import * as Checksums from "../Checksums.ts"
import * as Multipart from "./Multipart.ts"
import type { Request, Uploaded } from "./Request.ts"
import { bodyUpload, compute, send } from "./Request.ts"

/**
 * One `PutObject` of `body` at bucket key `key` with the additional checksum;
 * the checksum value sent and the time spent computing it.
 */
export const putSingle = (
  request: Request,
  key: string,
  body: Uint8Array,
  contentType: string,
  stage: Failure.Stage
): Effect.Effect<Uploaded, Failure.SinkFailure> =>
  Effect.gen(function*() {
    const algorithm = request.config.checksumAlgorithm
    const checksum = yield* compute(() => Checksums.objectChecksum(algorithm, body, undefined))
    yield* send(stage, (abortSignal) =>
      request.client.send(
        bodyUpload(
          request,
          new PutObjectCommand({
            Bucket: request.bucket,
            Key: key,
            Body: body,
            ContentLength: body.byteLength,
            ContentType: contentType,
            ...Checksums.requestFields(algorithm, checksum.value)
          })
        ),
        { abortSignal }
      ))
    return { value: checksum.value, checksumMillis: checksum.millis }
  })

/** Whether a body of `bytes` goes up as a multipart upload. */
export const isMultipart = (request: Request, bytes: number): boolean => bytes >= request.config.multipartThreshold

/**
 * Stores the batch's body under its key; the receipt with the checksum S3 will
 * report and the local time spent computing checksums (see
 * `S3Sink.PutReceipt`).
 */
export const putObject = (
  request: Request,
  batch: Batch.SealedBatch
): Effect.Effect<Sink.PutReceipt & { readonly checksumMillis: number }, Failure.SinkFailure> =>
  Effect.gen(function*() {
    const body = Batch.encodeBody(batch)
    const key = request.storageKey(batch.key)
    const uploaded = isMultipart(request, body.byteLength)
      ? yield* Multipart.put(request, key, body)
      : yield* putSingle(request, key, body, "application/octet-stream", "object_upload")
    return {
      key: batch.key,
      objectBytes: body.byteLength,
      checksum: { algorithm: request.config.checksumAlgorithm, value: uploaded.value },
      checksumMillis: uploaded.checksumMillis
    }
  })
