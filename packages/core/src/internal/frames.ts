/**
 * Framed records: per record a big-endian uint32 length, then its bytes, the
 * layout of a batch body and of a framed chunk (`Record.RecordChunk.framed`).
 *
 * @internal
 */
import { Buffer } from "node:buffer"

/** Bytes of the length before each record (a big-endian uint32, as in a batch body). */
export const FRAME_HEADER_BYTES = 4

/**
 * From this size on, {@link copyInto} copies into shared memory with
 * `Buffer#fill` (one `memcpy`); below it `set`, whose byte-by-byte copy costs
 * less than the call into Node's C++. Measured here, unaligned, per copy:
 * 256 B `set` 124 ns, `fill` 248 ns; 384 B `set` 418 ns, `fill` 258 ns;
 * 1 KiB `set` 891 ns, `fill` 291 ns.
 */
const FILL_FROM_BYTES = 384

/**
 * Copies `src` into `out` at `at`. Into a `SharedArrayBuffer` (a pooled
 * body), V8's `set` copies with relaxed atomics, word by word when source and
 * target are equally aligned and byte by byte otherwise: measured here 0.61
 * ms and 2.99 ms per 8 MiB, against 0.35 for unshared memory. `Buffer#fill`
 * with a `Uint8Array` as the value is a plain `memcpy` (0.35 ms at any
 * alignment) and, its range being exactly `src`'s length, writes `src` once.
 */
export const copyInto = (out: Uint8Array, src: Uint8Array, at: number): void => {
  if (src.byteLength >= FILL_FROM_BYTES && out.buffer instanceof SharedArrayBuffer) {
    Buffer.prototype.fill.call(out, src, at, at + src.byteLength)
  } else {
    out.set(src, at)
  }
}

/**
 * Bytes of the unshared buffer in which {@link writeFrames} frames small
 * records bound for shared memory, copied on with one `memcpy` each time it
 * fills. `npm run bench:staging` (54 k records of 150 B into
 * an 8 MiB shared body), ns a record, three runs here: none 84–86; 4 KiB
 * 55–59; 16 KiB 50–52; 64 KiB 49–52; 256 KiB 49–51; 1 MiB 56–58. Smaller
 * pays the call into C++ more often, larger falls out of the CPU's L2 cache
 * (2.5 MiB here, shared with the body being written); 64 KiB sits in the
 * middle of the flat range.
 */
const STAGING_BYTES = 64 * 1024

/** {@link writeFrames}' staging buffer, made on first use; one per thread, used synchronously. */
let staging: Uint8Array | undefined

/**
 * Writes `payloads` framed into `out` from `at`; returns where they end.
 * `out` must have room: the payload bytes and a length per record.
 *
 * Into shared memory (a pooled body), records smaller than
 * {@link FILL_FROM_BYTES} are framed in an unshared buffer first and copied on
 * together: V8 copies a small record into a `SharedArrayBuffer` byte by byte
 * when unaligned (measured here: 89 ns per 150 B record, against 32 ns into
 * unshared memory), and a call to `memcpy` per record costs more than that.
 */
export const writeFrames = (out: Uint8Array, at: number, payloads: ReadonlyArray<Uint8Array>): number => {
  if (out.buffer instanceof SharedArrayBuffer) return writeFramesShared(out, at, payloads)
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  let end = at
  for (const p of payloads) {
    view.setUint32(end, p.byteLength)
    out.set(p, end + FRAME_HEADER_BYTES)
    end += FRAME_HEADER_BYTES + p.byteLength
  }
  return end
}

const writeFramesShared = (out: Uint8Array, at: number, payloads: ReadonlyArray<Uint8Array>): number =>
  writeFramesStaged(out, at, payloads, (staging ??= new Uint8Array(STAGING_BYTES)))

/**
 * {@link writeFrames} into shared memory with `stage` as the staging buffer
 * (exported for `bench/staging.ts`, which compares sizes).
 */
export const writeFramesStaged = (out: Uint8Array, at: number, payloads: ReadonlyArray<Uint8Array>, stage: Uint8Array): number => {
  const stageView = new DataView(stage.buffer, stage.byteOffset, stage.byteLength)
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  let staged = 0 // bytes framed in `stage`, bound for `out` at `end - staged`
  let end = at
  const flush = (): void => {
    if (staged > 0) Buffer.prototype.fill.call(out, stage.subarray(0, staged), end - staged, end)
    staged = 0
  }
  for (const p of payloads) {
    const framed = FRAME_HEADER_BYTES + p.byteLength
    if (p.byteLength >= FILL_FROM_BYTES || framed > stage.byteLength) {
      flush()
      view.setUint32(end, p.byteLength)
      copyInto(out, p, end + FRAME_HEADER_BYTES)
    } else {
      if (staged + framed > stage.byteLength) flush()
      stageView.setUint32(staged, p.byteLength)
      stage.set(p, staged + FRAME_HEADER_BYTES)
      staged += framed
    }
    end += framed
  }
  flush()
  return end
}

/** The records of a framed buffer, one view each (no copy), to its end. */
export const readFrames = (framed: Uint8Array): Array<Uint8Array> => {
  const view = new DataView(framed.buffer, framed.byteOffset, framed.byteLength)
  const out: Array<Uint8Array> = []
  let at = 0
  while (at + FRAME_HEADER_BYTES <= framed.byteLength) {
    const size = view.getUint32(at)
    out.push(framed.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + size))
    at += FRAME_HEADER_BYTES + size
  }
  return out
}

/**
 * How many leading records of a framed buffer fit in `roomBytes` of payload,
 * at most `count`, and where they end in the buffer.
 */
export const framedPrefix = (framed: Uint8Array, count: number, roomBytes: number): { readonly records: number; readonly end: number } => {
  const view = new DataView(framed.buffer, framed.byteOffset, framed.byteLength)
  let used = 0
  let at = 0
  let i = 0
  for (; i < count; i++) {
    const size = view.getUint32(at)
    if (used + size > roomBytes) break
    used += size
    at += FRAME_HEADER_BYTES + size
  }
  return { records: i, end: at }
}

/**
 * Why a chunk's framing cannot be right, or `undefined`: a framed chunk holds
 * exactly its payload bytes and a length per record, and never `payloads`
 * beside it (which would say which bytes to store?). O(1): the frames
 * themselves are read when the chunk is split or encoded.
 */
export const framingProblem = (chunk: {
  readonly count: number
  readonly bytes: number
  readonly payloads?: unknown
  readonly framed?: Uint8Array | undefined
}): string | undefined => {
  if (chunk.framed === undefined) return undefined
  if (chunk.payloads !== undefined) return "carries both payloads and framed records"
  const expected = chunk.bytes + FRAME_HEADER_BYTES * chunk.count
  if (chunk.framed.byteLength !== expected) {
    return `framed records take ${chunk.framed.byteLength} bytes, not bytes + ${FRAME_HEADER_BYTES} × count = ${expected}`
  }
  return undefined
}
