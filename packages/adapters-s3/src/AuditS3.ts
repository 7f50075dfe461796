/**
 * Reading a bucket for the audit: list the keys under a prefix, read every
 * object's manifest and bytes (recomputing the checksum with the algorithm the
 * manifest names, decoding the records), list the incomplete multipart
 * uploads, and hand it all to the pure `Audit.audit`.
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
import { ListMultipartUploadsCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import type { S3Client } from "@aws-sdk/client-s3"
import { Batch, ObjectKey } from "@sluice/core"
import type { Config, Failure } from "@sluice/core"
import { Effect, Schema } from "effect"
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
    return Audit.audit({ listed, manifests, contents, uploads, committed: options.committed })
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
  Effect.gen(function*() {
    const config = yield* S3Config.decode({
      bucket: options.bucket,
      region: connection.region ?? "us-east-1",
      forcePathStyle: connection.forcePathStyle ?? connection.endpoint !== undefined,
      maxAttempts: 3,
      ...(connection.endpoint !== undefined ? { endpoint: connection.endpoint } : {}),
      ...(connection.credentials !== undefined ? { credentials: connection.credentials } : {})
    })
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => S3Sink.makeClient(config)),
      (c) => Effect.sync(() => c.destroy())
    )
    return yield* run(client, options)
  })

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

/** Every incomplete multipart upload under `prefix`. */
const listUploads = (request: Request.Request, prefix: string): Effect.Effect<Array<Audit.PendingUpload>, AuditFailed> =>
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
            UploadIdMarker: uploadIdMarker
          }),
          { abortSignal }
        )).pipe(Effect.mapError(failed(request, "ListMultipartUploads")))
      for (const u of page.Uploads ?? []) {
        if (u.Key !== undefined) out.push({ key: u.Key, uploadId: u.UploadId ?? "", initiated: u.Initiated?.toISOString() })
      }
      if (page.IsTruncated !== true || (page.NextKeyMarker === undefined && page.NextUploadIdMarker === undefined)) return out
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
