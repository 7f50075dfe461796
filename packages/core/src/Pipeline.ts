/**
 * The pipeline: read → seal → upload → verify → commit, as an Effect program
 * over record **chunks**. This module only **wires** the stages; each stage is
 * its own module under `stage/`, and a record's whole path reads in order:
 *
 * 1. `stage/Admission.ts` — the reader: memory budget (`stage/MemoryBudget.ts`)
 *    and read gate; gaps and revokes.
 * 2. `Sealer.ts` — one open batch per `(source, partition)`, sealed on the batch
 *    target, on age, under pressure, on a gap, on drain.
 * 3. `stage/Uploader.ts` — the per-batch stage machine put object → put
 *    manifest → verify, retried from the stage that failed.
 * 4. `stage/Limiter.ts` — the concurrency gate, the request rate, and the
 *    attribution of every request's sample (success / ignored / dropped).
 * 5. `stage/Committer.ts` — commits each partition up to its contiguous
 *    verified prefix (`CommitTracker.ts`).
 * 6. `stage/Ticker.ts` — age seals, gauges, and the `Lag` / `Inflight` / `Tick`
 *    signals; lag is polled in its own fiber.
 *
 * Policies (layers over the `SignalBus` and the `Knobs`) are built in the
 * pipeline's scope, supervised (`PolicySupervisor.ts`: a policy whose fiber
 * dies ends the run with `PolicyFailed`); the knob watcher here forwards their
 * decisions to the stages (concurrency → limiter, read gate → admission).
 *
 * @since 0.1.0
 */
import type { MeterProvider } from "@opentelemetry/api"
import { Cause, Context, Deferred, Effect, Layer, Schema, Scope, Stream } from "effect"
import type { Duration } from "effect"
import type { SealedBatch } from "./Batch.ts"
import * as Compression from "./Compression.ts"
import * as Config from "./Config.ts"
import type { ConfigError } from "./Config.ts"
import * as Knob from "./Knob.ts"
import type { KnobValues } from "./Knob.ts"
import * as Metrics from "./Metrics.ts"
import * as PolicySupervisor from "./PolicySupervisor.ts"
import type { PolicyFailed } from "./PolicySupervisor.ts"
import * as RetryPolicy from "./RetryPolicy.ts"
import type { RetryBudget } from "./RetryPolicy.ts"
import { Sealer } from "./Sealer.ts"
import * as SignalBus from "./Signal.ts"
import type { Sink } from "./Sink.ts"
import type { Source, SourceError } from "./Source.ts"
import * as Admission from "./stage/Admission.ts"
import * as Committer from "./stage/Committer.ts"
import * as Drain from "./stage/Drain.ts"
import type { DrainTimedOut } from "./stage/Drain.ts"
import * as Limiter from "./stage/Limiter.ts"
import * as MemoryBudget from "./stage/MemoryBudget.ts"
import * as Stats from "./stage/Stats.ts"
import type { PipelineStats } from "./stage/Stats.ts"
import * as Ticker from "./stage/Ticker.ts"
import * as Uploader from "./stage/Uploader.ts"
import type { BatchFailed } from "./stage/Uploader.ts"

/**
 * `batch.stagger`'s default. Partitions fed at the same rate fill their
 * batches together and seal them in the same instant, so every upload starts
 * at once and the store idles between the bursts; past a knee the burst also
 * queues. Sealing partition `p` at the target × (1 − stagger × frac(p × φ))
 * spreads the seals over the fill cycle, and their different cycle lengths
 * keep them apart. 0.25: objects 0.75–1× the target (0.875× on average,
 * about 1/7 more requests). On the simulator's family train set (seed 2, 200
 * scenarios, the default composition) the share of scenarios whose worst
 * degraded phase is ≥ 0.8 of the oracle, and its p10, read 0.965 / 0.897 at
 * 0.25, 0.945 / 0.886 at 0 and 0.960 / 0.895 at 0.5
 * (docs/design/generalization.md, 2026-12-06, later: "seals in step").
 */
const STAGGER = 0.25

