/**
 * The uploader: takes sealed batches and runs each through a small **stage
 * machine** — put object → put manifest → verify — under the limiter.
 *
 * A failed stage is retried after the delay the `RetryPolicy` in force chooses,
 * and the retry **resumes at the stage that failed**: a throttled verify (HEAD)
 * verifies again, it does not upload the object again; the receipt (key, size,
 * checksum) of the stored object is kept in the batch's state, and the encoded
 * body is built (and compressed, `compression` config) once per batch
 * (`Batch.encodeBody` memoizes it until the batch is released), before the
 * timed put: the `object_upload` sample's `bytes` is the stored size. Only a
 * `VerificationFailed` (the stored object is not ours)
 * starts again at put object. A failure the policy gives up on fails the run
 * with {@link BatchFailed}; nothing of that batch is committed.
 *
 * It owns: the queue of sealed batches, the per-batch stage state, the retry
 * timers, the `queued`, `retries`, `batchesVerified`, `recordsVerified` and
 * `bytesVerified` counters. It may touch: the sink, the limiter (a permit per
 * attempt), the committer (`verified`, `isPending`), the memory budget
 * (release on verify or abandon).
 *
 * **Bounds**: the queue and the retry timers hold only sealed batches not yet
 * verified, and every one of those holds its bytes in the memory budget, so
 * their number is bounded by the budget.
 *
 * @since 0.2.0
 */
import { Cause, Clock, Deferred, Effect, Queue, Schema } from "effect"
import type { Scope } from "effect"
import * as Batch from "../Batch.ts"
import type { SealedBatch } from "../Batch.ts"
import * as Failure from "../Failure.ts"
import type { SinkFailure, VerificationFailed } from "../Failure.ts"
import { Attribute } from "../Metrics.ts"
import type { Instruments } from "../Metrics.ts"
import * as RetryPolicy from "../RetryPolicy.ts"
import type { RetryBudget } from "../RetryPolicy.ts"
import type { PutReceipt, Sink } from "../Sink.ts"
import type { SourceError } from "../Source.ts"
import type { Committer } from "./Committer.ts"
import type { Limiter } from "./Limiter.ts"
import type { PipelineStats } from "./Stats.ts"

/**
 * A batch failed in a way the retry policy gave up on. Nothing of it was
 * committed; its records are re-read after a restart. Re-exported as
 * `Pipeline.BatchFailed`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 * declare const options: Pipeline.PipelineOptions
 *
 * const program = Pipeline.run(options).pipe(
 *   Effect.catchTag("BatchFailed", (e) => Effect.logError(`gave up on ${e.key} after ${e.attempts} attempts: ${e.message}`))
 * )
 * ```
 *
 * @since 0.1.0
 */
export class BatchFailed extends Schema.TaggedError<BatchFailed>()("BatchFailed", {
  key: Schema.String,
  failureClass: Failure.FailureClass,
  code: Schema.String,
  stage: Failure.Stage,
  attempts: Schema.Number,
  message: Schema.String
}) {}

/**
 * The stages of one batch's upload, in order.
 *
 * @since 0.2.0
 */
export type UploadStage = "object_upload" | "manifest_upload" | "verify"

/**
 * One batch's place in the stage machine.
 *
 * @since 0.2.0
 */
export interface UploadState {
  readonly batch: SealedBatch
  /** 1 for the first attempt, 2 for the first retry, … */
  readonly attempt: number
  /** The stage this attempt starts at. */
  readonly stage: UploadStage
  /** The receipt of the stored object, once `object_upload` succeeded. */
  readonly receipt: PutReceipt | undefined
  /** When the batch first failed (Clock ms), for the retry budget. */
  readonly firstFailureAt: number | undefined
  /** The code of the last failure, how many failures in a row had it, and when the first of them happened (Clock ms). */
  readonly lastCode: string | undefined
  readonly sameCode: number
  readonly sameCodeSince: number | undefined
}

