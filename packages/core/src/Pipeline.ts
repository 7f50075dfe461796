/**
 * The pipeline: read → seal → upload → verify → commit, as an Effect program
 * over record **chunks**.
 *
 * - **Reader**: pulls source events; waits while the read gate is paused (sealing
 *   open batches early) and while the memory budget is full (a `Semaphore` of
 *   bytes, so in-flight bytes never exceed the budget).
 * - **Sealer**: one open batch per `(source, partition)`, sealed on the batch
 *   target or, on each tick, on age (the Effect `Clock`, so a virtual clock works).
 * - **Uploader**: a dispatcher takes sealed batches and runs each through
 *   put object → put manifest → verify under a resizable concurrency gate
 *   (`Semaphore.resize`: a shrink lets in-flight uploads finish, never cancels).
 *   An optional request rate (token bucket) spaces upload starts.
 * - **Committer**: commits a partition only up to its highest contiguous verified
 *   batch. Failed batches are retried while running, after the delay chosen by
 *   the `RetryPolicy` in force; a failure the policy gives up on fails the run
 *   with `BatchFailed` and nothing of that batch is committed.
 *
 * @since 0.1.0
 */
import type { MeterProvider } from "@opentelemetry/api"
import { Clock, Context, Deferred, Effect, Exit, Latch, Layer, Queue, Schema, Scope, Semaphore, Stream } from "effect"
import * as Batch from "./Batch.ts"
import type { SealedBatch } from "./Batch.ts"
import { CommitTracker } from "./CommitTracker.ts"
import * as Config from "./Config.ts"
import type { ConfigError } from "./Config.ts"
import * as Failure from "./Failure.ts"
import type { SinkFailure, Stage, VerificationFailed } from "./Failure.ts"
import * as Knob from "./Knob.ts"
import type { KnobValues } from "./Knob.ts"
import * as Metrics from "./Metrics.ts"
import type { RecordChunk } from "./Record.ts"
import { splitAt } from "./Record.ts"
import { CurrentRetryPolicy } from "./RetryPolicy.ts"
import { Sealer } from "./Sealer.ts"
import * as SignalBus from "./Signal.ts"
import type { Signal } from "./Signal.ts"
import type { Sink } from "./Sink.ts"
import type { PartitionsRevoked, RetentionGap, Source, SourceError } from "./Source.ts"

/**
 * The pipeline's config (plain data, decoded with Schema; every field has a
 * default). Durations accept `"60 seconds"` or milliseconds; sizes accept
 * `"8 MiB"` or bytes.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `concurrency` | 8 | base upload concurrency (when no policy proposes) |
 * | `batch.records` | 10000 | base batch target, records |
 * | `batch.bytes` | 8 MiB | base batch target, payload bytes |
 * | `batch.maxAge` | 60 seconds | seal a batch when its oldest record is this old |
 * | `memoryBudget` | 256 MiB | hard bound on bytes held (open + sealed + uploading) |
 * | `rate` | null | base request rate (object uploads started per second), null = unlimited |
 * | `tick` | 100 millis | period of the tick signal, the age check and lag polling |
 * | `keyPrefix` | "" | prefix of every object key |
 *
 * @since 0.1.0
 */
export const PipelineConfig = Schema.Struct({
  concurrency: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(8))),
  batch: Schema.Struct({
    records: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(10_000))),
    bytes: Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))),
    maxAge: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("60 seconds")))
  }).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  memoryBudget: Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("256 MiB"))),
  rate: Schema.NullOr(Schema.Number.check(Schema.isGreaterThan(0))).pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  tick: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(100))),
  keyPrefix: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed("")))
})

/**
 * @since 0.1.0
 */
export type PipelineConfig = typeof PipelineConfig.Type

/**
 * A batch failed in a way the retry policy gave up on. Nothing of it was
 * committed; its records are re-read after a restart.
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
 * Every way a run can fail.
 *
 * @since 0.1.0
 */
export type PipelineError = SourceError | BatchFailed | ConfigError

/**
 * Counters of a run, readable at any time (`PipelineHandle.stats()`) and
 * returned at the end.
 *
 * @since 0.1.0
 */
