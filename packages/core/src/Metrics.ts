/**
 * Metrics through the OpenTelemetry API. Sluice depends on the API only:
 * install any OpenTelemetry SDK and its meter provider receives these.
 *
 * The instrumentation scope is `@sluice/core` with the package's version. Every
 * data point carries the pipeline's identity — `sluice.pipeline` (the
 * pipeline's `name`, the source's name by default) and
 * `messaging.destination.name` (the source's name: the topic) — so two
 * pipelines in one process never merge. Attribute names follow the
 * OpenTelemetry semantic conventions where one exists (`error.type`,
 * `messaging.destination.partition.id`), `sluice.*` otherwise. In-flight
 * values are up-down counters: they add up across instances.
 *
 * | instrument | kind | unit | attributes (beside the identity) |
 * |---|---|---|---|
 * | `sluice.stage.duration` | histogram | s | `sluice.stage` (object_upload, manifest_upload, verify, commit) |
 * | `sluice.inflight.batches` | up-down counter | {batch} | |
 * | `sluice.inflight.bytes` | up-down counter | By | |
 * | `sluice.concurrency.limit` | gauge | {request} | |
 * | `sluice.batch.target.bytes` / `.records` | gauge | By / {record} | |
 * | `sluice.seals` | counter | {batch} | `sluice.seal.reason` |
 * | `sluice.records.verified` / `.committed` | counter | {record} | |
 * | `sluice.verification.failures` | counter | {batch} | `error.type` |
 * | `sluice.failures` | counter | {request} | `error.type` (the code), `sluice.failure.class`, `sluice.stage` |
 * | `sluice.throttles` | counter | {request} | `error.type` (the code) |
 * | `sluice.source.lag` | gauge | {record} | `messaging.destination.partition.id` |
 * | `sluice.retention_gap.records` | counter | {record} | `messaging.destination.partition.id` |
 * | `sluice.policy.decisions` | counter | {change} | `sluice.knob` |
 * | `sluice.retries` | counter | {retry} | `error.type`, `sluice.failure.class`, `sluice.stage` |
 * | `sluice.uncommitted.oldest_age` | gauge | s | |
 * | `sluice.partitions.held` | gauge | {partition} | |
 *
 * @since 0.1.0
 */
import { metrics } from "@opentelemetry/api"
import type { Attributes, Counter, Gauge, Histogram, MeterProvider, UpDownCounter } from "@opentelemetry/api"
import { version } from "./internal/Version.ts"

/**
 * The instrumentation scope name of Sluice's meter.
 *
 * @since 0.2.0
 */
export const scopeName = "@sluice/core"

/**
 * The instrumentation scope version: `@sluice/core`'s package version.
 *
 * @since 0.2.0
 */
export const scopeVersion = version

/**
 * Which pipeline the data points belong to.
 *
 * @since 0.2.0
 */
export interface Identity {
  /** `sluice.pipeline`: the pipeline's name. */
  readonly pipeline: string
  /** `messaging.destination.name`: the source's name (the topic). */
  readonly topic: string
}

/**
 * Attribute names used on Sluice's data points.
 *
 * @since 0.2.0
 */
export const Attribute = {
  pipeline: "sluice.pipeline",
  topic: "messaging.destination.name",
  partition: "messaging.destination.partition.id",
  errorType: "error.type",
  failureClass: "sluice.failure.class",
  stage: "sluice.stage",
  sealReason: "sluice.seal.reason",
  knob: "sluice.knob"
} as const

/**
 * The instruments the pipeline records to.
 *
 * @since 0.1.0
 */
export interface Instruments {
  readonly stageDuration: Histogram
  /** Batches uploading: add the change (+ when one starts, − when it ends). */
  readonly inflightBatches: UpDownCounter
  /** Bytes held (open + sealed + uploading): add the change. */
  readonly inflightBytes: UpDownCounter
  readonly concurrencyLimit: Gauge
  readonly batchTargetBytes: Gauge
  readonly batchTargetRecords: Gauge
  readonly seals: Counter
  readonly recordsVerified: Counter
  readonly recordsCommitted: Counter
  readonly verificationFailures: Counter
  readonly failures: Counter
  readonly throttles: Counter
  readonly sourceLag: Gauge
  readonly retentionGapRecords: Counter
  /** Records verified in storage and left uncommitted by a revoke: the next owner archives them again. */
  readonly recordsLeftOnRevoke: Counter
  readonly policyDecisions: Counter
  /** Retries scheduled, by the failure that caused them. */
  readonly retries: Counter
  /** Age of the oldest sealed batch not yet committed (from its first record's arrival). */
  readonly oldestUncommittedAge: Gauge
  /** Partitions held back at the verified-but-uncommitted cap. */
  readonly partitionsHeld: Gauge
}

