/**
 * The committer counts only commits the source made: a `CommitRefused` (the
 * partition was taken by a rebalance between its verify and its commit) is not
 * in `recordsCommitted` and does not move the committed position, so a
 * re-assigned partition's commits from the group's real offset go through.
 *
 * And it names a revoke's duplicates: records verified and not committed when
 * their partition is revoked, or verified after it, are counted as left on
 * revoke and published, offset ranges and all.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Record, Sealer } from "../src/index.ts"
import type { SignalBus, Source } from "../src/index.ts"
import { make as makeMetrics } from "../src/Metrics.ts"
import * as Committer from "../src/stage/Committer.ts"
import { make as makeStats } from "../src/stage/Stats.ts"

const batchesFrom = (firstOffset: number, n: number) => {
  const sealer = new Sealer.Sealer()
  return sealer.append(Record.syntheticChunk("s", 0, firstOffset, n * 10, 1), { records: 10, bytes: 1e9, maxAgeMillis: 1e9 }, 0)
}

/** A source that commits while it owns the partition and refuses after `own(false)`; `sent` is what it committed (from outside). */
const ownedSource = () => {
  const sent: Array<number> = []
  let owned = true
  const source: Pick<Source.Source, "commit"> = {
    commit: (partition, nextOffset) =>
      Effect.sync((): Source.CommitOutcome => {
        if (!owned) return { _tag: "CommitRefused", partition, nextOffset, reason: "not owned (test)" }
        sent.push(nextOffset)
      })
  }
  return { source, sent, own: (yes: boolean) => void (owned = yes) }
}

describe("Committer", () => {
  it.effect("a commit the source refuses is neither counted nor taken as the committed position", () =>
    Effect.gen(function*() {
      // From outside: what the source really committed.
      const { source, sent, own } = ownedSource()
      const stats = makeStats("open")
      const committer = yield* Committer.make({ source, stats, metrics: makeMetrics(), publish: () => {} })

      // The rebalance took partition 0 between the verify and the commit.
      const [a0, a1] = batchesFrom(0, 2)
      if (a0 === undefined || a1 === undefined) throw new Error("expected 2 batches")
      committer.register(a0)
      committer.register(a1)
      own(false)
      yield* committer.verified(a0)
      expect(sent).toEqual([])
      expect(stats.recordsCommitted).toBe(0)
      expect(stats.commitsRefused).toBe(1)
      expect(stats.committed.get("s/0")).toBeUndefined()

      // The revoke, then the partition back (the same member): re-read from the
      // group's offset (0), sealed again, committed for real.
      yield* committer.forget("s", [0])
      own(true)
      const [b0] = batchesFrom(0, 1)
      if (b0 === undefined) throw new Error("expected a batch")
      committer.register(b0)
      yield* committer.verified(b0)
      expect(sent).toEqual([10])
      expect(stats.recordsCommitted).toBe(10)
      expect(stats.committed.get("s/0")).toBe(10)
    }))

  it.effect("a revoke names what it leaves in storage uncommitted: refused, verified ahead, and verified after the revoke", () =>
    Effect.gen(function*() {
      const { source, sent, own } = ownedSource()
      const stats = makeStats("open")
      const signals: Array<SignalBus.Signal> = []
      const committer = yield* Committer.make({ source, stats, metrics: makeMetrics(), publish: (s) => void signals.push(s) })
      // Six batches of 10: b0 committed; b1 verified, its commit refused; b2
      // never verified; b3 verified ahead of b2; b4 uploading at the revoke and
      // verified after it; b5 sealed and never uploaded.
      const [b0, b1, b2, b3, b4, b5] = batchesFrom(0, 6)
      if (b0 === undefined || b1 === undefined || b2 === undefined || b3 === undefined || b4 === undefined || b5 === undefined) {
        throw new Error("expected 6 batches")
      }
      for (const b of [b0, b1, b2, b3, b4, b5]) committer.register(b)
      yield* committer.verified(b0)
      own(false)
      yield* committer.verified(b1)
      yield* committer.verified(b3)
      yield* committer.forget("s", [0])
      yield* committer.verified(b4)

      expect(sent).toEqual([10])
      expect(stats.recordsCommitted).toBe(10)
      // Stored and never committed here: b1, b3, b4 (not b2, not b5: not in storage).
      expect(stats.recordsLeftOnRevoke).toBe(30)
      const left = signals.flatMap((s) => (s._tag === "LeftOnRevoke" ? [[s.partition, s.records, s.ranges.map((r) => [r.firstOffset, r.lastOffset, r.records])]] : []))
      expect(left).toEqual([
        [0, 20, [[10, 19, 10], [30, 39, 10]]],
        [0, 10, [[40, 49, 10]]]
      ])
    }))

  it.effect("a commit made before the revoke is not counted as left", () =>
    Effect.gen(function*() {
      const source: Pick<Source.Source, "commit"> = { commit: () => Effect.void }
      const stats = makeStats("open")
      const committer = yield* Committer.make({ source, stats, metrics: makeMetrics(), publish: () => {} })
      const [b0, b1] = batchesFrom(0, 2)
      if (b0 === undefined || b1 === undefined) throw new Error("expected 2 batches")
      committer.register(b0)
      committer.register(b1)
      yield* committer.verified(b0)
      yield* committer.verified(b1)
      yield* committer.forget("s", [0])
      expect(stats.recordsCommitted).toBe(20)
      expect(stats.recordsLeftOnRevoke).toBe(0)
    }))

  it.effect("a revoke waits for the commit running: its records are counted committed or left, never both", () =>
    Effect.gen(function*() {
      const sent: Array<number> = []
      // A commit that takes 100 ms and is made (the source still owned it when it began).
      const source: Pick<Source.Source, "commit"> = {
        commit: (_partition, nextOffset) => Effect.as(Effect.andThen(Effect.sleep(100), Effect.sync(() => void sent.push(nextOffset))), undefined)
      }
      const stats = makeStats("open")
      const committer = yield* Committer.make({ source, stats, metrics: makeMetrics(), publish: () => {} })
      const [b0] = batchesFrom(0, 1)
      if (b0 === undefined) throw new Error("expected a batch")
      committer.register(b0)
      const committing = yield* Effect.forkChild(committer.verified(b0))
      yield* TestClock.adjust(10)
      const forgetting = yield* Effect.forkChild(committer.forget("s", [0]))
      yield* TestClock.adjust(100)
      yield* Fiber.join(committing)
      yield* Fiber.join(forgetting)
      expect(sent).toEqual([10])
      expect(stats.recordsCommitted).toBe(10)
      expect(stats.recordsLeftOnRevoke).toBe(0)
    }))
})