export interface PipelineStats {
  recordsRead: number
  bytesRead: number
  batchesSealed: number
  /** Batches uploading now (holding a concurrency permit). */
  uploading: number
  /** Sealed batches waiting for a permit or a retry. */
  queued: number
  /** Bytes held: open + sealed + uploading (never above the budget). */
  inflightBytes: number
  maxInflightBytes: number
  openBytes: number
  batchesVerified: number
  recordsVerified: number
  /** Payload bytes verified. */
  bytesVerified: number
  recordsCommitted: number
  requests: number
  failures: number
  throttles: number
  retries: number
  retentionGapRecords: number
  readGate: Knob.ReadGate
  /** Next offset committed, per `source/partition`. */
  readonly committed: Map<string, number>
}

/**
 * What `start` returns.
 *
 * @since 0.1.0
 */
export interface PipelineHandle {
  readonly config: PipelineConfig
  readonly stats: () => Readonly<PipelineStats>
  readonly knobs: Knob.Knobs["Service"]
  readonly bus: SignalBus.SignalBus["Service"]
  /** Completes when the source ended and every batch was verified and committed. */
  readonly await: Effect.Effect<PipelineStats, PipelineError>
}

/**
 * Options of a run.
 *
 * @since 0.1.0
 */
export interface PipelineOptions<E = never> {
  readonly source: Source
  readonly sink: Sink
  /** Plain config data, decoded with {@link PipelineConfig}. */
  readonly config?: unknown
  /** The policies, composed as layers (e.g. `Layer.mergeAll(...)`). */
  readonly policies?: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>
  /** Meter provider for metrics (default: the global one). */
  readonly meterProvider?: MeterProvider
}

/**
 * Splits a chunk into pieces of at most `maxBytes` (a single record larger than
 * that stays whole), so no chunk alone can hold the memory budget.
 */
const splitToFit = (chunk: RecordChunk, maxBytes: number): Array<RecordChunk> => {
  const out: Array<RecordChunk> = []
  let rest = chunk
  while (rest.bytes > maxBytes && rest.count > 1) {
    const take = Math.max(1, Math.min(rest.count - 1, Math.floor((rest.count * maxBytes) / rest.bytes)))
    const [head, tail] = splitAt(rest, take)
    out.push(head)
    rest = tail
  }
  out.push(rest)
  return out
}

interface Work {
  readonly batch: SealedBatch
  readonly attempt: number
}

/**
 * Starts a pipeline in the current scope and returns a handle. Closing the scope
 * interrupts it: uploads in flight are abandoned and nothing unverified is ever
 * committed.
 *
 * @since 0.1.0
 */
