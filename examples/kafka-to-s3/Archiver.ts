/**
 * The Kafka → S3 archiver as a service: `KafkaToS3.start` (Kafka source, S3
 * sink, the default policies; `examples/src/KafkaToS3.ts`) in group mode,
 * reading until it is told to stop — `stop` (SIGTERM / SIGINT from the
 * command line), a time limit, or a number of records committed — and then
 * draining: it stops reading, seals the open batches, finishes the uploads in
 * flight, commits what was verified and returns the stats.
 *
 * Its metrics go to the `meterProvider` it is given (`Prometheus.make`'s).
 * Beside the pipeline's own instruments (meter `@sluice/core`) it
 *
 * - starts the counters the alerts read at 0 for this pipeline
 *   (`sluice.verification.failures`, `sluice.retention_gap.records`,
 *   `sluice.throttles`, `sluice.failures`, `sluice.retries`, `sluice.records.*`):
 *   a series that appears at 1 has no earlier sample, so Prometheus'
 *   `increase()` reads the first failure as no increase — the alert would miss
 *   it;
 * - publishes two settings the alerts compare against (meter
 *   `@sluice/examples`): `sluice.config.memory_budget` (By) and
 *   `sluice.config.concurrency_floor` ({request}), with the pipeline's identity;
 * - publishes the consumer group as this member sees it (same meter):
 *   `sluice.kafka.partitions.owned` ({partition}, the partitions it owns now),
 *   `sluice.kafka.topic.partitions` ({partition}, the topic's count) and
 *   `sluice.kafka.rebalances` ({rebalance}, a counter): summed over a group's
 *   members, owned below the topic's count means partitions nobody reads;
 * - hands each `LeftOnRevoke` signal to `onLeftOnRevoke`: the records a
 *   rebalance left stored and not committed, which the partition's next owner
 *   archives again (the command prints one line per signal).
 */
import type { KafkaSource } from "@sluice/adapter-kafka"
import { Metrics } from "@sluice/core"
import type { Pipeline, SignalBus } from "@sluice/core"
import { Duration, Effect, Schedule, Stream } from "effect"
import * as KafkaToS3 from "../src/KafkaToS3.ts"
import type { Settings } from "./Settings.ts"

/** An OpenTelemetry meter provider (the API's interface, as `Pipeline.start` takes it). */
type MeterProvider = NonNullable<Pipeline.PipelineOptions["meterProvider"]>

/** What to archive, where, and when to stop. */
export interface Options {
  readonly brokers: readonly [string, ...Array<string>]
  readonly topic: string
  readonly groupId: string
  /** The group's settings but its id (static membership's `instanceId`, `sessionTimeout`, …). */
  readonly group?: KafkaToS3.ArchiveOptions["group"]
  readonly s3: KafkaToS3.ArchiveOptions["s3"]
  /** `sluice.pipeline` on every metric. */
  readonly name: string
  readonly settings: Settings
  /** The provider the metrics endpoint reads (`Prometheus.make`). */
  readonly meterProvider: MeterProvider
  /** Completes when the archiver should drain and stop (e.g. on SIGTERM). */
  readonly stop?: Effect.Effect<void> | undefined
  /** Drain and stop after this long. */
  readonly maxDuration?: Duration.Input | undefined
  /** Drain and stop once this many records are committed. */
  readonly untilCommitted?: number | undefined
  /** How long the drain may take (default 30 s) before it fails with `DrainTimedOut`. */
  readonly drainDeadline?: Duration.Input | undefined
  /** Called every `progressEvery` with the live stats (default: never). */
  readonly onProgress?: ((stats: Readonly<Pipeline.PipelineStats>) => void) | undefined
  readonly progressEvery?: Duration.Input | undefined
  /** TLS to the brokers (see `KafkaToS3.ArchiveOptions.tls`). */
  readonly tls?: KafkaToS3.ArchiveOptions["tls"]
  /** Wraps the sink (see `KafkaToS3.ArchiveOptions.wrapSink`). */
  readonly wrapSink?: KafkaToS3.ArchiveOptions["wrapSink"]
  /** Called once, with why the archiver drains. */
  readonly onStop?: ((reason: StopReason) => void) | undefined
  /** Called with every `LeftOnRevoke` signal: records a revoke left stored and not committed. */
  readonly onLeftOnRevoke?: ((signal: SignalBus.LeftOnRevokeSignal) => void) | undefined
}

/** Why the archiver drained. */
export type StopReason = "signal" | "max-duration" | "committed"

/** Scope of the example's own instruments. */
export const exampleScope = "@sluice/examples"

