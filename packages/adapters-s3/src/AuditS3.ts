/**
 * Reading a bucket for the audit: list the keys under a prefix, read every
 * object's manifest and bytes (recomputing the checksum with the algorithm the
 * manifest names, decoding the records), list the incomplete multipart
 * uploads, and hand it all to the pure `Audit.audit`; on request
 * ({@link abortOrphans}), abort the incomplete uploads old enough that no
 * live archiver can still be writing them.
 *
 * A thin shell: every decision is in `Audit`; this module only makes requests
 * and turns bytes into `Audit.ContentRead`. A failed read of one object is a
 * finding about that object (it does not count), not a failure of the audit;
 * only a failed listing (no such bucket, unreachable endpoint) fails it.
 *
 * @since 0.3.0
 */
import { createHash } from "node:crypto"
import * as Zlib from "node:zlib"
import { AbortMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import type { S3Client } from "@aws-sdk/client-s3"
import { Batch, ObjectKey } from "@sluice/core"
import type { Config, Failure } from "@sluice/core"
import { Effect, Result, Schema } from "effect"
import type { Scope } from "effect"
import * as Audit from "./Audit.ts"
import * as Checksums from "./Checksums.ts"
import * as Manifest from "./internal/Manifest.ts"
import * as Request from "./internal/Request.ts"
import * as S3Config from "./S3Config.ts"
import * as S3Sink from "./S3Sink.ts"

/**
 * The audit could not read the bucket's listing (`operation` names the
 * request): no such bucket, access denied, an unreachable endpoint.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { AuditS3 } from "@sluice/adapter-s3"
 * declare const client: import("@aws-sdk/client-s3").S3Client
 *
 * const report = AuditS3.run(client, { bucket: "archive" }).pipe(
 *   Effect.catchTag("AuditFailed", (e) => Effect.die(`${e.operation}: ${e.code}: ${e.message}`))
 * )
 * ```
 *
 * @since 0.3.0
 */
export class AuditFailed extends Schema.TaggedError<AuditFailed>()("AuditFailed", {
  operation: Schema.String,
  bucket: Schema.String,
  /** The store's error code (`NoSuchBucket`, `AccessDenied`, `ECONNREFUSED`, …). */
  code: Schema.String,
  status: Schema.UndefinedOr(Schema.Number),
  message: Schema.String
}) {}

/**
 * Aborting one orphaned multipart upload failed (`AbortMultipartUpload`
 * answered an error other than `NoSuchUpload`): the upload may still be in
 * the bucket. `abortOrphans` collects these rather than stopping at the first,
 * and `sluice audit --abort-orphans` prints each and exits 1.
 *
 * **Example**
 *
 * ```ts
 * import { AuditS3 } from "@sluice/adapter-s3"
 *
 * const error = new AuditS3.AbortFailed({
 *   bucket: "archive", key: "orders/p=00000/a.rec", uploadId: "u1", code: "AccessDenied", status: 403, message: "Access Denied"
 * })
 * ```
 *
 * @since 0.3.0
 */
export class AbortFailed extends Schema.TaggedError<AbortFailed>()("AbortFailed", {
  bucket: Schema.String,
  key: Schema.String,
  uploadId: Schema.String,
  /** The store's error code (`AccessDenied`, `InternalError`, `ECONNREFUSED`, …). */
  code: Schema.String,
  status: Schema.UndefinedOr(Schema.Number),
  message: Schema.String
}) {}

/**
 * At most this many incomplete multipart uploads are listed per audit (and
 * so aborted per `--abort-orphans` run): one `ListMultipartUploads` page at
 * its maximum (S3 returns at most 1 000 uploads a page). A run's cost stays
 * bounded (one listing request, at most 1 000 aborts, `concurrency` at once:
 * seconds); a bucket holding more orphans than that is a crash loop, better
 * cleared by a lifecycle rule (`AbortIncompleteMultipartUpload`) or by
 * running again, each run taking the next 1 000. The report says when the
 * listing stopped at the bound (`orphanedUploadsTruncated`).
 *
 * @since 0.3.0
 */
export const MAX_UPLOADS_LISTED = 1_000

/**
 * The default `olderThanMillis` of {@link abortOrphans} (`--older-than 1h`):
 * 60 × the sink's default `requestTimeout` (60 s). A live upload is a
 * create, rounds of `partConcurrency` parts and a complete; a request that
 * moves no byte for `requestTimeout` fails, and the sink then aborts its own
 * upload, so an hour-old live upload needs some 60 rounds each at the stall
 * limit, far past any batch (a 512 MiB batch is 64 parts of 8 MiB, 16 rounds
 * of 4). It also leaves minutes of clock skew between this host and the
 * store, whose clock `Initiated` is read from.
 *
 * @since 0.3.0
 */
export const DEFAULT_OLDER_THAN_MILLIS = 60 * 60_000

/**
 * What to abort: the orphaned uploads under `prefix` initiated longer ago
 * than `olderThanMillis` (see `Audit.planAborts`).
 *
 * @since 0.3.0
 */
export interface AbortOptions {
  readonly bucket: string
  readonly prefix?: string | undefined
  /** Only uploads initiated longer ago than this (default {@link DEFAULT_OLDER_THAN_MILLIS}); 0 aborts all. */
  readonly olderThanMillis?: number | undefined
  /** Aborts sent at once (default 4). */
  readonly concurrency?: number | undefined
  /** The current time in epoch milliseconds (default `Date.now()`). */
  readonly now?: number | undefined
}

/**
 * What {@link abortOrphans} did, per upload.
 *
 * @since 0.3.0
 */
export interface AbortOutcome {
  /** Aborted (`AbortMultipartUpload` succeeded). */
  readonly aborted: ReadonlyArray<Audit.PendingUpload>
  /** Gone before the abort (`NoSuchUpload`: completed or aborted meanwhile). */
  readonly gone: ReadonlyArray<Audit.PendingUpload>
  /** Initiated within `olderThanMillis`, or of unknown age: left alone. */
  readonly kept: ReadonlyArray<Audit.PendingUpload>
  /** Aborts that failed: those uploads may still be in the bucket. */
  readonly failed: ReadonlyArray<AbortFailed>
  /** The listing stopped at {@link MAX_UPLOADS_LISTED}: more uploads may exist. */
  readonly truncated: boolean
}

/**
 * What to audit.
 *
 * @since 0.3.0
 */
export interface Options {
  readonly bucket: string
  /** Only keys under this prefix (S3 `Prefix`: plain string match). */
  readonly prefix?: string | undefined
  /** Committed offsets the archive must reach (see `Audit.Committed`). */
  readonly committed?: ReadonlyArray<Audit.Committed> | undefined
  /** Objects read at once (default 4). */
  readonly concurrency?: number | undefined
  /**
   * The part size a `COMPOSITE` (SHA256 multipart) checksum was uploaded
   * with (default 8 MiB, the sink's default). Other whole-MiB part sizes that
   * give the object's part count are tried too.
   */
  readonly partSize?: number | undefined
}

/**
 * Where the bucket is and how to sign: the connection half of `S3Config`.
 *
 * @since 0.3.0
 */
export interface Connection {
  readonly endpoint?: string | undefined
  readonly region?: string | undefined
  readonly forcePathStyle?: boolean | undefined
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string } | undefined
}