/**
 * The state a new batch starts in: attempt 1, at put object, no receipt.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Batch } from "./index.ts"
 * import * as Uploader from "./stage/Uploader.ts"
 *
 * const state = Uploader.initial(Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [] }))
 * state.stage // "object_upload"
 * ```
 *
 * @since 0.2.0
 */
export const initial = (batch: SealedBatch): UploadState => ({
  batch,
  attempt: 1,
  stage: "object_upload",
  receipt: undefined,
  firstFailureAt: undefined,
  lastCode: undefined,
  sameCode: 0,
  sameCodeSince: undefined
})

/**
 * The state after `state`'s attempt failed at `failed.stage` with `error` at
 * `now`: the next attempt, resuming at the failed stage (see {@link resumeAt}),
 * with the retry context updated (first failure time, consecutive failures
 * with the same code).
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import * as Uploader from "./stage/Uploader.ts"
 * declare const atVerify: Uploader.UploadState
 * declare const slowDown: import("./Failure.ts").SinkFailure
 *
 * Uploader.retried(atVerify, slowDown, "SlowDown", 1_000).stage // "verify": the object is not uploaded again
 * ```
 *
 * @since 0.2.0
 */
export const retried = (
  failed: UploadState,
  error: SinkFailure | VerificationFailed,
  code: string,
  now: number
): UploadState => ({
  batch: failed.batch,
  attempt: failed.attempt + 1,
  stage: resumeAt(failed.stage, error._tag, failed.receipt),
  receipt: error._tag === "VerificationFailed" ? undefined : failed.receipt,
  firstFailureAt: failed.firstFailureAt ?? now,
  lastCode: code,
  sameCode: failed.lastCode === code ? failed.sameCode + 1 : 1,
  sameCodeSince: failed.lastCode === code ? failed.sameCodeSince ?? now : now
})

/**
 * Where the next attempt starts after `stage` failed with `error`: at the same
 * stage, except after a `VerificationFailed` (the stored object is wrong:
 * upload it again) or when no receipt is known.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import * as Uploader from "./stage/Uploader.ts"
 * declare const receipt: import("./Sink.ts").PutReceipt
 *
 * Uploader.resumeAt("verify", "SinkFailure", receipt) // "verify"
 * Uploader.resumeAt("verify", "VerificationFailed", receipt) // "object_upload"
 * ```
 *
 * @since 0.2.0
 */
export const resumeAt = (
  stage: UploadStage,
  error: "SinkFailure" | "VerificationFailed",
  receipt: PutReceipt | undefined
): UploadStage => (error === "VerificationFailed" || receipt === undefined ? "object_upload" : stage)

/**
 * What the uploader needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface UploaderDeps {
  readonly sink: Sink
  readonly limiter: Limiter
  readonly committer: Committer
  readonly retry: RetryPolicy.RetryPolicy
  /** When to give up on a batch, whatever `retry` says. */
  readonly budget: RetryBudget
  /** Verified-but-uncommitted batches per partition past which its new batches wait. */
  readonly maxVerifiedAhead: number
  readonly stats: PipelineStats
  readonly metrics: Instruments
  /** Returns a batch's bytes to the memory budget (verified or abandoned). */
  readonly release: (batch: SealedBatch) => Effect.Effect<void>
  /** A batch left the pipeline (verified and committed, or abandoned). */
  readonly settled: Effect.Effect<void>
  /** Ends the run with an error (or a defect). */
  readonly failCause: (cause: Cause.Cause<BatchFailed | SourceError>) => Effect.Effect<void>
  /** The scope upload and retry fibers run in (closed to abandon them). */
  readonly scope: Scope.Scope
}

/**
 * The uploader of one pipeline.
 *
 * @since 0.2.0
 */
export interface Uploader {
  /** Queues freshly sealed batches (already registered with the committer). */
  readonly submit: (batches: ReadonlyArray<SealedBatch>) => Effect.Effect<void>
  /** Takes queued batches and starts their uploads; runs forever. */
  readonly dispatcher: Effect.Effect<never>
  /** Revoked partitions: their held batches go back to the dispatcher, which abandons them. */
  readonly forget: (source: string, partitions: ReadonlyArray<number>) => Effect.Effect<void>
}

