/**
 * Metrics through the OpenTelemetry API (meter `sluice`). Sluice depends on the
 * API only: install any OpenTelemetry SDK and its meter provider receives these.
 *
 * | instrument | kind | unit | attributes |
 * |---|---|---|---|
 * | `sluice.stage.duration` | histogram | s | `stage` (object_upload, manifest_upload, verify, commit) |
 * | `sluice.inflight.batches` | gauge | {batch} | |
 * | `sluice.inflight.bytes` | gauge | By | |
 * | `sluice.concurrency.limit` | gauge | {request} | |
 * | `sluice.batch.target.bytes` / `.records` | gauge | By / {record} | |
 * | `sluice.seals` | counter | {batch} | `reason` |
 * | `sluice.records.verified` / `.committed` | counter | {record} | |
 * | `sluice.verification.failures` | counter | {batch} | `reason` |
 * | `sluice.failures` | counter | {request} | `class`, `code`, `stage` |
 * | `sluice.throttles` | counter | {request} | `code` |
 * | `sluice.source.lag` | gauge | {record} | `partition` |
 * | `sluice.retention_gap.records` | counter | {record} | `partition` |
 * | `sluice.policy.decisions` | counter | {change} | `knob` |
 * | `sluice.retries` | counter | {retry} | `class`, `code`, `stage` |
 * | `sluice.uncommitted.oldest_age` | gauge | s | |
 * | `sluice.partitions.held` | gauge | {partition} | |
 *
 * @since 0.1.0
 */
import { metrics } from "@opentelemetry/api"
import type { Counter, Gauge, Histogram, MeterProvider } from "@opentelemetry/api"

/**
 * The instruments the pipeline records to.
 *
 * @since 0.1.0
 */
export interface Instruments {
  readonly stageDuration: Histogram
  readonly inflightBatches: Gauge
  readonly inflightBytes: Gauge
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
  readonly policyDecisions: Counter
  /** Retries scheduled, by the failure that caused them. */
  readonly retries: Counter
  /** Age of the oldest sealed batch not yet committed (from its first record's arrival). */
  readonly oldestUncommittedAge: Gauge
  /** Partitions held back at the verified-but-uncommitted cap. */
  readonly partitionsHeld: Gauge
}

/**
 * Creates the instruments on meter `sluice` of `provider` (the global provider
 * by default).
 *
 * **Example**
 *
 * ```ts
 * import { MeterProvider } from "@opentelemetry/sdk-metrics"
 * import { Metrics } from "@sluice/core"
 *
 * const instruments = Metrics.make(new MeterProvider())
 * ```
 *
 * @since 0.1.0
 */
export const make = (provider?: MeterProvider): Instruments => {
  const meter = (provider ?? metrics.getMeterProvider()).getMeter("sluice")
  return {
    stageDuration: meter.createHistogram("sluice.stage.duration", {
      unit: "s",
      description: "Duration of a pipeline stage, per request",
      advice: { explicitBucketBoundaries: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] }
    }),
    inflightBatches: meter.createGauge("sluice.inflight.batches", { unit: "{batch}", description: "Batches uploading" }),
    inflightBytes: meter.createGauge("sluice.inflight.bytes", { unit: "By", description: "Bytes held: open + sealed + uploading" }),
    concurrencyLimit: meter.createGauge("sluice.concurrency.limit", { unit: "{request}", description: "Upload concurrency knob" }),
    batchTargetBytes: meter.createGauge("sluice.batch.target.bytes", { unit: "By", description: "Batch target, bytes" }),
    batchTargetRecords: meter.createGauge("sluice.batch.target.records", { unit: "{record}", description: "Batch target, records" }),
    seals: meter.createCounter("sluice.seals", { unit: "{batch}", description: "Batches sealed, by reason" }),
    recordsVerified: meter.createCounter("sluice.records.verified", { unit: "{record}", description: "Records verified in storage" }),
    recordsCommitted: meter.createCounter("sluice.records.committed", { unit: "{record}", description: "Records whose position was committed" }),
    verificationFailures: meter.createCounter("sluice.verification.failures", { unit: "{batch}", description: "Batches that failed verification" }),
    failures: meter.createCounter("sluice.failures", { unit: "{request}", description: "Failed sink requests, by class" }),
    throttles: meter.createCounter("sluice.throttles", { unit: "{request}", description: "Throttled sink requests, by code" }),
    sourceLag: meter.createGauge("sluice.source.lag", { unit: "{record}", description: "Records behind the end of the log" }),
    retentionGapRecords: meter.createCounter("sluice.retention_gap.records", { unit: "{record}", description: "Records deleted by retention before being read" }),
    policyDecisions: meter.createCounter("sluice.policy.decisions", { unit: "{change}", description: "Knob changes decided by policies" }),
    retries: meter.createCounter("sluice.retries", { unit: "{retry}", description: "Batch retries scheduled, by failure class, code and stage" }),
    oldestUncommittedAge: meter.createGauge("sluice.uncommitted.oldest_age", {
      unit: "s",
      description: "Age of the oldest sealed batch not yet committed"
    }),
    partitionsHeld: meter.createGauge("sluice.partitions.held", {
      unit: "{partition}",
      description: "Partitions whose new batches wait behind the verified-but-uncommitted cap"
    })
  }
}
