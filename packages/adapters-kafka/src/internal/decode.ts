/**
 * Turns the record batches of one partition in a fetch response into one core
 * chunk (zero-copy: payloads are views into the response buffer).
 *
 * @internal
 */
import type { Record } from "@sluice/core"
import type { RecordsBatch } from "@platformatic/kafka"

/** Attribute bit of a control batch (transaction markers): no user records. */
const IS_CONTROL = 0x20
const EMPTY = new Uint8Array(0)

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
  producedAt: number
): Decoded => {
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
      for (const record of batch.records) {
        const offset = base + record.offsetDelta
        if (offset < next) continue
        const value = record.value ?? EMPTY
        if (firstOffset < 0) {
          firstOffset = offset
        } else if (offset !== expected && offsets === undefined) {
          // First hole: list every offset from here on (and those before it).
          offsets = new Array<number>(payloads.length)
          for (let i = 0; i < payloads.length; i++) offsets[i] = firstOffset + i
        }
        offsets?.push(offset)
        payloads.push(value)
        bytes += value.byteLength
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
