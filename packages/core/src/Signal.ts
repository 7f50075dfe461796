/**
 * Signals: everything the pipeline observes, published on one bus that policies
 * subscribe to.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, PubSub, Stream } from "effect"
import type { SealReason } from "./Batch.ts"
import type { ClassifiedFailure, Stage } from "./Failure.ts"
import type { KnobValues } from "./Knob.ts"
import type { RetentionGap } from "./Source.ts"

/**
 * One successful sink request. `inflightAtStart` and `limitAtStart` let a
 * controller tell a saturated limit from an idle one.
 *
 * @since 0.1.0
 */
export interface UploadSample {
  readonly _tag: "UploadSample"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  readonly stage: Stage
  readonly startedAt: number
  readonly latencyMillis: number
  readonly bytes: number
  readonly inflightAtStart: number
  readonly limitAtStart: number
}

/**
 * One failed sink request, classified.
 *
 * @since 0.1.0
 */
export interface FailureSignal {
  readonly _tag: "Failure"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  readonly failure: ClassifiedFailure
  readonly startedAt: number
  readonly latencyMillis: number
  readonly inflightAtStart: number
  readonly limitAtStart: number
  /** 1 for the first attempt of a batch, 2 for its first retry, … */
  readonly attempt: number
}

/**
 * In-flight work: batches uploading and bytes held (open + sealed + uploading).
 *
 * @since 0.1.0
 */
export interface InflightSignal {
  readonly _tag: "Inflight"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  readonly batches: number
  readonly bytes: number
  readonly openBytes: number
  readonly budgetBytes: number
}

/**
 * A batch was sealed.
 *
 * @since 0.1.0
 */
export interface SealSignal {
  readonly _tag: "Sealed"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  readonly reason: SealReason
  readonly records: number
  readonly bytes: number
  readonly ageMillis: number
}

/**
 * Records behind the end of the log, per partition.
 *
 * @since 0.1.0
 */
export interface LagSignal {
  readonly _tag: "Lag"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  readonly lag: ReadonlyMap<number, number>
  readonly totalRecords: number
}

/**
 * A periodic tick from the Clock, with the knob values in force.
 *
 * @since 0.1.0
 */
export interface TickSignal {
  readonly _tag: "Tick"
  readonly at: number
  readonly knobs: KnobValues
}

/**
 * A policy changed mode (e.g. `steady` → `probing`), published by the policy
 * shell for policies that declare `mode`. The testkit uses it to measure what
 * probes cost.
 *
 * @since 0.1.0
 */
export interface PolicyModeSignal {
  readonly _tag: "PolicyMode"
  readonly at: number
  readonly policy: string
  readonly mode: string
}

/**
 * Every signal.
 *
 * @since 0.1.0
 */
export type Signal =
  | UploadSample
  | FailureSignal
  | InflightSignal
  | SealSignal
  | LagSignal
  | TickSignal
  | RetentionGapSignal
  | PolicyModeSignal

/**
 * A retention gap, as published (see `Source.RetentionGap`).
 *
 * @since 0.1.0
 */
export interface RetentionGapSignal extends RetentionGap {
  readonly at: number
}

/**
 * The signal bus service.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { SignalBus } from "@sluice/core"
 *
 * const logThrottles = Effect.gen(function*() {
 *   const bus = yield* SignalBus.SignalBus
 *   const signals = yield* bus.subscribe
 *   yield* Stream.fromSubscription(signals).pipe(
 *     Stream.filter((s) => s._tag === "Failure" && s.failure.failureClass === "Throttled"),
 *     Stream.runForEach((s) => Effect.log(s))
 *   )
 * })
 * ```
 *
 * @since 0.1.0
 */
export class SignalBus extends Context.Service<SignalBus, {
  readonly publish: (signal: Signal) => Effect.Effect<void>
  /** Synchronous publish for hot paths. */
  readonly publishUnsafe: (signal: Signal) => void
  /** A subscription that sees every signal published after it was taken. */
  readonly subscribe: Effect.Effect<PubSub.Subscription<Signal>, never, import("effect").Scope.Scope>
  /** The signals as a stream (subscribes when run). */
  readonly stream: Stream.Stream<Signal>
}>()("@sluice/core/SignalBus") {}

/**
 * Builds an unbounded signal bus (signals are per batch and per tick, not per
 * record, so the volume is small).
 *
 * @since 0.1.0
 */
export const make = Effect.gen(function*() {
  const pubsub = yield* PubSub.unbounded<Signal>()
  yield* Effect.addFinalizer(() => PubSub.shutdown(pubsub))
  return SignalBus.of({
    publish: (signal) => Effect.asVoid(PubSub.publish(pubsub, signal)),
    publishUnsafe: (signal) => {
      PubSub.publishUnsafe(pubsub, signal)
    },
    subscribe: PubSub.subscribe(pubsub),
    stream: Stream.fromPubSub(pubsub)
  })
})

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<SignalBus> = Layer.effect(SignalBus, make)