const DEFAULT_PART_SIZE = 8 * 1024 * 1024
const MIB = 1024 * 1024

/**
 * Audits a bucket through `client`.
 *
 * **When to use**
 *
 * From code (the chaos and soak runs); the `sluice audit` command line calls
 * it through {@link make}.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { AuditS3 } from "@sluice/adapter-s3"
 * declare const client: import("@aws-sdk/client-s3").S3Client
 *
 * const ok = Effect.map(
 *   AuditS3.run(client, { bucket: "archive", committed: [{ source: "orders", partition: 0, offset: 10_000 }] }),
 *   (report) => report.ok
 * )
 * ```
 *
 * @since 0.3.0
 */
export const run = (client: S3Client, options: Options): Effect.Effect<Audit.Report, AuditFailed | Config.ConfigError> =>
  Effect.gen(function*() {
    const config = yield* S3Config.decode({ bucket: options.bucket, maxAttempts: 3 })
    const request = Request.make(config, client)
    const listed = yield* listObjects(request, options.prefix ?? "")
    const { objects } = Audit.classify(listed)
    const manifests = new Map<string, Audit.ManifestRead>()
    const contents = new Map<string, Audit.ContentRead>()
    const partSize = options.partSize ?? DEFAULT_PART_SIZE
    yield* Effect.forEach(
      objects.filter((o) => o.hasManifest),
      (object) =>
        Effect.gen(function*() {
          const manifest = yield* readManifest(request, object.key)
          manifests.set(object.key, manifest)
          if (manifest._tag === "Manifest") contents.set(object.key, yield* readContent(request, object.key, manifest.manifest, partSize))
        }),
      { concurrency: options.concurrency ?? 4, discard: true }
    )
    const uploads = yield* listUploads(request, options.prefix ?? "")
    return Audit.audit({ listed, manifests, contents, uploads: uploads.uploads, uploadsTruncated: uploads.truncated, committed: options.committed })
  })

