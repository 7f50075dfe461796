/**
 * soak — the in-memory sink of a soak: encodes each batch's body as a real
 * store would receive it (`Batch.encodeBody`), checksums it (CRC32,
 * `node:zlib`, the S3 sink's default), and keeps only the size and checksum
 * of each object until it is verified, then forgets it.
 *
 * The core's `Memory.sink` keeps every body (right for tests that read the
 * archive back, wrong for a soak: 150 MB/s of bodies would be the RSS growth
 * the soak is looking for). Verification is still real: `verify` compares
 * what was stored with the receipt, and a body that does not match fails
 * with `VerificationFailed`.
 */
import type { Batch, Sink } from "@sluice/core"
import { Failure } from "@sluice/core"
import { Batch as Batches } from "@sluice/core"
import { Effect } from "effect"
import { crc32 } from "node:zlib"

/** An in-memory store that forgets verified objects, with what it saw. */
export interface MemoryStore extends Sink.Sink {
  /** Objects stored and not yet verified now (bounded by what the pipeline holds). */
  readonly pending: () => number
  readonly counts: { objects: number; objectBytes: number; manifests: number }
}

/**
 * A store in memory (see the module doc).
 *
 * **Example**
 *
 * ```ts
 * const sink = MemoryStore.make()
 * // … Pipeline.start({ sink, … }); sink.counts.objects
 * ```
 */
export const make = (): MemoryStore => {
  const stored = new Map<string, { readonly bytes: number; readonly checksum: string }>()
  const counts = { objects: 0, objectBytes: 0, manifests: 0 }
  const checksumOf = (body: Uint8Array) => String(crc32(body))
  return {
    name: "memory",
    // It keeps each body's size and checksum, not the body: bodies can be recycled.
    keepsBodies: false,
    putObject: (batch: Batch.SealedBatch) =>
      Effect.sync(() => {
        const body = Batches.encodeBody(batch)
        const checksum = checksumOf(body)
        stored.set(batch.key, { bytes: body.byteLength, checksum })
        counts.objects++
        counts.objectBytes += body.byteLength
        return { key: batch.key, objectBytes: body.byteLength, checksum: { algorithm: "CRC32", value: checksum } }
      }),
    putManifest: () =>
      Effect.sync(() => {
        counts.manifests++
      }),
    verify: (receipt) =>
      Effect.suspend(() => {
        const object = stored.get(receipt.key)
        if (object === undefined) {
          return Effect.fail(new Failure.VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" }))
        }
        if (object.bytes !== receipt.objectBytes || object.checksum !== receipt.checksum.value) {
          return Effect.fail(
            new Failure.VerificationFailed({
              key: receipt.key,
              reason: object.bytes !== receipt.objectBytes ? "SizeMismatch" : "ChecksumMismatch",
              expected: `${receipt.objectBytes} B ${receipt.checksum.value}`,
              actual: `${object.bytes} B ${object.checksum}`
            })
          )
        }
        stored.delete(receipt.key)
        return Effect.succeed({ key: receipt.key, objectBytes: object.bytes, checksum: receipt.checksum })
      }),
    pending: () => stored.size,
    counts
  }
}