/**
 * The pipeline's config (plain data, decoded with Schema; every field has a
 * default). Durations accept `"60 seconds"`, `"30s"`, `"500ms"` or
 * milliseconds; sizes accept `"8 MiB"` or bytes. Every number must be finite.
 *
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `concurrency` | 8 | integer ≥ 1 | base upload concurrency (when no policy proposes) |
 * | `batch.records` | 10000 | integer ≥ 1 | base batch target, records |
 * | `batch.bytes` | 8 MiB | ≥ 1 byte | base batch target, payload bytes |
 * | `batch.maxAge` | 60 seconds | > 0 | seal a batch when its oldest record is this old (but see `batch.ageSealWaits`) |
 * | `batch.stagger` | 0.25 | [0, 1) | partition `p`'s batches seal at the target × `1 − stagger × frac(p × 0.618…)` (`Sealer.staggerFactor`: 0.75–1× the target, never above it): partitions fed alike then seal, and upload, at different moments instead of all at once; 0 seals every batch at the target |
 * | `batch.ageSealWaits` | true | | a batch at `maxAge` waits, open and filling, while the uploader holds two sealed batches per permit (the longest open is sealed first once there is room): when a store leaves few permits, each upload carries more. false: sealed at `maxAge` whatever the uploader holds, smaller objects; controllers that step once per upload (AIMD, the custom-policy example's ARC) climb back faster with them (`Ticker.SEALED_PER_PERMIT` has the figures) |
 * | `memoryBudget` | 256 MiB | ≥ 1 byte | hard bound on bytes held (open + sealed + uploading, and the source's declared read-ahead, `Source.readAheadBytes`, which is reserved from it) |
 * | `rate` | null | > 0, or null | base request rate (object uploads started per second), null = unlimited |
 * | `tick` | 100 millis | > 0 | period of the tick signal, the age check and lag polling |
 * | `keyPrefix` | "" | | prefix of every object key |
 * | `retry.maxAttempts` | 100 | integer ≥ 1 | attempts of one batch before `BatchFailed`, whatever the retry policy says |
 * | `retry.maxElapsed` | 15 minutes | > 0 | failing time of one batch (from its first failure) before `BatchFailed` |
 * | `retry.unreachableFor` | 30 seconds | > 0 | how long one batch's connection-refused / DNS failures in a row (`ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, …) may last before `BatchFailed` (`RetryPolicy.UNREACHABLE_MILLIS` says why) |
 * | `maxVerifiedAhead` | 256 | integer ≥ 1 | verified batches of one partition that may wait behind an unverified one; past it the partition's new batches wait too (logged) |
 * | `compression` | "none" | "none", "gzip", "zstd" | codec of object bodies: compressed once per batch, the checksum, `objectBytes` and the upload samples' `bytes` (what policies see) are over the stored bytes; the manifest records the codec (read back with `Batch.decodeObject`) |
 * | `compressionLevel` | null | gzip 1–9, zstd 1–22, or null | the codec's level; null = its default (gzip 6, zstd 3); refused with "none" |
 *
 * A budget or batch size of 0 is refused (a budget of 0 admits nothing; a
 * batch target of 0 seals every record alone), as are `NaN` and `Infinity`.
 *
 * @since 0.1.0
 */
export const PipelineConfig = Schema.Struct({
  concurrency: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(8))),
  batch: Schema.Struct({
    records: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(10_000))),
    bytes: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))),
    maxAge: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("60 seconds"))),
    stagger: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThan(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(STAGGER))),
    ageSealWaits: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(true)))
  }).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  memoryBudget: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("256 MiB"))),
  rate: Schema.NullOr(Schema.Finite.check(Schema.isGreaterThan(0))).pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  tick: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(100))),
  keyPrefix: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed(""))),
  retry: Schema.Struct({
    maxAttempts: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(100))),
    maxElapsed: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("15 minutes"))),
    unreachableFor: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30 seconds")))
  }).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  maxVerifiedAhead: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(256))),
  compression: Compression.Codec.pipe(Schema.withDecodingDefaultKey(Effect.succeed<Compression.Codec>("none"))),
  compressionLevel: Schema.NullOr(Schema.Int).pipe(Schema.withDecodingDefaultKey(Effect.succeed(null)))
}).check(
  // The level's range depends on the codec (Compression.LEVELS).
  Schema.makeFilter((c) => {
    const problem = Compression.levelProblem(c.compression, c.compressionLevel)
    return problem === undefined || { path: ["compressionLevel"], issue: problem }
  })
)

