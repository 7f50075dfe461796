/**
 * The source contract: where records come from, and where their positions are
 * committed once archived.
 *
 * @since 0.1.0
 */
import { Effect, Schema, Stream } from "effect"
import type { RecordChunk } from "./Record.ts"
import { chunkOf } from "./Record.ts"

/**
 * A retention gap: the next offset the archiver needed was already deleted by the
 * log's retention (committed offset < log start offset). Never skipped silently:
 * the pipeline publishes it as a signal, counts it in a metric and records it in
 * the manifest of the partition's next batch.
 *
 * @since 0.1.0
 */
export interface RetentionGap {
  readonly _tag: "RetentionGap"
  readonly source: string
  readonly partition: number
  /** The offset the archiver expected to read next. */
  readonly expected: number
  /** The log start offset the broker reported. */
  readonly logStart: number
  /** `logStart - expected`. */
  readonly lostRecords: number
}

/**
 * The source gave up some partitions (a consumer-group rebalance). The pipeline
 * abandons their open batches without commit (the new owner re-reads them), stops
 * committing them, and then runs `acknowledge` so the source can finish the revoke.
 *
 * @since 0.1.0
 */
export interface PartitionsRevoked {
  readonly _tag: "PartitionsRevoked"
  readonly partitions: ReadonlyArray<number>
  readonly acknowledge: Effect.Effect<void>
}

/**
 * A commit the source did not make: it no longer owns the partition (a
 * consumer-group rebalance took it between the verify and the commit). The
 * pipeline counts it apart (`commitsRefused`), not in `recordsCommitted`, and
 * keeps its committed position where it was; the revoke that follows abandons
 * the partition's batches, and the new owner re-reads from the offset the group
 * really holds.
 *
 * @since 0.2.0
 */
export interface CommitRefused {
  readonly _tag: "CommitRefused"
  readonly partition: number
  readonly nextOffset: number
  /** Why, for logs: e.g. "partition 3 is no longer owned (generation 7)". */
  readonly reason: string
}

/**
 * What a commit answered: nothing when the position was committed, or
 * {@link CommitRefused}.
 *
 * @since 0.2.0
 */
export type CommitOutcome = void | CommitRefused

/**
 * The source's reader of a partition has delivered every record that was in
 * the log when the partition was assigned, or when reading resumed after a
 * pause (up to `nextOffset`, exclusive): the backlog a restart, a new
 * assignment or a paused read gate (an outage of the store, memory full)
 * leaves. Those records were written before this run read them, so the
 * pipeline seals the partition's open batch at once (`caughtUp`) instead of
 * waiting `maxAge` for more. After a pause, only when the backlog's oldest
 * records are already older than `maxAge` (read now, they are more than a
 * batch's age late): a short pause, as a read gate toggling at its memory
 * budget makes, leaves the batch to its own age (sealing every partition at
 * each resume made many small objects in a slow store). A source announces it
 * at most once per assignment of a partition and once per resume that found
 * the reader behind; one that does not know leaves it out (the Kafka source
 * and the testkit's simulated source announce it).
 *
 * @since 0.5.0
 */
export interface CaughtUp {
  readonly _tag: "CaughtUp"
  readonly partition: number
  /** The offset after the last record of the backlog. */
  readonly nextOffset: number
  /**
   * For a backlog a pause left, when reading paused (ms, the pipeline's
   * clock): no record of it was read after then. Absent for the backlog of an
   * assignment.
   */
  readonly pausedAt?: number | undefined
}

/**
 * What a source stream carries.
 *
 * @since 0.1.0
 */
export type SourceEvent = RecordChunk | RetentionGap | PartitionsRevoked | CaughtUp

/**
 * A source failed.
 *
 * @since 0.1.0
 */
