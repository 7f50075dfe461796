import { describe, expect, it } from "@effect/vitest"
import { Batch, Memory, Pipeline } from "@sluice/core"
import { Effect } from "effect"
import { CommitGuard } from "../src/index.ts"

describe("CommitGuard", () => {
  it.effect("sees no violation in a correct run", () =>
    Effect.gen(function*() {
      const sink = Memory.sink()
      const g = CommitGuard.guard(sink, Memory.source({ name: "t", partitions: 2, records: 1_000, recordBytes: 8 }))
      const stats = yield* Pipeline.run({ source: g.source, sink: g.sink, config: { batch: { records: 100 } } })
      expect(stats.recordsCommitted).toBe(2_000)
      expect(g.violations).toEqual([])
      expect(g.commits.length).toBeGreaterThan(0)
      // Every object stored was verified: 10 of partition 0 (at the target),
      // 12 of partition 1 (it seals at 84 records: `batch.stagger`).
      expect(g.verifiedKeys.size).toBe(sink.objects.size)
      expect(sink.objects.size).toBe(22)
    }))

  it.effect("reports a commit past what was verified", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 10, recordBytes: 8 })
      const g = CommitGuard.guard(Memory.sink(), source)
      yield* g.source.commit(0, 5)
      expect(g.violations).toEqual(["commit 0@5: 5 offsets in [0, 5) are not verified"])
      expect(g.committedNotVerified()).toBe(5)
    }))

  it.effect("accepts a commit over a verified batch and flags one that moves back", () =>
    Effect.gen(function*() {
      const sink = Memory.sink()
      const source = Memory.source({ name: "t", partitions: 1, records: 10, recordBytes: 8 })
      const g = CommitGuard.guard(sink, source)
      const batch: Batch.SealedBatch = {
        key: "k",
        source: "t",
        partition: 0,
        sequence: 0,
        firstOffset: 0,
        lastOffset: 4,
        records: 5,
        bytes: 40,
        sealReason: "records",
        openedAt: 0,
        sealedAt: 0,
        chunks: []
      }
      const receipt = yield* g.sink.putObject(batch)
      yield* g.sink.verify(receipt)
      yield* g.source.commit(0, 5)
      yield* g.source.commit(0, 3)
      expect(g.violations).toEqual(["commit 0@3 moves back from 5"])
    }))
})
