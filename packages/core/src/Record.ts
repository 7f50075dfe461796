/**
 * Records and their positions: what a {@link Source} delivers.
 *
 * A record's position is `(source, partition, offset)`. Sources deliver records in
 * **chunks** (never one at a time) so the pipeline's per-record cost stays a loop
 * iteration, not an Effect.
 *
 * @since 0.1.0
 */

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
 * record's offset). `payloads`, when present, holds one value per record; a
 * simulated source leaves it out and only reports sizes, which lets the testkit
 * simulate hundreds of millions of records without allocating them.
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
  /** Per-record payloads; absent for size-only (simulated) chunks. */
  readonly payloads?: ReadonlyArray<Uint8Array> | undefined
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
 * Heap bytes one listed offset costs (`chunk.offsets`, a number array).
 *
 * @since 0.2.0
 */
export const OFFSET_BYTES = 8

/**
 * What a chunk holds in memory, in bytes: its payload bytes, plus
 * {@link RECORD_OVERHEAD_BYTES} per record when it carries payloads (so a
 * zero-byte record still costs), plus {@link OFFSET_BYTES} per listed offset.
 * Additive under {@link splitAt}. The pipeline's memory budget charges chunks
 * this way, and a source that reads ahead bounds its buffer the same way (see
 * `Source.readAheadBytes`).
 *
 * **Example**
 *
 * ```ts
 * import { Record } from "@sluice/core"
 *
 * Record.heapBytes(Record.chunkOf("t", 0, 0, [new Uint8Array(0), new Uint8Array(10)])) // 426
 * ```
 *
 * @since 0.2.0
 */
export const heapBytes = (chunk: RecordChunk): number =>
  chunk.bytes +
  (chunk.payloads !== undefined ? chunk.count * RECORD_OVERHEAD_BYTES : 0) +
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
