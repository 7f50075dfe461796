import { describe, expect, it } from "@effect/vitest"
import { CommitTracker, Record, Sealer } from "../src/index.ts"

const batches = (n: number, partition = 0) => {
  const sealer = new Sealer.Sealer()
  return sealer.append(Record.syntheticChunk("s", partition, 0, n * 10, 1), { records: 10, bytes: 1e9, maxAgeMillis: 1e9 }, 0)
}

describe("CommitTracker", () => {
  it("commits only the contiguous verified prefix", () => {
    const [b0, b1, b2] = batches(3)
    if (b0 === undefined || b1 === undefined || b2 === undefined) throw new Error("expected 3 batches")
    const t = new CommitTracker.CommitTracker()
    t.register(b0)
    t.register(b1)
    t.register(b2)
    expect(t.verified(b2)).toBeUndefined()
    expect(t.verified(b1)).toBeUndefined()
    expect(t.verified(b0)).toEqual({ source: "s", partition: 0, firstOffset: 0, nextOffset: 30, records: 30 })
    expect(t.pending).toBe(0)
  })

  it("ignores batches of forgotten (revoked) partitions", () => {
    const [b0] = batches(1, 4)
    if (b0 === undefined) throw new Error("expected a batch")
    const t = new CommitTracker.CommitTracker()
    t.register(b0)
    t.forget("s", [4])
    expect(t.isPending(b0)).toBe(false)
    expect(t.verified(b0)).toBeUndefined()
  })

  it("counts the verified batches waiting behind an unverified head, and knows the oldest uncommitted batch", () => {
    const sealer = new Sealer.Sealer()
    const target = { records: 10, bytes: 1e9, maxAgeMillis: 1e9 }
    const early = sealer.append(Record.syntheticChunk("s", 0, 0, 20, 1), target, 1_000)
    const late = sealer.append(Record.syntheticChunk("s", 1, 0, 10, 1), target, 5_000)
    const [b0, b1] = early
    const [c0] = late
    if (b0 === undefined || b1 === undefined || c0 === undefined) throw new Error("expected 3 batches")
    const t = new CommitTracker.CommitTracker()
    for (const b of [b0, b1, c0]) t.register(b)
    expect(t.oldestOpenedAt()).toBe(1_000)
    expect(t.isHead(b0)).toBe(true)
    expect(t.isHead(b1)).toBe(false)
    t.verified(b1)
    t.verified(b1) // twice: counted once
    expect(t.verifiedAhead("s", 0)).toBe(1)
    expect(t.head("s", 0)?.key).toBe(b0.key)
    expect([...t.uncommitted()].map((b) => [b.partition, b.firstOffset, b.verified])).toEqual([[0, 0, false], [0, 10, true], [1, 0, false]])
    t.verified(b0)
    expect(t.verifiedAhead("s", 0)).toBe(0)
    expect(t.oldestOpenedAt()).toBe(5_000)
    t.verified(c0)
    expect(t.oldestOpenedAt()).toBeUndefined()
  })
})
