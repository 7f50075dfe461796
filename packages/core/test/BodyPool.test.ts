/**
 * Pooled bodies (`Batch.recycleBody`, `Sink.keepsBodies`): a recycled body's
 * memory is reused for a later batch, never while a sink may still read it.
 * Checked from outside: the bytes a sink holds during its `putObject`, and the
 * records decoded from what it stored against what the source produced. Pooled
 * bodies live in shared memory: their bytes against a framing built here.
 */
import { Buffer } from "node:buffer"
import { crc32 } from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import fc from "fast-check"
import { Batch, Memory, Pipeline, Record } from "../src/index.ts"
import type { Sink } from "../src/index.ts"
import * as Bodies from "../src/internal/bodies.ts"
import * as Frames from "../src/internal/frames.ts"
import { runVirtual, sharedBytes } from "./support.ts"

const PARTITIONS = 2
/** Records per partition (`Memory.source`'s `records`). */
const PER_PARTITION = 10_000
const RECORDS = PARTITIONS * PER_PARTITION
const RECORD_BYTES = 100
/** 1 000 records of 100 B: 104 000-byte bodies, above the pool's 64 KiB floor. */
const BATCH_RECORDS = 1_000

/** Every record id (`t/<partition>/<offset>`) in the bodies, with how often it appears. */
const idsIn = (bodies: Iterable<Uint8Array>): Map<string, number> => {
  const decoder = new TextDecoder()
  const ids = new Map<string, number>()
  for (const body of bodies) {
    for (const payload of Batch.decodeBody(body)) {
      const id = decoder.decode(payload).replace(/\.+$/, "")
      ids.set(id, (ids.get(id) ?? 0) + 1)
    }
  }
  return ids
}

const expectEveryRecordOnce = (ids: Map<string, number>) => {
  expect(ids.size).toBe(RECORDS)
  for (let p = 0; p < PARTITIONS; p++) {
    for (let o = 0; o < PER_PARTITION; o++) expect(ids.get(`t/${p}/${o}`), `t/${p}/${o}`).toBe(1)
  }
}

/**
 * The framing of `payloads`, built outside the code under test: per record a
 * big-endian uint32 length, then its bytes.
 */
const framingOf = (payloads: ReadonlyArray<Uint8Array>): Buffer =>
  Buffer.concat(payloads.flatMap((p) => [Buffer.from([p.byteLength >>> 24, (p.byteLength >>> 16) & 255, (p.byteLength >>> 8) & 255, p.byteLength & 255]), p]))

