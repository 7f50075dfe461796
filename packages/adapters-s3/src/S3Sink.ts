/**
 * The S3 sink: a core `Sink` on `@aws-sdk/client-s3` v3. This module wires the
 * sink from its parts (each its own module under `internal/`):
 *
 * - **Put** (`internal/Put.ts`, `internal/Multipart.ts`): the batch body goes up
 *   with an additional checksum computed locally (`x-amz-checksum-<alg>`,
 *   `Checksums`), so the store refuses bytes that changed in flight
 *   (`BadDigest`) and the manifest carries the same value. Bodies of at least
 *   `multipartThreshold` bytes use a multipart upload with parallel parts; any
 *   failure or interruption aborts it, so no upload is left orphaned. The
 *   receipt says how long the checksums took ({@link PutReceipt}).
 * - **Manifest** (`internal/Manifest.ts`): the core `Manifest` as JSON at
 *   `ObjectKey.manifestKey(key)`.
 * - **Verify** (`internal/Verify.ts`): `HeadObject` with `ChecksumMode:
 *   ENABLED`; size and the store-computed checksum must equal the receipt
 *   (never the ETag). With `fullReadVerify` the object is also read back and
 *   its checksum recomputed.
 * - **Errors** (`internal/Request.ts`): every SDK error is classified by
 *   `S3Errors.classify`; the client makes one attempt per request by
 *   default (`maxAttempts: 1`), so the policies see every throttle and own the
 *   retry schedule.
 *
 * @since 0.1.0
 */
import * as Http from "node:http"
import * as Https from "node:https"
import { S3Client } from "@aws-sdk/client-s3"
import type { Batch, Config, Failure, Sink } from "@sluice/core"
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as Manifest from "./internal/Manifest.ts"
import * as Put from "./internal/Put.ts"
import * as Request from "./internal/Request.ts"
import * as Verify from "./internal/Verify.ts"
import * as S3Config from "./S3Config.ts"

/**
 * The receipt of an S3 upload: the core `PutReceipt` plus the local time its
 * checksums took.
 *
 * **Details**
 *
 * The pipeline times `putObject` as a whole for its `object_upload` latency
 * sample, and the checksum is computed inside that call, on the event loop:
 * `checksumMillis` is the part of that latency that is local CPU, not the
 * store, and the core's limiter takes it out of the sample. It is read from
 * the Effect `Clock`, as the pipeline's samples are.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Sink } from "@sluice/adapter-s3"
 * import type { Batch } from "@sluice/core"
 *
 * declare const sink: S3Sink.S3Sink
 * declare const batch: Batch.SealedBatch
 * const local = Effect.map(sink.putObject(batch), (receipt) => receipt.checksumMillis)
 * ```
 *
 * @since 0.2.0
 */
export interface PutReceipt extends Sink.PutReceipt {
  /** Milliseconds (fractional) spent computing checksums inside `putObject`. */
  readonly checksumMillis: number
}

/**
 * An S3 sink: the core `Sink` plus what replication and repair need (reading an
 * object and its manifest back).
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * declare const sink: S3Sink.S3Sink
 * const manifest = sink.readManifest("orders/0/00000000000000000000-00000000000000000999.rec")
 * ```
 *
 * @since 0.1.0
 */
export interface S3Sink extends Sink.Sink {
  /** The core `putObject`, its receipt carrying the checksum time ({@link PutReceipt}). */
  readonly putObject: (batch: Batch.SealedBatch) => Effect.Effect<PutReceipt, Failure.SinkFailure>
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
 * **Example**
 *
 * ```ts
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * const sink = S3Sink.make({ bucket: "archive" }, { name: "archive-eu" })
 * ```
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
 * SDK-side checksums (the sink sends its own), keep-alive sockets, and the
 * HTTPS agent trusting `tls.ca` when set (else Node's trust store).
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
      httpsAgent: new Https.Agent({ keepAlive: true, maxSockets: 256, ...(config.tls?.ca !== undefined ? { ca: config.tls.ca } : {}) })
    },
    ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
    ...(config.credentials !== undefined ? { credentials: config.credentials } : {})
  })

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
  config: S3Config.S3ConfigInput,
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
export const layer = (config: S3Config.S3ConfigInput, options: MakeOptions = {}): Layer.Layer<S3SinkService, Config.ConfigError> =>
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
  const request = Request.make(cfg, client)
  return {
    name: name ?? `s3:${cfg.bucket}`,
    config: cfg,
    client,
    storageKey: request.storageKey,
    putObject: (batch) => Put.putObject(request, batch),
    putManifest: (manifest) => Manifest.put(request, manifest),
    verify: (receipt) => Verify.verify(request, receipt),
    readObject: (key) => Request.getBytes(request, request.storageKey(key), "verify"),
    readManifest: (key) => Manifest.read(request, key),
    // A request has sent the body when `putObject` succeeds; a failed or interrupted
    // one is aborted (`abortSignal`). The pipeline recycles a body only after a success.
    keepsBodies: false
  }
}
