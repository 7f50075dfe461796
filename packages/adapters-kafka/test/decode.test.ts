/**
 * Fetch answers to chunks: records before the fetch offset dropped, control
 * batches skipped, holes listed; payloads as raw values or as record envelopes.
 */
import type { RecordsBatch } from "@platformatic/kafka"
import { describe, expect, it } from "vitest"
import { decodePartition } from "../src/internal/decode.ts"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"

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
    const { chunk, next } = decodePartition("s", 3, 12, [batch(10, [0, 1, 2, 3, 4], 4), batch(15, [0, 1], 1)], 7, "value")
    expect(next).toBe(17)
    expect(chunk).toMatchObject({ source: "s", partition: 3, firstOffset: 12, count: 5, bytes: 15, offsets: undefined, producedAt: 7 })
    expect(chunk?.payloads?.map((p) => Buffer.from(p).toString())).toEqual(["r12", "r13", "r14", "r15", "r16"])
  })

  it("skips control batches but moves past them, and lists offsets around holes", () => {
    const { chunk, next } = decodePartition("s", 0, 0, [batch(0, [0, 1], 1), batch(2, [0], 0, 0x20), batch(3, [0, 2], 2)], 0, "value")
    expect(next).toBe(6)
    expect(chunk?.offsets).toEqual([0, 1, 3, 5])
    expect(chunk?.count).toBe(4)
  })

  it("advances over a control-only answer without a chunk", () => {
    expect(decodePartition("s", 0, 5, [batch(5, [0], 0, 0x20)], 0, "value")).toEqual({ chunk: undefined, next: 6 })
    expect(decodePartition("s", 0, 5, [batch(5, [0], 0, 0x20)], 0, "envelope")).toEqual({ chunk: undefined, next: 6 })
  })

  it("value format: payloads are views into the response, a null value is empty", () => {
    const b = batch(0, [0, 1], 1)
    const first = b.records[0]
    const second = b.records[1]
    if (first === undefined || second === undefined) throw new Error("no records")
    second.value = null
    const { chunk } = decodePartition("s", 0, 0, [b], 0, "value")
    expect(chunk?.payloads?.[0]).toBe(first.value)
    expect(chunk?.payloads?.[1]?.byteLength).toBe(0)
    expect(chunk?.bytes).toBe(2)
  })
})

describe("decodePartition with recordFormat \"envelope\"", () => {
  const text = new TextDecoder()
  const str = (bytes: Uint8Array | null | undefined) => bytes === null || bytes === undefined ? null : text.decode(bytes)

  /** A batch of keyed records with headers and timestamps (first timestamp 1000, delta 10 × index). */
  const keyed = (firstOffset: number, count: number, attributes = 0): RecordsBatch => ({
    ...batch(firstOffset, Array.from({ length: count }, (_, i) => i), count - 1, attributes),
    firstTimestamp: 1_700_000_000_000n,
    maxTimestamp: 1_700_000_009_999n,
    records: Array.from({ length: count }, (_, i) => ({
      length: 0,
      attributes: 0,
      timestampDelta: BigInt(10 * i),
      offsetDelta: i,
      key: i === 1 ? null : Buffer.from(`k${firstOffset + i}`),
      value: i === 2 ? null : Buffer.from(`r${firstOffset + i}`),
      headers: i === 0 ? [] : [[Buffer.from("h"), Buffer.from([0, 255, i])], [Buffer.from("n"), null]]
    }))
  })

  it("wraps each record in an envelope: timestamp, key, headers, value (nulls kept)", () => {
    const { chunk, next } = decodePartition("s", 1, 11, [keyed(10, 4), keyed(14, 2)], 3, "envelope")
    expect(next).toBe(16)
    expect(chunk).toMatchObject({ source: "s", partition: 1, firstOffset: 11, count: 5, offsets: undefined, producedAt: 3 })
    const records = (chunk?.payloads ?? []).map(RecordEnvelope.decode)
    expect(records.map((r) => r.timestamp)).toEqual([1_700_000_000_010, 1_700_000_000_020, 1_700_000_000_030, 1_700_000_000_000, 1_700_000_000_010])
    expect(records.map((r) => str(r.key))).toEqual([null, "k12", "k13", "k14", null])
    expect(records.map((r) => str(r.value))).toEqual(["r11", null, "r13", "r14", "r15"])
    expect(records.map((r) => r.headers.map(([k, v]) => [str(k), v === null ? null : [...v]]))).toEqual([
      [["h", [0, 255, 1]], ["n", null]],
      [["h", [0, 255, 2]], ["n", null]],
      [["h", [0, 255, 3]], ["n", null]],
      [],
      [["h", [0, 255, 1]], ["n", null]]
    ])
    // Chunk bytes are the envelopes' bytes.
    expect(chunk?.bytes).toBe((chunk?.payloads ?? []).reduce((a, p) => a + p.byteLength, 0))
  })

  it("writes all envelopes of a chunk into one buffer, one view per record", () => {
    const { chunk } = decodePartition("s", 0, 0, [keyed(0, 3), keyed(3, 3)], 0, "envelope")
    const payloads = chunk?.payloads ?? []
    expect(payloads.length).toBe(6)
    const buffer = payloads[0]?.buffer
    expect(payloads.every((p) => p.buffer === buffer)).toBe(true)
    expect(buffer?.byteLength).toBe(chunk?.bytes)
  })

  it("uses the batch's max timestamp for every record of a LogAppendTime batch", () => {
    const { chunk } = decodePartition("s", 0, 0, [keyed(0, 3, 0x08)], 0, "envelope")
    expect((chunk?.payloads ?? []).map((p) => RecordEnvelope.decode(p).timestamp)).toEqual([1_700_000_009_999, 1_700_000_009_999, 1_700_000_009_999])
  })

  it("skips control batches and records before the fetch offset, and lists offsets around holes", () => {
    const { chunk, next } = decodePartition("s", 0, 1, [batch(0, [0, 1], 1), batch(2, [0], 0, 0x20), batch(3, [0, 2], 2)], 0, "envelope")
    expect(next).toBe(6)
    expect(chunk?.offsets).toEqual([1, 3, 5])
    expect((chunk?.payloads ?? []).map((p) => str(RecordEnvelope.decode(p).value))).toEqual(["r1", "r3", "r5"])
  })
})