/**
 * `PipelineConfig` as a type: what the `PipelineConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type PipelineConfig = typeof PipelineConfig.Type

/**
 * What a caller writes as `config`: {@link PipelineConfig}'s encoded form
 * (every key optional, sizes and durations as text or numbers), so a
 * misspelled key fails `tsc`.
 *
 * **Example**
 *
 * ```ts
 * import type { Pipeline } from "@sluice/core"
 *
 * const config: Pipeline.PipelineConfigInput = { concurrency: 16, memoryBudget: "512 MiB", batch: { maxAge: "30s" } }
 * // const typo: Pipeline.PipelineConfigInput = { concurency: 16 }   // tsc: 'concurency' does not exist …
 * ```
 *
 * @since 0.2.0
 */
export type PipelineConfigInput = Config.Input<typeof PipelineConfig>

/**
 * A batch failed in a way the retry policy gave up on (defined in
 * `stage/Uploader.ts`, where it is raised).
 *
 * @since 0.1.0
 */
export { BatchFailed } from "./stage/Uploader.ts"

/**
 * Counters of a run (defined in `stage/Stats.ts`, written by the stages).
 *
 * @since 0.1.0
 */
export type { PipelineStats } from "./stage/Stats.ts"

/**
 * A drain's deadline passed (defined in `stage/Drain.ts`): lists the batches
 * sealed and not committed.
 *
 * @since 0.2.0
 */
export { DrainTimedOut } from "./stage/Drain.ts"

/**
 * Every way a run can fail: the source failed (`SourceError`), a batch spent
 * its retries (`BatchFailed`), the config is bad (`ConfigError`), a policy's
 * fiber died (`PolicyFailed`), or a drain ran out of time (`DrainTimedOut`).
 *
 * @since 0.1.0
 */
export type PipelineError = SourceError | BatchFailed | ConfigError | PolicyFailed | DrainTimedOut

/**
 * What `start` returns: live stats, the knobs and the bus, the run's end, and
 * a graceful `drain`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import type { Pipeline } from "@sluice/core"
 * declare const handle: Pipeline.PipelineHandle
 *
 * // On SIGTERM: stop reading, finish what is in flight, commit; give up after 30 s.
 * const onSigterm = handle.drain("30 seconds").pipe(
 *   Effect.tap((stats) => Effect.log(`drained: ${stats.recordsCommitted} records committed`))
 * )
 * ```
 *
 * @since 0.1.0
 */
export interface PipelineHandle {
  /** The decoded config the pipeline runs with. */
  readonly config: PipelineConfig
  /** A snapshot of the live stats (records read, committed, bytes held, …). */
  readonly stats: () => Readonly<PipelineStats>
  /** The knobs the policies move (concurrency, batch target, rate, read gate). */
  readonly knobs: Knob.Knobs["Service"]
  /** The signal bus the pipeline publishes every outcome on. */
  readonly bus: SignalBus.SignalBus["Service"]
  /** Completes when the source ended and every batch was verified and committed. */
  readonly await: Effect.Effect<PipelineStats, PipelineError>
  /**
   * Ends the run gracefully: stops reading (pauses the source, stops pulling),
   * seals the open batches (`drain`), finishes what is in flight, commits, and
   * returns the stats. Past `deadline` the uploads still running are
   * interrupted and it fails with `DrainTimedOut`, listing what was abandoned
   * (nothing of it committed). See `stage/Drain.ts`.
   */
  readonly drain: (deadline: Duration.Input) => Effect.Effect<PipelineStats, PipelineError>
}

/**
 * Options of a run.
 *
 * @since 0.1.0
 */
export interface PipelineOptions<E = never> {
  readonly source: Source
  readonly sink: Sink
  /**
   * Config data, decoded with {@link PipelineConfig}. Typed by its encoded
   * form, so a misspelled key fails `tsc`; decode data of unknown shape (read
   * from a file) with `Config.decode("pipeline", PipelineConfig, data)` first.
   */
  readonly config?: PipelineConfigInput | undefined
  /** The policies, composed as layers (e.g. `Layer.mergeAll(...)`). */
  readonly policies?: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>
  /** Meter provider for metrics (default: the global one). */
  readonly meterProvider?: MeterProvider
  /**
   * The pipeline's name: the `sluice.pipeline` attribute of its metrics and
   * spans (default: the source's name). Name each pipeline of a process.
   */
  readonly name?: string | undefined
}