describe("pooled bodies", () => {
  it.effect("a sink that keeps no bodies gets recycled memory, never overwritten while its putObject runs", () =>
    Effect.gen(function*() {
      const copies = new Map<string, Uint8Array>()
      const buffers = new Set<ArrayBufferLike>()
      let overwritten = 0
      let puts = 0
      const sink: Sink.Sink = {
        name: "copying",
        keepsBodies: false,
        putObject: (batch) =>
          Effect.gen(function*() {
            const body = Batch.encodeBody(batch)
            const before = body.slice()
            buffers.add(body.buffer)
            puts++
            // Eight uploads overlap while this one "sends": others encode meanwhile.
            yield* Effect.sleep(40)
            if (!Buffer.from(before).equals(Buffer.from(body))) overwritten++
            copies.set(batch.key, before)
            return { key: batch.key, objectBytes: body.byteLength, checksum: { algorithm: "COPY", value: batch.key } }
          }),
        putManifest: () => Effect.void,
        verify: (receipt) => Effect.succeed(receipt)
      }
      const source = Memory.source({ name: "t", partitions: PARTITIONS, records: PER_PARTITION, recordBytes: RECORD_BYTES })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { concurrency: 8, batch: { stagger: 0, records: BATCH_RECORDS } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(overwritten).toBe(0)
      expectEveryRecordOnce(idsIn(copies.values()))
      // The pool is in use: 20 bodies written into fewer buffers.
      expect(puts).toBe(RECORDS / BATCH_RECORDS)
      expect(buffers.size).toBeLessThan(puts)
    }))

  it.effect("a sink that keeps bodies (the default) holds bytes nothing overwrites", () =>
    Effect.gen(function*() {
      const memory = Memory.sink()
      const buffers = new Set<ArrayBufferLike>()
      const sink: Sink.Sink = {
        ...memory,
        putObject: (batch) => {
          buffers.add(Batch.encodeBody(batch).buffer)
          return memory.putObject(batch)
        }
      }
      const source = Memory.source({ name: "t", partitions: PARTITIONS, records: PER_PARTITION, recordBytes: RECORD_BYTES })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { concurrency: 8, batch: { stagger: 0, records: BATCH_RECORDS } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expectEveryRecordOnce(idsIn([...memory.objects.values()].map((o) => o.body)))
      expect(buffers.size).toBe(RECORDS / BATCH_RECORDS)
    }))

  it("gives a buffer to one body at a time, keeps at most 8 free buffers of at most 128 MiB, and takes back a compressed batch's framed body", () => {
    Bodies.drainPool()
    const batchOf = (n: number, partition = 0) =>
      Batch.make({ source: "p", partition, firstOffset: 0, payloads: Array.from({ length: n }, () => new Uint8Array(3_000)) })
    // Recycled twice: the buffer goes back once, so two new bodies never share it.
    const a = batchOf(100)
    const bodyA = Batch.encodeBody(a)
    Batch.recycleBody(a)
    Batch.recycleBody(a)
    const b = Batch.encodeBody(batchOf(100, 1))
    const c = Batch.encodeBody(batchOf(100, 2))
    expect(b.buffer).toBe(bodyA.buffer)
    expect(c.buffer).not.toBe(b.buffer)
    // Released (not recycled): never reused.
    const d = batchOf(100, 3)
    const bodyD = Batch.encodeBody(d)
    Batch.releaseBody(d)
    expect(Batch.encodeBody(batchOf(100, 4)).buffer).not.toBe(bodyD.buffer)
    // Bounds: 20 recycled bodies (of 601 200 bytes) leave at most 8 free buffers, ≤ 128 MiB.
    const many = Array.from({ length: 20 }, (_, i) => batchOf(200, 10 + i))
    for (const batch of many) Batch.encodeBody(batch)
    for (const batch of many) Batch.recycleBody(batch)
    expect(Bodies.poolStats().buffers).toBeLessThanOrEqual(Bodies.MAX_FREE)
    expect(Bodies.poolStats().buffers).toBeGreaterThan(0)
    expect(Bodies.poolStats().bytes).toBeLessThanOrEqual(Bodies.MAX_FREE_BYTES)
    // A compressed batch: its framed body goes back to the pool once compressed, and the
    // stored (compressed) body reads back as the records it was made of.
    Bodies.drainPool()
    const payloads = Array.from({ length: 100 }, (_, i) => new TextEncoder().encode(`z/${i}`.padEnd(3_000, ".")))
    const zipped = Batch.make({ source: "z", partition: 0, firstOffset: 0, payloads, compression: { codec: "gzip" } })
    const stored = Batch.encodeBody(zipped)
    expect(Bodies.poolStats().buffers).toBe(1)
    const manifest = Batch.manifestOf(zipped, { algorithm: "NONE", value: "" })
    expect(Batch.decodeObject(manifest, stored).map((p) => new TextDecoder().decode(p).replace(/\.+$/, ""))).toEqual(
      payloads.map((_, i) => `z/${i}`)
    )
    // A recycled buffer holds old bytes: a size-only (simulated) batch still encodes zero payloads.
    const sized = Batch.make({ source: "p", partition: 99, firstOffset: 0, payloads: [] })
    const simulated: Batch.SealedBatch = {
      ...sized,
      records: 100,
      bytes: 100 * 1_000,
      chunks: [{ _tag: "RecordChunk", source: "p", partition: 99, firstOffset: 0, count: 100, bytes: 100 * 1_000 }]
    }
    const zeroes = Batch.decodeBody(Batch.encodeBody(simulated))
    expect(zeroes.length).toBe(100)
    expect(zeroes.every((p) => p.byteLength === 1_000 && p.every((byte) => byte === 0))).toBe(true)
  })

  it("a batch target that moves by a few per cent a batch keeps writing into the buffers it just used", () => {
    Bodies.drainPool()
    const payload = new Uint8Array(3_000)
    const buffers = new Set<ArrayBufferLike>()
    // Bodies of 6.9 to 8.6 MB, up 80 records (~3.5 %) a batch and back, as AdaptiveBatch walks
    // its target; each recycled once stored. Across 8 MiB: two powers of two, two buffers.
    for (let i = 0; i < 24; i++) {
      const batch = Batch.make({
        source: "moving",
        partition: 0,
        firstOffset: i * 10_000,
        payloads: Array.from({ length: 2_300 + (i % 8) * 80 }, () => payload)
      })
      buffers.add(Batch.encodeBody(batch).buffer)
      Batch.recycleBody(batch)
    }
    expect(buffers.size).toBeLessThanOrEqual(2)
  })

  it("takes the most recently freed buffer that fits, and drops the least recently freed when full", () => {
    Bodies.drainPool()
    const batchOf = (n: number, partition: number) =>
      Batch.make({ source: "lifo", partition, firstOffset: 0, payloads: Array.from({ length: n }, () => new Uint8Array(1_000)) })
    // Nine bodies of the same size in flight at once, then stored in order: the free list keeps 8.
    const batches = Array.from({ length: Bodies.MAX_FREE + 1 }, (_, i) => batchOf(100, i))
    const bufferOf = batches.map((b) => Batch.encodeBody(b).buffer)
    for (const b of batches) Batch.recycleBody(b)
    expect(Bodies.poolStats().buffers).toBe(Bodies.MAX_FREE)
    // The next bodies get the buffers back newest first; the first one freed was dropped.
    const again = Array.from({ length: Bodies.MAX_FREE + 1 }, (_, i) => Batch.encodeBody(batchOf(100, 100 + i)).buffer)
    expect(again.map((b) => bufferOf.indexOf(b))).toEqual([8, 7, 6, 5, 4, 3, 2, 1, -1])
  })
})

describe("pooled bodies in shared memory", () => {
  it("a body of 64 KiB or more lives in a SharedArrayBuffer and holds exactly the framed records, at any alignment", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 9_000 }), { minLength: 8, maxLength: 40 }), (sizes) => {
        const payloads = sizes.map((size, i) => sharedBytes(size, i + 1).slice())
        // Chunks of odd record counts: framed buffers of odd lengths, copied at unaligned offsets.
        const chunks: Array<Record.RecordChunk> = []
        for (let from = 0; from < payloads.length; from += 3) {
          const views = Record.chunkOf("t", 0, from, payloads.slice(from, from + 3))
          const framed = Record.frame(views).framed
          chunks.push(framed === undefined ? views : { ...views, payloads: undefined, framed })
        }
        const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads })
        const sealed: Batch.SealedBatch = { ...batch, chunks }
        const body = Batch.encodeBody(sealed)
        if (body.byteLength >= 64 * 1024) expect(body.buffer).toBeInstanceOf(SharedArrayBuffer)
        expect(Batch.decodeBody(body).map((p) => crc32(p))).toEqual(payloads.map((p) => crc32(p)))
        Batch.releaseBody(sealed)
      }),
      { numRuns: 40 }
    )
  })

  it("records one per view (not framed) land in a shared body exactly as framed, small and large mixed, across many staging buffers", () => {
    // Mostly small records (framed in an unshared buffer, copied on when it fills), some of 384 B and more
    // (copied straight in), over 64 KiB of small ones so that the staging buffer fills several times.
    const size = fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 0, max: 383 }) }, { weight: 1, arbitrary: fc.integer({ min: 384, max: 5_000 }) })
    fc.assert(
      fc.property(fc.array(size, { minLength: 300, maxLength: 1_500 }), fc.integer({ min: 1, max: 97 }), (sizes, per) => {
        const payloads = sizes.map((n, i) => sharedBytes(n, i + 7).slice())
        const chunks: Array<Record.RecordChunk> = []
        for (let from = 0; from < payloads.length; from += per) {
          chunks.push(Record.chunkOf("t", 0, from, payloads.slice(from, from + per)))
        }
        const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads })
        const sealed: Batch.SealedBatch = { ...batch, chunks }
        const body = Batch.encodeBody(sealed)
        const expected = framingOf(payloads)
        if (body.byteLength >= 64 * 1024) expect(body.buffer).toBeInstanceOf(SharedArrayBuffer)
        expect(Buffer.from(body.buffer, body.byteOffset, body.byteLength).equals(expected)).toBe(true)
        Batch.releaseBody(sealed)
      }),
      { numRuns: 30 }
    )
  })

  it("with any staging buffer, even one smaller than a record, the frames are the same bytes", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 80 }), fc.integer({ min: 1, max: 700 }), fc.integer({ min: 0, max: 7 }), (sizes, stageBytes, at) => {
        const payloads = sizes.map((n, i) => sharedBytes(n, i + 3).slice())
        const expected = framingOf(payloads)
        const out = new Uint8Array(new SharedArrayBuffer(at + expected.byteLength))
        const end = Frames.writeFramesStaged(out, at, payloads, new Uint8Array(stageBytes))
        expect(end).toBe(at + expected.byteLength)
        expect(Buffer.from(out.buffer, at, expected.byteLength).equals(expected)).toBe(true)
      }),
      { numRuns: 100 }
    )
  })
})
