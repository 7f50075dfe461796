/**
 * The committer: commits each partition's source offset up to its highest
 * **contiguous** verified batch, never past a batch that is not verified.
 *
 * It wraps the pure {@link CommitTracker} (which batch may commit) with the
 * effects: one commit at a time (a lock), the `committed` and
 * `recordsCommitted` counters (only for commits the source made: a
 * `CommitRefused` is counted in `commitsRefused`), the commit-stage duration
 * metric.
 *
 * It owns: the tracker, the wanted commit point per partition, the commit
 * lock. It may touch: `source.commit`. It never sees a batch before it was
 * sealed, and never commits a position whose batch was not verified.
 *
 * It also names a rebalance's duplicates: the records verified in storage
 * that a revoke left uncommitted (at the revoke, or verified after it), in
 * `recordsLeftOnRevoke`, `sluice.records.left_on_revoke` and a
 * `LeftOnRevoke` signal per partition.
 *
 * @since 0.2.0
 */
import { Clock, Effect, Semaphore } from "effect"
import type { SealedBatch } from "../Batch.ts"
import { CommitTracker } from "../CommitTracker.ts"
import { Attribute } from "../Metrics.ts"
import type { Instruments } from "../Metrics.ts"
import type { LeftRange, Signal } from "../Signal.ts"
import type { Source, SourceError } from "../Source.ts"
import type { PipelineStats } from "./Stats.ts"

/**
 * What the committer needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface CommitterDeps {
  readonly source: Pick<Source, "commit">
  readonly stats: PipelineStats
  readonly metrics: Instruments
  /** Publishes `LeftOnRevoke` signals. */
  readonly publish: (signal: Signal) => void
}

/**
 * The committer of one pipeline.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as Committer from "./stage/Committer.ts"
 * declare const deps: Committer.CommitterDeps
 * declare const b0: import("./Batch.ts").SealedBatch
 *
 * const program = Effect.gen(function*() {
 *   const committer = yield* Committer.make(deps)
 *   committer.register(b0)
 *   yield* committer.verified(b0) // commits b0.lastOffset + 1
 * })
 * ```
 *
 * @since 0.2.0
 */
export interface Committer {
  /** Registers a sealed batch (in seal order per partition). */
  readonly register: (batch: SealedBatch) => void
  /**
   * Marks a batch verified and commits what became contiguous. A batch of a
   * partition revoked meanwhile is counted as left on revoke.
   */
  readonly verified: (batch: SealedBatch) => Effect.Effect<void, SourceError>
  /**
   * Forgets revoked partitions: their batches will never commit here. Waits
   * for a commit running (the source refuses it or makes it), then counts the
   * records verified and not committed as left on revoke.
   */
  readonly forget: (source: string, partitions: ReadonlyArray<number>) => Effect.Effect<void>
  /** Whether the batch is still tracked (not committed, not forgotten). */
  readonly isPending: (batch: SealedBatch) => boolean
  /**
   * Whether a new batch must wait: `cap` batches of its partition are verified
   * but not committed, behind an earlier one that is not verified — and the
   * batch is not that one.
   */
  readonly atCap: (batch: SealedBatch, cap: number) => boolean
  /** Refreshes the age of the oldest uncommitted batch in the stats. */
  readonly refreshAge: (now: number) => void
  /** The pure tracker (for inspection). */
  readonly tracker: CommitTracker
}

interface Want {
  readonly source: string
  readonly partition: number
  /** The first offset verified and not committed (the next one to commit past). */
  firstOffset: number
  nextOffset: number
  /** Records in [firstOffset, nextOffset) not committed. */
  records: number
}

/** A batch's offsets and records, as a `LeftOnRevoke` range. */
const rangeOf = (b: LeftRange): LeftRange => ({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, records: b.records })

/**
 * Builds a committer.
 *
 * @since 0.2.0
 */
