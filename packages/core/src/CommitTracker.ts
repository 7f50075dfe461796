/**
 * The commit tracker: which offset each partition may commit.
 *
 * A partition's offset advances only over the **contiguous** prefix of its
 * verified batches (in seal order): a verified batch behind an unverified one
 * waits. Pure bookkeeping, no Effect inside.
 *
 * Its size is one small entry per sealed batch not yet committed: the
 * unverified ones each hold bytes of the memory budget, and the pipeline caps
 * the verified ones waiting behind them (`maxVerifiedAhead` per partition), so
 * it is bounded by the budget plus the cap.
 *
 * @since 0.1.0
 */
import type { SealedBatch } from "./Batch.ts"

interface Entry {
  readonly key: string
  readonly firstOffset: number
  readonly lastOffset: number
  readonly records: number
  readonly openedAt: number
  verified: boolean
}

interface PartitionLog {
  readonly source: string
  readonly partition: number
  /** Sequence of the oldest batch not yet committed. */
  next: number
  /** Entries verified but not yet committed (behind an unverified one). */
  verifiedAhead: number
  readonly entries: Map<number, Entry>
}

/**
 * A registered batch not yet committed, as {@link CommitTracker.uncommitted}
 * lists it.
 *
 * @since 0.2.0
 */
export interface PendingBatch {
  readonly key: string
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly lastOffset: number
  readonly records: number
  readonly verified: boolean
}

/**
 * An advance of a partition's commit point.
 *
 * @since 0.1.0
 */
export interface CommitAdvance {
  readonly source: string
  readonly partition: number
  /**
   * The first offset newly covered by this advance (the first record of the
   * first batch it covers).
   *
   * @since 0.5.0
   */
  readonly firstOffset: number
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
      log = { source: batch.source, partition: batch.partition, next: batch.sequence, verifiedAhead: 0, entries: new Map() }
      this.logs.set(id, log)
    }
    log.entries.set(batch.sequence, {
      key: batch.key,
      firstOffset: batch.firstOffset,
      lastOffset: batch.lastOffset,
      records: batch.records,
      openedAt: batch.openedAt,
      verified: false
    })
  }

  /**
   * Marks a batch verified; returns the new commit point if the contiguous
   * verified prefix grew. A batch of a forgotten partition is ignored.
   */
  verified(batch: SealedBatch): CommitAdvance | undefined {
    const log = this.logs.get(keyOf(batch.source, batch.partition))
    const entry = log?.entries.get(batch.sequence)
    if (log === undefined || entry === undefined || entry.verified) return undefined
    entry.verified = true
    log.verifiedAhead++
    let records = 0
    let firstOffset: number | undefined
    let nextOffset: number | undefined
    for (let head = log.entries.get(log.next); head !== undefined && head.verified; head = log.entries.get(log.next)) {
      firstOffset ??= head.firstOffset
      log.entries.delete(log.next)
      log.next++
      log.verifiedAhead--
      records += head.records
      nextOffset = head.lastOffset + 1
    }
    return nextOffset === undefined || firstOffset === undefined
      ? undefined
      : { source: batch.source, partition: batch.partition, firstOffset, nextOffset, records }
  }

  /** Whether the batch is still tracked (not committed, not forgotten). */
  isPending(batch: SealedBatch): boolean {
    return this.logs.get(keyOf(batch.source, batch.partition))?.entries.has(batch.sequence) ?? false
  }

  /**
   * Forgets partitions (revoked): their pending batches will never commit
   * here. Returns the batches dropped, in seal order per partition — the
   * verified ones are in storage, and the partition's next owner archives
   * their records again.
   */
  forget(source: string, partitions: ReadonlyArray<number>): ReadonlyArray<PendingBatch> {
    const dropped: Array<PendingBatch> = []
    for (const p of partitions) {
      const log = this.logs.get(keyOf(source, p))
      if (log === undefined) continue
      dropped.push(...pendingOf(log))
      this.logs.delete(keyOf(source, p))
    }
    return dropped
  }

  /**
   * Batches of the batch's partition verified but not committed, because an
   * earlier batch of the partition is not verified yet.
   */
  verifiedAhead(source: string, partition: number): number {
    return this.logs.get(keyOf(source, partition))?.verifiedAhead ?? 0
  }

  /** The oldest uncommitted batch of a partition (the one the others wait for), if any. */
  head(source: string, partition: number): PendingBatch | undefined {
    const log = this.logs.get(keyOf(source, partition))
    const e = log?.entries.get(log.next)
    if (log === undefined || e === undefined) return undefined
    return {
      key: e.key,
      source,
      partition,
      firstOffset: e.firstOffset,
      lastOffset: e.lastOffset,
      records: e.records,
      verified: e.verified
    }
  }

  /** Whether the batch is the oldest uncommitted one of its partition (the one the others wait for). */
  isHead(batch: SealedBatch): boolean {
    return this.logs.get(keyOf(batch.source, batch.partition))?.next === batch.sequence
  }

  /**
   * When the oldest uncommitted batch (of any partition) was opened, or
   * `undefined` when everything registered is committed. O(partitions).
   */
  oldestOpenedAt(): number | undefined {
    let oldest: number | undefined
    for (const log of this.logs.values()) {
      const head = log.entries.get(log.next)
      if (head !== undefined && (oldest === undefined || head.openedAt < oldest)) oldest = head.openedAt
    }
    return oldest
  }

  /** Every batch registered and not yet committed, partition by partition in seal order. */
  *uncommitted(): Generator<PendingBatch> {
    for (const log of this.logs.values()) yield* pendingOf(log)
  }

  /** Batches registered and not yet committed. */
  get pending(): number {
    let n = 0
    for (const log of this.logs.values()) n += log.entries.size
    return n
  }
}

function* pendingOf(log: PartitionLog): Generator<PendingBatch> {
  const sequences = [...log.entries.keys()].sort((a, b) => a - b)
  for (const sequence of sequences) {
    const e = log.entries.get(sequence)
    if (e === undefined) continue
    yield {
      key: e.key,
      source: log.source,
      partition: log.partition,
      firstOffset: e.firstOffset,
      lastOffset: e.lastOffset,
      records: e.records,
      verified: e.verified
    }
  }
}

const keyOf = (source: string, partition: number): string => `${source}\u0000${partition}`
