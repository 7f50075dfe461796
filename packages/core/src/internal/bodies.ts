/**
 * The memo of stored bodies: every attempt and every replica of one batch
 * shares one encoded (and compressed) body, and its size outlives it.
 *
 * Weak: a batch that is dropped takes its body with it; the pipeline also
 * forgets a body explicitly (`Batch.releaseBody`) once stored. The size is
 * kept after the body is released: the manifest, written after the object,
 * records it.
 *
 * **The pool.** Framed bodies of at least {@link POOL_FROM_BYTES} are cut from
 * buffers that can be reused: `Batch.recycleBody` (the pipeline calls it once
 * the object is stored, when the sink says it keeps no reference to bodies)
 * puts the body's buffer on a free list the next encode takes from. Writing
 * into memory already mapped costs a fraction of a fresh allocation's first
 * write (page faults, zeroing). Bounded: at most {@link MAX_FREE} free
 * buffers holding at most {@link MAX_FREE_BYTES}; a buffer beyond either is
 * left to the garbage collector. Pool buffers are `SharedArrayBuffer`s, so
 * that a helper thread can checksum half a body without a copy (`Crc32.of`).
 * A buffer is given out to one body at a time
 * (it leaves the free list when taken, and only a pooled body that is
 * memoized can return it).
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
  if (existing !== undefined) {
    if (stored !== existing) give(stored)
    return existing
  }
  bodies.set(batch, stored)
  sizes.set(batch, stored.byteLength)
  return stored
}

/** The size of `batch`'s stored body once it was encoded (even if released since). */
export const size = (batch: SealedBatch): number | undefined => sizes.get(batch)

/** Forgets the body (not its size); its memory goes to the garbage collector. */
export const release = (batch: SealedBatch): void => {
  const body = bodies.get(batch)
  bodies.delete(batch)
  if (body !== undefined) pooled.delete(body)
}

/**
 * Forgets the body (not its size) and, if it was cut from a pool buffer,
 * puts the buffer back on the free list. The caller guarantees that nothing
 * references the body any more.
 */
export const recycle = (batch: SealedBatch): void => {
  const body = bodies.get(batch)
  bodies.delete(batch)
  if (body !== undefined) give(body)
}

// ---------------------------------------------------------------------------
// The pool

/** Bodies smaller than this are allocated fresh (the allocator handles them well). */
export const POOL_FROM_BYTES = 64 * 1024
/** Free buffers kept at most. */
export const MAX_FREE = 8
/** Bytes the free buffers hold at most. */
export const MAX_FREE_BYTES = 128 * 1024 * 1024

/** Free buffers, any order; a taker picks the smallest that fits. */
const free: Array<SharedArrayBuffer> = []
let freeBytes = 0
/** Bodies cut from a pool buffer and not yet returned (so a buffer returns once). */
const pooled = new WeakSet<Uint8Array>()

/**
 * The capacity a new pool buffer gets for `bytes`: rounded up to an eighth of
 * its power of two (at most 12.5 % more), so that the next batch, a little
 * larger, still fits.
 */
const capacityFor = (bytes: number): number => {
  const step = 2 ** Math.max(0, Math.floor(Math.log2(bytes)) - 3)
  return Math.ceil(bytes / step) * step
}

/**
 * A body of exactly `bytes`, not zeroed: the caller writes every byte. Cut
 * from a free buffer with room for it and at most twice its size, else from
 * a new buffer; bodies under {@link POOL_FROM_BYTES} are not pooled.
 */
export const take = (bytes: number): Uint8Array => {
  if (bytes < POOL_FROM_BYTES) return new Uint8Array(bytes)
  let best = -1
  for (let i = 0; i < free.length; i++) {
    const capacity = free[i]?.byteLength ?? 0
    if (capacity >= bytes && capacity <= 2 * bytes && (best < 0 || capacity < (free[best]?.byteLength ?? 0))) best = i
  }
  let buffer: SharedArrayBuffer
  if (best >= 0) {
    buffer = free[best] as SharedArrayBuffer
    free[best] = free[free.length - 1] as SharedArrayBuffer
    free.pop()
    freeBytes -= buffer.byteLength
  } else {
    buffer = new SharedArrayBuffer(capacityFor(bytes))
  }
  const body = new Uint8Array(buffer, 0, bytes)
  pooled.add(body)
  return body
}

/** Returns a body's buffer to the free list, if it is a pooled body (once) and there is room. */
export const give = (body: Uint8Array): void => {
  if (!pooled.delete(body)) return
  const buffer = body.buffer
  if (!(buffer instanceof SharedArrayBuffer)) return
  if (free.length >= MAX_FREE || freeBytes + buffer.byteLength > MAX_FREE_BYTES) return
  free.push(buffer)
  freeBytes += buffer.byteLength
}

/** The free list's size (tests). */
export const poolStats = (): { readonly buffers: number; readonly bytes: number } => ({ buffers: free.length, bytes: freeBytes })

/** Empties the free list (tests start from a known pool). */
export const drainPool = (): void => {
  free.length = 0
  freeBytes = 0
}
