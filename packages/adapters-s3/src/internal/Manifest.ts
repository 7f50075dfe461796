/**
 * The manifest next to each object: the core `Batch.Manifest` as JSON at
 * `ObjectKey.manifestKey(key)`, written with its own additional checksum and
 * read back (for repair) through the same schema.
 *
 * @internal
 */
import { Batch, Failure, ObjectKey } from "@sluice/core"
import { Effect, Schema } from "effect"
import { putSingle } from "./Put.ts"
import type { Request } from "./Request.ts"
import { getBytes } from "./Request.ts"

const encodeManifest = Schema.encodeSync(Batch.Manifest)
const decodeManifest = Schema.decodeUnknownEffect(Schema.fromJsonString(Batch.Manifest))

/** The stored bytes of a manifest (JSON of its encoded form). */
export const encode = (manifest: Batch.Manifest): Uint8Array =>
  new TextEncoder().encode(JSON.stringify(encodeManifest(manifest)))

/** Decodes stored manifest bytes; a `Fatal` `InvalidManifest` failure when they do not decode. */
export const decode = (key: string, bytes: Uint8Array): Effect.Effect<Batch.Manifest, Failure.SinkFailure> =>
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

/** Stores the manifest of `manifest.key`. */
export const put = (request: Request, manifest: Batch.Manifest): Effect.Effect<void, Failure.SinkFailure> =>
  Effect.asVoid(
    putSingle(
      request,
      request.storageKey(ObjectKey.manifestKey(manifest.key)),
      encode(manifest),
      "application/json",
      "manifest_upload"
    )
  )

/** Reads and decodes the manifest of batch key `key`. */
export const read = (request: Request, key: string): Effect.Effect<Batch.Manifest, Failure.SinkFailure> =>
  getBytes(request, request.storageKey(ObjectKey.manifestKey(key)), "verify").pipe(
    Effect.flatMap((bytes) => decode(key, bytes))
  )