/**
 * Builds an uploader.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as Uploader from "./stage/Uploader.ts"
 * declare const deps: Uploader.UploaderDeps
 * declare const batch: import("./Batch.ts").SealedBatch
 *
 * const program = Effect.gen(function*() {
 *   const uploader = yield* Uploader.make(deps)
 *   yield* Effect.forkChild(uploader.dispatcher)
 *   yield* uploader.submit([batch])
 * })
 * ```
 *
 * @since 0.2.0
 */
export const make = (deps: UploaderDeps): Effect.Effect<Uploader> =>
  Effect.map(Queue.unbounded<UploadState | typeof RETRY>(), (queue) => {
    const { stats } = deps
    const parked = new Parked()
    // Retries due, and batches taken from the queue behind them (each bounded by the
    // batches outstanding, `stats.batchesOutstanding`, which the memory budget bounds).
    const retries: Array<UploadState> = []
    const waiting: Array<UploadState> = []
    // The store answered: when a batch last verified (Clock ms), and a signal the
    // batches backing off because the store gave no answer (RetryPolicy.NO_ANSWER_CODES)
    // wait on beside their delay — they retry as soon as it answers again, not after a
    // backoff grown over earlier outages (a batch refused in two restarts waited 42 s
    // after the second; npm run faults -- --only s3-kill).
    let answeredAt = Number.NEGATIVE_INFINITY
    let answered = Deferred.makeUnsafe<void>()
    const storeAnswered = Effect.gen(function*() {
      answeredAt = yield* Clock.currentTimeMillis
      const woken = answered
      answered = Deferred.makeUnsafe<void>()
      Deferred.doneUnsafe(woken, Effect.void)
    })

    const onVerified = (batch: SealedBatch) =>
      Effect.gen(function*() {
        yield* storeAnswered
        stats.batchesVerified++
        stats.recordsVerified += batch.records
        stats.bytesVerified += batch.bytes
        deps.metrics.recordsVerified.add(batch.records)
        Batch.releaseBody(batch)
        yield* deps.release(batch)
        yield* deps.committer.verified(batch)
        yield* unpark(batch)
        // Only now: with an asynchronous source commit, counting the batch done
        // before its commit lets the run complete (and close) mid-commit.
        stats.batchesOutstanding--
        yield* deps.settled
      })

    const abandon = (batch: SealedBatch) =>
      Effect.gen(function*() {
        Batch.releaseBody(batch)
        stats.batchesOutstanding--
        yield* deps.release(batch)
        yield* deps.settled
      })

    const onFailed = (failed: UploadState, error: SinkFailure | VerificationFailed) =>
      Effect.flatMap(decide(deps, failed, error, answeredAt), (decision) => {
        if (decision._tag === "GiveUp") return deps.failCause(Cause.fail(decision.error))
        stats.queued++
        const backoff = Effect.sleep(decision.delayMillis)
        const wait = decision.noAnswer ? Effect.raceFirst(backoff, Deferred.await(answered)) : backoff
        // A batch the store gave no answer to goes first once due (see RETRY); one it
        // refused (a throttle, a 5xx) waits with the others, taken by age (OLDEST_FIRST).
        const requeue = decision.noAnswer
          ? Effect.suspend(() => {
            retries.push(decision.next)
            return Queue.offer(queue, RETRY)
          })
          : Queue.offer(queue, decision.next)
        return wait.pipe(Effect.andThen(requeue), Effect.forkIn(deps.scope), Effect.asVoid)
      })

    const process = (state: UploadState) =>
      deps.limiter.holding(runStages(deps, state)).pipe(
        Effect.matchEffect({
          onSuccess: () => onVerified(state.batch),
          onFailure: ({ error, state: failed }) => onFailed(failed, error)
        }),
        Effect.catchCause(deps.failCause)
      )

    const dispatcher = Effect.gen(function*() {
      while (true) {
        // Everything queued is taken into `waiting` (waiting for items only when
        // nothing is). Retries due after no answer go first (see RETRY); then the
        // waiting batch with the oldest record (see OLDEST_FIRST).
        const taken = waiting.length === 0 && retries.length === 0 ? yield* Queue.takeAll(queue) : yield* Queue.clear(queue)
        for (const item of taken) if (item !== RETRY) waiting.push(item)
        const state = retries.shift() ?? takeOldest(waiting)
        if (state === undefined) continue
        if (!deps.committer.isPending(state.batch)) {
          // Its partition was revoked: abandon without commit.
          stats.queued--
          yield* abandon(state.batch)
          continue
        }
        if (state.attempt === 1 && deps.committer.atCap(state.batch, deps.maxVerifiedAhead)) {
          // Still counted as queued: it waits for its partition's head batch.
          if (parked.add(state)) yield* logHeld(deps, state.batch)
          stats.partitionsHeld = parked.partitions
          continue
        }
        stats.queued--
        yield* deps.limiter.acquire
        yield* Effect.forkIn(process(state), deps.scope)
      }
    })

    /** Re-queues the batches held for `batch`'s partition once it is below the cap again. */
    const unpark = (batch: SealedBatch) =>
      Effect.suspend(() => {
        if (deps.committer.tracker.verifiedAhead(batch.source, batch.partition) >= deps.maxVerifiedAhead) return Effect.void
        const held = parked.take(batch.source, batch.partition)
        stats.partitionsHeld = parked.partitions
        return held.length === 0 ? Effect.void : Queue.offerAll(queue, held)
      })

    return {
      submit: (batches) =>
        Effect.suspend(() => {
          if (batches.length === 0) return Effect.void
          stats.batchesOutstanding += batches.length
          stats.queued += batches.length
          return Queue.offerAll(queue, batches.map(initial))
        }),
      dispatcher,
      forget: (source, partitions) =>
        Effect.suspend(() => {
          const held = parked.takePartitions(source, partitions)
          stats.partitionsHeld = parked.partitions
          // The dispatcher abandons them: their partitions are no longer pending.
          return held.length === 0 ? Effect.void : Queue.offerAll(queue, held)
        })
    }
  })

