import { describe, expect, it } from "@effect/vitest"
import { Record, Sealer } from "../src/index.ts"

const target = (records: number, bytes: number, maxAgeMillis = 60_000) => ({ records, bytes, maxAgeMillis })
const payloads = (sizes: ReadonlyArray<number>) => sizes.map((n) => new Uint8Array(n))

describe("Sealer", () => {
  it("seals on records, splitting a chunk across batches, and keeps the rest open", () => {
    const sealer = new Sealer.Sealer()
    const sealed = sealer.append(Record.syntheticChunk("s", 0, 0, 5, 10), target(2, 1_000), 0)
    expect(sealed.map((b) => [b.firstOffset, b.lastOffset, b.records, b.sealReason])).toEqual([
      [0, 1, 2, "records"],
      [2, 3, 2, "records"]
    ])
    expect(sealer.openBatches).toBe(1)
    expect(sealer.openBytes).toBe(10)
    const drained = sealer.sealAll("drain", 5)
    expect(drained.map((b) => [b.firstOffset, b.lastOffset, b.sealReason, b.sequence])).toEqual([[4, 4, "drain", 2]])
  })

  it("seals on bytes at the record that would overflow the target", () => {
    const sealer = new Sealer.Sealer()
    const chunk = Record.chunkOf("s", 1, 100, payloads([40, 40, 40, 40]))
    const sealed = sealer.append(chunk, target(1_000, 100), 0)
    expect(sealed).toHaveLength(1)
    expect(sealed[0]?.sealReason).toBe("bytes")
    expect(sealed[0]?.records).toBe(2)
    expect(sealed[0]?.bytes).toBe(80)
    expect(sealer.openBytes).toBe(80)
  })

  it("a record larger than the byte target still makes progress", () => {
    const sealer = new Sealer.Sealer()
    const sealed = sealer.append(Record.chunkOf("s", 0, 0, payloads([500, 10])), target(1_000, 100), 0)
    expect(sealed[0]?.records).toBe(1)
    expect(sealed[0]?.bytes).toBe(500)
  })

  it("stagger: partitions fed alike seal at different moments, each below or at the target, partition 0 at it", () => {
    // Ten partitions, each fed one 10-byte record per round, in lockstep: the
    // round at which each partition's first batch seals on a 100-byte target.
    const firstSeals = (stagger: number) => {
      const sealer = new Sealer.Sealer({ stagger })
      const sealedAt = new Map<number, number>()
      const sizes: Array<number> = []
      for (let round = 0; round < 40; round++) {
        for (let p = 0; p < 10; p++) {
          for (const b of sealer.append(Record.syntheticChunk("s", p, round, 1, 10), target(1_000, 100), round)) {
            if (!sealedAt.has(b.partition)) sealedAt.set(b.partition, round)
            sizes.push(b.bytes)
          }
        }
      }
      return { rounds: [...sealedAt.values()], sizes }
    }
    const inStep = firstSeals(0)
    expect(new Set(inStep.rounds)).toEqual(new Set([9]))
    const staggered = firstSeals(0.25)
    // At 0.25 the ten partitions seal at 0.75–1× the target: rounds 7 to 9, not one.
    expect(new Set(staggered.rounds).size).toBeGreaterThan(1)
    expect(Math.min(...staggered.rounds)).toBeGreaterThanOrEqual(7)
    expect(Math.max(...staggered.sizes)).toBeLessThanOrEqual(100)
    // A batch seals at the record that would pass its share: within one record (10 B) of it.
    expect(Math.min(...staggered.sizes)).toBeGreaterThan(75 - 10)
    expect(Sealer.staggerFactor(0, 0.25)).toBe(1)
    // Shares spread over (1 − stagger, 1], no two of the first hundred partitions alike.
    const shares = Array.from({ length: 100 }, (_, p) => Sealer.staggerFactor(p, 0.25))
    expect(new Set(shares).size).toBe(100)
    expect(Math.min(...shares)).toBeGreaterThan(0.75)
    expect(Math.max(...shares)).toBe(1)
    // A record target of 1 stays 1 (every record alone), staggered or not.
    const single = new Sealer.Sealer({ stagger: 0.25 })
    expect(single.append(Record.syntheticChunk("s", 1, 0, 3, 10), target(1, 1_000), 0).map((b) => b.records)).toEqual([1, 1, 1])
    expect(() => new Sealer.Sealer({ stagger: 1 })).toThrow(/stagger must be in \[0, 1\), got 1/)
    expect(() => new Sealer.Sealer({ stagger: Number.NaN })).toThrow(/stagger/)
  })

  it("seals on age only batches whose oldest record is old enough", () => {
    const sealer = new Sealer.Sealer()
    sealer.append(Record.syntheticChunk("s", 0, 0, 1, 10), target(100, 1_000), 0)
    sealer.append(Record.syntheticChunk("s", 1, 0, 1, 10), target(100, 1_000), 500)
    expect(sealer.sealExpired(999, 1_000)).toHaveLength(0)
    const old = sealer.sealExpired(1_000, 1_000)
    expect(old.map((b) => [b.partition, b.sealReason])).toEqual([[0, "age"]])
    expect(sealer.openBatches).toBe(1)
  })

  it("seals on age at most the limit given, the longest open first; the others keep filling", () => {
    const sealer = new Sealer.Sealer()
    // Partitions open in the order 2, 0, 1; partition 2 reopens last after a seal.
    sealer.append(Record.syntheticChunk("s", 2, 0, 1, 10), target(100, 1_000), 0)
    sealer.append(Record.syntheticChunk("s", 0, 0, 1, 10), target(100, 1_000), 100)
    sealer.append(Record.syntheticChunk("s", 1, 0, 1, 10), target(100, 1_000), 200)
    expect(sealer.sealExpired(2_000, 1_000, 1).map((b) => b.partition)).toEqual([2])
    sealer.append(Record.syntheticChunk("s", 2, 1, 1, 10), target(100, 1_000), 2_000)
    sealer.append(Record.syntheticChunk("s", 0, 1, 1, 10), target(100, 1_000), 2_000)
    expect(sealer.sealExpired(3_000, 1_000, 0)).toHaveLength(0)
    const next = sealer.sealExpired(3_000, 1_000, 2)
    expect(next.map((b) => [b.partition, b.records])).toEqual([[0, 2], [1, 1]])
    expect(sealer.sealExpired(3_000, 1_000).map((b) => b.partition)).toEqual([2])
  })

  it("a batch held open past maxAge is sealed before a younger batch sealed on its target overtakes it", () => {
    const sealer = new Sealer.Sealer()
    // A trickle partition (1) opens first and reaches maxAge with no room: held.
    sealer.append(Record.syntheticChunk("s", 1, 0, 1, 10), target(100, 1_000), 0)
    sealer.append(Record.syntheticChunk("s", 0, 0, 50, 10), target(100, 1_000), 500)
    expect(sealer.sealExpired(1_000, 1_000, 0)).toHaveLength(0)
    // A hot partition (0), opened after it, fills its target: the held batch goes first.
    const sealed = sealer.append(Record.syntheticChunk("s", 0, 50, 50, 10), target(100, 1_000), 1_200)
    expect(sealed.map((b) => [b.partition, b.sealReason])).toEqual([[1, "age"], [0, "records"]])
    // Not held (sealExpired never left it open for want of room): no early seal.
    const fresh = new Sealer.Sealer()
    fresh.append(Record.syntheticChunk("s", 1, 0, 1, 10), target(100, 1_000), 0)
    fresh.append(Record.syntheticChunk("s", 0, 0, 50, 10), target(100, 1_000), 500)
    expect(fresh.append(Record.syntheticChunk("s", 0, 50, 50, 10), target(100, 1_000), 1_200).map((b) => b.partition)).toEqual([0])
  })

  it("keys are deterministic from source, partition and offsets", () => {
    const a = new Sealer.Sealer({ prefix: "arch" }).append(Record.syntheticChunk("s", 3, 10, 4, 1), target(4, 100), 0)
    const b = new Sealer.Sealer({ prefix: "arch" }).append(Record.syntheticChunk("s", 3, 10, 4, 1), target(4, 100), 99)
    expect(a[0]?.key).toBe("arch/s/p=00003/00000000000000000010-00000000000000000013.rec")
    expect(a[0]?.key).toBe(b[0]?.key)
  })

  it("drop abandons open batches and records gaps on the next batch", () => {
    const sealer = new Sealer.Sealer()
    sealer.append(Record.syntheticChunk("s", 0, 0, 3, 10), target(100, 1_000), 0)
    expect(sealer.drop("s", [0])).toBe(30)
    expect(sealer.openBytes).toBe(0)
    sealer.recordGap("s", 0, { expected: 3, logStart: 10, lostRecords: 7 })
    sealer.append(Record.syntheticChunk("s", 0, 10, 2, 10), target(100, 1_000), 0)
    const [batch] = sealer.sealAll("drain", 1)
    expect(batch?.gap).toEqual({ expected: 3, logStart: 10, lostRecords: 7 })
  })
})
