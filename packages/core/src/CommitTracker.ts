/**
 * The commit tracker: which offset each partition may commit.
 *
 * A partition's offset advances only over the **contiguous** prefix of its
 * verified batches (in seal order): a verified batch behind an unverified one
 * waits. Pure bookkeeping, no Effect inside.
 *
 * @since 0.1.0
 */
import type { SealedBatch } from "./Batch.ts"

interface Entry {
  readonly lastOffset: number
  readonly records: number
  verified: boolean
}

interface PartitionLog {
  /** Sequence of the oldest batch not yet committed. */
  next: number
  readonly entries: Map<number, Entry>
}

/**
 * An advance of a partition's commit point.
 *
 * @since 0.1.0
 */
export interface CommitAdvance {
  readonly source: string
  readonly partition: number
  /** The offset to commit: one past the last committed record. */
  readonly nextOffset: number
  /** Records newly covered by this advance. */
  readonly records: number
}

/**
 * See the module doc.
 *
 * **Example**
 *
 * ```ts
 * import { CommitTracker } from "@sluice/core"
 * declare const b0: import("@sluice/core").Batch.SealedBatch // sequence 0
 * declare const b1: import("@sluice/core").Batch.SealedBatch // sequence 1
 *
 * const tracker = new CommitTracker.CommitTracker()
 * tracker.register(b0); tracker.register(b1)
 * tracker.verified(b1) // undefined: b0 is not verified yet
 * tracker.verified(b0) // advance to b1.lastOffset + 1, covering both
 * ```
 *
 * @since 0.1.0
 */
export class CommitTracker {
  private readonly logs = new Map<string, PartitionLog>()

  /** Registers a sealed batch (call in seal order). */
  register(batch: SealedBatch): void {
    const id = keyOf(batch.source, batch.partition)
    let log = this.logs.get(id)
    if (log === undefined) {
      log = { next: batch.sequence, entries: new Map() }
      this.logs.set(id, log)
    }
    log.entries.set(batch.sequence, { lastOffset: batch.lastOffset, records: batch.records, verified: false })
  }

  /**
   * Marks a batch verified; returns the new commit point if the contiguous
   * verified prefix grew. A batch of a forgotten partition is ignored.
   */
  verified(batch: SealedBatch): CommitAdvance | undefined {
    const log = this.logs.get(keyOf(batch.source, batch.partition))
    const entry = log?.entries.get(batch.sequence)
    if (log === undefined || entry === undefined) return undefined
    entry.verified = true
    let records = 0
    let nextOffset: number | undefined
    for (let head = log.entries.get(log.next); head !== undefined && head.verified; head = log.entries.get(log.next)) {
      log.entries.delete(log.next)
      log.next++
      records += head.records
      nextOffset = head.lastOffset + 1
    }
    return nextOffset === undefined ? undefined : { source: batch.source, partition: batch.partition, nextOffset, records }
  }

  /** Whether the batch is still tracked (not committed, not forgotten). */
  isPending(batch: SealedBatch): boolean {
    return this.logs.get(keyOf(batch.source, batch.partition))?.entries.has(batch.sequence) ?? false
  }

  /** Forgets partitions (revoked): their pending batches will never commit here. */
  forget(source: string, partitions: ReadonlyArray<number>): void {
    for (const p of partitions) this.logs.delete(keyOf(source, p))
  }

  /** Batches registered and not yet committed. */
  get pending(): number {
    let n = 0
    for (const log of this.logs.values()) n += log.entries.size
    return n
  }
}

const keyOf = (source: string, partition: number): string => `${source}\u0000${partition}`