/**
 * The queue item that says a retry is due (its state is in the uploader's
 * `retries`), for a batch the store gave no answer to
 * (`RetryPolicy.NO_ANSWER_CODES`). Such a retry goes before the batches already
 * queued: it is older than the batches sealed after it, its partition's commits
 * wait for it, and what failed was the connection, not the store's judgement of
 * load. Behind them, with uploads started at 4 a second and the topic read
 * ahead, a batch whose retry the store's answer woke waited 20 s after a 30 s
 * stall, and every commit of its partition with it (`npm run faults -- --only
 * stall`; the virtual test: 25.1 s to the first commit, < 6 s first). A batch
 * the store refused (a throttle, a 5xx) is taken by age with the batches
 * waiting (see OLDEST_FIRST).
 */
const RETRY: unique symbol = Symbol("sluice/Uploader/retry")

/**
 * New batches of partitions at the verified-but-uncommitted cap, waiting for
 * their partition's head batch. Bounded: each holds bytes of the memory budget.
 */
class Parked {
  private readonly byPartition = new Map<string, Array<UploadState>>()
  /** Partitions with batches waiting. */
  get partitions(): number {
    return this.byPartition.size
  }
  /** Parks a batch; `true` when its partition was not held before. */
  add(state: UploadState): boolean {
    const id = partitionId(state.batch.source, state.batch.partition)
    const list = this.byPartition.get(id)
    if (list !== undefined) {
      list.push(state)
      return false
    }
    this.byPartition.set(id, [state])
    return true
  }
  take(source: string, partition: number): Array<UploadState> {
    const id = partitionId(source, partition)
    const list = this.byPartition.get(id) ?? []
    this.byPartition.delete(id)
    return list
  }
  takePartitions(source: string, partitions: ReadonlyArray<number>): Array<UploadState> {
    return partitions.flatMap((p) => this.take(source, p))
  }
}

