/**
 * Signals: everything the pipeline observes, published on one bus that policies
 * subscribe to.
 *
 * The bus is bounded: each subscriber has its own sliding queue of at most
 * `capacity` signals, in which periodic snapshots (`Tick`, `Inflight`, `Lag`)
 * coalesce (see {@link makeWith}).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, MutableList, PubSub, Stream } from "effect"
import type { Scope } from "effect"
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
  /** The signal's tag. */
  readonly _tag: "UploadSample"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  /** Which request of the batch: `object_upload`, `manifest_upload` or `verify`. */
  readonly stage: Stage
  /** When this request began (Clock ms). */
  readonly startedAt: number
  /**
   * `at − startedAt` minus the local checksum time the sink reported in its
   * put receipt: the store's time, not this process's CPU.
   */
  readonly latencyMillis: number
  /** The object's stored size (compressed, if compression is on) for `object_upload`; 0 for the others. */
  readonly bytes: number
  /** Batch attempts holding an upload permit when this request started, this one included (≥ 1). */
  readonly inflightAtStart: number
  /** The combined concurrency knob when this request started (the minimum over every policy's proposal). */
  readonly limitAtStart: number
}

/**
 * One failed sink request, classified.
 *
 * @since 0.1.0
 */
export interface FailureSignal {
  /** The signal's tag. */
  readonly _tag: "Failure"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  /** The failure as the adapter classified it: `Throttled`, `Transient` or `Fatal`, with its code and stage. */
  readonly failure: ClassifiedFailure
  /** When the failed request began (Clock ms). */
  readonly startedAt: number
  /** How long the failed request took: `at − startedAt` (ms). */
  readonly latencyMillis: number
  /** Batch attempts holding an upload permit when this request started, this one included (≥ 1). */
  readonly inflightAtStart: number
  /** The combined concurrency knob when this request started. */
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
  /** The signal's tag. */
  readonly _tag: "Inflight"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  /** Batches uploading now (holding a concurrency permit). */
  readonly batches: number
  /** Bytes charged to the memory budget now: payload plus per-record overhead of open, sealed and uploading batches. */
  readonly bytes: number
  /** Payload bytes in open (unsealed) batches. */
  readonly openBytes: number
  /** The pipeline's memory budget (bytes). */
  readonly budgetBytes: number
  /**
   * The median of the object uploads running now (by when they began; none:
   * `undefined`): half of them have been running at least this long. A store
   * that got slower shows here before its first slow upload completes; one
   * upload stuck on its own does not move it.
   */
  readonly medianUpload?: RunningUpload | undefined
}

/**
 * An object upload running now (`InflightSignal.medianUpload`,
 * `PipelineStats.runningUploads`).
 *
 * @since 0.2.0
 */
export interface RunningUpload {
  /** When it began (Clock ms). */
  readonly startedAt: number
  /** Its body's bytes. */
  readonly bytes: number
  /** Batches uploading when it began. */
  readonly inflightAtStart: number
}

/**
 * A batch was sealed.
 *
 * @since 0.1.0
 */
export interface SealSignal {
  /** The signal's tag. */
  readonly _tag: "Sealed"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  /** Why it was sealed: `records`, `bytes`, `age`, `pressure`, `drain` or `gap`. */
  readonly reason: SealReason
  /** Records in the batch. */
  readonly records: number
  /** Payload bytes of the batch's records. */
  readonly bytes: number
  /** Time from the batch's opening to its sealing (ms). */
  readonly ageMillis: number
}

/**
 * Records behind the end of the log, per partition.
 *
 * @since 0.1.0
 */
export interface LagSignal {
  /** The signal's tag. */
  readonly _tag: "Lag"
  /** When the signal was observed (Clock ms). */
  readonly at: number
  /** The latest lag known, per partition (records behind the end of the log). */
  readonly lag: ReadonlyMap<number, number>
  /** The sum of `lag` over the partitions. */
  readonly totalRecords: number
}

/**
 * A periodic tick from the Clock, with the knob values in force.
 *
 * @since 0.1.0
 */