export const start = <E = never>(
  options: PipelineOptions<E>
): Effect.Effect<PipelineHandle, ConfigError | E, Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* Config.decode("pipeline", PipelineConfig, options.config ?? {})
    const { source, sink } = options
    const scope = yield* Scope.Scope
    const bus = yield* SignalBus.make
    const base: KnobValues = {
      concurrency: config.concurrency,
      batchTarget: { records: config.batch.records, bytes: config.batch.bytes, maxAgeMillis: config.batch.maxAge },
      readGate: "open",
      rate: config.rate
    }
    const knobs = yield* Knob.make(base)
    const policyContext = options.policies === undefined
      ? Context.empty()
      : yield* Layer.buildWithScope(options.policies, scope).pipe(
        Effect.provideService(SignalBus.SignalBus, bus),
        Effect.provideService(Knob.Knobs, knobs)
      )
    const retry = Context.getOrElse(policyContext, CurrentRetryPolicy, () => CurrentRetryPolicy.defaultValue())
    const metrics = Metrics.make(options.meterProvider)

    const budgetBytes = Math.max(1, config.memoryBudget)
    const gate = yield* Semaphore.make(knobs.current().concurrency)
    const budget = yield* Semaphore.make(budgetBytes)
    const commitLock = yield* Semaphore.make(1)
    const gateOpen = yield* Latch.make(knobs.current().readGate === "open")
    const queue = yield* Queue.unbounded<Work>()
    const done = yield* Deferred.make<PipelineStats, PipelineError>()
    const sealer = new Sealer({ prefix: config.keyPrefix })
    const tracker = new CommitTracker()
    /** Commit points wanted per partition, with the records they newly cover. */
    const wantCommit = new Map<string, { source: string; partition: number; nextOffset: number; records: number }>()
    const stats: PipelineStats = {
      recordsRead: 0,
      bytesRead: 0,
      batchesSealed: 0,
      uploading: 0,
      queued: 0,
      inflightBytes: 0,
      maxInflightBytes: 0,
      openBytes: 0,
      batchesVerified: 0,
      recordsVerified: 0,
      bytesVerified: 0,
      recordsCommitted: 0,
      requests: 0,
      failures: 0,
      throttles: 0,
      retries: 0,
      retentionGapRecords: 0,
      readGate: knobs.current().readGate,
      committed: new Map()
    }
    /** Sealed batches not yet verified (or dropped). */
    let outstanding = 0
    let sourceDone = false
    /** Bytes accounted but not taken from the budget (chunks larger than it). */
    let budgetDebt = 0

    const publish = (signal: Signal) => bus.publishUnsafe(signal)

    const releaseBytes = (bytes: number) => {
      stats.inflightBytes -= bytes
      const fromDebt = Math.min(budgetDebt, bytes)
      budgetDebt -= fromDebt
      return bytes - fromDebt > 0 ? Effect.asVoid(budget.release(bytes - fromDebt)) : Effect.void
    }

    const checkDone = Effect.suspend(() =>
      sourceDone && outstanding === 0 ? Deferred.succeed(done, stats) : Effect.void
    )

    const fail = (error: PipelineError) => Deferred.fail(done, error)

    const enqueue = (batches: ReadonlyArray<SealedBatch>, now: number) =>
      Effect.suspend(() => {
        if (batches.length === 0) return Effect.void
        for (const batch of batches) {
          tracker.register(batch)
          outstanding++
          stats.batchesSealed++
          stats.queued++
          metrics.seals.add(1, { reason: batch.sealReason })
          publish({
            _tag: "Sealed",
            at: now,
            reason: batch.sealReason,
            records: batch.records,
            bytes: batch.bytes,
            ageMillis: now - batch.openedAt
          })
        }
        stats.openBytes = sealer.openBytes
        return Queue.offerAll(queue, batches.map((batch) => ({ batch, attempt: 1 })))
      })

    // --- reader -------------------------------------------------------------
    const acceptChunk = (chunk: RecordChunk) =>
      Effect.gen(function*() {
        if (stats.readGate === "paused") {
          const now = yield* Clock.currentTimeMillis
          yield* enqueue(sealer.sealAll("pressure", now), now)
          yield* source.pause
          yield* gateOpen.await
          yield* source.resume
        }
        const take = Math.min(chunk.bytes, budgetBytes)
        if (take > 0 && !(yield* budget.takeIfAvailable(take))) {
          // Full. Sealed and uploading batches will free memory as they are
          // verified; open batches will not. Seal them early only when they would
          // keep the chunk out even after everything sealed drained — sealing on
          // every blocked chunk would turn each chunk into its own tiny batch.
          if (sealer.openBytes + take > budgetBytes) {
            const now = yield* Clock.currentTimeMillis
            yield* enqueue(sealer.sealAll("pressure", now), now)
          }
          yield* budget.take(take)
        }
        budgetDebt += chunk.bytes - take
        stats.inflightBytes += chunk.bytes
        if (stats.inflightBytes > stats.maxInflightBytes) stats.maxInflightBytes = stats.inflightBytes
        stats.recordsRead += chunk.count
        stats.bytesRead += chunk.bytes
        const now = yield* Clock.currentTimeMillis
        const sealed = sealer.append(chunk, knobs.current().batchTarget, now)
        stats.openBytes = sealer.openBytes
        yield* enqueue(sealed, now)
      })

    const onGap = (gap: RetentionGap) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        stats.retentionGapRecords += gap.lostRecords
        metrics.retentionGapRecords.add(gap.lostRecords, { partition: gap.partition })
        // The records before the gap go in their own batch; the next batch starts
        // at the log start and carries the gap in its manifest.
        yield* enqueue(sealer.sealPartition(gap.source, gap.partition, "gap", now), now)
        sealer.recordGap(gap.source, gap.partition, {
          expected: gap.expected,
          logStart: gap.logStart,
          lostRecords: gap.lostRecords
        })
        publish({ ...gap, at: now })
      })

    const onRevoke = (event: PartitionsRevoked) =>
      Effect.gen(function*() {
        const freed = sealer.drop(source.name, event.partitions)
        stats.openBytes = sealer.openBytes
        tracker.forget(source.name, event.partitions)
        for (const p of event.partitions) wantCommit.delete(`${source.name}/${p}`)
        yield* releaseBytes(freed)
        yield* event.acknowledge
      })

    const reader = source.events.pipe(
      Stream.runForEach((event) => {
        switch (event._tag) {
          case "RecordChunk":
            return event.bytes > budgetBytes / 2 && event.count > 1
              ? Effect.forEach(splitToFit(event, budgetBytes / 2), acceptChunk, { discard: true })
              : acceptChunk(event)
          case "RetentionGap":
            return onGap(event)
          case "PartitionsRevoked":
            return onRevoke(event)
        }
      }),
      Effect.andThen(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* enqueue(sealer.sealAll("drain", now), now)
        sourceDone = true
        yield* checkDone
      })),
      Effect.catchCause((cause) => Deferred.failCause(done, cause))
    )

    // --- uploader -----------------------------------------------------------
    const timedStage = <A, Err extends SinkFailure | VerificationFailed>(
      stage: Stage,
      bytes: number,
      effect: Effect.Effect<A, Err>,
      attempt: number
    ): Effect.Effect<A, Err> =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const inflightAtStart = stats.uploading
        const limitAtStart = knobs.current().concurrency
        stats.requests++
        const exit = yield* Effect.exit(effect)
        const end = yield* Clock.currentTimeMillis
        const latencyMillis = end - startedAt
        metrics.stageDuration.record(latencyMillis / 1000, { stage })
        if (Exit.isSuccess(exit)) {
          publish({ _tag: "UploadSample", at: end, stage, startedAt, latencyMillis, bytes, inflightAtStart, limitAtStart })
          return exit.value
        }
        const error = exit.cause.reasons.find((r) => r._tag === "Fail")
        if (error !== undefined && error._tag === "Fail") {
          const failure = Failure.classify(error.error)
          stats.failures++
          metrics.failures.add(1, { class: failure.failureClass, code: failure.code, stage })
          if (failure.failureClass === "Throttled") {
            stats.throttles++
            metrics.throttles.add(1, { code: failure.code })
          }
          if (error.error._tag === "VerificationFailed") {
            metrics.verificationFailures.add(1, { reason: error.error.reason })
          }
          publish({ _tag: "Failure", at: end, failure, startedAt, latencyMillis, inflightAtStart, limitAtStart, attempt })
        }
        return yield* exit
      })

    const commit = Effect.gen(function*() {
      for (const [id, want] of wantCommit) {
        const have = stats.committed.get(id) ?? -1
        // Capture before yielding: onVerified may advance `want` meanwhile.
        const nextOffset = want.nextOffset
        const records = want.records
        if (nextOffset <= have) continue
        const startedAt = yield* Clock.currentTimeMillis
        yield* source.commit(want.partition, nextOffset)
        const end = yield* Clock.currentTimeMillis
        metrics.stageDuration.record((end - startedAt) / 1000, { stage: "commit" })
        stats.committed.set(id, nextOffset)
        want.records -= records
        stats.recordsCommitted += records
        metrics.recordsCommitted.add(records)
      }
    }).pipe(commitLock.withPermit)

    const upload = (work: Work) =>
      Effect.gen(function*() {
        const { batch, attempt } = work
        const objectBytes = Batch.bodyBytes(batch)
        const receipt = yield* timedStage("object_upload", objectBytes, sink.putObject(batch), attempt)
        yield* timedStage("manifest_upload", 0, sink.putManifest(Batch.manifestOf(batch, receipt.checksum)), attempt)
        yield* timedStage("verify", 0, sink.verify(receipt), attempt)
      })

    const onVerified = (batch: SealedBatch) =>
      Effect.gen(function*() {
        const advance = tracker.verified(batch)
        stats.batchesVerified++
        stats.recordsVerified += batch.records
        stats.bytesVerified += batch.bytes
        metrics.recordsVerified.add(batch.records)
        yield* releaseBytes(batch.bytes)
        if (advance !== undefined) {
          const id = `${advance.source}/${advance.partition}`
          const want = wantCommit.get(id)
          if (want === undefined) {
            wantCommit.set(id, { ...advance })
          } else {
            want.nextOffset = advance.nextOffset
            want.records += advance.records
          }
          yield* commit
        }
        // Only now: with an asynchronous source commit, counting the batch done
        // before its commit lets the run complete (and close) mid-commit.
        outstanding--
        yield* checkDone
      })

    const onFailed = (work: Work, error: SinkFailure | VerificationFailed) =>
      Effect.gen(function*() {
        const failure = Failure.classify(error)
        const delay = retry.delayMillis(failure, work.attempt)
        if (delay === undefined) {
          return yield* fail(
            new BatchFailed({
              key: work.batch.key,
              failureClass: failure.failureClass,
              code: failure.code,
              stage: failure.stage,
              attempts: work.attempt,
              message: error._tag === "SinkFailure" ? error.message : `verification failed: ${error.reason}`
            })
          )
        }
        stats.retries++
        stats.queued++
        yield* Effect.sleep(delay).pipe(
          Effect.andThen(Queue.offer(queue, { batch: work.batch, attempt: work.attempt + 1 })),
          Effect.forkIn(scope)
        )
      })

    const process = (work: Work) =>
      Effect.suspend(() => {
        stats.uploading++
        return upload(work)
      }).pipe(
        Effect.ensuring(Effect.suspend(() => {
          stats.uploading--
          return gate.release(1)
        })),
        Effect.matchEffect({
          onSuccess: () => onVerified(work.batch),
          onFailure: (error) => onFailed(work, error)
        }),
        Effect.catchCause((cause) => Deferred.failCause(done, cause))
      )

    let nextStart = 0
    const rateWait = Effect.gen(function*() {
      const rate = knobs.current().rate
      if (rate === null) return
      const now = yield* Clock.currentTimeMillis
      const interval = 1000 / rate
      const at = Math.max(now, nextStart)
      nextStart = at + interval
      if (at > now) yield* Effect.sleep(at - now)
    })

    const dispatcher = Effect.gen(function*() {
      while (true) {
        const work = yield* Queue.take(queue)
        stats.queued--
        if (!tracker.isPending(work.batch)) {
          // Its partition was revoked: abandon without commit.
          outstanding--
          yield* releaseBytes(work.batch.bytes)
          yield* checkDone
          continue
        }
        yield* rateWait
        yield* gate.take(1)
        yield* Effect.forkIn(process(work), scope)
      }
    })

    // --- knobs, ticks -------------------------------------------------------
    let lastKnobs = knobs.current()
    const knobWatcher = knobs.changes.pipe(
      Stream.runForEach((values) =>
        Effect.gen(function*() {
          if (values.concurrency !== lastKnobs.concurrency) {
            metrics.policyDecisions.add(1, { knob: "concurrency" })
            yield* gate.resize(values.concurrency)
          }
          if (values.batchTarget !== lastKnobs.batchTarget) metrics.policyDecisions.add(1, { knob: "batchTarget" })
          if (values.rate !== lastKnobs.rate) metrics.policyDecisions.add(1, { knob: "rate" })
          if (values.readGate !== lastKnobs.readGate) {
            metrics.policyDecisions.add(1, { knob: "readGate" })
            stats.readGate = values.readGate
            if (values.readGate === "open") yield* gateOpen.open
            else yield* gateOpen.close
          }
          lastKnobs = values
        })
      )
    )

    const ticker = Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(config.tick)
        const now = yield* Clock.currentTimeMillis
        const values = knobs.current()
        yield* enqueue(sealer.sealExpired(now, values.batchTarget.maxAgeMillis), now)
        const lag = yield* source.lag
        let totalLag = 0
        for (const [partition, records] of lag) {
          totalLag += records
          metrics.sourceLag.record(records, { partition })
        }
        metrics.inflightBatches.record(stats.uploading)
        metrics.inflightBytes.record(stats.inflightBytes)
        metrics.concurrencyLimit.record(values.concurrency)
        metrics.batchTargetBytes.record(values.batchTarget.bytes)
        metrics.batchTargetRecords.record(values.batchTarget.records)
        publish({ _tag: "Lag", at: now, lag, totalRecords: totalLag })
        publish({
          _tag: "Inflight",
          at: now,
          batches: stats.uploading,
          bytes: stats.inflightBytes,
          openBytes: stats.openBytes,
          budgetBytes
        })
        publish({ _tag: "Tick", at: now, knobs: values })
      }
    })

    yield* Effect.forkIn(knobWatcher, scope)
    yield* Effect.forkIn(dispatcher, scope)
    yield* Effect.forkIn(ticker, scope)
    yield* Effect.forkIn(reader, scope)

    return {
      config,
      stats: () => stats,
      knobs,
      bus,
      await: Deferred.await(done)
    }
  })

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
