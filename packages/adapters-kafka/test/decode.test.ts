/**
 * Fetch answers to chunks: records before the fetch offset dropped, control
 * batches skipped, holes listed; payloads as raw values or as record envelopes.
 */
import { createRecordsBatch, Reader, readRecordsBatches } from "@platformatic/kafka"
import type { MessageRecord, RecordsBatch } from "@platformatic/kafka"
import { Record } from "@sluice/core"
import { describe, expect, it } from "vitest"
import { decodePartition } from "../src/internal/decode.ts"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"
import { batchBytes, recordBytes, wire } from "./wire.ts"

/** A decoded chunk's payloads (the decoder frames them in one buffer). */
const payloadsOf = (chunk: Record.RecordChunk | undefined) => (chunk === undefined ? undefined : Record.payloadsOf(chunk))

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
    const { chunk, next } = decodePartition("s", 3, 12, wire([batch(10, [0, 1, 2, 3, 4], 4), batch(15, [0, 1], 1)]), 7, "value")
    expect(next).toBe(17)
    expect(chunk).toMatchObject({ source: "s", partition: 3, firstOffset: 12, count: 5, bytes: 15, offsets: undefined, producedAt: 7 })
    expect(payloadsOf(chunk)?.map((p) => Buffer.from(p).toString())).toEqual(["r12", "r13", "r14", "r15", "r16"])
  })

  it("skips control batches but moves past them, and lists offsets around holes", () => {
    const { chunk, next } = decodePartition("s", 0, 0, wire([batch(0, [0, 1], 1), batch(2, [0], 0, 0x20), batch(3, [0, 2], 2)]), 0, "value")
    expect(next).toBe(6)
    expect(chunk?.offsets).toEqual([0, 1, 3, 5])
    expect(chunk?.count).toBe(4)
  })

  it("advances over a control-only answer without a chunk", () => {
    expect(decodePartition("s", 0, 5, wire([batch(5, [0], 0, 0x20)]), 0, "value")).toEqual({ chunk: undefined, next: 6 })
    expect(decodePartition("s", 0, 5, wire([batch(5, [0], 0, 0x20)]), 0, "envelope")).toEqual({ chunk: undefined, next: 6 })
  })

  it("value format: the values are copied, framed, into one buffer of the chunk (the response is not held); a null value is empty", () => {
    const b = batch(0, [0, 1], 1)
    const first = b.records[0]
    const second = b.records[1]
    if (first === undefined || second === undefined) throw new Error("no records")
    second.value = null
    const response = wire([b])
    const { chunk } = decodePartition("s", 0, 0, response, 0, "value")
    const payload = payloadsOf(chunk)?.[0]
    expect(chunk?.payloads).toBeUndefined()
    expect(payload?.buffer).toBe(chunk?.framed?.buffer)
    expect(payload?.buffer).not.toBe(response.buffer)
    expect(Buffer.from(payload ?? []).toString()).toBe("r0")
    expect(payloadsOf(chunk)?.[1]?.byteLength).toBe(0)
    expect(chunk?.bytes).toBe(2)
    // Each value after its big-endian length, as a batch body frames it.
    expect([...(chunk?.framed ?? [])]).toEqual([0, 0, 0, 2, 0x72, 0x30, 0, 0, 0, 0]) // "r0", then the empty value
  })

  it("decodes an answer larger than its scratch buffer whole, and a chunk keeps its bytes through later decodes", () => {
    // 3 × 1 000 records of 1 000 B: frames of ~3 MB, past the decoder's first 2 MiB of scratch.
    const big = (firstOffset: number, tag: string): RecordsBatch => {
      const b = batch(firstOffset, Array.from({ length: 1_000 }, (_, i) => i), 999)
      for (const r of b.records) r.value = Buffer.from(`${tag}${firstOffset + r.offsetDelta}`.padEnd(1_000, "."))
      return b
    }
    const expected = (tag: string) => Array.from({ length: 3_000 }, (_, i) => `${tag}${i}`.padEnd(1_000, "."))
    for (const format of ["value", "envelope"] as const) {
      const text = (chunk: Record.RecordChunk | undefined) =>
        (payloadsOf(chunk) ?? []).map((p) => Buffer.from(format === "value" ? p : RecordEnvelope.decode(p).value ?? []).toString())
      const first = decodePartition("s", 0, 0, wire([big(0, "a"), big(1_000, "a"), big(2_000, "a")]), 0, format)
      expect(first.next).toBe(3_000)
      expect(text(first.chunk)).toEqual(expected("a"))
      expect(first.chunk?.framed?.buffer.byteLength).toBe(first.chunk?.framed?.byteLength)
      // The next answers reuse the decoder's scratch; the first chunk's bytes stay as they were.
      const second = decodePartition("s", 0, 0, wire([big(0, "b"), big(1_000, "b"), big(2_000, "b")]), 0, format)
      decodePartition("s", 0, 0, wire([batch(0, [0, 1], 1)]), 0, format)
      expect(text(second.chunk)).toEqual(expected("b"))
      expect(text(first.chunk)).toEqual(expected("a"))
    }
  })

  it("leaves out a partial batch at the end of the response (the broker cuts at its size limit)", () => {
    const whole = wire([batch(0, [0, 1], 1), batch(2, [0, 1, 2], 2)])
    for (const cut of [whole.byteLength - 1, whole.byteLength - 30, batchBytes(batch(0, [0, 1], 1)).byteLength + 5]) {
      const { chunk, next } = decodePartition("s", 0, 0, whole.subarray(0, cut), 0, "value")
      expect(next).toBe(2)
      expect(chunk?.count).toBe(2)
    }
    expect(decodePartition("s", 0, 0, whole.subarray(0, 11), 0, "value")).toEqual({ chunk: undefined, next: 0 })
  })

  it("fails on malformed batches instead of guessing: magic, record count, a record past its batch", () => {
    const b = batch(0, [0, 1], 1)
    expect(() => decodePartition("s", 0, 0, batchBytes(b, { magic: 1 }), 0, "value")).toThrow(/magic 1/)
    expect(() => decodePartition("s", 0, 0, batchBytes(b, { count: 3 }), 0, "value")).toThrow(/2 records, its header says 3/)
    const records = recordBytes(b)
    // The first record's length varint (zig-zag 2n) claims 60 bytes more than there are.
    const long = Buffer.from(records)
    long[0] = (long[0] ?? 0) + 120
    expect(() => decodePartition("s", 0, 0, batchBytes(b, { records: long }), 0, "envelope")).toThrow(/malformed record/)
    expect(() => decodePartition("s", 0, 0, batchBytes(b, { records: records.subarray(0, records.byteLength - 1) }), 0, "value"))
      .toThrow(/malformed record/)
    // A record whose length covers a byte its fields do not use.
    const one = batch(0, [0], 0)
    const padded = Buffer.concat([recordBytes(one), Buffer.from([0])])
    padded[0] = (padded[0] ?? 0) + 2
    expect(() => decodePartition("s", 0, 0, batchBytes(one, { records: padded }), 0, "value")).toThrow(/holds/)
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
    const { chunk, next } = decodePartition("s", 1, 11, wire([keyed(10, 4), keyed(14, 2)]), 3, "envelope")
    expect(next).toBe(16)
    expect(chunk).toMatchObject({ source: "s", partition: 1, firstOffset: 11, count: 5, offsets: undefined, producedAt: 3 })
    const records = (payloadsOf(chunk) ?? []).map(RecordEnvelope.decode)
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
    expect(chunk?.bytes).toBe((payloadsOf(chunk) ?? []).reduce((a, p) => a + p.byteLength, 0))
  })

  it("writes all envelopes of a chunk into one buffer, framed: no object per record", () => {
    const { chunk } = decodePartition("s", 0, 0, wire([keyed(0, 3), keyed(3, 3)]), 0, "envelope")
    expect(chunk?.payloads).toBeUndefined()
    expect(chunk?.framed?.byteLength).toBe((chunk?.bytes ?? 0) + Record.FRAME_HEADER_BYTES * 6)
    const payloads = payloadsOf(chunk) ?? []
    expect(payloads.length).toBe(6)
    expect(payloads.every((p) => p.buffer === chunk?.framed?.buffer)).toBe(true)
    expect(chunk?.framed?.buffer.byteLength).toBe(chunk?.framed?.byteLength)
  })

  it("uses the batch's max timestamp for every record of a LogAppendTime batch", () => {
    const { chunk } = decodePartition("s", 0, 0, wire([keyed(0, 3, 0x08)]), 0, "envelope")
    expect((payloadsOf(chunk) ?? []).map((p) => RecordEnvelope.decode(p).timestamp)).toEqual([1_700_000_009_999, 1_700_000_009_999, 1_700_000_009_999])
  })

  it("skips control batches and records before the fetch offset, and lists offsets around holes", () => {
    const { chunk, next } = decodePartition("s", 0, 1, wire([batch(0, [0, 1], 1), batch(2, [0], 0, 0x20), batch(3, [0, 2], 2)]), 0, "envelope")
    expect(next).toBe(6)
    expect(chunk?.offsets).toEqual([1, 3, 5])
    expect((payloadsOf(chunk) ?? []).map((p) => str(RecordEnvelope.decode(p).value))).toEqual(["r1", "r3", "r5"])
  })
})