/**
 * OLDEST_FIRST: takes the waiting batch whose oldest record was read first
 * (the earliest `openedAt`; the first of equals), so a slot goes to the
 * record that has waited longest — the age of the oldest uncommitted record
 * is what an archiver is judged on, and a partition commits in order, so its
 * oldest batch is the one its commits wait for. In arrival order, a batch
 * refused by a throttle went behind every batch sealed meanwhile: on a store
 * throttling above 5 in flight with 25 partitions, one waited 22 s from seal to
 * verify behind ~20 others, and the oldest record 64 s
 * (`mixed-2-179`, docs/design/generalization.md, 2026-12-05).
 * What it buys on the family sets (mixed, 200 each): max lag p90 16.4 → 16.3 s
 * (train), 17.9 → 16.8 s (test); mean max lag 8.5 → 8.0 s and 8.9 → 8.1 s; the
 * largest 64 → 39 s and 81 → 69 s; worst degraded phase unchanged (p10 0.785 →
 * 0.782, 0.769 → 0.768).
 *
 * A scan of the batches waiting, which the memory budget bounds.
 */
const takeOldest = (waiting: Array<UploadState>): UploadState | undefined => {
  let at = -1
  let oldest = Number.POSITIVE_INFINITY
  for (let i = 0; i < waiting.length; i++) {
    const openedAt = waiting[i]?.batch.openedAt ?? Number.POSITIVE_INFINITY
    if (openedAt < oldest) {
      oldest = openedAt
      at = i
    }
  }
  return at < 0 ? undefined : waiting.splice(at, 1)[0]
}
const partitionId = (source: string, partition: number): string => `${source}/${partition}`

/** Says, once per episode, that a partition's new batches wait behind one that is not verified. */
const logHeld = (deps: UploaderDeps, batch: SealedBatch) =>
  Effect.logWarning(
    `sluice: partition ${partitionId(batch.source, batch.partition)} held — ${deps.maxVerifiedAhead} verified batches wait for an earlier one; its new batches wait too`
  ).pipe(
    Effect.annotateLogs({
      partition: partitionId(batch.source, batch.partition),
      waitingFor: deps.committer.tracker.head(batch.source, batch.partition)?.key ?? "",
      maxVerifiedAhead: deps.maxVerifiedAhead
    })
  )

/**
 * The retry decision after a failed attempt: give up (the budget is spent, or
 * the policy says so) with the `BatchFailed` to end the run, or retry after a
 * delay — logged and counted. `answeredAt` is when the store last answered
 * (any batch verified): a store that answered since this batch's refusals
 * began has been unreachable for at most `now - answeredAt`, so the
 * unreachable budget counts from then. `noAnswer`: the failure's code says the
 * store gave no answer (`RetryPolicy.NO_ANSWER_CODES`): the retry goes early
 * once it answers.
 */
const decide = (
  deps: UploaderDeps,
  failed: UploadState,
  error: SinkFailure | VerificationFailed,
  answeredAt: number
): Effect.Effect<
  | { readonly _tag: "GiveUp"; readonly error: BatchFailed }
  | { readonly _tag: "Retry"; readonly delayMillis: number; readonly next: UploadState; readonly noAnswer: boolean }
> =>
  Effect.gen(function*() {
    const failure = Failure.classify(error)
    const now = yield* Clock.currentTimeMillis
    const next = retried(failed, error, failure.code, now)
    const context: RetryPolicy.RetryContext = {
      key: failed.batch.key,
      firstFailureAt: next.firstFailureAt ?? now,
      now,
      sameCode: next.sameCode,
      sameCodeSince: Math.max(next.sameCodeSince ?? now, answeredAt)
    }
    const spent = RetryPolicy.exhausted(deps.budget, failure, failed.attempt, context)
    const delay = spent === undefined ? deps.retry.delayMillis(failure, failed.attempt, context) : undefined
    if (delay === undefined) {
      Batch.releaseBody(failed.batch)
      return { _tag: "GiveUp", error: batchFailed(failed, failure, error, spent) } as const
    }
    deps.stats.retries++
    deps.metrics.retries.add(1, { [Attribute.errorType]: failure.code, [Attribute.failureClass]: failure.failureClass, [Attribute.stage]: failed.stage })
    yield* Effect.logWarning("sluice: retrying a failed batch").pipe(
      Effect.annotateLogs({
        batch: failed.batch.key,
        stage: failed.stage,
        failureClass: failure.failureClass,
        code: failure.code,
        attempt: failed.attempt,
        delayMillis: delay
      })
    )
    return { _tag: "Retry", delayMillis: delay, next, noAnswer: RetryPolicy.NO_ANSWER_CODES.includes(failure.code) } as const
  })

