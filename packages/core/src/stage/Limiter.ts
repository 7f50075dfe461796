/**
 * The limiter: enforcement of the concurrency and rate knobs, and the
 * attribution of every sink request's outcome — in the spirit of Netflix's
 * `Limiter` (acquire a permit, then report `onSuccess` / `onIgnore` /
 * `onDropped`), separate from the algorithms (the policies) that decide the
 * limit.
 *
 * - **Gate**: a `Semaphore` of upload permits, resized when the concurrency knob
 *   moves (`Semaphore.resize`: a shrink lets uploads in flight finish, it never
 *   cancels them).
 * - **Rate**: an optional token bucket of burst 1 spacing object-upload starts
 *   at `1000 / rate` ms (the rate knob; `null` = unlimited); a start
 *   waiting when the rate is released starts at once (the knob watcher calls
 *   `retime` when the rate moves).
 * - **Attribution** ({@link attribute}): each request is a sample for the
 *   controllers, published on the bus as
 *   - `success` → an `UploadSample` (latency, bytes, in-flight and limit at
 *     its start);
 *   - `dropped` → a `Failure` signal of class `Throttled`: the store shed load,
 *     the one outcome that says the limit is too high;
 *   - `ignored` → a `Failure` signal of class `Transient` or `Fatal`: the
 *     request failed for a reason that says nothing about load; controllers
 *     see it but must not read it as a latency sample. The batch is retried
 *     (or fails the run) by the uploader.
 *
 * It owns: the gate, the rate clock, the `uploading`, `requests`, `failures`
 * and `throttles` counters. It touches nothing else.
 *
 * @since 0.2.0
 */
import type { Semaphore as SemaphoreT } from "effect"
import { Clock, Deferred, Effect, Exit, Semaphore } from "effect"
import * as Failure from "../Failure.ts"
import type { SinkFailure, Stage, VerificationFailed } from "../Failure.ts"
import type { KnobValues } from "../Knob.ts"
import { Attribute } from "../Metrics.ts"
import type { Instruments } from "../Metrics.ts"
import type { Signal } from "../Signal.ts"
import type { PipelineStats } from "./Stats.ts"

/**
 * How a request's outcome counts for the controllers (see the module doc).
 *
 * @since 0.2.0
 */
export type Attribution = "success" | "ignored" | "dropped"

/**
 * Attributes one request's outcome: `success` for a success, `dropped` for a
 * throttle, `ignored` for any other failure.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import * as Limiter from "./stage/Limiter.ts"
 *
 * Limiter.attribute(undefined) // "success"
 * Limiter.attribute({ failureClass: "Throttled", code: "SlowDown", status: 503, stage: "verify", retryAfterMillis: undefined }) // "dropped"
 * ```
 *
 * @since 0.2.0
 */
export const attribute = (failure: Failure.ClassifiedFailure | undefined): Attribution =>
  failure === undefined ? "success" : failure.failureClass === "Throttled" ? "dropped" : "ignored"

/**
 * What the limiter needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface LimiterDeps {
  readonly knobs: { readonly current: () => KnobValues }
  readonly stats: PipelineStats
  readonly metrics: Instruments
  readonly publish: (signal: Signal) => void
}

/**
 * The limiter of one pipeline.
 *
 * **When to use**
 *
 * The uploader `acquire`s a permit per batch attempt, runs the attempt
 * `holding` it (each sink request through `measure`); the permit returns when
 * the attempt ends. The knob watcher calls `resize`.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as Limiter from "./stage/Limiter.ts"
 * declare const deps: Limiter.LimiterDeps
 * declare const request: Effect.Effect<string, import("./Failure.ts").SinkFailure>
 *
 * const program = Effect.gen(function*() {
 *   const limiter = yield* Limiter.make(deps)
 *   yield* limiter.acquire
 *   return yield* limiter.holding(limiter.measure("object_upload", 1024, 1, request))
 * })
 * ```
 *
 * @since 0.2.0
 */