/**
 * Aborts the orphaned multipart uploads under `options.prefix` that were
 * initiated longer ago than `options.olderThanMillis` (at most
 * {@link MAX_UPLOADS_LISTED} per call).
 *
 * **When to use**
 *
 * After a crash (a SIGKILL mid-upload leaves its multipart upload open), by
 * the operator: `sluice audit --abort-orphans` calls it, then audits. The
 * archiver does not do this at start: another archiver of the same consumer
 * group may own the partition and be mid-upload under the same prefix, and
 * only the upload's age tells an orphan from a live one. A bucket lifecycle
 * rule (`AbortIncompleteMultipartUpload`, `DaysAfterInitiation`) is the
 * store-side alternative.
 *
 * **Details**
 *
 * A failed abort does not stop the others: it is collected in `failed` (an
 * {@link AbortFailed}); `NoSuchUpload` means the upload is already gone
 * (`gone`). Only a failed listing fails the effect ({@link AuditFailed}).
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { AuditS3 } from "@sluice/adapter-s3"
 * declare const client: import("@aws-sdk/client-s3").S3Client
 *
 * const outcome = AuditS3.abortOrphans(client, { bucket: "archive", olderThanMillis: 2 * 3_600_000 })
 * // Effect<{ aborted, gone, kept, failed, truncated }, AuditFailed | ConfigError>
 * ```
 *
 * @since 0.3.0
 */
export const abortOrphans = (
  client: S3Client,
  options: AbortOptions
): Effect.Effect<AbortOutcome, AuditFailed | Config.ConfigError> =>
  Effect.gen(function*() {
    const config = yield* S3Config.decode({ bucket: options.bucket, maxAttempts: 3 })
    const request = Request.make(config, client)
    const listed = yield* listUploads(request, options.prefix ?? "")
    const plan = Audit.planAborts(listed.uploads, {
      now: options.now ?? Date.now(),
      olderThanMillis: options.olderThanMillis ?? DEFAULT_OLDER_THAN_MILLIS
    })
    const results = yield* Effect.forEach(
      plan.abort,
      (upload) => Effect.result(abortUpload(request, upload)),
      { concurrency: options.concurrency ?? 4 }
    )
    const aborted: Array<Audit.PendingUpload> = []
    const gone: Array<Audit.PendingUpload> = []
    const failed: Array<AbortFailed> = []
    results.forEach((result, i) => {
      const upload = plan.abort[i]
      if (upload === undefined) return
      if (Result.isFailure(result)) failed.push(result.failure)
      else if (result.success === "aborted") aborted.push(upload)
      else gone.push(upload)
    })
    return { aborted, gone, kept: plan.keep, failed, truncated: listed.truncated }
  })

/** Aborts one upload: `aborted`, or `gone` when the store no longer knows it. */
const abortUpload = (request: Request.Request, upload: Audit.PendingUpload): Effect.Effect<"aborted" | "gone", AbortFailed> =>
  Request.send("verify", (abortSignal) =>
    request.client.send(
      new AbortMultipartUploadCommand({ Bucket: request.bucket, Key: upload.key, UploadId: upload.uploadId }),
      { abortSignal }
    )).pipe(
      Effect.as("aborted" as const),
      Effect.catch((e) =>
        e.code === "NoSuchUpload"
          ? Effect.succeed("gone" as const)
          : Effect.fail(
            new AbortFailed({ bucket: request.bucket, key: upload.key, uploadId: upload.uploadId, code: e.code, status: e.status, message: e.message })
          )
      )
    )

/**
 * A client for `connection` (destroyed with the scope), as {@link make} and
 * `sluice audit` use it.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { AuditS3 } from "@sluice/adapter-s3"
 *
 * const report = Effect.scoped(Effect.flatMap(
 *   AuditS3.makeClient({ endpoint: "http://127.0.0.1:19000", forcePathStyle: true }, "archive"),
 *   (client) => AuditS3.run(client, { bucket: "archive" })
 * ))
 * ```
 *
 * @since 0.3.0
 */
export const makeClient = (connection: Connection, bucket: string): Effect.Effect<S3Client, Config.ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* S3Config.decode({
      bucket,
      region: connection.region ?? "us-east-1",
      forcePathStyle: connection.forcePathStyle ?? connection.endpoint !== undefined,
      maxAttempts: 3,
      ...(connection.endpoint !== undefined ? { endpoint: connection.endpoint } : {}),
      ...(connection.credentials !== undefined ? { credentials: connection.credentials } : {})
    })
    return yield* Effect.acquireRelease(
      Effect.sync(() => S3Sink.makeClient(config)),
      (c) => Effect.sync(() => c.destroy())
    )
  })

