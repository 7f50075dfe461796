/**
 * The graceful drain: how a run ends when it is asked to stop rather than
 * interrupted.
 *
 * 1. **Stop reading**: pause the source and stop pulling (the reader fibers are
 *    interrupted; a chunk not yet admitted is dropped uncharged — it was never
 *    committed, so it is read again after a restart).
 * 2. **Seal** every open batch with reason `drain`.
 * 3. **Finish** what is in flight: uploads, verifications and retries go on
 *    (under the retry budget), and each verified batch is committed as usual —
 *    only the contiguous verified prefix of each partition.
 * 4. Return the stats. Past the deadline, the uploads still running are
 *    interrupted and the drain fails with {@link DrainTimedOut}, listing every
 *    batch sealed and not committed: nothing of them was committed.
 *
 * It owns: the drain sequence. It may touch: the reader fiber, the source's
 * `pause`, admission's `sealAll`, the upload fibers (interrupted past the
 * deadline), the run's completion.
 *
 * @since 0.2.0
 */
import { Deferred, Duration, Effect, Exit, Fiber, Schema, Scope } from "effect"
import type { CommitTracker } from "../CommitTracker.ts"
import type { Source } from "../Source.ts"
import type { PipelineStats } from "./Stats.ts"

/**
 * A batch a drain gave up on: sealed, not committed (whether or not it was
 * verified, its records are read again after a restart).
 *
 * **Example**
 *
 * ```ts
 * import type { Pipeline } from "@sluice/core"
 * declare const timedOut: Pipeline.DrainTimedOut
 *
 * const firstLost = new Map(timedOut.abandoned.map((b) => [b.partition, b.firstOffset] as const))
 * ```
 *
 * @since 0.2.0
 */
export const AbandonedBatch = Schema.Struct({
  key: Schema.String,
  source: Schema.String,
  partition: Schema.Number,
  firstOffset: Schema.Number,
  lastOffset: Schema.Number,
  records: Schema.Number,
  verified: Schema.Boolean
})

/**
 * @since 0.2.0
 */
export type AbandonedBatch = typeof AbandonedBatch.Type

/**
 * The drain's deadline passed before everything in flight was verified and
 * committed: the uploads still running were interrupted. `abandoned` lists
 * every sealed batch not committed (in seal order per partition); nothing of
 * them was committed.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import type { Pipeline } from "@sluice/core"
 * declare const handle: Pipeline.PipelineHandle
 *
 * const stop = handle.drain("30 seconds").pipe(
 *   Effect.catchTag("DrainTimedOut", (e) => Effect.logWarning(`${e.recordsAbandoned} records left for the next run`))
 * )
 * ```
 *
 * @since 0.2.0
 */
export class DrainTimedOut extends Schema.TaggedError<DrainTimedOut>()("DrainTimedOut", {
  deadlineMillis: Schema.Number,
  abandoned: Schema.Array(AbandonedBatch),
  recordsAbandoned: Schema.Number,
  message: Schema.String
}) {}

/**
 * What the drain needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface DrainDeps<E> {
  readonly source: Pick<Source, "pause">
  /** The reader (admission's `read`), forked. */
  readonly reader: Fiber.Fiber<unknown, unknown>
  /** Seals every open batch with reason `drain` and hands them on. */
  readonly sealOpen: Effect.Effect<void>
  /** Marks the source done (the run completes when nothing is outstanding). */
  readonly sourceDone: Effect.Effect<void>
  /** The dispatcher fiber, and the scope the uploads and retry timers run in. */
  readonly dispatcher: Fiber.Fiber<unknown, unknown>
  readonly uploads: Scope.Closeable
  readonly tracker: CommitTracker
  readonly done: Deferred.Deferred<PipelineStats, E | DrainTimedOut>
}

/**
 * Builds `drain(deadline)` for one run.
 *
 * **Details**
 *
 * Draining twice, or after the run ended, waits for the same end. The run's
 * `await` completes with the same outcome as the drain.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const handle = yield* Pipeline.start({ source: Memory.source({ name: "t", partitions: 2, records: 1_000_000, recordBytes: 64, intervalMillis: 10 }), sink: Memory.sink() })
 *   yield* Effect.sleep("5 seconds")
 *   const stats = yield* handle.drain("30 seconds") // open batches sealed "drain", in flight finished, committed
 *   return stats.recordsCommitted
 * }))
 * ```
 *
 * @since 0.2.0
 */
export const make = <E>(deps: DrainDeps<E>) => {
  let started = false
  return (deadline: Duration.Input): Effect.Effect<PipelineStats, E | DrainTimedOut> =>
    Effect.gen(function*() {
      if (!started && !Deferred.isDoneUnsafe(deps.done)) {
        started = true
        yield* deps.source.pause
        yield* Fiber.interrupt(deps.reader)
        yield* deps.sealOpen
        yield* deps.sourceDone
        const finished = yield* Effect.timeoutOption(Deferred.await(deps.done).pipe(Effect.exit), deadline)
        if (finished._tag === "None") yield* abandon(deps, deadline)
      }
      return yield* Deferred.await(deps.done)
    })
}

/** Past the deadline: interrupts the uploads and fails the run with what was abandoned. */
const abandon = <E>(deps: DrainDeps<E>, deadline: Duration.Input) =>
  Effect.gen(function*() {
    yield* Fiber.interrupt(deps.dispatcher)
    yield* Scope.close(deps.uploads, Exit.void)
    const abandoned = [...deps.tracker.uncommitted()]
    const records = abandoned.reduce((n, b) => n + b.records, 0)
    yield* Deferred.fail(
      deps.done,
      new DrainTimedOut({
        deadlineMillis: Duration.toMillis(deadline),
        abandoned,
        recordsAbandoned: records,
        message: `drain deadline passed: ${abandoned.length} batches (${records} records) sealed and not committed`
      })
    )
  })
