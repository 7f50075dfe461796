/**
 * Multipart upload of one object body: create, upload the parts in parallel
 * (each with its own checksum), complete with the object checksum, and abort
 * on any failure or interruption so no incomplete upload is left behind.
 *
 * Each byte is hashed once: a CRC object checksum (`FULL_OBJECT`) is combined
 * from the part CRCs (`Checksums.fullObjectOf`), a SHA-256 one (`COMPOSITE`)
 * hashes only the part digests.
 *
 * @internal
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import type { CompletedPart } from "@aws-sdk/client-s3"
import { Failure } from "@sluice/core"
import { Effect, Schedule } from "effect"
import * as Checksums from "../Checksums.ts"
import type { Request, Uploaded } from "./Request.ts"
import { bodyUpload, compute, send } from "./Request.ts"

const STAGE = "object_upload" as const

/** Attempts of an abort (with its listing check) before it is logged and left to a lifecycle rule. */
export const ABORT_ATTEMPTS = 7

const transient = (code: string, message: string) =>
  new Failure.SinkFailure({ failureClass: "Transient", code, status: undefined, stage: STAGE, retryAfterMillis: undefined, message })

/** Starts the upload; its id. */
const create = (request: Request, key: string): Effect.Effect<string, Failure.SinkFailure> =>
  send(STAGE, (abortSignal) =>
    request.client.send(
      new CreateMultipartUploadCommand({
        Bucket: request.bucket,
        Key: key,
        ContentType: "application/octet-stream",
        ChecksumAlgorithm: request.config.checksumAlgorithm,
        ChecksumType: Checksums.multipartType(request.config.checksumAlgorithm)
      }),
      { abortSignal }
    )).pipe(
      Effect.flatMap((created) =>
        created.UploadId === undefined
          ? Effect.fail(transient("NoUploadId", `CreateMultipartUpload for ${key} returned no UploadId`))
          : Effect.succeed(created.UploadId)
      )
    )

interface UploadedPart extends Checksums.PartDigest {
  readonly completed: CompletedPart
  /** Milliseconds spent computing the part's checksum. */
  readonly checksumMillis: number
}

/** Uploads every part, `partConcurrency` at once; each part is a view of `body` (no copy). */
const uploadParts = (request: Request, key: string, uploadId: string, body: Uint8Array) => {
  const algorithm = request.config.checksumAlgorithm
  return Effect.forEach(
    Checksums.partRanges(body.byteLength, request.config.partSize),
    (range, i): Effect.Effect<UploadedPart, Failure.SinkFailure> =>
      Effect.gen(function*() {
        const part = body.subarray(range.start, range.end)
        const { value: raw, millis } = yield* compute(() => Checksums.digest(algorithm, part))
        const fields = Checksums.requestFields(algorithm, Checksums.toBase64(raw))
        const out = yield* send(STAGE, (abortSignal) =>
          request.client.send(
            bodyUpload(
              request,
              new UploadPartCommand({
                Bucket: request.bucket,
                Key: key,
                UploadId: uploadId,
                PartNumber: i + 1,
                Body: part,
                ContentLength: part.byteLength,
                ...fields
              })
            ),
            { abortSignal }
          ))
        return {
          completed: { PartNumber: i + 1, ETag: out.ETag, ...fields },
          raw,
          bytes: part.byteLength,
          checksumMillis: millis
        }
      }),
    { concurrency: request.config.partConcurrency }
  )
}

/**
 * Completes the upload; the object checksum S3 will report (whole-object,
 * combined from the part CRCs, or composite) and the milliseconds spent on
 * checksums for the whole upload.
 */
const complete = (
  request: Request,
  key: string,
  uploadId: string,
  body: Uint8Array,
  parts: ReadonlyArray<UploadedPart>
): Effect.Effect<Uploaded, Failure.SinkFailure> =>
  Effect.gen(function*() {
    const algorithm = request.config.checksumAlgorithm
    const fullObject = Checksums.multipartType(algorithm) === "FULL_OBJECT"
    const object = Checksums.isCrc(algorithm)
      ? yield* compute(() => Promise.resolve(Checksums.fullObjectOf(algorithm, parts)))
      : yield* compute(() => Checksums.compositeOf(algorithm, parts.map((p) => p.raw)))
    const value = object.value
    yield* send(STAGE, (abortSignal) =>
      request.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: request.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => p.completed) },
          ...(fullObject
            ? { ChecksumType: "FULL_OBJECT", MpuObjectSize: body.byteLength, ...Checksums.requestFields(algorithm, value) }
            : {})
        }),
        { abortSignal }
      ))
    const partMillis = parts.reduce((sum, p) => sum + p.checksumMillis, 0)
    return { value, checksumMillis: partMillis + object.millis }
  })

/** Whether the multipart upload is still listed by the server. */
const stillListed = (request: Request, key: string, uploadId: string) =>
  send(STAGE, (abortSignal) =>
    request.client.send(new ListMultipartUploadsCommand({ Bucket: request.bucket, Prefix: key }), { abortSignal })).pipe(
      Effect.map((out) => (out.Uploads ?? []).some((u) => u.UploadId === uploadId))
    )

/**
 * Aborts an upload and makes sure it is gone.
 *
 * A part whose request was cut off client-side may still land on the server
 * after the abort and bring the upload back (S3 documents this race): abort,
 * then check the upload is no longer listed, and abort again until it is gone.
 * Failures of the abort itself (a throttle, a reset) are retried the same way
 * ({@link ABORT_ATTEMPTS} in all), then logged (a bucket lifecycle rule for
 * incomplete uploads is the backstop). Never fails.
 */
export const abort = (request: Request, key: string, uploadId: string): Effect.Effect<void> =>
  send(STAGE, (abortSignal) =>
    request.client.send(new AbortMultipartUploadCommand({ Bucket: request.bucket, Key: key, UploadId: uploadId }), {
      abortSignal
    })).pipe(
      Effect.catchIf((e) => e.code === "NoSuchUpload", () => Effect.void),
      Effect.andThen(Effect.sleep(50)),
      Effect.andThen(stillListed(request, key, uploadId)),
      Effect.flatMap((listed) =>
        listed
          ? Effect.fail(transient("UploadStillListed", `multipart upload ${uploadId} for ${key} is still listed after its abort`))
          : Effect.void
      ),
      Effect.retry({ times: ABORT_ATTEMPTS - 1, schedule: Schedule.exponential(100), while: (e) => e.failureClass !== "Fatal" }),
      Effect.tapError((e) => Effect.logWarning(`s3: abort of multipart upload ${uploadId} for ${key} failed: ${e.message}`)),
      Effect.ignore
    )

/**
 * Uploads `body` to bucket key `key` as a multipart upload; the object
 * checksum S3 will report for it and the time spent on checksums. Any failure
 * or interruption after the upload was created aborts it.
 */
export const put = (request: Request, key: string, body: Uint8Array): Effect.Effect<Uploaded, Failure.SinkFailure> =>
  Effect.flatMap(create(request, key), (uploadId) =>
    uploadParts(request, key, uploadId, body).pipe(
      Effect.flatMap((parts) => complete(request, key, uploadId, body, parts)),
      Effect.onError(() => abort(request, key, uploadId))
    ))
