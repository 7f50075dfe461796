/**
 * The ticker: the pipeline's clock-driven work, once per `tick`.
 *
 * On every tick it seals the open batches that reached `maxAge` (`age`), as
 * many as keep the uploader at two sealed batches per permit (the others stay
 * open and keep filling: `SEALED_PER_PERMIT`; all of them with
 * `batch.ageSealWaits: false`), and, when the uploader is idle, those holding a backlog's last records
 * (`caughtUp`, marked by admission), records the gauges (in-flight, limits, batch target, source lag, age of the
 * oldest uncommitted batch) and publishes `Lag`, `Inflight` and `Tick` signals.
 *
 * Source lag is **polled in its own fiber**, never inline: a slow or stuck
 * `source.lag` (a broker round trip) must not delay ticks, age seals or the
 * signals the policies step on. Each tick publishes the latest lag known.
 *
 * It owns: the tick loop and the lag poller. It may touch: the sealer (age
 * and caught-up seals, handed on through a callback), `source.lag`, the metrics; it reads
 * the stats and the knobs.
 *
 * @since 0.2.0
 */
import { Clock, Effect, Exit, Fiber } from "effect"
import type { Scope } from "effect"
import type { SealedBatch } from "../Batch.ts"
import type { KnobValues } from "../Knob.ts"
import { Attribute } from "../Metrics.ts"
import type { Instruments } from "../Metrics.ts"
import type { Sealer } from "../Sealer.ts"
import type { RunningUpload, Signal } from "../Signal.ts"
import type { Source } from "../Source.ts"
import { type PipelineStats, uploaderIdle } from "./Stats.ts"

/**
 * What the ticker needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface TickerDeps {
  readonly tickMillis: number
  /** Whether age seals wait for the uploader's room (`batch.ageSealWaits`; `SEALED_PER_PERMIT`). */
  readonly ageSealWaits: boolean
  readonly budgetBytes: number
  readonly source: Pick<Source, "lag">
  readonly sealer: Sealer
  readonly knobs: { readonly current: () => KnobValues }
  readonly stats: PipelineStats
  readonly metrics: Instruments
  readonly publish: (signal: Signal) => void
  /** Hands batches sealed on age on (registers them when called; see `Admission`). */
  readonly sealed: (batches: ReadonlyArray<SealedBatch>, now: number) => Effect.Effect<void>
  /** Refreshes clock-derived stats before they are recorded (e.g. the oldest uncommitted age). */
  readonly refresh: (now: number) => void
}

/**
 * Runs the ticker (the tick loop, and the lag poller forked in `scope`); never
 * returns.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as Ticker from "./stage/Ticker.ts"
 * declare const deps: Ticker.TickerDeps
 *
 * const program = Effect.scoped(Effect.flatMap(Effect.scope, (scope) => Ticker.run(deps, scope)))
 * ```
 *
 * @since 0.2.0
 */
export const run = (deps: TickerDeps, scope: Scope.Scope): Effect.Effect<never> =>
  Effect.gen(function*() {
    let lag: ReadonlyMap<number, number> = new Map()
    // The poller: one lag call at a time, at most one per tick; however long a
    // call takes, the tick loop goes on with the latest value.
    yield* Effect.forkIn(
      Effect.forever(
        Effect.flatMap(deps.source.lag, (latest) =>
          Effect.andThen(
            Effect.sync(() => {
              lag = latest
            }),
            Effect.sleep(deps.tickMillis)
          ))
      ),
      scope
    )
    // In-flight values are up-down counters: each tick adds the change since
    // the last one, and ending the loop takes back what this pipeline added,
    // so sums across pipelines and instances stay true.
    const reported: Reported = { batches: 0, bytes: 0 }
    return yield* Effect.forever(Effect.andThen(Effect.sleep(deps.tickMillis), Effect.suspend(() => tick(deps, lag, reported)))).pipe(
      Effect.ensuring(Effect.gen(function*() {
        deps.metrics.inflightBatches.add(-reported.batches)
        deps.metrics.inflightBytes.add(-reported.bytes)
        // The lag gauges end on the run's last state: one more poll if the
        // source answers without waiting (from what it holds: the Kafka
        // source's high watermarks, a memory source's counts), else the
        // latest answer. A run shorter than the poller's first answer after
        // the assignment (a backlog committed as soon as it is read) had no
        // lag series at all. Nothing here waits on the clock: a virtual-clock
        // test closing its scope must not hang on it.
        const poll = yield* Effect.forkChild(deps.source.lag)
        yield* Effect.yieldNow
        const answered = poll.pollUnsafe()
        if (answered === undefined) yield* Fiber.interrupt(poll)
        recordLag(deps.metrics, answered !== undefined && Exit.isSuccess(answered) ? answered.value : lag)
      }))
    )
  })

