/**
 * What a Kafka source counts, in bounded memory: counters that only grow, and
 * a ring of the most recent events (assignments, revokes, commits, refused
 * commits, retention gaps, pauses and resumes) for inspection. A source that
 * runs for months holds the same few hundred bytes of stats as on day one.
 *
 * @since 0.1.0
 */
import type { Source } from "@sluice/core"

/**
 * One event a source records in its ring of recent events. `at` is the time
 * it happened (ms, Effect clock).
 *
 * **Example**
 *
 * ```ts
 * import type { KafkaStats } from "@sluice/adapter-kafka"
 *
 * const describe = (e: KafkaStats.KafkaSourceEvent): string =>
 *   e._tag === "Committed" ? `${e.partition}@${e.nextOffset}` : e._tag
 * ```
 *
 * @since 0.1.0
 */
export type KafkaSourceEvent =
  | { readonly _tag: "Assigned"; readonly partitions: ReadonlyArray<number>; readonly at: number }
  | { readonly _tag: "Revoked"; readonly partitions: ReadonlyArray<number>; readonly at: number }
  | { readonly _tag: "Committed"; readonly partition: number; readonly nextOffset: number; readonly at: number }
  | { readonly _tag: "CommitSkipped"; readonly partition: number; readonly nextOffset: number; readonly at: number }
  | { readonly _tag: "RetentionGap"; readonly gap: Source.RetentionGap; readonly at: number }
  | { readonly _tag: "Paused"; readonly at: number }
  | { readonly _tag: "Resumed"; readonly at: number }

/**
 * Counters and recent events of a source, for inspection (tests, dashboards).
 *
 * **Details**
 *
 * Every field is a number or a fixed-size record: nothing grows with the run.
 * The last `statsHistory` events (config, default 64) are kept by
 * {@link KafkaSourceStats.recent}, oldest first; older ones are dropped (their
 * counters stay).
 *
 * **Example**
 *
 * ```ts
 * import type { KafkaSource } from "@sluice/adapter-kafka"
 *
 * declare const source: KafkaSource.KafkaSource
 * const { commits, gaps, gapRecords } = source.stats
 * const lastCommits = source.stats.recent().filter((e) => e._tag === "Committed")
 * ```
 *
 * @since 0.1.0
 */
export interface KafkaSourceStats {
  /** Fetch requests answered. */
  readonly fetches: number
  /** Records delivered. */
  readonly records: number
  /** Payload bytes delivered (envelope bytes with `recordFormat: "envelope"`). */
  readonly bytes: number
  /** Whether fetching is paused now, and how often it was paused. */
  readonly pauses: { readonly paused: boolean; readonly count: number }
  /** Retention gaps found. */
  readonly gaps: number
  /** Offsets deleted unread, over every gap found. */
  readonly gapRecords: number
  /** Commits that reached Kafka (or memory, without a group). */
  readonly commits: number
  /** Commits refused because the partition was no longer owned. */
  readonly commitsSkipped: number
  /** Rebalances noticed (group mode). */
  readonly rebalances: number
  /** Assignments applied (each a set of partitions). */
  readonly assignments: number
  /** Revokes announced to the pipeline. */
  readonly revokes: number
  /** Events (chunks, gaps) read ahead of the pipeline now, and the memory they hold (payload + per-record overhead; bounded by `prefetch` / `prefetchBytes`). */
  readonly prefetched: { readonly events: number; readonly bytes: number }
  /** The most recent events, oldest first (at most `statsHistory`). */
  readonly recent: () => ReadonlyArray<KafkaSourceEvent>
}

/**
 * The mutable side of {@link KafkaSourceStats}, written by the source only.
 *
 * **When to use**
 *
 * Inside a source implementation; readers get the `KafkaSourceStats` view.
 *
 * **Example**
 *
 * ```ts
 * import { KafkaStats } from "@sluice/adapter-kafka"
 *
 * const stats = new KafkaStats.Recorder(16)
 * stats.counters.fetches++
 * stats.record({ _tag: "Paused", at: Date.now() })
 * stats.view.recent() // [{ _tag: "Paused", at: … }]
 * ```
 *
 * @since 0.1.0
 */
export class Recorder {
  /** The counters, mutated in place. */
  readonly counters: {
    fetches: number
    records: number
    bytes: number
    pauses: { paused: boolean; count: number }
    gaps: number
    gapRecords: number
    commits: number
    commitsSkipped: number
    rebalances: number
    assignments: number
    revokes: number
    prefetched: { events: number; bytes: number }
  } = {
    fetches: 0,
    records: 0,
    bytes: 0,
    pauses: { paused: false, count: 0 },
    gaps: 0,
    gapRecords: 0,
    commits: 0,
    commitsSkipped: 0,
    rebalances: 0,
    assignments: 0,
    revokes: 0,
    prefetched: { events: 0, bytes: 0 }
  }
  /** The read-only view handed to users (the same counters object, plus `recent`). */
  readonly view: KafkaSourceStats
  private readonly ring: Array<KafkaSourceEvent> = []
  private next = 0
  private readonly capacity: number

  constructor(capacity: number) {
    this.capacity = capacity
    this.view = Object.assign(this.counters, { recent: () => this.recent() })
  }

  /** Adds `event` to the ring (dropping the oldest when full). */
  record(event: KafkaSourceEvent): void {
    if (this.capacity === 0) return
    if (this.ring.length < this.capacity) this.ring.push(event)
    else this.ring[this.next] = event
    this.next = (this.next + 1) % this.capacity
  }

  /** The ring's events, oldest first. */
  recent(): ReadonlyArray<KafkaSourceEvent> {
    return this.ring.length < this.capacity ? [...this.ring] : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)]
  }
}
