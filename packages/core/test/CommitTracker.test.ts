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
    expect(t.verified(b0)).toEqual({ source: "s", partition: 0, nextOffset: 30, records: 30 })
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
})