export const make = (deps: CommitterDeps): Effect.Effect<Committer> =>
  Effect.map(Semaphore.make(1), (lock) => {
    const { stats, metrics } = deps
    const leftOnRevoke = (source: string, partition: number, ranges: ReadonlyArray<LeftRange>) =>
      Effect.gen(function*() {
        const records = ranges.reduce((n, r) => n + r.records, 0)
        if (records === 0) return
        const at = yield* Clock.currentTimeMillis
        stats.recordsLeftOnRevoke += records
        metrics.recordsLeftOnRevoke.add(records, { [Attribute.partition]: String(partition) })
        deps.publish({ _tag: "LeftOnRevoke", at, source, partition, ranges, records })
      })
    const tracker = new CommitTracker()
    /** Commit points wanted per partition (one entry per partition), with the records they newly cover. */
    const wanted = new Map<string, Want>()

    const commitWanted = Effect.gen(function*() {
      for (const [id, want] of wanted) {
        const have = stats.committed.get(id) ?? -1
        // Capture before yielding: `verified` may advance `want` meanwhile.
        const nextOffset = want.nextOffset
        const records = want.records
        if (nextOffset <= have) continue
        const startedAt = yield* Clock.currentTimeMillis
        const outcome = yield* deps.source.commit(want.partition, nextOffset).pipe(
          Effect.withSpan("sluice.commit", {
            kind: "client",
            attributes: { [Attribute.topic]: want.source, [Attribute.partition]: String(want.partition), "sluice.commit.next_offset": nextOffset, "sluice.commit.records": records }
          }, { captureStackTrace: false })
        )
        const end = yield* Clock.currentTimeMillis
        metrics.stageDuration.record((end - startedAt) / 1000, { [Attribute.stage]: "commit" })
        if (outcome !== undefined) {
          // Not committed: neither counted nor remembered as the committed
          // position (a re-assigned partition re-reads from what the group holds,
          // and those commits must not be taken for done already).
          stats.commitsRefused++
          yield* Effect.logInfo(`commit ${id}@${nextOffset} refused by the source: ${outcome.reason}`)
          continue
        }
        stats.committed.set(id, nextOffset)
        want.firstOffset = nextOffset
        want.records -= records
        stats.recordsCommitted += records
        metrics.recordsCommitted.add(records)
      }
    }).pipe(lock.withPermit)

    return {
      tracker,
      register: (batch) => tracker.register(batch),
      isPending: (batch) => tracker.isPending(batch),
      atCap: (batch, cap) => tracker.verifiedAhead(batch.source, batch.partition) >= cap && !tracker.isHead(batch),
      refreshAge: (now) => {
        const oldest = tracker.oldestOpenedAt()
        stats.oldestUncommittedAgeMillis = oldest === undefined ? 0 : Math.max(0, now - oldest)
      },
      // Under the lock: a commit running when the revoke came is made or
      // refused first, so its records are counted committed or left, never both.
      // The wait is bounded by the source's commit (a revoked partition's commit
      // is refused at once by the Kafka source; see Source.CommitRefused).
      forget: (source, partitions) =>
        Effect.gen(function*() {
          for (const p of partitions) {
            const id = `${source}/${p}`
            const want = wanted.get(id)
            wanted.delete(id)
            const ranges: Array<LeftRange> = []
            if (want !== undefined && want.records > 0) {
              ranges.push({ firstOffset: want.firstOffset, lastOffset: want.nextOffset - 1, records: want.records })
            }
            for (const b of tracker.forget(source, [p])) if (b.verified) ranges.push(rangeOf(b))
            yield* leftOnRevoke(source, p, ranges)
          }
        }).pipe(lock.withPermit),
      verified: (batch) =>
        Effect.suspend(() => {
          if (!tracker.isPending(batch)) {
            // Uploading when its partition was revoked: stored, never committed here.
            return leftOnRevoke(batch.source, batch.partition, [rangeOf(batch)])
          }
          const advance = tracker.verified(batch)
          if (advance === undefined) return Effect.void
          const id = `${advance.source}/${advance.partition}`
          const want = wanted.get(id)
          if (want === undefined) {
            wanted.set(id, {
              source: advance.source,
              partition: advance.partition,
              firstOffset: advance.firstOffset,
              nextOffset: advance.nextOffset,
              records: advance.records
            })
          } else {
            want.nextOffset = advance.nextOffset
            want.records += advance.records
          }
          return commitWanted
        })
    }
  })