/**
 * Builds a client for `connection` (closed with the scope) and audits
 * `options.bucket` with it.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { AuditS3 } from "@sluice/adapter-s3"
 *
 * const report = Effect.scoped(AuditS3.make(
 *   { endpoint: "http://127.0.0.1:19000", forcePathStyle: true, credentials: { accessKeyId: "sluice", secretAccessKey: "sluicesecret" } },
 *   { bucket: "archive", prefix: "prod/" }
 * ))
 * ```
 *
 * @since 0.3.0
 */
export const make = (
  connection: Connection,
  options: Options
): Effect.Effect<Audit.Report, AuditFailed | Config.ConfigError, Scope.Scope> =>
  Effect.flatMap(makeClient(connection, options.bucket), (c) => run(c, options))

const failed = (request: Request.Request, operation: string) => (e: Failure.SinkFailure) =>
  new AuditFailed({ operation, bucket: request.bucket, code: e.code, status: e.status, message: e.message })

/** Every key under `prefix`, with its size. */
const listObjects = (request: Request.Request, prefix: string): Effect.Effect<Array<Audit.Listed>, AuditFailed> =>
  Effect.gen(function*() {
    const out: Array<Audit.Listed> = []
    let token: string | undefined
    do {
      const page = yield* Request.send("verify", (abortSignal) =>
        request.client.send(
          new ListObjectsV2Command({ Bucket: request.bucket, Prefix: prefix === "" ? undefined : prefix, ContinuationToken: token }),
          { abortSignal }
        )).pipe(Effect.mapError(failed(request, "ListObjectsV2")))
      for (const o of page.Contents ?? []) if (o.Key !== undefined) out.push({ key: o.Key, size: o.Size ?? 0 })
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return out
  })

/**
 * The incomplete multipart uploads under `prefix`, at most `MAX_UPLOADS_LISTED`;
 * `truncated` when more may exist. A store that pages below 1 000 is asked
 * for the next page; versitygw v1.8.0 refuses its own `NextUploadIdMarker`
 * there (`InvalidArgument: Invalid uploadId marker`, seen 2026-12-02), which
 * fails the audit, but it returns 1 000 a page, so the bound never asks.
 */
const listUploads = (
  request: Request.Request,
  prefix: string
): Effect.Effect<{ readonly uploads: Array<Audit.PendingUpload>; readonly truncated: boolean }, AuditFailed> =>
  Effect.gen(function*() {
    const out: Array<Audit.PendingUpload> = []
    let keyMarker: string | undefined
    let uploadIdMarker: string | undefined
    for (;;) {
      const page = yield* Request.send("verify", (abortSignal) =>
        request.client.send(
          new ListMultipartUploadsCommand({
            Bucket: request.bucket,
            Prefix: prefix === "" ? undefined : prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
            MaxUploads: MAX_UPLOADS_LISTED - out.length
          }),
          { abortSignal }
        )).pipe(Effect.mapError(failed(request, "ListMultipartUploads")))
      let overflow = false
      for (const u of page.Uploads ?? []) {
        if (u.Key === undefined) continue
        // a store that ignores MaxUploads still yields at most the bound
        if (out.length >= MAX_UPLOADS_LISTED) overflow = true
        else out.push({ key: u.Key, uploadId: u.UploadId ?? "", initiated: u.Initiated?.toISOString() })
      }
      const more = page.IsTruncated === true && (page.NextKeyMarker !== undefined || page.NextUploadIdMarker !== undefined)
      if (overflow || (more && out.length >= MAX_UPLOADS_LISTED)) return { uploads: out, truncated: true }
      if (!more) return { uploads: out, truncated: false }
      keyMarker = page.NextKeyMarker
      uploadIdMarker = page.NextUploadIdMarker
    }
  })

/** The manifest of the object at bucket key `key`. */
const readManifest = (request: Request.Request, key: string): Effect.Effect<Audit.ManifestRead> =>
  Request.getBytes(request, ObjectKey.manifestKey(key), "verify").pipe(
    Effect.flatMap((bytes) => Manifest.decode(key, bytes)),
    Effect.map((manifest): Audit.ManifestRead => ({ _tag: "Manifest", manifest })),
    Effect.catch((e) =>
      Effect.succeed<Audit.ManifestRead>({ _tag: "Invalid", message: e.code === "InvalidManifest" ? e.message : `unreadable: ${e.code}: ${e.message}` })
    )
  )

/** The bytes of the object at bucket key `key`: size, recomputed checksum, records. */
const readContent = (
  request: Request.Request,
  key: string,
  manifest: Batch.Manifest,
  partSize: number
): Effect.Effect<Audit.ContentRead> =>
  Request.getBytes(request, key, "verify").pipe(
    Effect.flatMap((body) =>
      Effect.promise(async (): Promise<Audit.ContentRead> => {
        const checksum = await recompute(manifest.checksum, body, partSize)
        const decoded = decodeRecords(manifest, body)
        return {
          _tag: "Content",
          bytes: body.byteLength,
          checksum,
          records: decoded.records,
          digests: decoded.digests,
          decodeError: decoded.error
        }
      })
    ),
    Effect.catch((e) => Effect.succeed<Audit.ContentRead>({ _tag: "Unreadable", message: `${e.code}: ${e.message}` }))
  )

const isAlgorithm = Schema.is(S3Config.ChecksumAlgorithm)

/**
 * The checksum of `body` with `expected`'s algorithm, as S3 would report it.
 * A `COMPOSITE` value (`…-N`) depends on the part size: the candidates that
 * split the body into N parts are tried, `partSize` first, and the first that
 * matches is returned (else the first candidate's value).
 */
const recompute = async (
  expected: Batch.Checksum,
  body: Uint8Array,
  partSize: number
): Promise<{ readonly algorithm: string; readonly value: string } | undefined> => {
  const algorithm = expected.algorithm
  if (!isAlgorithm(algorithm)) return undefined
  const composite = /-(\d+)$/.exec(expected.value)
  if (composite === null || Checksums.multipartType(algorithm) === "FULL_OBJECT") {
    return { algorithm, value: await Checksums.objectChecksum(algorithm, body, undefined) }
  }
  let first: string | undefined
  for (const size of partSizeCandidates(body.byteLength, Number(composite[1]), partSize)) {
    const value = await Checksums.objectChecksum(algorithm, body, size)
    if (value === expected.value) return { algorithm, value }
    first ??= value
  }
  return { algorithm, value: first ?? `(no part size splits ${body.byteLength} bytes into ${composite[1]} parts)` }
}

/** Part sizes that split `size` bytes into `parts` parts: `hint` first, then whole MiB (at most 16). */
const partSizeCandidates = (size: number, parts: number, hint: number): Array<number> => {
  const fits = (p: number) => p > 0 && Math.max(1, Math.ceil(size / p)) === parts
  const out: Array<number> = fits(hint) ? [hint] : []
  const lowest = Math.max(1, Math.ceil(Math.ceil(size / parts) / MIB))
  for (let mib = lowest; out.length < 16 && mib * MIB <= Math.max(size, MIB) * 2; mib++) {
    if (fits(mib * MIB) && mib * MIB !== hint) out.push(mib * MIB)
    if (mib * MIB * (parts - 1) >= size) break
  }
  return out
}

const nativeCrc32: ((data: Uint8Array) => number) | undefined = typeof Zlib.crc32 === "function" ? Zlib.crc32 : undefined

/** A 32-bit digest of a record payload (to tell duplicate records from different ones). */
const recordDigest = (payload: Uint8Array): number =>
  nativeCrc32 !== undefined ? nativeCrc32(payload) : createHash("sha1").update(payload).digest().readUInt32BE(0)

/** The records of a stored object: their count and digests, or why they do not decode. */
const decodeRecords = (
  manifest: Batch.Manifest,
  body: Uint8Array
): { readonly records: number | undefined; readonly digests: Uint32Array; readonly error: string | undefined } => {
  try {
    const payloads = Batch.decodeObject(manifest, body)
    const digests = new Uint32Array(payloads.length)
    payloads.forEach((p, i) => {
      digests[i] = recordDigest(p)
    })
    const framed = framedSize(payloads)
    const expected = manifest.bodyBytes ?? (manifest.compression === "none" ? body.byteLength : framed)
    if (framed !== expected) {
      return { records: undefined, digests, error: `records frame ${framed} bytes, the body holds ${expected}` }
    }
    return { records: payloads.length, digests, error: undefined }
  } catch (cause) {
    return { records: undefined, digests: new Uint32Array(0), error: cause instanceof Error ? cause.message : String(cause) }
  }
}

const framedSize = (payloads: ReadonlyArray<Uint8Array>): number => payloads.reduce((n, p) => n + 4 + p.byteLength, 0)