/**
 * Creates the instruments on meter `@sluice/core` (with its version) of
 * `provider` (the global provider by default). Every data point carries
 * `identity` (see the module docs).
 *
 * **Example**
 *
 * ```ts
 * import { MeterProvider } from "@opentelemetry/sdk-metrics"
 * import { Metrics } from "@sluice/core"
 *
 * const instruments = Metrics.make(new MeterProvider(), { pipeline: "orders-archive", topic: "orders" })
 * instruments.recordsVerified.add(100) // { sluice.pipeline: "orders-archive", messaging.destination.name: "orders" }
 * ```
 *
 * @since 0.1.0
 */
export const make = (provider?: MeterProvider, identity?: Identity): Instruments => {
  const meter = (provider ?? metrics.getMeterProvider()).getMeter(scopeName, scopeVersion)
  const base: Attributes = identity === undefined ? {} : { [Attribute.pipeline]: identity.pipeline, [Attribute.topic]: identity.topic }
  const counter = <I extends Counter | UpDownCounter>(instrument: I): I =>
    ({ add: (value, attributes, context) => instrument.add(value, { ...base, ...attributes }, context) }) as I
  const gauge = (instrument: Gauge): Gauge => ({
    record: (value, attributes, context) => instrument.record(value, { ...base, ...attributes }, context)
  })
  const histogram = (instrument: Histogram): Histogram => ({
    record: (value, attributes, context) => instrument.record(value, { ...base, ...attributes }, context)
  })
  return {
    stageDuration: histogram(meter.createHistogram("sluice.stage.duration", {
      unit: "s",
      description: "Duration of a pipeline stage, per request",
      advice: { explicitBucketBoundaries: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] }
    })),
    inflightBatches: counter(meter.createUpDownCounter("sluice.inflight.batches", { unit: "{batch}", description: "Batches uploading" })),
    inflightBytes: counter(meter.createUpDownCounter("sluice.inflight.bytes", { unit: "By", description: "Bytes held: open + sealed + uploading" })),
    concurrencyLimit: gauge(meter.createGauge("sluice.concurrency.limit", { unit: "{request}", description: "Upload concurrency knob" })),
    batchTargetBytes: gauge(meter.createGauge("sluice.batch.target.bytes", { unit: "By", description: "Batch target, bytes" })),
    batchTargetRecords: gauge(meter.createGauge("sluice.batch.target.records", { unit: "{record}", description: "Batch target, records" })),
    seals: counter(meter.createCounter("sluice.seals", { unit: "{batch}", description: "Batches sealed, by reason" })),
    recordsVerified: counter(meter.createCounter("sluice.records.verified", { unit: "{record}", description: "Records verified in storage" })),
    recordsCommitted: counter(meter.createCounter("sluice.records.committed", { unit: "{record}", description: "Records whose position was committed" })),
    verificationFailures: counter(meter.createCounter("sluice.verification.failures", { unit: "{batch}", description: "Batches that failed verification" })),
    failures: counter(meter.createCounter("sluice.failures", { unit: "{request}", description: "Failed sink requests, by class" })),
    throttles: counter(meter.createCounter("sluice.throttles", { unit: "{request}", description: "Throttled sink requests, by code" })),
    sourceLag: gauge(meter.createGauge("sluice.source.lag", { unit: "{record}", description: "Records behind the end of the log" })),
    retentionGapRecords: counter(meter.createCounter("sluice.retention_gap.records", { unit: "{record}", description: "Records deleted by retention before being read" })),
    recordsLeftOnRevoke: counter(meter.createCounter("sluice.records.left_on_revoke", {
      unit: "{record}",
      description: "Records verified in storage whose partition was revoked before their commit: archived again by the next owner"
    })),
    policyDecisions: counter(meter.createCounter("sluice.policy.decisions", { unit: "{change}", description: "Knob changes decided by policies" })),
    retries: counter(meter.createCounter("sluice.retries", { unit: "{retry}", description: "Batch retries scheduled, by failure class, code and stage" })),
    oldestUncommittedAge: gauge(meter.createGauge("sluice.uncommitted.oldest_age", {
      unit: "s",
      description: "Age of the oldest sealed batch not yet committed"
    })),
    partitionsHeld: gauge(meter.createGauge("sluice.partitions.held", {
      unit: "{partition}",
      description: "Partitions whose new batches wait behind the verified-but-uncommitted cap"
    }))
  }
}
