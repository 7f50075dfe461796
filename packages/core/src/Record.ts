/**
 * Records and their positions: what a {@link Source} delivers.
 *
 * A record's position is `(source, partition, offset)`. Sources deliver records in
 * **chunks** (never one at a time) so the pipeline's per-record cost stays a loop
 * iteration, not an Effect.
 *
 * @since 0.1.0
 */
import * as Frames from "./internal/frames.ts"

/**
 * Where a record sits in its source. Offsets are non-negative integers below
 * 2^53 (Kafka's int64 offsets fit for any realistic log).
 *
 * @since 0.1.0
 */
export interface Position {
  readonly source: string
  readonly partition: number
  readonly offset: number
}

/**
 * A contiguous run of records from one partition, in offset order.
 *
 * **Details**
 *
 * `count` records occupy offsets `firstOffset .. firstOffset + count - 1` unless
 * `offsets` is given (sources with gaps, e.g. compacted Kafka topics, list every
 * record's offset). The records' bytes come in one of two forms, or none:
 * - `payloads`: one `Uint8Array` per record;
 * - `framed`: every record in one buffer, framed as a batch body frames them
 *   (per record a big-endian uint32 length, then its bytes). A batch body
 *   copies it whole, and no object per record lives while the record waits
 *   for its upload (see {@link frame});
 * - neither: a simulated source only reports sizes, which lets the testkit
 *   simulate hundreds of millions of records without allocating them.
 *
 * Read a chunk's records with {@link payloadsOf}, whichever form it has. The
 * pipeline fails a run with a `SourceError` on a framed chunk whose buffer is
 * not `bytes` + 4 × `count` bytes, or that carries `payloads` too.
 *
 * **Example**
 *
 * ```ts
 * import { Record } from "@sluice/core"
 *
 * const chunk = Record.chunkOf("orders", 0, 100, [new TextEncoder().encode("a"), new TextEncoder().encode("bc")])
 * // chunk.count === 2, chunk.bytes === 3, last offset 101
 * ```
 *
 * @since 0.1.0
 */
export interface RecordChunk {
  readonly _tag: "RecordChunk"
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly count: number
  /** Total payload bytes of the records in this chunk. */
  readonly bytes: number
  /** Per-record offsets when they are not contiguous. */
  readonly offsets?: ReadonlyArray<number> | undefined
  /** Per-record payloads; absent for framed and size-only (simulated) chunks. */
  readonly payloads?: ReadonlyArray<Uint8Array> | undefined
  /**
   * The `count` records framed in one buffer (per record a big-endian uint32
   * length, then its bytes; `bytes` + 4 × `count` bytes in all); absent for
   * chunks with `payloads` and size-only ones.
   */
  readonly framed?: Uint8Array | undefined
  /** Wall-clock (or virtual) time in ms at which the source produced the chunk. */
  readonly producedAt?: number | undefined
}

/**
 * Builds a chunk from payloads at contiguous offsets.
 *
 * @since 0.1.0
 */
export const chunkOf = (
  source: string,
  partition: number,
  firstOffset: number,
  payloads: ReadonlyArray<Uint8Array>,
  producedAt?: number
): RecordChunk => {
  let bytes = 0
  for (const p of payloads) bytes += p.byteLength
  return { _tag: "RecordChunk", source, partition, firstOffset, count: payloads.length, bytes, payloads, producedAt }
}

/**
 * The same records with their payloads framed in one buffer (see
 * {@link RecordChunk}'s `framed`), copied once; a framed or size-only chunk
 * comes back as it is.
 *
 * **When to use**
 *
 * In a source that copies its records anyway (out of a network buffer it
 * must not hold on to, or out of a generator): framing them costs one copy
 * and saves the object per record that would live until the batch's upload,
 * and the per-record copy into the body. The Kafka source frames its chunks.
 *
 * **Example**
 *
 * ```ts
 * import { Record } from "@sluice/core"
 *
 * const chunk = Record.frame(Record.chunkOf("orders", 0, 100, [new TextEncoder().encode("a"), new TextEncoder().encode("bc")]))
 * chunk.framed?.byteLength // 11: 4 + 1 + 4 + 2
 * Record.payloadsOf(chunk)?.map((p) => p.byteLength) // [1, 2]
 * ```
 *
 * @since 0.5.0
 */
export const frame = (chunk: RecordChunk): RecordChunk => {
  if (chunk.payloads === undefined) return chunk
  const framed = new Uint8Array(chunk.bytes + FRAME_HEADER_BYTES * chunk.count)
  Frames.writeFrames(framed, 0, chunk.payloads)
  const { source, partition, firstOffset, count, bytes, offsets, producedAt } = chunk
  return { _tag: "RecordChunk", source, partition, firstOffset, count, bytes, offsets, framed, producedAt }
}

/**
 * The chunk's records as one view each (of the chunk's own bytes, not copies),
 * or `undefined` for a size-only chunk.
 *
 * **When to use**
 *
 * Wherever a chunk's records are read one by one (tests, a sink that handles
 * records rather than bodies): a framed chunk has no `payloads` field.
 *
 * **Example**
 *
 * ```ts
 * import { Record } from "@sluice/core"
 * declare const chunk: Record.RecordChunk
 *
 * const values = Record.payloadsOf(chunk)?.map((p) => new TextDecoder().decode(p))
 * ```
 *
 * @since 0.5.0
 */