export interface TickSignal {
  /** The signal's tag. */
  readonly _tag: "Tick"
  /** When the tick happened (Clock ms). */
  readonly at: number
  /** The combined knob values in force. */
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
  /** The signal's tag. */
  readonly _tag: "PolicyMode"
  /** When the mode changed (Clock ms). */
  readonly at: number
  /** The policy's `name`. */
  readonly policy: string
  /** The new mode, as the policy's `mode(state)` returned it. */
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
  | LeftOnRevokeSignal

/**
 * Records in storage that this pipeline will never commit: their partition
 * was revoked (a consumer-group rebalance) after they were verified and
 * before their position was committed. The partition's next owner reads them
 * again from the offset the group holds and archives them again: these are a
 * rebalance's duplicates, named where they happen. Published when the
 * partition is revoked (the records verified by then) and when an upload
 * running at the revoke is verified after it. Counted in
 * `PipelineStats.recordsLeftOnRevoke` and `sluice.records.left_on_revoke`.
 *
 * @since 0.5.0
 */
export interface LeftOnRevokeSignal {
  /** The signal's tag. */
  readonly _tag: "LeftOnRevoke"
  /** When (Clock ms). */
  readonly at: number
  /** The source's name. */
  readonly source: string
  /** The revoked partition. */
  readonly partition: number
  /** The offset ranges stored and not committed, in offset order. */
  readonly ranges: ReadonlyArray<LeftRange>
  /** Records in `ranges`. */
  readonly records: number
}

/**
 * One range of a {@link LeftOnRevokeSignal}: offsets `firstOffset` to
 * `lastOffset` (inclusive), holding `records` records (fewer than the span
 * where the log has gaps, e.g. transaction markers).
 *
 * @since 0.5.0
 */
export interface LeftRange {
  readonly firstOffset: number
  readonly lastOffset: number
  readonly records: number
}

/**
 * A retention gap, as published (see `Source.RetentionGap`).
 *
 * @since 0.1.0
 */
export interface RetentionGapSignal extends RetentionGap {
  /** When the gap was found (Clock ms). */
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
  /** Publishes `signal` to every current subscriber. */
  readonly publish: (signal: Signal) => Effect.Effect<void>
  /** Synchronous publish for hot paths. */
  readonly publishUnsafe: (signal: Signal) => void
  /** A subscription that sees every signal published after it was taken. */
  readonly subscribe: Effect.Effect<PubSub.Subscription<Signal>, never, Scope.Scope>
  /** The signals as a stream (subscribes when run). */
  readonly stream: Stream.Stream<Signal>
}>()("@sluice/core/SignalBus") {}

/**
 * Signals a subscriber that fell behind needs only the latest of: periodic
 * snapshots, each superseding the one before.
 *
 * **Example**
 *
 * ```ts
 * import { SignalBus } from "@sluice/core"
 *
 * SignalBus.coalescing.has("Tick") // true
 * SignalBus.coalescing.has("Failure") // false: every failure is kept
 * ```
 *
 * @since 0.2.0
 */
export const coalescing: ReadonlySet<Signal["_tag"]> = new Set(["Tick", "Inflight", "Lag"])

/**
 * Default capacity of each subscriber's queue, in signals.
 *
 * @since 0.2.0
 */
export const defaultCapacity = 4096

/**
 * Builds a signal bus whose subscribers each get a bounded **sliding** queue of
 * `capacity` signals (default {@link defaultCapacity}).
 *
 * **Details**
 *
 * - A subscriber that does not keep up loses its **oldest** signals, never the
 *   newest, and never slows the publisher: publishing is synchronous and never
 *   waits.
 * - `Tick`, `Inflight` and `Lag` signals **coalesce**: when a subscriber's
 *   queue ends with a run of such snapshots, a new one replaces the unread one
 *   of the same kind (and moves to the end, so times stay in order). A
 *   subscriber that falls behind sees the latest snapshot, not a backlog of
 *   them; a run holds at most one of each kind.
 * - So a subscription holds at most `capacity` signals whatever happens — a
 *   policy whose fiber died keeps a full queue of `capacity`, not an unbounded
 *   one.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, PubSub } from "effect"
 * import { SignalBus } from "@sluice/core"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const bus = yield* SignalBus.makeWith({ capacity: 16 })
 *   const lagging = yield* bus.subscribe // never read
 *   for (let i = 0; i < 1_000; i++) bus.publishUnsafe({ _tag: "Tick", at: i, knobs: { concurrency: 1, batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 }, readGate: "open", rate: null } })
 *   return yield* PubSub.remaining(lagging) // 1: the latest tick
 * }))
 * ```
 *
 * @since 0.2.0
 */
export const makeWith = (options: { readonly capacity?: number | undefined } = {}): Effect.Effect<SignalBus["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const capacity = Math.max(1, Math.floor(options.capacity ?? defaultCapacity))
    const pubsub = yield* PubSub.make<Signal>({
      atomicPubSub: () => new CoalescingPubSub(capacity),
      strategy: () => new PubSub.SlidingStrategy()
    })
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
 * Builds a signal bus with the default capacity per subscriber (see
 * {@link makeWith}).
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { SignalBus } from "@sluice/core"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const bus = yield* SignalBus.make
 *   const signals = yield* bus.subscribe
 *   bus.publishUnsafe({ _tag: "Lag", at: 0, lag: new Map([[0, 10]]), totalRecords: 10 })
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const make: Effect.Effect<SignalBus["Service"], never, Scope.Scope> = makeWith()

/**
 * The {@link SignalBus} service as a layer (the bus of {@link make}: a sliding
 * queue per subscriber, snapshots coalesced). `Pipeline.start` builds its
 * own; this is for running policies without a pipeline (tests, replays).
 *
 * @since 0.1.0
 */
export const layer: Layer.Layer<SignalBus> = Layer.effect(SignalBus, make)

/**
 * The bus's storage: one bounded, sliding, coalescing queue per subscriber.
 * Publishing offers to every queue and always succeeds.
 */
class CoalescingPubSub implements PubSub.PubSub.Atomic<Signal> {
  readonly capacity: number
  private readonly queues = new Set<SubscriberQueue>()
  constructor(capacity: number) {
    this.capacity = capacity
  }
  isEmpty(): boolean {
    for (const q of this.queues) if (!q.isEmpty()) return false
    return true
  }
  isFull(): boolean {
    return false
  }
  size(): number {
    let max = 0
    for (const q of this.queues) max = Math.max(max, q.size())
    return max
  }
  publish(value: Signal): boolean {
    for (const q of this.queues) q.offer(value)
    return true
  }
  publishAll(elements: Iterable<Signal>): Array<Signal> {
    for (const value of elements) this.publish(value)
    return []
  }
  slide(): void {}
  subscribe(): PubSub.PubSub.BackingSubscription<Signal> {
    const queue = new SubscriberQueue(this.capacity, (q) => this.queues.delete(q))
    this.queues.add(queue)
    return queue
  }
  replayWindow(): PubSub.PubSub.ReplayWindow<Signal> {
    return { remaining: 0, take: () => undefined, takeN: () => [], takeAll: () => [], close: () => {} }
  }
}

/** A ring buffer of at most `capacity` signals; see {@link makeWith} for the rules. */
class SubscriberQueue implements PubSub.PubSub.BackingSubscription<Signal> {
  private readonly ring: Array<Signal | undefined>
  private head = 0
  private count = 0
  private readonly capacity: number
  private readonly onUnsubscribe: (queue: SubscriberQueue) => void
  constructor(capacity: number, onUnsubscribe: (queue: SubscriberQueue) => void) {
    this.capacity = capacity
    this.ring = new Array(capacity)
    this.onUnsubscribe = onUnsubscribe
  }
  offer(signal: Signal): void {
    if (coalescing.has(signal._tag)) this.removeUnreadSnapshot(signal._tag)
    if (this.count === this.capacity) {
      // Sliding: the oldest unread signal makes room.
      this.ring[this.head] = undefined
      this.head = (this.head + 1) % this.capacity
      this.count--
    }
    this.ring[(this.head + this.count) % this.capacity] = signal
    this.count++
  }
  /** Removes the unread snapshot of `tag` from the trailing run of snapshots, if any. */
  private removeUnreadSnapshot(tag: Signal["_tag"]): void {
    for (let back = 1; back <= Math.min(this.count, coalescing.size); back++) {
      const at = (this.head + this.count - back) % this.capacity
      const signal = this.ring[at]
      if (signal === undefined || !coalescing.has(signal._tag)) return
      if (signal._tag !== tag) continue
      // Shift the (at most two) later snapshots back by one.
      for (let i = this.count - back; i < this.count - 1; i++) {
        this.ring[(this.head + i) % this.capacity] = this.ring[(this.head + i + 1) % this.capacity]
      }
      this.count--
      this.ring[(this.head + this.count) % this.capacity] = undefined
      return
    }
  }
  isEmpty(): boolean {
    return this.count === 0
  }
  size(): number {
    return this.count
  }
  poll(): Signal | MutableList.Empty {
    if (this.count === 0) return MutableList.Empty
    const signal = this.ring[this.head]
    this.ring[this.head] = undefined
    this.head = (this.head + 1) % this.capacity
    this.count--
    return signal === undefined ? MutableList.Empty : signal
  }
  pollUpTo(n: number): Array<Signal> {
    const out: Array<Signal> = []
    while (out.length < n && this.count > 0) {
      const signal = this.poll()
      if (signal !== MutableList.Empty) out.push(signal)
    }
    return out
  }
  unsubscribe(): void {
    this.ring.fill(undefined)
    this.count = 0
    this.onUnsubscribe(this)
  }
}