export class SourceError extends Schema.TaggedError<SourceError>()("SourceError", {
  source: Schema.String,
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/**
 * The source contract.
 *
 * **Details**
 *
 * - `events` is the merge of the per-partition streams: chunks of one partition
 *   arrive in offset order; partitions interleave freely.
 * - `commit(partition, nextOffset)` is only ever called by the pipeline's
 *   committer, with the offset after the highest contiguous *verified* batch.
 * - `pause` / `resume` are driven by the read gate; a paused source stops fetching
 *   (it may still deliver what it had buffered).
 * - `lag` reports records behind the end of the log, per partition.
 * - `readAheadBytes` (optional): the most memory the source itself holds read
 *   ahead of the pipeline, counted like the pipeline's memory budget
 *   (`Record.heapBytes`: payload plus per-record overhead). The pipeline
 *   reserves it from its `memoryBudget`, so the budget bounds the source's
 *   buffer and the pipeline's batches together; a budget not larger than it
 *   is a `ConfigError`. A source that reads only when pulled leaves it out.
 *
 * **Example**
 *
 * ```ts
 * import { Memory } from "@sluice/core"
 *
 * // An in-memory source over fixed payloads, two partitions, 10 records each
 * const source = Memory.source({ name: "demo", partitions: 2, records: 10, recordBytes: 100 })
 * ```
 *
 * @since 0.1.0
 */
export interface Source {
  /** The source's name (the topic): the source segment of every object key, and the metrics' `messaging.destination.name`. */
  readonly name: string
  /** The merge of the per-partition streams; one partition's chunks in offset order. */
  readonly events: Stream.Stream<SourceEvent, SourceError>
  /**
   * Commits `nextOffset` for `partition`: called only by the pipeline's
   * committer, with the offset after the highest contiguous verified batch.
   * Answers {@link CommitRefused} when it did not commit because the partition
   * is no longer this source's (never for a failure: that is a `SourceError`).
   */
  readonly commit: (partition: number, nextOffset: number) => Effect.Effect<CommitOutcome, SourceError>
  /** Stops fetching (what was buffered may still be delivered); driven by the read gate. */
  readonly pause: Effect.Effect<void>
  /** Resumes fetching after `pause`. */
  readonly resume: Effect.Effect<void>
  /** Records behind the end of the log, per partition. */
  readonly lag: Effect.Effect<ReadonlyMap<number, number>>
  /** Bytes the source holds read ahead of the pipeline, at most (see above); reserved from the memory budget. */
  readonly readAheadBytes?: number | undefined
}

/**
 * Records per chunk of a one-partition source ({@link fromAsyncIterable},
 * {@link fromStream}) unless `chunkRecords` says otherwise: enough that the
 * per-chunk work (a budget charge, a hand-off, a sealer step) is spread over
 * many records, few enough that a chunk of small records stays far below the
 * memory budget's one-chunk reserve.
 */
const DEFAULT_CHUNK_RECORDS = 1000

/**
 * How long a one-partition source waits for `chunkRecords` records before it
 * hands on what it has (unless `lingerMillis` says otherwise): a trickle of
 * records reaches the sealer within 50 ms, far below any batch age (seconds),
 * while a burst still fills whole chunks.
 */
const DEFAULT_LINGER_MILLIS = 50

/** A thrown or failed value as a message. */
const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * A plain source over an async iterable of record payloads (a file, a socket, a
 * syslog listener): one partition, offsets assigned from `startOffset`, records
 * grouped into chunks of up to `chunkRecords` or whatever arrived within
 * `lingerMillis`.
 *
 * **Details**
 *
 * `onCommit(nextOffset)` is called with the offset after the last archived record
 * (persist it to resume with `startOffset` after a restart). Pause/resume stop
 * pulling from the iterable; `lag` is unknown (empty) for a plain iterable.
 *
 * **Example**
 *
 * ```ts
 * import { createReadStream } from "node:fs"
 * import { createInterface } from "node:readline"
 * import { Source } from "@sluice/core"
 *
 * async function* lines() {
 *   for await (const line of createInterface({ input: createReadStream("app.log") })) yield new TextEncoder().encode(line)
 * }
 * const source = Source.fromAsyncIterable({ name: "app-log", records: lines(), onCommit: (next) => console.log("archived up to", next) })
 * ```
 *
 * @since 0.1.0
 */
export const fromAsyncIterable = (options: {
  readonly name: string
  readonly records: AsyncIterable<Uint8Array>
  readonly startOffset?: number
  readonly chunkRecords?: number
  readonly lingerMillis?: number
  readonly onCommit?: (nextOffset: number) => void | Promise<void>
}): Source =>
  fromStream(
    Stream.fromAsyncIterable(
      options.records,
      (cause) => new SourceError({ source: options.name, operation: "read", message: String(cause), cause })
    ),
    {
      name: options.name,
      commit: (nextOffset) =>
        Effect.tryPromise({
          try: async () => {
            await options.onCommit?.(nextOffset)
          },
          catch: (cause) => new SourceError({ source: options.name, operation: "commit", message: String(cause), cause })
        }),
      startOffset: options.startOffset,
      chunkRecords: options.chunkRecords,
      lingerMillis: options.lingerMillis
    }
  )

/**
 * Options of {@link fromStream}.
 *
 * @since 0.2.0
 */
export interface FromStreamOptions<E> {
  /** The source's name (the topic): the source segment of every object key. */
  readonly name: string
  /**
   * Persists the position: called with the offset after the last archived
   * record, once every record before it is verified in storage. Resume from it
   * with `startOffset` (and a stream that skips what was archived) after a
   * restart. A failure ends the run with a `SourceError` (`operation: "commit"`).
   */
  readonly commit: (nextOffset: number) => Effect.Effect<void, E>
  /** Records behind the end of what the stream reads, if known (reported as partition 0's); default unknown. */
  readonly lag?: Effect.Effect<number> | undefined
  /** The offset of the stream's first record (default 0). */
  readonly startOffset?: number | undefined
  /** Records per chunk at most (default 1000). */
  readonly chunkRecords?: number | undefined
  /** How long to wait for a full chunk before handing on what arrived, ms (default 50). */
  readonly lingerMillis?: number | undefined
}

/**
 * A source over any Effect `Stream` of record payloads (a stream built in your
 * code: a `Stream.fromQueue`, a paginated API read with `Stream.paginate`, a
 * transformed file): one partition, offsets assigned from `startOffset`, records
 * grouped into chunks of up to `chunkRecords` or whatever arrived within
 * `lingerMillis`.
 *
 * **When to use**
 *
 * When the records already are, or are easiest made, an Effect `Stream`; use
 * {@link fromAsyncIterable} for an async iterable, and implement {@link Source}
 * for a partitioned log (see `@sluice/adapters-kafka`).
 *
 * **Details**
 *
 * - **Commit**: `commit(nextOffset)` runs with the offset after the last
 *   archived record, only once every record before it is verified in storage
 *   (persist it to resume with `startOffset` after a restart). Its failure, and
 *   the stream's, end the run with a `SourceError` naming the source and the
 *   operation (`"commit"`, `"read"`); a `SourceError` from either is kept.
 * - **Pause**: pause/resume do nothing to the stream itself: while the read
 *   gate is closed the pipeline stops pulling, and a pull-based stream does not
 *   run ahead: at most the chunk being grouped and the one the pipeline looks
 *   ahead, in the stream's own chunks (`Stream.range` makes chunks of 4096
 *   unless told; `Stream.rechunk(n)` sets them). A stream
 *   fed by a producer that pushes (`Stream.fromQueue` over a queue someone
 *   offers to, `Stream.callback`) keeps producing into its own buffer: bound
 *   that buffer, since the pipeline's memory budget does not see it.
 * - **Lag**: `lag` (records behind, if the stream knows) is reported as
 *   partition 0's; without it, lag is unknown (empty).
 * - The stream must need no services (`R = never`): provide them before.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Memory, Pipeline, Source } from "@sluice/core"
 *
 * const encoder = new TextEncoder()
 * const events = Stream.range(1, 10_000).pipe(Stream.map((i) => encoder.encode(JSON.stringify({ id: i }))))
 * const source = Source.fromStream(events, {
 *   name: "events",
 *   commit: (next) => Effect.log(`archived up to ${next}`)
 * })
 * const stats = Effect.runPromise(Pipeline.run({ source, sink: Memory.sink() }))
 * ```
 *
 * @since 0.2.0
 */
export const fromStream = <E, E2>(records: Stream.Stream<Uint8Array, E>, options: FromStreamOptions<E2>): Source => {
  let next = options.startOffset ?? 0
  const events: Stream.Stream<SourceEvent, SourceError> = records.pipe(
    Stream.mapError((cause) =>
      cause instanceof SourceError ? cause : new SourceError({ source: options.name, operation: "read", message: messageOf(cause), cause })
    ),
    Stream.groupedWithin(options.chunkRecords ?? DEFAULT_CHUNK_RECORDS, options.lingerMillis ?? DEFAULT_LINGER_MILLIS),
    Stream.map((payloads): SourceEvent => {
      const chunk = chunkOf(options.name, 0, next, payloads)
      next += payloads.length
      return chunk
    })
  )
  const lag = options.lag
  return {
    name: options.name,
    events,
    commit: (_partition, nextOffset) =>
      Effect.mapError(
        options.commit(nextOffset),
        (cause) => cause instanceof SourceError ? cause : new SourceError({ source: options.name, operation: "commit", message: messageOf(cause), cause })
      ),
    pause: Effect.void,
    resume: Effect.void,
    lag: lag === undefined ? Effect.succeed(new Map()) : Effect.map(lag, (behind) => new Map([[0, behind]]))
  }
}
