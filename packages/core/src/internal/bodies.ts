/**
 * The memo of stored bodies: every attempt and every replica of one batch
 * shares one encoded (and compressed) body, and its size outlives it.
 *
 * Weak: a batch that is dropped takes its body with it; the pipeline also
 * forgets a body explicitly (`Batch.releaseBody`) once stored. The size is
 * kept after the body is released: the manifest, written after the object,
 * records it.
 *
 * @internal
 */
import type { SealedBatch } from "../Batch.ts"

const bodies = new WeakMap<SealedBatch, Uint8Array>()
const sizes = new WeakMap<SealedBatch, number>()

/** The memoized stored body of `batch`, if any. */
export const get = (batch: SealedBatch): Uint8Array | undefined => bodies.get(batch)

/**
 * Memoizes `stored` as `batch`'s body, unless one already is (a concurrent
 * encode won): returns the body every caller shares.
 */
export const remember = (batch: SealedBatch, stored: Uint8Array): Uint8Array => {
  const existing = bodies.get(batch)
  if (existing !== undefined) return existing
  bodies.set(batch, stored)
  sizes.set(batch, stored.byteLength)
  return stored
}

/** The size of `batch`'s stored body once it was encoded (even if released since). */
export const size = (batch: SealedBatch): number | undefined => sizes.get(batch)

/** Forgets the body (not its size). */
export const release = (batch: SealedBatch): void => {
  bodies.delete(batch)
}
