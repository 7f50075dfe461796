/**
 * Turns the record batches of one partition in a fetch response (its bytes,
 * read in place by `RecordBatch.ts`) into one core chunk. `"value"`: payloads
 * are zero-copy views into the response. `"envelope"`: payloads are record
 * envelopes (`RecordEnvelope.ts`'s layout), all written into one buffer per
 * chunk (sized first), one view per record.
 *
 * @internal
 */
import type { Record } from "@sluice/core"
import { MAGIC } from "../RecordEnvelope.ts"
import { ENVELOPE_FIXED_BYTES, ENVELOPE_HEADER_BYTES, TWO_32 } from "./Layout.ts"
import type { AbortedTransaction, WireBatch } from "./RecordBatch.ts"
import { LOG_APPEND_TIME, readBatches, RecordBatchError, RecordCursor } from "./RecordBatch.ts"

const EMPTY = new Uint8Array(0)

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
  // Envelopes: size them all first, then write them into one buffer.
  const envelopes = format === "envelope"
  const arena = envelopes ? new Uint8Array(envelopeBytes(batches, from)) : EMPTY
  const view = new DataView(arena.buffer, arena.byteOffset, arena.byteLength)
  let at = 0
  let src: Uint8Array = EMPTY
  /** Writes an int32 length (-1: null) and copies the bytes from `src`. */
  const put = (start: number, length: number): void => {
    view.setInt32(at, length)
    at += 4
    if (length > 0) {
      arena.set(src.subarray(start, start + length), at)
      at += length
    }
  }
  // A null header key (which brokers reject) is written as an empty key, as `RecordEnvelope.encodeInto` does.
  const putHeader = (keyStart: number, keyLength: number, valueStart: number, valueLength: number): void => {
    put(keyStart, Math.max(0, keyLength))
    put(valueStart, valueLength)
  }
  let next = from
  const payloads: Array<Uint8Array> = []
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
        let payload: Uint8Array
        if (envelopes) {
          const timestamp = appendTime ? batch.maxTimestamp : batch.firstTimestamp + cursor.timestampDelta
          const start = at
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
          payload = arena.subarray(start, at)
        } else {
          payload = cursor.valueLength > 0 ? src.subarray(cursor.valueStart, cursor.valueStart + cursor.valueLength) : EMPTY
        }
        if (firstOffset < 0) {
          firstOffset = offset
        } else if (offset !== expected && offsets === undefined) {
          // First hole: list every offset from here on (and those before it).
          offsets = new Array<number>(payloads.length)
          for (let i = 0; i < payloads.length; i++) offsets[i] = firstOffset + i
        }
        offsets?.push(offset)
        payloads.push(payload)
        bytes += payload.byteLength
        expected = offset + 1
      }
      if (read !== batch.count) {
        throw new RecordBatchError(`record batch at offset ${batch.baseOffset}: ${read} records, its header says ${batch.count}`)
      }
    }
    next = batch.end
  }
  if (payloads.length === 0) return { chunk: undefined, next }
  return {
    chunk: {
      _tag: "RecordChunk",
      source,
      partition,
      firstOffset,
      count: payloads.length,
      bytes,
      offsets,
      payloads,
      producedAt
    },
    next
  }
}

/** The envelope bytes of the records `decodePartition` keeps (the same skipping rules). */
const envelopeBytes = (batches: ReadonlyArray<WireBatch>, from: number): number => {
  let size = 0
  let next = from
  for (const batch of batches) {
    if (batch.end <= next) continue
    if (!batch.skip) {
      const cursor = new RecordCursor(batch.records)
      while (cursor.next()) {
        if (batch.baseOffset + cursor.offsetDelta < next) continue
        size += ENVELOPE_FIXED_BYTES + Math.max(0, cursor.keyLength) + Math.max(0, cursor.valueLength) +
          ENVELOPE_HEADER_BYTES * cursor.headerCount + cursor.headerBytes
      }
    }
    next = batch.end
  }
  return size
}