describe("decodePartition against the client's own batch writer and reader", () => {
  const messages = Array.from({ length: 50 }, (_, i): MessageRecord => ({
    topic: "t",
    ...(i % 3 === 0 ? {} : { key: Buffer.from(`key-${i}`) }),
    value: Buffer.alloc(i * 7, i),
    ...(i % 4 === 0 ? { headers: new Map([[Buffer.from("h1"), Buffer.from(`v${i}`)], [Buffer.from(""), Buffer.alloc(0)]]) } : {}),
    timestamp: 1_700_000_000_000n + BigInt(i * i)
  }))

  for (const compression of ["none", "gzip", "zstd"] as const) {
    it(`reads what createRecordsBatch writes, compression ${compression}, as the client's readRecordsBatches does`, () => {
      const first = createRecordsBatch(messages.slice(0, 20), { compression }).buffer
      const second = createRecordsBatch(messages.slice(20), { compression }).buffer
      // The writer numbers both batches from offset 0: put the second at offset 20.
      second.writeBigInt64BE(20n, 0)
      const response = Buffer.concat([first, second])
      const expected = readRecordsBatches(Reader.from(response)).flatMap((b) =>
        b.records.map((r) => ({
          timestamp: Number(b.firstTimestamp + r.timestampDelta),
          key: r.key === null ? null : [...r.key],
          headers: r.headers.map(([k, v]) => [k === null ? [] : [...k], v === null ? null : [...v]]),
          value: r.value === null ? null : [...r.value]
        }))
      )
      expect(expected.length).toBe(50)
      const { chunk, next } = decodePartition("s", 0, 5, response, 0, "envelope")
      expect(next).toBe(50)
      expect(chunk?.firstOffset).toBe(5)
      const got = (payloadsOf(chunk) ?? []).map((p) => {
        const e = RecordEnvelope.decode(p)
        return {
          timestamp: e.timestamp,
          key: e.key === null ? null : [...e.key],
          headers: e.headers.map(([k, v]) => [[...k], v === null ? null : [...v]]),
          value: e.value === null ? null : [...e.value]
        }
      })
      expect(got).toEqual(expected.slice(5))
      const values = payloadsOf(decodePartition("s", 0, 0, response, 0, "value").chunk) ?? []
      expect(values.map((v) => [...v])).toEqual(expected.map((r) => r.value ?? []))
    })
  }
})

