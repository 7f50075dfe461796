/**
 * The uploader: takes sealed batches and runs each through a small **stage
 * machine** — put object → put manifest → verify — under the limiter.
 *
 * A failed stage is retried after the delay the `RetryPolicy` in force chooses,
 * and the retry **resumes at the stage that failed**: a throttled verify (HEAD)
 * verifies again, it does not upload the object again; the receipt (key, size,
 * checksum) of the stored object is kept in the batch's state, and the encoded
 * body is built once per batch (`Batch.encodeBody` memoizes it until the batch
 * is released). Only a `VerificationFailed` (the stored object is not ours)
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
import { Cause, Effect, Queue, Schema } from "effect"
import type { Scope } from "effect"
import * as Batch from "../Batch.ts"
import type { SealedBatch } from "../Batch.ts"
import * as Failure from "../Failure.ts"
import type { SinkFailure, VerificationFailed } from "../Failure.ts"
import type { Instruments } from "../Metrics.ts"
import type { RetryPolicy } from "../RetryPolicy.ts"
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
}

/**
 * The state a new batch starts in.
 *
 * @since 0.2.0
 */
export const initial = (batch: SealedBatch): UploadState => ({ batch, attempt: 1, stage: "object_upload", receipt: undefined })

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
  readonly retry: RetryPolicy
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
  /** Batches submitted and not yet settled. */
  readonly outstanding: () => number
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
  Effect.map(Queue.unbounded<UploadState>(), (queue) => {
    let outstanding = 0
    const { stats } = deps

    const onVerified = (batch: SealedBatch) =>
      Effect.gen(function*() {
        stats.batchesVerified++
        stats.recordsVerified += batch.records
        stats.bytesVerified += batch.bytes
        deps.metrics.recordsVerified.add(batch.records)
        Batch.releaseBody(batch)
        yield* deps.release(batch)
        yield* deps.committer.verified(batch)
        // Only now: with an asynchronous source commit, counting the batch done
        // before its commit lets the run complete (and close) mid-commit.
        outstanding--
        yield* deps.settled
      })

    const abandon = (batch: SealedBatch) =>
      Effect.gen(function*() {
        Batch.releaseBody(batch)
        outstanding--
        yield* deps.release(batch)
        yield* deps.settled
      })

    const onFailed = (state: UploadState, error: SinkFailure | VerificationFailed) =>
      Effect.gen(function*() {
        const failure = Failure.classify(error)
        const delay = deps.retry.delayMillis(failure, state.attempt)
        if (delay === undefined) {
          Batch.releaseBody(state.batch)
          return yield* deps.failCause(Cause.fail(batchFailed(state, failure, error)))
        }
        stats.retries++
        stats.queued++
        const next: UploadState = {
          batch: state.batch,
          attempt: state.attempt + 1,
          stage: resumeAt(state.stage, error._tag, state.receipt),
          receipt: error._tag === "VerificationFailed" ? undefined : state.receipt
        }
        yield* Effect.sleep(delay).pipe(Effect.andThen(Queue.offer(queue, next)), Effect.forkIn(deps.scope))
      })

    const process = (state: UploadState) =>
      runStages(deps, state).pipe(
        Effect.ensuring(deps.limiter.release),
        Effect.matchEffect({
          onSuccess: () => onVerified(state.batch),
          onFailure: ({ error, state: failed }) => onFailed(failed, error)
        }),
        Effect.catchCause(deps.failCause)
      )

    const dispatcher = Effect.gen(function*() {
      while (true) {
        const state = yield* Queue.take(queue)
        stats.queued--
        if (!deps.committer.isPending(state.batch)) {
          // Its partition was revoked: abandon without commit.
          yield* abandon(state.batch)
          continue
        }
        yield* deps.limiter.acquire
        yield* Effect.forkIn(process(state), deps.scope)
      }
    })

    return {
      submit: (batches) =>
        Effect.suspend(() => {
          if (batches.length === 0) return Effect.void
          outstanding += batches.length
          stats.queued += batches.length
          return Queue.offerAll(queue, batches.map(initial))
        }),
      dispatcher,
      outstanding: () => outstanding
    }
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
    if (stage === "object_upload") {
      receipt = yield* limiter.measure("object_upload", Batch.bodyBytes(batch), attempt, sink.putObject(batch)).pipe(
        Effect.mapError(failed)
      )
      // Stored: the body is not needed again (a retry resumes after this stage).
      Batch.releaseBody(batch)
      stage = "manifest_upload"
    }
    if (receipt === undefined) return
    const stored = receipt
    if (stage === "manifest_upload") {
      yield* limiter.measure("manifest_upload", 0, attempt, sink.putManifest(Batch.manifestOf(batch, stored.checksum))).pipe(
        Effect.mapError(failed)
      )
      stage = "verify"
    }
    yield* limiter.measure("verify", 0, attempt, sink.verify(stored)).pipe(Effect.mapError(failed))
  })

const batchFailed = (
  state: UploadState,
  failure: Failure.ClassifiedFailure,
  error: SinkFailure | VerificationFailed
): BatchFailed =>
  new BatchFailed({
    key: state.batch.key,
    failureClass: failure.failureClass,
    code: failure.code,
    stage: failure.stage,
    attempts: state.attempt,
    message: error._tag === "SinkFailure" ? error.message : `verification failed: ${error.reason}`
  })
