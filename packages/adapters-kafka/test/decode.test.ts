/**
 * Fetch answers to chunks: records before the fetch offset dropped, control
 * batches skipped, holes listed.
 */
import type { RecordsBatch } from "@platformatic/kafka"
import { describe, expect, it } from "vitest"
import { decodePartition } from "../src/internal/decode.ts"

const batch = (firstOffset: number, deltas: ReadonlyArray<number>, lastOffsetDelta: number, attributes = 0): RecordsBatch => ({
  firstOffset: BigInt(firstOffset),
  length: 0,
  partitionLeaderEpoch: 0,
  magic: 2,
  crc: 0,
  attributes,
  lastOffsetDelta,
  firstTimestamp: 0n,
  maxTimestamp: 0n,
  producerId: -1n,
  producerEpoch: -1,
  firstSequence: -1,
  records: deltas.map((offsetDelta) => ({
    length: 0,
    attributes: 0,
    timestampDelta: 0n,
    offsetDelta,
    key: null,
    value: Buffer.from(`r${firstOffset + offsetDelta}`),
    headers: []
  }))
})

describe("decodePartition", () => {
  it("makes one chunk of the records at or after the fetch offset", () => {
    const { chunk, next } = decodePartition("s", 3, 12, [batch(10, [0, 1, 2, 3, 4], 4), batch(15, [0, 1], 1)], 7)
    expect(next).toBe(17)
    expect(chunk).toMatchObject({ source: "s", partition: 3, firstOffset: 12, count: 5, bytes: 15, offsets: undefined, producedAt: 7 })
    expect(chunk?.payloads?.map((p) => Buffer.from(p).toString())).toEqual(["r12", "r13", "r14", "r15", "r16"])
  })

  it("skips control batches but moves past them, and lists offsets around holes", () => {
    const { chunk, next } = decodePartition("s", 0, 0, [batch(0, [0, 1], 1), batch(2, [0], 0, 0x20), batch(3, [0, 2], 2)], 0)
    expect(next).toBe(6)
    expect(chunk?.offsets).toEqual([0, 1, 3, 5])
    expect(chunk?.count).toBe(4)
  })

  it("advances over a control-only answer without a chunk", () => {
    expect(decodePartition("s", 0, 5, [batch(5, [0], 0, 0x20)], 0)).toEqual({ chunk: undefined, next: 6 })
  })
})