/**
 * Starts a pipeline in the current scope and returns a handle. Closing the scope
 * interrupts it: uploads in flight are abandoned and nothing unverified is ever
 * committed.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const handle = yield* Pipeline.start({ source: Memory.source({ name: "t", partitions: 2, records: 1_000, recordBytes: 64 }), sink: Memory.sink() })
 *   const stats = yield* handle.await
 *   return stats.recordsCommitted // 2000
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const start = <E = never>(
  options: PipelineOptions<E>
): Effect.Effect<PipelineHandle, ConfigError | E, Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* Config.decode("pipeline", PipelineConfig, options.config ?? {})
    const budget = yield* MemoryBudget.make(config.memoryBudget, options.source.readAheadBytes)
    const { source, sink } = options
    const scope = yield* Scope.Scope
    const bus = yield* SignalBus.make
    const knobs = yield* Knob.make(baseKnobs(config))
    // Policy shells report a dying fiber to this supervisor; the run then ends
    // with PolicyFailed (see the watcher forked below).
    const supervisor = yield* PolicySupervisor.make
    const policyContext = options.policies === undefined
      ? Context.empty()
      : yield* Layer.buildWithScope(options.policies, scope).pipe(
        Effect.provideService(SignalBus.SignalBus, bus),
        Effect.provideService(Knob.Knobs, knobs),
        Effect.provideService(PolicySupervisor.PolicySupervisor, supervisor)
      )
    const retry = Context.getOrElse(policyContext, RetryPolicy.CurrentRetryPolicy, () => RetryPolicy.CurrentRetryPolicy.defaultValue())
    const metrics = Metrics.make(options.meterProvider, { pipeline: options.name ?? source.name, topic: source.name })
    const stats = Stats.make(knobs.current().readGate)
    const publish = bus.publishUnsafe
    const done = yield* Deferred.make<PipelineStats, PipelineError>()
    const sealer = new Sealer({ prefix: config.keyPrefix, charge: MemoryBudget.chargeOf, compression: compressionOf(config), stagger: config.batch.stagger })
    const limiter = yield* Limiter.make({ knobs, stats, metrics, publish })
    const committer = yield* Committer.make({ source, stats, metrics, publish })
    let sourceDone = false
    const checkDone = Effect.suspend(() =>
      sourceDone && stats.batchesOutstanding === 0 ? Deferred.succeed(done, stats) : Effect.void
    )
    // Uploads and retry timers: closed to abandon them past a drain's deadline.
    const uploads = yield* Scope.fork(scope)
    const uploader: Uploader.Uploader = yield* Uploader.make({
      sink,
      limiter,
      committer,
      retry,
      budget: retryBudget(config),
      maxVerifiedAhead: config.maxVerifiedAhead,
      stats,
      metrics,
      scope: uploads,
      release: (batch) => Effect.sync(() => {
        budget.release(MemoryBudget.chargeOfBatch(batch))
        stats.inflightBytes = budget.held
      }),
      settled: checkDone,
      failCause: (cause) => Deferred.failCause(done, cause)
    })
    const sealed = handOn({ sealer, committer, uploader, stats, metrics, publish })
    const admission = yield* Admission.make({
      source,
      sealer,
      budget,
      knobs,
      stats,
      metrics,
      publish,
      sealed,
      revoked: (partitions) => Effect.andThen(committer.forget(source.name, partitions), uploader.forget(source.name, partitions))
    })
    const ticker = Ticker.run({
      tickMillis: config.tick,
      ageSealWaits: config.batch.ageSealWaits,
      budgetBytes: budget.limit,
      source,
      sealer,
      knobs,
      stats,
      metrics,
      publish,
      sealed,
      refresh: committer.refreshAge
    }, scope)
    const ended = Effect.suspend(() => {
      sourceDone = true
      return checkDone
    })
    const reader = admission.read.pipe(
      Effect.andThen(ended),
      Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : Deferred.failCause(done, cause)))
    )
    yield* Effect.forkIn(Effect.flatMap(supervisor.failed, (failed) => Deferred.fail(done, failed)), scope)
    yield* Effect.forkIn(watchKnobs(knobs, limiter, admission, metrics), scope)
    const dispatcher = yield* Effect.forkIn(uploader.dispatcher, scope)
    yield* Effect.forkIn(ticker, scope)
    const readerFiber = yield* Effect.forkIn(reader, scope)
    const drain = Drain.make({
      source,
      reader: readerFiber,
      sealOpen: admission.sealAll("drain"),
      sourceDone: ended,
      dispatcher,
      uploads,
      tracker: committer.tracker,
      done
    })
    return { config, stats: () => stats, knobs, bus, await: Deferred.await(done), drain }
  })

const compressionOf = (config: PipelineConfig): Compression.Setting | undefined =>
  config.compression === "none" ? undefined : { codec: config.compression, level: config.compressionLevel ?? undefined }

const retryBudget = (config: PipelineConfig): RetryBudget => ({
  maxAttempts: config.retry.maxAttempts,
  maxElapsedMillis: config.retry.maxElapsed,
  unreachableMillis: config.retry.unreachableFor,
  unreachableCodes: RetryPolicy.defaultBudget.unreachableCodes
})

const baseKnobs = (config: PipelineConfig): KnobValues => ({
  concurrency: config.concurrency,
  batchTarget: { records: config.batch.records, bytes: config.batch.bytes, maxAgeMillis: config.batch.maxAge },
  readGate: "open",
  rate: config.rate
})

/**
 * The hand-off from the sealer to the rest: refreshes the open bytes,
 * registers each sealed batch with the committer, counts and publishes the
 * seal — at once, when called, so that registration follows seal order
 * whichever fiber sealed — and returns the effect that queues the batches for
 * upload.
 */