export const payloadsOf = (chunk: RecordChunk): ReadonlyArray<Uint8Array> | undefined => {
  if (chunk.payloads !== undefined) return chunk.payloads
  return chunk.framed === undefined ? undefined : Frames.readFrames(chunk.framed)
}

/**
 * Builds a size-only chunk: `count` records of `recordBytes` each, no payloads.
 *
 * **When to use**
 *
 * In simulations, where only positions and sizes matter.
 *
 * @since 0.1.0
 */
export const syntheticChunk = (
  source: string,
  partition: number,
  firstOffset: number,
  count: number,
  recordBytes: number,
  producedAt?: number
): RecordChunk => ({
  _tag: "RecordChunk",
  source,
  partition,
  firstOffset,
  count,
  bytes: count * recordBytes,
  producedAt
})

/**
 * Offset of the record at `index` within the chunk.
 *
 * @since 0.1.0
 */
export const offsetAt = (chunk: RecordChunk, index: number): number =>
  chunk.offsets !== undefined ? (chunk.offsets[index] ?? chunk.firstOffset + index) : chunk.firstOffset + index

/**
 * Offset of the chunk's last record.
 *
 * @since 0.1.0
 */
export const lastOffset = (chunk: RecordChunk): number => offsetAt(chunk, chunk.count - 1)

/**
 * Heap bytes one record costs in a chunk besides its payload: one
 * `Uint8Array` and its slot in the chunk's array (measured; see the core
 * `stage/MemoryBudget.ts` module doc for how).
 *
 * @since 0.2.0
 */
export const RECORD_OVERHEAD_BYTES = 208

/**
 * Bytes of the length before each record of a framed chunk
 * ({@link RecordChunk}'s `framed`) and of a batch body: a big-endian uint32.
 *
 * @since 0.5.0
 */
export const FRAME_HEADER_BYTES: number = Frames.FRAME_HEADER_BYTES

/**
 * Heap bytes one listed offset costs (`chunk.offsets`, a number array).
 *
 * @since 0.2.0
 */
export const OFFSET_BYTES = 8

/**
 * What a chunk holds in memory, in bytes: its payload bytes, plus
 * {@link RECORD_OVERHEAD_BYTES} per record when it carries payloads (so a
 * zero-byte record still costs) or its 4-byte length when it is framed, plus
 * {@link OFFSET_BYTES} per listed offset.
 * Additive under {@link splitAt}. The pipeline's memory budget charges chunks
 * this way, and a source that reads ahead bounds its buffer the same way (see
 * `Source.readAheadBytes`).
 *
 * **Example**
 *
 * ```ts
 * import { Record } from "@sluice/core"
 *
 * const chunk = Record.chunkOf("t", 0, 0, [new Uint8Array(0), new Uint8Array(10)])
 * Record.heapBytes(chunk) // 426
 * Record.heapBytes(Record.frame(chunk)) // 18
 * ```
 *
 * @since 0.2.0
 */
export const heapBytes = (chunk: RecordChunk): number =>
  chunk.bytes +
  (chunk.payloads !== undefined ? chunk.count * RECORD_OVERHEAD_BYTES : chunk.framed !== undefined ? chunk.count * Frames.FRAME_HEADER_BYTES : 0) +
  (chunk.offsets !== undefined ? chunk.count * OFFSET_BYTES : 0)

/**
 * Splits a chunk at `index`: records `[0, index)` and `[index, count)`.
 *
 * **Details**
 *
 * Size-only chunks split their bytes proportionally (rounded so the halves add up).
 *
 * @since 0.1.0
 */
export const splitAt = (chunk: RecordChunk, index: number): readonly [RecordChunk, RecordChunk] => {
  if (chunk.framed !== undefined) {
    // The halves are views of the one buffer: no copy.
    const { end } = Frames.framedPrefix(chunk.framed, index, Number.POSITIVE_INFINITY)
    const headBytes = end - FRAME_HEADER_BYTES * index
    return [
      { ...chunk, count: index, bytes: headBytes, offsets: chunk.offsets?.slice(0, index), framed: chunk.framed.subarray(0, end) },
      {
        ...chunk,
        firstOffset: offsetAt(chunk, index),
        count: chunk.count - index,
        bytes: chunk.bytes - headBytes,
        offsets: chunk.offsets?.slice(index),
        framed: chunk.framed.subarray(end)
      }
    ]
  }
  const headPayloads = chunk.payloads?.slice(0, index)
  const tailPayloads = chunk.payloads?.slice(index)
  let headBytes: number
  if (headPayloads !== undefined) {
    headBytes = 0
    for (const p of headPayloads) headBytes += p.byteLength
  } else {
    headBytes = Math.round((chunk.bytes * index) / chunk.count)
  }
  const head: RecordChunk = {
    ...chunk,
    count: index,
    bytes: headBytes,
    offsets: chunk.offsets?.slice(0, index),
    payloads: headPayloads
  }
  const tail: RecordChunk = {
    ...chunk,
    firstOffset: offsetAt(chunk, index),
    count: chunk.count - index,
    bytes: chunk.bytes - headBytes,
    offsets: chunk.offsets?.slice(index),
    payloads: tailPayloads
  }
  return [head, tail]
}
