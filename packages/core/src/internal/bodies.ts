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
 * buffers holding at most {@link MAX_FREE_BYTES}; beyond either, the least
 * recently freed buffers are left to the garbage collector (a buffer larger
 * than the byte bound is never kept). Size classes are powers of two, and a
 * body takes the most recently freed buffer that fits, the one most likely
 * still in the CPU's caches. Pool buffers are `SharedArrayBuffer`s, so
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

/** Free buffers, the most recently freed last; a taker picks the most recent that fits. */
const free: Array<SharedArrayBuffer> = []
let freeBytes = 0
/** Bodies cut from a pool buffer and not yet returned (so a buffer returns once). */
const pooled = new WeakSet<Uint8Array>()

/**
 * The capacity a new pool buffer gets for `bytes`: the power of two that holds
 * it (less than twice its size). Coarse on purpose: a batch target that moves
 * (`AdaptiveBatch` walks it up and down by a few per cent a batch) keeps
 * finding the buffer it just used ({@link take}), still in the CPU's caches.
 * Rounded to an eighth of a power of two instead, each step of the target had
 * a buffer of its own, and `bench:pipeline`'s Sluice side rotated its bodies
 * through five: it encoded and checksummed at 175 and 120 µs per MB, against
 * 120 and 55 µs for the loop's, always the same buffer. Three alternated pairs
 * of `npm run bench:pipeline -- --records 4000000`, the eighths first, ms a
 * round: encode 91–96 against 87–90, CRC32 62–67 against 55–58; the ratio to
 * the pooled loop 0.62–0.69 against 0.70–0.76. The untouched tail of a
 * capacity costs no memory: its pages are mapped on first write.
 */
const capacityFor = (bytes: number): number => 2 ** Math.ceil(Math.log2(bytes))

/**
 * A body of exactly `bytes`, not zeroed: the caller writes every byte. Cut
 * from the most recently freed buffer with room for it and at most twice its
 * size (the one most likely still in cache), else from a new buffer; bodies
 * under {@link POOL_FROM_BYTES} are not pooled.
 */
export const take = (bytes: number): Uint8Array => {
  if (bytes < POOL_FROM_BYTES) return new Uint8Array(bytes)
  let found = -1
  for (let i = free.length - 1; i >= 0; i--) {
    const capacity = free[i]?.byteLength ?? 0
    if (capacity >= bytes && capacity <= 2 * bytes) {
      found = i
      break
    }
  }
  let buffer: SharedArrayBuffer
  if (found >= 0) {
    buffer = free[found] as SharedArrayBuffer
    free.splice(found, 1)
    freeBytes -= buffer.byteLength
  } else {
    buffer = new SharedArrayBuffer(capacityFor(bytes))
  }
  const body = new Uint8Array(buffer, 0, bytes)
  pooled.add(body)
  return body
}

/** Returns a body's buffer to the free list, if it is a pooled body (once) and no larger than the list's bound; the list's oldest buffers make room. */
export const give = (body: Uint8Array): void => {
  if (!pooled.delete(body)) return
  const buffer = body.buffer
  if (!(buffer instanceof SharedArrayBuffer)) return
  if (buffer.byteLength > MAX_FREE_BYTES) return
  // Over a bound, the least recently freed buffers go first (the coldest).
  while (free.length >= MAX_FREE || freeBytes + buffer.byteLength > MAX_FREE_BYTES) {
    freeBytes -= (free.shift() as SharedArrayBuffer).byteLength
  }
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
