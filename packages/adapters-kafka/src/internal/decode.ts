/**
 * Turns the record batches of one partition in a fetch response into one core
 * chunk. `"value"`: payloads are zero-copy views into the response buffer.
 * `"envelope"`: payloads are record envelopes, all written into one buffer per
 * chunk (sized first), one view per record.
 *
 * @internal
 */
import type { Record } from "@sluice/core"
import type { KafkaRecord, RecordsBatch } from "@platformatic/kafka"
import * as RecordEnvelope from "../RecordEnvelope.ts"

/** Attribute bit of a control batch (transaction markers): no user records. */
const IS_CONTROL = 0x20
/** Attribute bit of a batch whose timestamps are the broker's append time (`maxTimestamp`). */
const LOG_APPEND_TIME = 0x08
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
 * before the fetch offset). Control batches are skipped but advance `next`.
 * Offsets are listed per record only when they are not contiguous.
 */
export const decodePartition = (
  source: string,
  partition: number,
  from: number,
  batches: ReadonlyArray<RecordsBatch>,
  producedAt: number,
  format: RecordFormat
): Decoded => {
  // Envelopes: size them all first, then write them into one buffer.
  let arena: Uint8Array = EMPTY
  let view: DataView | undefined
  if (format === "envelope") {
    let size = 0
    forEachRecord(batches, from, (record) => {
      size += RecordEnvelope.encodedSize(record)
    })
    if (size > 0) {
      arena = new Uint8Array(size)
      view = new DataView(arena.buffer)
    }
  }
  let at = 0
  let next = from
  const payloads: Array<Uint8Array> = []
  let offsets: Array<number> | undefined
  let firstOffset = -1
  let expected = -1
  let bytes = 0
  for (const batch of batches) {
    const base = Number(batch.firstOffset)
    const end = base + batch.lastOffsetDelta + 1
    if (end <= next) continue
    if ((batch.attributes & IS_CONTROL) === 0) {
      const appendTime = (batch.attributes & LOG_APPEND_TIME) !== 0
      const firstTimestamp = Number(appendTime ? batch.maxTimestamp : batch.firstTimestamp)
      for (const record of batch.records) {
        const offset = base + record.offsetDelta
        if (offset < next) continue
        let payload: Uint8Array
        if (view === undefined) {
          payload = record.value ?? EMPTY
        } else {
          const timestamp = appendTime ? firstTimestamp : firstTimestamp + Number(record.timestampDelta)
          const start = at
          at = RecordEnvelope.encodeInto(arena, view, at, timestamp, record)
          payload = arena.subarray(start, at)
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
    }
    next = end
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

/** The records `decodePartition` keeps, in order (the same skipping rules). */
const forEachRecord = (batches: ReadonlyArray<RecordsBatch>, from: number, f: (record: KafkaRecord) => void): void => {
  let next = from
  for (const batch of batches) {
    const base = Number(batch.firstOffset)
    const end = base + batch.lastOffsetDelta + 1
    if (end <= next) continue
    if ((batch.attributes & IS_CONTROL) === 0) {
      for (const record of batch.records) {
        if (base + record.offsetDelta >= next) f(record)
      }
    }
    next = end
  }
}
