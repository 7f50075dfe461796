/**
 * The state of a replicated sink, each part with its bound:
 *
 * - {@link Puts}: one entry per batch put, from `putObject` until the
 *   pipeline's `verify` (which waits for the entry to settle). Puts settled
 *   but never verified (a caller that gave up) are kept at most
 *   {@link MAX_UNVERIFIED}; past it the oldest is forgotten, and its `verify`
 *   fails `Missing`, so the batch is put again (keys are deterministic).
 * - {@link Deficits}: durable keys missing on some replica, at most
 *   `maxDeficits`; past it the oldest is dropped and counted.
 * - {@link Behind}: per replica, replications still running after their batch
 *   reached quorum (at most `maxBehind` each).
 *
 * @internal
 */
import { Deferred, Exit } from "effect"

/** Puts settled (every replica done) whose `verify` has not come, kept at most. */
export const MAX_UNVERIFIED = 4096

/** One put of one batch to every replica. */
export interface Entry {
  readonly key: string
  /** Replicas that verified the object in this put. */
  readonly have: Set<string>
  /** Replicas that failed (or were skipped) in this put, with the reason. */
  readonly missing: Map<string, string>
  /** Replicas whose replication is still running. */
  readonly running: Set<string>
  /** A quorum verified the object. */
  durable: boolean
  /** Done when no replica of this put runs any more (finished, failed, timed out or interrupted). */
  readonly settled: Deferred.Deferred<void>
}

/** A new entry for a put of `key`. */
export const entry = (key: string): Entry => ({
  key,
  have: new Set(),
  missing: new Map(),
  running: new Set(),
  durable: false,
  settled: Deferred.makeUnsafe<void>()
})

/**
 * Insertion order for eviction, as an array with a head index: O(1) push and
 * shift. (Evicting through a `Map`'s own order is O(deleted entries) in V8,
 * which skips the holes deletions leave at the front.) Entries may go stale
 * (their item left the ledger another way); the owner skips them on shift and
 * rebuilds the queue when stale ones outnumber the live ones.
 */
class Fifo<A> {
  private items: Array<A> = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: A): void {
    this.items.push(item)
  }

  shift(): A | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]
    this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  /** Replaces the contents (compaction by the owner). */
  reset(items: Array<A>): void {
    this.items = items
    this.head = 0
  }
}

/** The puts not yet verified, by key (the latest put of a key wins). */
export class Puts {
  private readonly byKey = new Map<string, Entry>()
  /** Settled, unverified entries. */
  private readonly unverified = new Set<Entry>()
  /** `unverified` in settling order (may hold entries verified since). */
  private readonly order = new Fifo<Entry>()
  private readonly maxUnverified: number

  constructor(maxUnverified: number = MAX_UNVERIFIED) {
    this.maxUnverified = maxUnverified
  }

  /** Entries held now. */
  get size(): number {
    return this.byKey.size
  }

  /** Starts tracking a put (replacing an earlier put of the same key). */
  start(e: Entry): void {
    const previous = this.byKey.get(e.key)
    if (previous !== undefined) this.unverified.delete(previous)
    this.byKey.set(e.key, e)
  }

  /** The current put of `key`. */
  get(key: string): Entry | undefined {
    return this.byKey.get(key)
  }

  /** Whether `e` is still the current put of its key. */
  isCurrent(e: Entry): boolean {
    return this.byKey.get(e.key) === e
  }

  /** Forgets `e` (quorum lost, or verified). */
  forget(e: Entry): void {
    this.unverified.delete(e)
    if (this.byKey.get(e.key) === e) this.byKey.delete(e.key)
  }

  /** Every replica of `e` is done: completes `settled`; bounds the puts nobody verified. */
  settle(e: Entry): void {
    Deferred.doneUnsafe(e.settled, Exit.void)
    if (!this.isCurrent(e) || this.unverified.has(e)) return
    this.unverified.add(e)
    this.order.push(e)
    while (this.unverified.size > this.maxUnverified) {
      const oldest = this.order.shift()
      if (oldest === undefined) break
      if (this.unverified.has(oldest)) this.forget(oldest)
    }
    // Verified entries leave `order` stale: rebuild it once they outnumber the live ones.
    if (this.order.length > 2 * this.unverified.size + 1024) this.order.reset([...this.unverified])
  }
}

/** What the deficit ledger holds per key. */
interface DeficitRecord {
  readonly have: Set<string>
  readonly missing: Map<string, string>
  readonly since: number
}

/** A durable key missing on some replica, as listed. */
export interface DeficitView {
  readonly key: string
  readonly have: ReadonlyArray<string>
  readonly missing: ReadonlyMap<string, string>
  readonly since: number
}

/** Durable keys missing on some replica, oldest first, at most `capacity`. */
export class Deficits {
  private readonly byKey = new Map<string, DeficitRecord>()
  /** Records in insertion order (may hold records resolved since). */
  private readonly order = new Fifo<readonly [string, DeficitRecord]>()
  private readonly capacity: number
  /** Deficits dropped because the ledger was full. */
  dropped = 0

  constructor(capacity: number) {
    this.capacity = capacity
  }

  /** Keys with a deficit now. */
  get size(): number {
    return this.byKey.size
  }

  /**
   * Records that `replica` misses the durable `key` (held by `have`); true
   * when an older deficit had to be dropped to make room.
   */
  record(key: string, have: ReadonlySet<string>, replica: string, reason: string, now: number): boolean {
    const existing = this.byKey.get(key)
    if (existing !== undefined) {
      existing.missing.set(replica, reason)
      for (const h of have) existing.have.add(h)
      return false
    }
    const created: DeficitRecord = { have: new Set(have), missing: new Map([[replica, reason]]), since: now }
    this.byKey.set(key, created)
    this.order.push([key, created])
    let dropped = false
    while (this.byKey.size > this.capacity) {
      const oldest = this.order.shift()
      if (oldest === undefined) break
      if (this.byKey.get(oldest[0]) !== oldest[1]) continue // resolved since
      this.byKey.delete(oldest[0])
      this.dropped++
      dropped = true
    }
    // Resolved records leave `order` stale: rebuild it once they outnumber the live ones.
    if (this.order.length > 2 * this.byKey.size + 1024) this.order.reset([...this.byKey])
    return dropped
  }

  /** `replica` now holds `key`; the key leaves the ledger once nothing misses it. */
  resolve(key: string, replica: string): void {
    const existing = this.byKey.get(key)
    if (existing === undefined) return
    existing.missing.delete(replica)
    existing.have.add(replica)
    if (existing.missing.size === 0) this.byKey.delete(key)
  }

  /** A copy of every deficit, oldest first. */
  list(): ReadonlyArray<DeficitView> {
    const out: Array<DeficitView> = []
    for (const [key, d] of this.byKey) out.push({ key, have: [...d.have], missing: new Map(d.missing), since: d.since })
    return out
  }
}

/** Per replica: replications still running after their batch reached quorum. */
export class Behind {
  private readonly counts = new Map<string, number>()

  /** Replications of `replica` lagging now. */
  of(replica: string): number {
    return this.counts.get(replica) ?? 0
  }

  add(replica: string, delta: number): void {
    this.counts.set(replica, Math.max(0, this.of(replica) + delta))
  }

  /** Lagging replications over all replicas. */
  total(): number {
    let n = 0
    for (const v of this.counts.values()) n += v
    return n
  }
}