/** Counters the alerts read with `increase()` / `rate()`, started at 0. */
const zeroCounters = (instruments: Metrics.Instruments): void => {
  instruments.verificationFailures.add(0)
  instruments.retentionGapRecords.add(0)
  instruments.throttles.add(0)
  instruments.failures.add(0)
  instruments.retries.add(0)
  instruments.recordsVerified.add(0)
  instruments.recordsCommitted.add(0)
  instruments.recordsLeftOnRevoke.add(0)
}

/** Publishes the settings the alerts compare against. */
const publishSettings = (provider: MeterProvider, identity: Metrics.Identity, budgetBytes: number, floor: number): void => {
  const meter = provider.getMeter(exampleScope)
  const attributes = { [Metrics.Attribute.pipeline]: identity.pipeline, [Metrics.Attribute.topic]: identity.topic }
  meter.createGauge("sluice.config.memory_budget", { unit: "By", description: "The pipeline's memory budget (memoryBudget)" })
    .record(budgetBytes, attributes)
  meter.createGauge("sluice.config.concurrency_floor", { unit: "{request}", description: "Lowest upload concurrency the policies may set" })
    .record(floor, attributes)
}

/** Publishes the group as `source` sees it: partitions owned, the topic's partitions, rebalances. */
const publishGroup = (provider: MeterProvider, identity: Metrics.Identity, source: KafkaSource.KafkaSource): void => {
  const meter = provider.getMeter(exampleScope)
  const attributes = { [Metrics.Attribute.pipeline]: identity.pipeline, [Metrics.Attribute.topic]: identity.topic }
  meter.createObservableGauge("sluice.kafka.partitions.owned", { unit: "{partition}", description: "Partitions this member owns now" })
    .addCallback((result) => result.observe(source.owned().length, attributes))
  meter.createObservableGauge("sluice.kafka.topic.partitions", { unit: "{partition}", description: "The topic's partition count" })
    .addCallback((result) => result.observe(source.partitionsCount, attributes))
  meter.createObservableCounter("sluice.kafka.rebalances", { unit: "{rebalance}", description: "Group rebalances this member took part in" })
    .addCallback((result) => result.observe(source.stats.rebalances, attributes))
}

/**
 * Runs the archiver until a stop rule fires, then drains; returns the stats
 * of the run (fails with the pipeline's error, e.g. `BatchFailed` or
 * `DrainTimedOut`).
 */
export const run = (options: Options) =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* KafkaToS3.start({
      brokers: options.brokers,
      topic: options.topic,
      groupId: options.groupId,
      group: options.group,
      s3: options.s3,
      follow: { stop: Effect.never },
      meterProvider: options.meterProvider,
      name: options.name,
      config: options.settings.pipeline,
      policies: options.settings.policies,
      tls: options.tls,
      sink: options.settings.s3,
      wrapSink: options.wrapSink,
      onSource: (source) => publishGroup(options.meterProvider, { pipeline: options.name, topic: options.topic }, source)
    })
    // The Kafka source's name is the topic: `messaging.destination.name`.
    const identity: Metrics.Identity = { pipeline: options.name, topic: options.topic }
    zeroCounters(Metrics.make(options.meterProvider, identity))
    publishSettings(options.meterProvider, identity, handle.config.memoryBudget, options.settings.concurrencyFloor)

    const onLeft = options.onLeftOnRevoke
    if (onLeft !== undefined) {
      const signals = yield* handle.bus.subscribe
      yield* Stream.fromSubscription(signals).pipe(
        Stream.runForEach((signal) => Effect.sync(() => signal._tag === "LeftOnRevoke" && onLeft(signal))),
        Effect.forkScoped
      )
    }

    const onProgress = options.onProgress
    if (onProgress !== undefined) {
      yield* Effect.forkScoped(
        Effect.sync(() => onProgress(handle.stats())).pipe(
          Effect.delay(options.progressEvery ?? "5 seconds"),
          Effect.forever
        )
      )
    }

    const rules: Array<Effect.Effect<StopReason>> = []
    if (options.stop !== undefined) rules.push(Effect.as(options.stop, "signal" as const))
    if (options.maxDuration !== undefined) rules.push(Effect.as(Effect.sleep(options.maxDuration), "max-duration" as const))
    const target = options.untilCommitted
    if (target !== undefined) {
      rules.push(
        Effect.sync(() => handle.stats().recordsCommitted >= target).pipe(
          Effect.repeat({ schedule: Schedule.spaced(Duration.millis(100)), until: (done) => done }),
          Effect.as("committed" as const)
        )
      )
    }
    const stop = rules.length === 0
      ? Effect.never
      : Effect.raceAll(rules).pipe(Effect.tap((reason) => Effect.sync(() => options.onStop?.(reason))), Effect.asVoid)
    return yield* KafkaToS3.follow(handle, stop, options.drainDeadline)
  }))
