/**
 * Framed chunks (`RecordChunk.framed`): the same records as a chunk of
 * payloads, whatever is done to them — split, sealed into batches, encoded
 * into a body — and cheaper to hold (no object per record).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { Batch, Record, Sealer } from "../src/index.ts"

/** Records of the given sizes, each filled with its own index so a mix-up shows. */
const payloads = (sizes: ReadonlyArray<number>): Array<Uint8Array> => sizes.map((n, i) => new Uint8Array(n).fill(i % 251))
const bytesOf = (chunk: Record.RecordChunk): Array<Array<number>> => (Record.payloadsOf(chunk) ?? []).map((p) => [...p])
/** What a sealed batch is, beyond its chunks: and its body, encoded. */
const shape = (b: Batch.SealedBatch) => [b.firstOffset, b.lastOffset, b.records, b.bytes, b.sealReason, [...Batch.encodeBody(b)]]

const sizes = fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 30 })

describe("Record: framed chunks", () => {
  it("frame keeps every record and its bytes, in one buffer: each after its big-endian length", () => {
    const chunk = Record.chunkOf("t", 3, 100, [new TextEncoder().encode("a"), new Uint8Array(0), new TextEncoder().encode("bc")], 7)
    const framed = Record.frame(chunk)
    expect(framed.payloads).toBeUndefined()
    expect([...(framed.framed ?? [])]).toEqual([0, 0, 0, 1, 0x61, 0, 0, 0, 0, 0, 0, 0, 2, 0x62, 0x63])
    expect([framed.source, framed.partition, framed.firstOffset, framed.count, framed.bytes, framed.producedAt]).toEqual(["t", 3, 100, 3, 3, 7])
    expect(bytesOf(framed)).toEqual(bytesOf(chunk))
    // No object per record to charge: the payload and its length.
    expect(Record.heapBytes(framed)).toBe(3 + 3 * Record.FRAME_HEADER_BYTES)
    expect(Record.heapBytes(chunk)).toBe(3 + 3 * Record.RECORD_OVERHEAD_BYTES)
    // A size-only chunk has nothing to frame.
    const sizeOnly = Record.syntheticChunk("t", 0, 0, 4, 10)
    expect(Record.frame(sizeOnly)).toBe(sizeOnly)
    expect(Record.payloadsOf(sizeOnly)).toBeUndefined()
  })

  it("splitAt: the halves of a framed chunk are the framed halves of the chunk, views of its one buffer", () => {
    fc.assert(
      fc.property(sizes, fc.nat(), fc.boolean(), (sizeList, at, holes) => {
        const index = at % (sizeList.length + 1)
        const plain = holes
          ? { ...Record.chunkOf("t", 0, 10, payloads(sizeList)), offsets: sizeList.map((_, i) => 10 + 2 * i) }
          : Record.chunkOf("t", 0, 10, payloads(sizeList))
        const framed = Record.frame(plain)
        const [head, tail] = Record.splitAt(framed, index)
        const [plainHead, plainTail] = Record.splitAt(plain, index)
        for (const [got, want] of [[head, plainHead], [tail, plainTail]] as const) {
          expect([got.firstOffset, got.count, got.bytes, got.offsets]).toEqual([want.firstOffset, want.count, want.bytes, want.offsets])
          expect(bytesOf(got)).toEqual(bytesOf(want))
          expect(got.framed?.buffer).toBe(framed.framed?.buffer)
        }
        // Additive, as the memory budget needs.
        expect(Record.heapBytes(head) + Record.heapBytes(tail)).toBe(Record.heapBytes(framed))
      })
    )
  })

  it("the sealer cuts framed chunks where it cuts their payloads, and the bodies are byte for byte the same", () => {
    fc.assert(
      fc.property(
        fc.array(sizes, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 400 }),
        (chunkSizes, records, bytes) => {
          const target = { records, bytes, maxAgeMillis: 60_000 }
          const plainSealer = new Sealer.Sealer()
          const framedSealer = new Sealer.Sealer()
          let offset = 0
          const plain: Array<Batch.SealedBatch> = []
          const framed: Array<Batch.SealedBatch> = []
          for (const s of chunkSizes) {
            const chunk = Record.chunkOf("t", 0, offset, payloads(s))
            offset += s.length
            plain.push(...plainSealer.append(chunk, target, 0))
            framed.push(...framedSealer.append(Record.frame(chunk), target, 0))
          }
          plain.push(...plainSealer.sealAll("drain", 1))
          framed.push(...framedSealer.sealAll("drain", 1))
          expect(framed.map(shape)).toEqual(plain.map(shape))
          for (const b of [...plain, ...framed]) Batch.releaseBody(b)
        }
      )
    )
  })
})
