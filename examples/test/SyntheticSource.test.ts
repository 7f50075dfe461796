/**
 * examples/soak/SyntheticSource: the soak's rate-paced source, on a clock the
 * test moves. Its records come at fresh, contiguous offsets per partition
 * whether their bytes are pooled or fresh; a pooled source hands out at most
 * its pool's bytes of distinct payloads however much it is read; a fresh one writes
 * each record's partition and offset into it.
 */
import type { Record } from "@sluice/core"
import { Effect, Stream } from "effect"
import { describe, expect, it } from "vitest"
import * as SyntheticSource from "../soak/SyntheticSource.ts"

/** The pool of the sources here: 64 chunks of 1 000 records of 32 B. */
const POOL_BYTES = 64 * 1000 * 32

/** A source of 1 M records/s over 3 partitions whose clock moves 100 ms each time it is read. */
const sourceOf = (payloads: SyntheticSource.PayloadKind) => {
  let now = 0
  return SyntheticSource.make({ name: "t", rate: 1_000_000, partitions: 3, recordBytes: 32, payloads, poolBytes: POOL_BYTES, now: () => (now += 100) })
}

/** The chunks of a source until `records` are read. */
const chunksOf = (payloads: SyntheticSource.PayloadKind, records: number, source = sourceOf(payloads)): Array<Record.RecordChunk> => {
  const out: Array<Record.RecordChunk> = []
  Effect.runSync(
    source.events.pipe(
      Stream.takeUntil((e) => {
        if (e._tag === "RecordChunk") out.push(e)
        return out.reduce((n, c) => n + c.count, 0) >= records
      }),
      Stream.runDrain
    )
  )
  return out
}

describe("SyntheticSource", () => {
  for (const payloads of ["pooled", "fresh"] as const) {
    it(`${payloads}: contiguous fresh offsets per partition, one payload per record of the declared size`, () => {
      const chunks = chunksOf(payloads, 50_000)
      const next = new Map<number, number>()
      for (const c of chunks) {
        expect(c.firstOffset).toBe(next.get(c.partition) ?? 0)
        next.set(c.partition, c.firstOffset + c.count)
        expect(c.payloads?.length).toBe(c.count)
        expect(c.bytes).toBe(c.count * 32)
        for (const p of c.payloads ?? []) expect(p.byteLength).toBe(32)
      }
      expect([...next.keys()].sort()).toEqual([0, 1, 2])
    })
  }

  it("pooled: reuses at most its pool's payloads however many records are read", () => {
    const poolRecords = POOL_BYTES / 32
    const read = 3 * poolRecords
    const distinct = new Set<Uint8Array>()
    let records = 0
    for (const c of chunksOf("pooled", read)) {
      records += c.count
      for (const p of c.payloads ?? []) distinct.add(p)
    }
    expect(records).toBeGreaterThanOrEqual(read)
    expect(distinct.size).toBeLessThanOrEqual(poolRecords)
    expect(distinct.size).toBeGreaterThan(poolRecords / 2)
  })

  it("fresh: each record is its own view, holding its partition and offset", () => {
    const distinct = new Set<Uint8Array>()
    for (const c of chunksOf("fresh", 20_000)) {
      c.payloads?.forEach((p, i) => {
        distinct.add(p)
        const view = new DataView(p.buffer, p.byteOffset, p.byteLength)
        expect(view.getUint32(0)).toBe(c.partition)
        expect(view.getFloat64(4)).toBe(c.firstOffset + i)
      })
    }
    expect(distinct.size).toBeGreaterThanOrEqual(20_000)
  })

  it("schedules by the clock: what is read never passes what the rate offered", () => {
    const source = sourceOf("pooled")
    const total = chunksOf("pooled", 30_000, source).reduce((n, c) => n + c.count, 0)
    const { scheduled, read } = source.progress()
    expect(read).toBe(total)
    expect(read).toBeLessThanOrEqual(scheduled)
  })
})