/**
 * Runs the stages of one attempt from `state.stage`. Fails with the error and
 * the state to resume from (the stage that failed, and the receipt known).
 */
const runStages = (
  deps: UploaderDeps,
  state: UploadState
): Effect.Effect<void, { readonly error: SinkFailure | VerificationFailed; readonly state: UploadState }> =>
  Effect.gen(function*() {
    const { batch, attempt } = state
    const { limiter, sink } = deps
    let receipt = state.receipt
    let stage: UploadStage = receipt === undefined ? "object_upload" : state.stage
    const failed = (error: SinkFailure | VerificationFailed) => ({ error, state: { ...state, stage, receipt } })
    const span = spanOf(batch, attempt)
    if (stage === "object_upload") {
      // Compressed (off the event loop when large) before the timed request:
      // the sample is the store's latency, and its bytes what is sent.
      yield* Batch.prepareBody(batch)
      receipt = yield* limiter.measure("object_upload", Batch.objectBytes(batch), attempt, sink.putObject(batch)).pipe(
        span("sluice.batch.upload"),
        Effect.mapError(failed)
      )
      // Stored: the body is not needed again (a retry resumes after this stage);
      // its memory is reused for a later batch if the sink keeps no reference.
      if (sink.keepsBodies === false) Batch.recycleBody(batch)
      else Batch.releaseBody(batch)
      stage = "manifest_upload"
    }
    if (receipt === undefined) return
    const stored = receipt
    if (stage === "manifest_upload") {
      yield* limiter.measure("manifest_upload", 0, attempt, sink.putManifest(Batch.manifestOf(batch, stored.checksum))).pipe(
        span("sluice.batch.manifest"),
        Effect.mapError(failed)
      )
      stage = "verify"
    }
    yield* limiter.measure("verify", 0, attempt, sink.verify(stored)).pipe(span("sluice.batch.verify"), Effect.mapError(failed))
  })

/**
 * A client span per stage of a batch's attempt, through Effect's tracer (an
 * OpenTelemetry tracer when the application installs one, e.g. with
 * `@effect/opentelemetry`): the batch key, topic, partition, offsets, records,
 * bytes and the attempt. No stack capture: it would cost on every request.
 */
const spanOf = (batch: SealedBatch, attempt: number) => {
  const attributes = {
    "sluice.batch.key": batch.key,
    [Attribute.topic]: batch.source,
    [Attribute.partition]: String(batch.partition),
    "sluice.batch.first_offset": batch.firstOffset,
    "sluice.batch.last_offset": batch.lastOffset,
    "sluice.batch.records": batch.records,
    "sluice.batch.bytes": batch.bytes,
    "sluice.attempt": attempt
  }
  return (name: string) => Effect.withSpan(name, { kind: "client", attributes }, { captureStackTrace: false })
}

const batchFailed = (
  state: UploadState,
  failure: Failure.ClassifiedFailure,
  error: SinkFailure | VerificationFailed,
  spent: string | undefined
): BatchFailed => {
  const cause = error._tag === "SinkFailure" ? error.message : `verification failed: ${error.reason}`
  return new BatchFailed({
    key: state.batch.key,
    failureClass: failure.failureClass,
    code: failure.code,
    stage: failure.stage,
    attempts: state.attempt,
    message: spent === undefined ? cause : `${spent}; last failure: ${cause}`
  })
}