describe("decodePartition with aborted transactions (read_committed)", () => {
  const producer = (b: RecordsBatch, producerId: bigint, attributes: number): RecordsBatch => ({ ...b, producerId, attributes })
  /** A control batch: one marker record, key int16 version 0, int16 type (0 abort, 1 commit). */
  const marker = (offset: number, producerId: bigint, type: number): RecordsBatch => {
    const b = batch(offset, [0], 0, 0x30)
    const key = Buffer.alloc(4)
    key.writeInt16BE(type, 2)
    return { ...b, producerId, records: b.records.map((r) => ({ ...r, key, value: Buffer.alloc(6) })) }
  }

  it("drops the batches of an aborted transaction up to its abort marker, keeps the rest and moves past all", () => {
    const response = wire([
      producer(batch(0, [0, 1], 1), 7n, 0x10), // aborted (producer 7 from offset 0)
      producer(batch(2, [0], 0), 8n, 0x10), // producer 8: committed
      marker(3, 7n, 0), // abort marker of 7
      marker(4, 8n, 1), // commit marker of 8
      producer(batch(5, [0, 1], 1), 7n, 0x10), // 7's next transaction: not aborted
      producer(batch(7, [0], 0), 9n, 0) // not transactional
    ])
    const aborted = [{ producerId: 7n, firstOffset: 0n }]
    const { chunk, next } = decodePartition("s", 0, 0, response, 0, "value", aborted)
    expect(next).toBe(8)
    expect(chunk?.offsets).toEqual([2, 5, 6, 7])
    expect((payloadsOf(chunk) ?? []).map((p) => Buffer.from(p).toString())).toEqual(["r2", "r5", "r6", "r7"])
    // Without the aborted list (read_uncommitted) every data record is kept.
    expect(decodePartition("s", 0, 0, response, 0, "value").chunk?.count).toBe(6)
  })
})
