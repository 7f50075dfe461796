/**
 * Turns the record batches of one partition in a fetch response (its bytes,
 * read in place by `RecordBatch.ts`) into one framed core chunk
 * (`Record.RecordChunk.framed`): every payload written, each after its
 * length as a batch body frames them, into the thread's scratch buffer in one
 * pass over the records, then copied once into a buffer of the chunk's exact
 * size. Sizing every frame first, in a pass of its own, read each record's
 * varints twice: `npm run bench:decode`, alternated, ns a record: envelope
 * 167–178 against 212–258, value 153–160 against 172–198.
 * `"value"`: each payload is the record's value. `"envelope"`: the record's
 * envelope (`RecordEnvelope.ts`'s layout). No object per record: the chunk
 * holds one buffer until its batch is stored, and the response is not held.
 *
 * @internal
 */
import type { Record } from "@sluice/core"
import { Buffer } from "node:buffer"
import { MAGIC } from "../RecordEnvelope.ts"
import { ENVELOPE_FIXED_BYTES, ENVELOPE_HEADER_BYTES, FRAME_HEADER_BYTES, TWO_32 } from "./Layout.ts"
import type { AbortedTransaction } from "./RecordBatch.ts"
import { LOG_APPEND_TIME, readBatches, RecordBatchError, RecordCursor } from "./RecordBatch.ts"

const EMPTY = new Uint8Array(0)

/** The scratch buffer's first size: a fetch answer's share of one partition (`partitionMaxBytes`, 1 MiB by default) and its frames' overhead. */
const INITIAL_SCRATCH_BYTES = 2 * 1024 * 1024
/** Kept between calls up to this size; a larger one (a partition answer beyond 16 MiB) is left to the garbage collector. */
const MAX_SCRATCH_BYTES = 16 * 1024 * 1024
/** Frames are written here first (one per thread, made on first use, used synchronously), then copied out at their exact size. */
let scratch: Uint8Array | undefined

/**
 * Copies bytes between two Uint8Arrays without allocating: `Buffer#copy`
 * takes a plain Uint8Array as `this`. `arena.set(src.subarray(…), at)` cost a
 * view object per record: 208 MB of the 420 MB the archiver allocated on its
 * heap in a 2 M-record `bench:e2e` run (V8's sampling heap profiler).
 */
const copyBytes: (this: Uint8Array, target: Uint8Array, targetStart: number, sourceStart: number, sourceEnd: number) => number =
  Buffer.prototype.copy

/** What each record becomes: its value, or its whole envelope. */
export type RecordFormat = "envelope" | "value"

export interface Decoded {
  /** The chunk, when the batches held records at or after `from`. */
  readonly chunk: Record.RecordChunk | undefined
  /** The next offset to fetch. */
  readonly next: number
}

/**
 * Records at offsets `>= from` (a fetch returns whole batches, which may start
 * before the fetch offset). Control batches and aborted transactions' batches
 * are skipped but advance `next`. Offsets are listed per record only when they
 * are not contiguous. Throws `RecordBatchError` on malformed bytes.
 */
export const decodePartition = (
  source: string,
  partition: number,
  from: number,
  records: Uint8Array,
  producedAt: number,
  format: RecordFormat,
  aborted?: ReadonlyArray<AbortedTransaction>
): Decoded => {
  const batches = readBatches(records, aborted)
  const envelopes = format === "envelope"
  // One pass: frames written into the thread's scratch buffer (grown to fit),
  // then copied once into a buffer of their exact size.
  let arena = (scratch ??= new Uint8Array(INITIAL_SCRATCH_BYTES))
  let view = new DataView(arena.buffer)
  let at = 0
  const room = (bytes: number): void => {
    if (at + bytes <= arena.byteLength) return
    const grown = new Uint8Array(Math.max(2 * arena.byteLength, at + bytes))
    grown.set(arena.subarray(0, at))
    arena = grown
    view = new DataView(grown.buffer)
  }
  let src: Uint8Array = EMPTY
  /** Writes an int32 length (-1: null) and copies the bytes from `src`. */
  const put = (start: number, length: number): void => {
    view.setInt32(at, length)
    at += 4
    if (length > 0) {
      copyBytes.call(src, arena, at, start, start + length)
      at += length
    }
  }
  // A null header key (which brokers reject) is written as an empty key, as `RecordEnvelope.encodeInto` does.
  const putHeader = (keyStart: number, keyLength: number, valueStart: number, valueLength: number): void => {
    put(keyStart, Math.max(0, keyLength))
    put(valueStart, valueLength)
  }
  let next = from
  let count = 0
  let offsets: Array<number> | undefined
  let firstOffset = -1
  let expected = -1
  let bytes = 0
  for (const batch of batches) {
    if (batch.end <= next) continue
    if (!batch.skip) {
      src = batch.records
      const appendTime = (batch.attributes & LOG_APPEND_TIME) !== 0
      const cursor = new RecordCursor(src)
      let read = 0
      while (cursor.next()) {
        read++
        const offset = batch.baseOffset + cursor.offsetDelta
        if (offset < next) continue
        room(
          FRAME_HEADER_BYTES + Math.max(0, cursor.valueLength) +
            (envelopes ? ENVELOPE_FIXED_BYTES + Math.max(0, cursor.keyLength) + ENVELOPE_HEADER_BYTES * cursor.headerCount + cursor.headerBytes : 0)
        )
        // The frame's length, written once the payload is.
        const frameAt = at
        at += FRAME_HEADER_BYTES
        if (envelopes) {
          const timestamp = appendTime ? batch.maxTimestamp : batch.firstTimestamp + cursor.timestampDelta
          arena[at] = MAGIC
          // int64 as two halves: no BigInt per record. floor keeps negative values right.
          const high = Math.floor(timestamp / TWO_32)
          view.setInt32(at + 1, high)
          view.setUint32(at + 5, timestamp - high * TWO_32)
          at += 9
          put(cursor.keyStart, cursor.keyLength)
          view.setInt32(at, cursor.headerCount)
          at += 4
          if (cursor.headerCount > 0) cursor.forEachHeader(putHeader)
          put(cursor.valueStart, cursor.valueLength)
        } else if (cursor.valueLength > 0) {
          // A null value (a tombstone) is an empty payload.
          copyBytes.call(src, arena, at, cursor.valueStart, cursor.valueStart + cursor.valueLength)
          at += cursor.valueLength
        }
        const payloadBytes = at - frameAt - FRAME_HEADER_BYTES
        view.setUint32(frameAt, payloadBytes)
        if (firstOffset < 0) {
          firstOffset = offset
        } else if (offset !== expected && offsets === undefined) {
          // First hole: list every offset from here on (and those before it).
          offsets = new Array<number>(count)
          for (let i = 0; i < count; i++) offsets[i] = firstOffset + i
        }
        offsets?.push(offset)
        count++
        bytes += payloadBytes
        expected = offset + 1
      }
      if (read !== batch.count) {
        throw new RecordBatchError(`record batch at offset ${batch.baseOffset}: ${read} records, its header says ${batch.count}`)
      }
    }
    next = batch.end
  }
  if (arena !== scratch && arena.byteLength <= MAX_SCRATCH_BYTES) scratch = arena
  if (count === 0) return { chunk: undefined, next }
  return {
    chunk: {
      _tag: "RecordChunk",
      source,
      partition,
      firstOffset,
      count,
      bytes,
      offsets,
      framed: arena.slice(0, at),
      producedAt
    },
    next
  }
}