const handOn = (deps: {
  readonly sealer: Sealer
  readonly committer: Committer.Committer
  readonly uploader: Uploader.Uploader
  readonly stats: PipelineStats
  readonly metrics: Metrics.Instruments
  readonly publish: (signal: SignalBus.Signal) => void
}) =>
(batches: ReadonlyArray<SealedBatch>, now: number): Effect.Effect<void> => {
  deps.stats.openBytes = deps.sealer.openBytes
  if (batches.length === 0) return Effect.void
  for (const batch of batches) {
    deps.committer.register(batch)
    deps.stats.batchesSealed++
    deps.metrics.seals.add(1, { [Metrics.Attribute.sealReason]: batch.sealReason })
    deps.publish({
      _tag: "Sealed",
      at: now,
      reason: batch.sealReason,
      records: batch.records,
      bytes: batch.bytes,
      ageMillis: now - batch.openedAt
    })
  }
  return deps.uploader.submit(batches)
}

/** Forwards knob changes to the stages that enforce them, counting policy decisions. */
const watchKnobs = (
  knobs: Knob.Knobs["Service"],
  limiter: Limiter.Limiter,
  admission: Admission.Admission,
  metrics: Metrics.Instruments
): Effect.Effect<void> => {
  let last = knobs.current()
  return knobs.changes.pipe(
    Stream.runForEach((values) =>
      Effect.gen(function*() {
        const decided = (knob: string, from: unknown, to: unknown) => {
          metrics.policyDecisions.add(1, { [Metrics.Attribute.knob]: knob })
          return Effect.logDebug("sluice: policy decision").pipe(Effect.annotateLogs({ knob, from, to }))
        }
        if (values.concurrency !== last.concurrency) {
          yield* decided("concurrency", last.concurrency, values.concurrency)
          yield* limiter.resize(values.concurrency)
        }
        if (values.batchTarget !== last.batchTarget) yield* decided("batchTarget", last.batchTarget, values.batchTarget)
        if (values.rate !== last.rate) {
          yield* decided("rate", last.rate, values.rate)
          yield* limiter.retime
        }
        if (values.readGate !== last.readGate) {
          yield* decided("readGate", last.readGate, values.readGate)
          yield* admission.setGate(values.readGate)
        }
        last = values
      })
    )
  )
}

/**
 * Runs a pipeline until its source ends and every batch is verified and
 * committed; returns the final stats.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Fixed, Memory, Pipeline } from "@sluice/core"
 *
 * const program = Pipeline.run({
 *   source: Memory.source({ name: "demo", partitions: 4, records: 100_000, recordBytes: 150 }),
 *   sink: Memory.sink(),
 *   config: { batch: { records: 10_000 }, memoryBudget: "64 MiB" },
 *   policies: Layer.mergeAll(Fixed.layer({ concurrency: 8 }))
 * })
 * const stats = await Effect.runPromise(program)
 * console.log(stats.recordsCommitted) // 400000
 * ```
 *
 * @since 0.1.0
 */
export const run = <E = never>(options: PipelineOptions<E>): Effect.Effect<PipelineStats, PipelineError | E> =>
  Effect.scoped(Effect.flatMap(start(options), (handle) => handle.await))
