/**
 * The S3 sink: a core `Sink` on `@aws-sdk/client-s3` v3.
 *
 * - **Put**: the batch body goes up with an additional checksum computed
 *   locally (`x-amz-checksum-<alg>`), so the store refuses bytes that changed in
 *   flight (`BadDigest`) and the manifest carries the same value. Bodies of at
 *   least `multipartThreshold` bytes use a multipart upload with parallel parts;
 *   any failure or interruption aborts it, so no upload is left orphaned.
 * - **Manifest**: the core `Manifest` as JSON at `ObjectKey.manifestKey(key)`.
 * - **Verify**: `HeadObject` with `ChecksumMode: ENABLED`; size and the
 *   store-computed checksum must equal the receipt (never the ETag). With
 *   `fullReadVerify` the object is also read back and its checksum recomputed.
 * - **Errors**: every SDK error is classified by {@link S3Errors.classify}; the
 *   client makes one attempt per request by default (`maxAttempts: 1`), so the
 *   policies see every throttle and own the retry schedule.
 *
 * @since 0.1.0
 */
import * as Http from "node:http"
import * as Https from "node:https"
import {
  AbortMultipartUploadCommand,
  ListMultipartUploadsCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import type { CompletedPart, HeadObjectCommandOutput } from "@aws-sdk/client-s3"
import { Batch, Failure, ObjectKey } from "@sluice/core"
import type { Config, Sink } from "@sluice/core"
import { Context, Effect, Layer, Schedule, Schema } from "effect"
import type { Scope } from "effect"
import * as Checksums from "./Checksums.ts"
import * as S3Config from "./S3Config.ts"
import type { ChecksumAlgorithm } from "./S3Config.ts"
import * as S3Errors from "./S3Errors.ts"

/**
 * An S3 sink: the core `Sink` plus what replication and repair need (reading an
 * object and its manifest back).
 *
 * @since 0.1.0
 */
export interface S3Sink extends Sink.Sink {
  readonly config: S3Config.S3Config
  readonly client: S3Client
  /** The key in the bucket of a batch key (`keyPrefix` applied). */
  readonly storageKey: (key: string) => string
  /** Reads an object body back (e.g. to repair another replica). */
  readonly readObject: (key: string) => Effect.Effect<Uint8Array, Failure.SinkFailure>
  /** Reads and decodes the manifest of an object. */
  readonly readManifest: (key: string) => Effect.Effect<Batch.Manifest, Failure.SinkFailure>
}

/**
 * The S3 sink as a service, provided by {@link layer}.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * const name = Effect.gen(function*() {
 *   const sink = yield* S3Sink.S3SinkService
 *   return sink.name
 * })
 * ```
 *
 * @since 0.1.0
 */
export class S3SinkService extends Context.Service<S3SinkService, S3Sink>()("@sluice/adapter-s3/S3Sink") {}

/**
 * Options that are not plain config.
 *
 * @since 0.1.0
 */
export interface MakeOptions {
  /** Use this client instead of building one (it is then not destroyed by the sink). */
  readonly client?: S3Client | undefined
  /** Sink name reported in signals (default `s3:<bucket>`). */
  readonly name?: string | undefined
}

/**
 * Builds the SDK client for a config: one attempt per request (by default), no
 * SDK-side checksums (the sink sends its own), keep-alive sockets.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Config, S3Sink } from "@sluice/adapter-s3"
 *
 * const client = Effect.map(S3Config.decode({ bucket: "archive", region: "eu-west-1" }), S3Sink.makeClient)
 * ```
 *
 * @since 0.1.0
 */
export const makeClient = (config: S3Config.S3Config): S3Client =>
  new S3Client({
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    maxAttempts: config.maxAttempts,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: {
      requestTimeout: config.requestTimeout > 0 ? config.requestTimeout : undefined,
      throwOnRequestTimeout: true,
      httpAgent: new Http.Agent({ keepAlive: true, maxSockets: 256 }),
      httpsAgent: new Https.Agent({ keepAlive: true, maxSockets: 256 })
    },
    ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
    ...(config.credentials !== undefined ? { credentials: config.credentials } : {})
  })

type ChecksumFields = {
  ChecksumCRC64NVME?: string | undefined
  ChecksumCRC32C?: string | undefined
  ChecksumSHA256?: string | undefined
}

const checksumField = (algorithm: ChecksumAlgorithm, value: string): ChecksumFields => {
  switch (algorithm) {
    case "CRC64NVME":
      return { ChecksumCRC64NVME: value }
    case "CRC32C":
      return { ChecksumCRC32C: value }
    case "SHA256":
      return { ChecksumSHA256: value }
  }
}

const readChecksum = (algorithm: ChecksumAlgorithm, output: ChecksumFields): string | undefined => {
  switch (algorithm) {
    case "CRC64NVME":
      return output.ChecksumCRC64NVME
    case "CRC32C":
      return output.ChecksumCRC32C
    case "SHA256":
      return output.ChecksumSHA256
  }
}

const isAlgorithm = Schema.is(S3Config.ChecksumAlgorithm)
const encodeManifest = Schema.encodeSync(Batch.Manifest)
const decodeManifest = Schema.decodeUnknownEffect(Schema.fromJsonString(Batch.Manifest))

/**
 * Builds an S3 sink from plain config data. The client it creates is destroyed
 * when the scope closes.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const sink = yield* S3Sink.make({
 *     bucket: "archive",
 *     endpoint: "http://127.0.0.1:19000",
 *     forcePathStyle: true,
 *     credentials: { accessKeyId: "sluice", secretAccessKey: "sluicesecret" }
 *   })
 *   return yield* Pipeline.run({
 *     source: Memory.source({ name: "orders", partitions: 2, records: 10_000, recordBytes: 100 }),
 *     sink
 *   })
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const make = (
  config: unknown,
  options: MakeOptions = {}
): Effect.Effect<S3Sink, Config.ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const cfg = yield* S3Config.decode(config)
    const client = options.client ?? (yield* Effect.acquireRelease(
      Effect.sync(() => makeClient(cfg)),
      (c) => Effect.sync(() => c.destroy())
    ))
    return fromClient(cfg, client, options.name)
  })

/**
 * A layer providing {@link S3SinkService}.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * const SinkLive = S3Sink.layer({ bucket: "archive", region: "eu-west-1" })
 * const program = Effect.gen(function*() {
 *   const sink = yield* S3Sink.S3SinkService
 *   return sink.name
 * }).pipe(Effect.provide(SinkLive))
 * ```
 *
 * @since 0.1.0
 */
export const layer = (config: unknown, options: MakeOptions = {}): Layer.Layer<S3SinkService, Config.ConfigError> =>
  Layer.effect(S3SinkService, make(config, options))

/**
 * Builds the sink on an existing client and decoded config (no scope: the
 * caller owns the client).
 *
 * **Example**
 *
 * ```ts
 * import { S3Client } from "@aws-sdk/client-s3"
 * import { Effect } from "effect"
 * import { S3Config, S3Sink } from "@sluice/adapter-s3"
 *
 * const shared = new S3Client({ region: "eu-west-1", maxAttempts: 1 })
 * const sink = Effect.map(S3Config.decode({ bucket: "archive" }), (cfg) => S3Sink.fromClient(cfg, shared))
 * ```
 *
 * @since 0.1.0
 */
export const fromClient = (cfg: S3Config.S3Config, client: S3Client, name?: string): S3Sink => {
  const bucket = cfg.bucket
  const algorithm = cfg.checksumAlgorithm
  const prefix = cfg.keyPrefix === "" ? "" : `${cfg.keyPrefix.replace(/\/+$/, "")}/`
  const storageKey = (key: string) => `${prefix}${key}`

  const send = <A>(stage: Failure.Stage, f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, Failure.SinkFailure> =>
    Effect.tryPromise({ try: (signal) => f(signal), catch: (e) => S3Errors.classify(e, stage) })

  const compute = <A>(f: () => Promise<A>): Effect.Effect<A> => Effect.promise(f)

  // --- put --------------------------------------------------------------------
  const putSingle = (key: string, body: Uint8Array): Effect.Effect<string, Failure.SinkFailure> =>
    Effect.gen(function*() {
      const value = yield* compute(() => Checksums.objectChecksum(algorithm, body, undefined))
      yield* send("object_upload", (abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body,
            ContentLength: body.byteLength,
            ContentType: "application/octet-stream",
            ...checksumField(algorithm, value)
          }),
          { abortSignal }
        ))
      return value
    })

  /** Whether the multipart upload is still listed by the server. */
  const stillListed = (key: string, uploadId: string) =>
    send("object_upload", (abortSignal) =>
      client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: key }), { abortSignal })).pipe(
        Effect.map((out) => (out.Uploads ?? []).some((u) => u.UploadId === uploadId))
      )

  // A part whose request was cut off client-side may still land on the server
  // after the abort and bring the upload back (S3 documents this race): abort,
  // then check the upload is gone, and abort again until it is. Failures of the
  // abort itself (a throttle, a reset) are retried the same way, then logged (a
  // bucket lifecycle rule for incomplete uploads is the backstop).
  const abort = (key: string, uploadId: string) =>
    send("object_upload", (abortSignal) =>
      client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }), { abortSignal })).pipe(
        Effect.catchIf((e) => e.code === "NoSuchUpload", () => Effect.void),
        Effect.andThen(Effect.sleep(50)),
        Effect.andThen(stillListed(key, uploadId)),
        Effect.flatMap((listed) =>
          listed
            ? Effect.fail(
              new Failure.SinkFailure({
                failureClass: "Transient",
                code: "UploadStillListed",
                status: undefined,
                stage: "object_upload",
                retryAfterMillis: undefined,
                message: `multipart upload ${uploadId} for ${key} is still listed after its abort`
              })
            )
            : Effect.void
        ),
        Effect.retry({ times: 6, schedule: Schedule.exponential(100), while: (e) => e.failureClass !== "Fatal" }),
        Effect.tapError((e) => Effect.logWarning(`s3: abort of multipart upload ${uploadId} for ${key} failed: ${e.message}`)),
        Effect.ignore
      )

  const putMultipart = (key: string, body: Uint8Array): Effect.Effect<string, Failure.SinkFailure> =>
    Effect.gen(function*() {
      const type = Checksums.multipartType(algorithm)
      const created = yield* send("object_upload", (abortSignal) =>
        client.send(
          new CreateMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            ContentType: "application/octet-stream",
            ChecksumAlgorithm: algorithm,
            ChecksumType: type
          }),
          { abortSignal }
        ))
      const uploadId = created.UploadId
      if (uploadId === undefined) {
        return yield* new Failure.SinkFailure({
          failureClass: "Transient",
          code: "NoUploadId",
          status: undefined,
          stage: "object_upload",
          retryAfterMillis: undefined,
          message: `CreateMultipartUpload for ${key} returned no UploadId`
        })
      }
      const ranges = Checksums.partRanges(body.byteLength, cfg.partSize)
      const uploadParts = Effect.forEach(
        ranges,
        (range, i) =>
          Effect.gen(function*() {
            const part = body.subarray(range.start, range.end)
            const raw = yield* compute(() => Checksums.digest(algorithm, part))
            const value = Checksums.toBase64(raw)
            const out = yield* send("object_upload", (abortSignal) =>
              client.send(
                new UploadPartCommand({
                  Bucket: bucket,
                  Key: key,
                  UploadId: uploadId,
                  PartNumber: i + 1,
                  Body: part,
                  ContentLength: part.byteLength,
                  ...checksumField(algorithm, value)
                }),
                { abortSignal }
              ))
            const completed: CompletedPart = { PartNumber: i + 1, ETag: out.ETag, ...checksumField(algorithm, value) }
            return { completed, raw }
          }),
        { concurrency: cfg.partConcurrency }
      )
      return yield* Effect.gen(function*() {
        const parts = yield* uploadParts
        const value = type === "FULL_OBJECT"
          ? yield* compute(() => Checksums.objectChecksum(algorithm, body, undefined))
          : yield* compute(() => Checksums.compositeOf(algorithm, parts.map((p) => p.raw)))
        yield* send("object_upload", (abortSignal) =>
          client.send(
            new CompleteMultipartUploadCommand({
              Bucket: bucket,
              Key: key,
              UploadId: uploadId,
              MultipartUpload: { Parts: parts.map((p) => p.completed) },
              ...(type === "FULL_OBJECT"
                ? { ChecksumType: "FULL_OBJECT", MpuObjectSize: body.byteLength, ...checksumField(algorithm, value) }
                : {})
            }),
            { abortSignal }
          ))
        return value
      }).pipe(Effect.onError(() => abort(key, uploadId)))
    })

  const putObject = (batch: Batch.SealedBatch): Effect.Effect<Sink.PutReceipt, Failure.SinkFailure> =>
    Effect.gen(function*() {
      const body = Batch.encodeBody(batch)
      const key = storageKey(batch.key)
      const value = body.byteLength >= cfg.multipartThreshold
        ? yield* putMultipart(key, body)
        : yield* putSingle(key, body)
      return { key: batch.key, objectBytes: body.byteLength, checksum: { algorithm, value } }
    })

  // --- manifest ---------------------------------------------------------------
  const putManifest = (manifest: Batch.Manifest): Effect.Effect<void, Failure.SinkFailure> =>
    Effect.gen(function*() {
      const body = new TextEncoder().encode(JSON.stringify(encodeManifest(manifest)))
      const value = yield* compute(() => Checksums.objectChecksum(algorithm, body, undefined))
      yield* send("manifest_upload", (abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: storageKey(ObjectKey.manifestKey(manifest.key)),
            Body: body,
            ContentLength: body.byteLength,
            ContentType: "application/json",
            ...checksumField(algorithm, value)
          }),
          { abortSignal }
        ))
    })

  // --- read -------------------------------------------------------------------
  const getBytes = (key: string): Effect.Effect<Uint8Array, Failure.SinkFailure> =>
    send("verify", async (abortSignal) => {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
      if (out.Body === undefined) return new Uint8Array(0)
      return out.Body.transformToByteArray()
    })

  const readObject = (key: string) => getBytes(storageKey(key))

  const readManifest = (key: string): Effect.Effect<Batch.Manifest, Failure.SinkFailure> =>
    getBytes(storageKey(ObjectKey.manifestKey(key))).pipe(
      Effect.flatMap((bytes) =>
        decodeManifest(new TextDecoder().decode(bytes)).pipe(
          Effect.mapError((issue) =>
            new Failure.SinkFailure({
              failureClass: "Fatal",
              code: "InvalidManifest",
              status: undefined,
              stage: "verify",
              retryAfterMillis: undefined,
              message: `manifest of ${key} does not decode: ${issue.message}`
            })
          )
        )
      )
    )

  // --- verify -----------------------------------------------------------------
  const head = (key: string, receipt: Sink.PutReceipt) =>
    send("verify", (abortSignal) =>
      client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: "ENABLED" }), { abortSignal })).pipe(
        Effect.catchIf(
          (e): e is Failure.SinkFailure => e.status === 404,
          () =>
            Effect.fail(
              new Failure.VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" })
            )
        )
      )

  const compare = (
    receipt: Sink.PutReceipt,
    alg: ChecksumAlgorithm,
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
          expected: `${alg}:${receipt.checksum.value}`,
          actual: actual === undefined ? `${alg}:(not reported)` : `${alg}:${actual}`
        })
      )
    }
    return Effect.void
  }

  const fullRead = (key: string, receipt: Sink.PutReceipt, alg: ChecksumAlgorithm, info: HeadObjectCommandOutput) =>
    Effect.gen(function*() {
      const body = yield* getBytes(key)
      const composite = info.ChecksumType === "COMPOSITE" || /-\d+$/.test(receipt.checksum.value)
      const value = yield* compute(() => Checksums.objectChecksum(alg, body, composite ? cfg.partSize : undefined))
      yield* compare(receipt, alg, body.byteLength, value)
    })

  const verify = (
    receipt: Sink.PutReceipt
  ): Effect.Effect<Sink.VerifiedReceipt, Failure.SinkFailure | Failure.VerificationFailed> =>
    Effect.gen(function*() {
      const key = storageKey(receipt.key)
      const alg = isAlgorithm(receipt.checksum.algorithm) ? receipt.checksum.algorithm : algorithm
      const info = yield* head(key, receipt)
      const actual = readChecksum(alg, info)
      yield* compare(receipt, alg, info.ContentLength, actual)
      if (cfg.fullReadVerify) yield* fullRead(key, receipt, alg, info)
      return { key: receipt.key, objectBytes: receipt.objectBytes, checksum: { algorithm: alg, value: actual ?? "" } }
    })

  return {
    name: name ?? `s3:${bucket}`,
    config: cfg,
    client,
    storageKey,
    putObject,
    putManifest,
    verify,
    readObject,
    readManifest
  }
}