/**
 * Batches the uploader may hold per concurrency permit before age seals wait
 * (`batch.ageSealWaits`, on by default): the one uploading and one sealed
 * behind it, so a permit that frees finds a batch at once (no tick's wait for
 * the next seal). Past that, a batch at `maxAge` stays open and keeps filling
 * instead of queueing sealed at the size its age gave it: when a store leaves
 * few permits (it throttles above a low in-flight), each upload then carries
 * more, and the uploads per second it allows carry the inflow. The uploader
 * takes batches oldest first, the longest open is sealed first, and a batch
 * held open is sealed as soon as one opened after it seals on its target
 * (`Sealer.append`), so no younger batch overtakes it: a trickle partition
 * beside a hot one waits no longer than it did.
 *
 * What it buys (docs/design/generalization.md, "2026-12-05, late"; family
 * test set, seed 3, 200 scenarios, worst degraded phase ≥ 0.8 / p10 /
 * median / max-lag p90): the default composition 0.905 / 0.801 / 0.974 /
 * 16.0 s against 0.885 / 0.768 / 0.973 / 16.8 s without it (slower-throttle
 * misses 7 → 4); `fixed:8` 0.34 / 0.184 / 0.558 / 96.1 s against 0.31 / 0.176
 * / 0.552 / 98.8 s. On the real server (examples/replay's slower-throttle,
 * four replays each way) the degraded phase's goodput is 0.72–0.82 of the
 * measured oracle against 0.54–0.74 without it, max lag the same. What it costs: controllers that step once per upload
 * climb back more slowly, their uploads being the full target — ARC (the
 * custom-policy example) on storm-then-slower, worst phase 0.55–0.68 on six
 * seeds against 0.69–0.79; AIMD alone back to 90 % of the oracle after the
 * storm in 22.9–46.5 s against 21.6–36.2 s. For those, `ageSealWaits: false`.
 * 1 and 3 per permit measure the same as 2 on the train set (seed 2): 2 is
 * kept for its reason.
 */
const SEALED_PER_PERMIT = 2

/** What this ticker has added to the in-flight up-down counters. */
interface Reported {
  batches: number
  bytes: number
}

/**
 * The median running upload by start time (the later of the two middle ones
 * for an even count): a sort of at most the concurrency limit's entries.
 */
const medianOf = (running: PipelineStats["runningUploads"]): RunningUpload | undefined => {
  if (running.size === 0) return undefined
  const all = [...running.values()].sort((a, b) => a.startedAt - b.startedAt)
  return all[Math.floor(all.length / 2)]
}

/** Records the lag gauge per partition; the total. */
const recordLag = (metrics: Instruments, lag: ReadonlyMap<number, number>): number => {
  let total = 0
  for (const [partition, records] of lag) {
    total += records
    metrics.sourceLag.record(records, { [Attribute.partition]: String(partition) })
  }
  return total
}

/** One tick: age seals, gauges, signals. */
const tick = (deps: TickerDeps, lag: ReadonlyMap<number, number>, reported: Reported) =>
  Effect.gen(function*() {
    const { stats, metrics } = deps
    const now = yield* Clock.currentTimeMillis
    const values = deps.knobs.current()
    const room = deps.ageSealWaits ? SEALED_PER_PERMIT * values.concurrency - stats.batchesOutstanding : Number.POSITIVE_INFINITY
    // Called with no room too: the sealer marks what it leaves open (held).
    const aged = deps.sealer.sealExpired(now, values.batchTarget.maxAgeMillis, Math.max(0, room))
    yield* deps.sealed(aged, now)
    // A backlog's last records (Admission's caught-up wait) go as soon as the uploader is idle.
    if (uploaderIdle(stats, values.concurrency)) yield* deps.sealed(deps.sealer.sealCaughtUp(now), now)
    deps.refresh(now)
    const totalLag = recordLag(metrics, lag)
    metrics.inflightBatches.add(stats.uploading - reported.batches)
    metrics.inflightBytes.add(stats.inflightBytes - reported.bytes)
    reported.batches = stats.uploading
    reported.bytes = stats.inflightBytes
    metrics.concurrencyLimit.record(values.concurrency)
    metrics.batchTargetBytes.record(values.batchTarget.bytes)
    metrics.batchTargetRecords.record(values.batchTarget.records)
    metrics.oldestUncommittedAge.record(stats.oldestUncommittedAgeMillis / 1000)
    metrics.partitionsHeld.record(stats.partitionsHeld)
    deps.publish({ _tag: "Lag", at: now, lag, totalRecords: totalLag })
    deps.publish({
      _tag: "Inflight",
      at: now,
      batches: stats.uploading,
      bytes: stats.inflightBytes,
      openBytes: stats.openBytes,
      budgetBytes: deps.budgetBytes,
      medianUpload: medianOf(stats.runningUploads)
    })
    deps.publish({ _tag: "Tick", at: now, knobs: values })
  })