export interface Limiter {
  /** Waits for the rate, then for a permit. */
  readonly acquire: Effect.Effect<void>
  /**
   * Runs one attempt holding the permit taken by `acquire`: it counts as
   * uploading while it runs, and the permit returns when it ends (however).
   */
  readonly holding: <A, E, R>(attempt: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Resizes the gate (concurrency knob). */
  readonly resize: (permits: number) => Effect.Effect<void>
  /** The rate knob moved: a start waiting for the rate starts at once if the rate was released. */
  readonly retime: Effect.Effect<void>
  /**
   * Runs one sink request, times it, publishes its sample (attributed, see
   * {@link attribute}) and counts it. A successful answer's `checksumMillis`
   * (a `PutReceipt`'s local checksum time) is taken out of the latency.
   */
  readonly measure: <A, E extends SinkFailure | VerificationFailed>(
    stage: Stage,
    bytes: number,
    attempt: number,
    request: Effect.Effect<A, E>
  ) => Effect.Effect<A, E>
  /** Batches holding a permit now. */
  readonly inflight: () => number
}

/**
 * Builds a limiter whose gate starts at the concurrency knob's current value.
 *
 * @since 0.2.0
 */
export const make = (deps: LimiterDeps): Effect.Effect<Limiter> =>
  Effect.map(Semaphore.make(deps.knobs.current().concurrency), (gate) => fromGate(gate, deps))

const fromGate = (gate: SemaphoreT.Semaphore, deps: LimiterDeps): Limiter => {
  const { stats } = deps
  // A start is due `1000 / rate` ms after the last, by the rate in force at
  // the last. While one waits, a rate released (`retime`) lets it start at
  // once: without that, a batch sealed under a cut of 0.78/s slept 1.3 s past
  // the rate's release on the real server, and the dispatcher, with every
  // batch behind it. A raise or a cut leaves it due when it was (waking on
  // every raise of the CUBIC rate too cost wide-fairness-3 its Jain bound on
  // a held-out seed: 0.975 → 0.949).
  let nextStart = 0
  let retimed = Deferred.makeUnsafe<void>()
  const rateWait = Effect.gen(function*() {
    let rate = deps.knobs.current().rate
    if (rate === null) return
    let now = yield* Clock.currentTimeMillis
    let at = Math.max(now, nextStart)
    while (at > now) {
      const woken = yield* Effect.raceFirst(
        Effect.as(Effect.sleep(at - now), "due" as const),
        Effect.as(Deferred.await(retimed), "retimed" as const)
      )
      // Slept until due: that is the start (a clock that rounds the sleep, as
      // the simulator's does, must not make it wait again for the same due).
      if (woken === "due") break
      // Retimed: a released rate lets it start now; a raise or a cut leaves it
      // due when it was (the next start is spaced by the rate in force then).
      if (deps.knobs.current().rate === null) {
        rate = null
        at = yield* Clock.currentTimeMillis
        break
      }
      now = yield* Clock.currentTimeMillis
    }
    nextStart = at + (rate === null ? 0 : 1000 / rate)
  })
  const acquire = Effect.andThen(rateWait, gate.take(1))
  return {
    acquire,
    holding: (attempt) =>
      Effect.suspend(() => {
        // Counted as uploading from the moment the attempt runs (not when its
        // permit was taken): the policies' `inflightAtStart` is read this way.
        stats.uploading++
        return attempt
      }).pipe(
        Effect.ensuring(Effect.suspend(() => {
          stats.uploading--
          return gate.release(1)
        }))
      ),
    resize: (permits) => gate.resize(permits),
    retime: Effect.sync(() => {
      const woken = retimed
      retimed = Deferred.makeUnsafe<void>()
      Deferred.doneUnsafe(woken, Effect.void)
    }),
    measure: (stage, bytes, attempt, request) => measured(deps, stage, bytes, attempt, request),
    inflight: () => stats.uploading
  }
}

const measured = <A, E extends SinkFailure | VerificationFailed>(
  deps: LimiterDeps,
  stage: Stage,
  bytes: number,
  attempt: number,
  request: Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    const { stats, metrics } = deps
    const startedAt = yield* Clock.currentTimeMillis
    const inflightAtStart = stats.uploading
    const limitAtStart = deps.knobs.current().concurrency
    stats.requests++
    const running = stage === "object_upload" ? { startedAt, bytes, inflightAtStart } : undefined
    if (running !== undefined) stats.runningUploads.add(running)
    const exit = yield* Effect.exit(request).pipe(Effect.ensuring(Effect.sync(() => running !== undefined && stats.runningUploads.delete(running))))
    const end = yield* Clock.currentTimeMillis
    // A successful put's local checksum time is not the store's latency.
    const local = Exit.isSuccess(exit) ? checksumMillisOf(exit.value) : 0
    const latencyMillis = Math.max(0, end - startedAt - local)
    metrics.stageDuration.record(latencyMillis / 1000, { [Attribute.stage]: stage })
    if (Exit.isSuccess(exit)) {
      deps.publish({ _tag: "UploadSample", at: end, stage, startedAt, latencyMillis, bytes, inflightAtStart, limitAtStart })
      return exit.value
    }
    const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
    if (reason !== undefined && reason._tag === "Fail") {
      const failure = Failure.classify(reason.error)
      stats.failures++
      metrics.failures.add(1, { [Attribute.errorType]: failure.code, [Attribute.failureClass]: failure.failureClass, [Attribute.stage]: stage })
      if (attribute(failure) === "dropped") {
        stats.throttles++
        metrics.throttles.add(1, { [Attribute.errorType]: failure.code })
        yield* Effect.logDebug("sluice: throttled").pipe(
          Effect.annotateLogs({ stage, code: failure.code, inflight: inflightAtStart, limit: limitAtStart })
        )
      }
      if (reason.error._tag === "VerificationFailed") {
        metrics.verificationFailures.add(1, { [Attribute.errorType]: reason.error.reason })
      }
      deps.publish({ _tag: "Failure", at: end, failure, startedAt, latencyMillis, inflightAtStart, limitAtStart, attempt })
    }
    return yield* exit
  })

/** `checksumMillis` of a sink's answer (a `PutReceipt`), when it reports a finite, positive one. */
const checksumMillisOf = (value: unknown): number => {
  if (typeof value !== "object" || value === null || !("checksumMillis" in value)) return 0
  const millis = value.checksumMillis
  return typeof millis === "number" && Number.isFinite(millis) && millis > 0 ? millis : 0
}
