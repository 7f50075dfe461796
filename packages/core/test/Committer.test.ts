/**
 * The committer counts only commits the source made: a `CommitRefused` (the
 * partition was taken by a rebalance between its verify and its commit) is not
 * in `recordsCommitted` and does not move the committed position, so a
 * re-assigned partition's commits from the group's real offset go through.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Record, Sealer } from "../src/index.ts"
import type { Source } from "../src/index.ts"
import { make as makeMetrics } from "../src/Metrics.ts"
import * as Committer from "../src/stage/Committer.ts"
import { make as makeStats } from "../src/stage/Stats.ts"

const batchesFrom = (firstOffset: number, n: number) => {
  const sealer = new Sealer.Sealer()
  return sealer.append(Record.syntheticChunk("s", 0, firstOffset, n * 10, 1), { records: 10, bytes: 1e9, maxAgeMillis: 1e9 }, 0)
}

describe("Committer", () => {
  it.effect("a commit the source refuses is neither counted nor taken as the committed position", () =>
    Effect.gen(function*() {
      // From outside: what the source really committed.
      const sent: Array<number> = []
      let owned = true
      const source: Pick<Source.Source, "commit"> = {
        commit: (partition, nextOffset) =>
          Effect.sync((): Source.CommitOutcome => {
            if (!owned) return { _tag: "CommitRefused", partition, nextOffset, reason: "not owned (test)" }
            sent.push(nextOffset)
          })
      }
      const stats = makeStats("open")
      const committer = yield* Committer.make({ source, stats, metrics: makeMetrics() })

      // The rebalance took partition 0 between the verify and the commit.
      const [a0, a1] = batchesFrom(0, 2)
      if (a0 === undefined || a1 === undefined) throw new Error("expected 2 batches")
      committer.register(a0)
      committer.register(a1)
      owned = false
      yield* committer.verified(a0)
      expect(sent).toEqual([])
      expect(stats.recordsCommitted).toBe(0)
      expect(stats.commitsRefused).toBe(1)
      expect(stats.committed.get("s/0")).toBeUndefined()

      // The revoke, then the partition back (the same member): re-read from the
      // group's offset (0), sealed again, committed for real.
      committer.forget("s", [0])
      owned = true
      const [b0] = batchesFrom(0, 1)
      if (b0 === undefined) throw new Error("expected a batch")
      committer.register(b0)
      yield* committer.verified(b0)
      expect(sent).toEqual([10])
      expect(stats.recordsCommitted).toBe(10)
      expect(stats.committed.get("s/0")).toBe(10)
    }))
})
