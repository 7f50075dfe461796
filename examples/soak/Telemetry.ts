/**
 * soak — the pipeline's OpenTelemetry metrics (meter `sluice`), read in
 * process: the run gets its own `MeterProvider` with a reader the sampler
 * pulls once a second. It gives what neither `handle.stats()` nor the signal
 * bus splits out: failures by class, verification failures, retries, seals by
 * reason, and the source's lag as the pipeline polls it.
 */
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics"
import type { MetricData } from "@opentelemetry/sdk-metrics"
import { Effect } from "effect"

/** A reader that exports nothing by itself: the sampler calls `collect`. */
class PullReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** Cumulative totals since the start (counters) and last values (gauges), as read at one moment. */
export interface Reading {
  /** `sluice.failures` by `class` (Throttled, Transient, Fatal). */
  readonly failuresByClass: Readonly<Record<string, number>>
  readonly verificationFailures: number
  readonly retries: number
  /** `sluice.seals` by `reason`. */
  readonly sealsByReason: Readonly<Record<string, number>>
  /** `sluice.source.lag` summed over partitions (records behind the end of the log). */
  readonly sourceLag: number
  readonly retentionGapRecords: number
}

/** The run's meter provider and the reading of its metrics. */
export interface Telemetry {
  readonly meterProvider: MeterProvider
  readonly read: Effect.Effect<Reading>
  readonly shutdown: Effect.Effect<void>
}

const numeric = (v: unknown): number => (typeof v === "number" ? v : 0)

const byAttribute = (metric: MetricData | undefined, attribute: string): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const dp of metric?.dataPoints ?? []) {
    const key = String(dp.attributes[attribute] ?? "?")
    out[key] = (out[key] ?? 0) + numeric(dp.value)
  }
  return out
}
const total = (metric: MetricData | undefined): number => {
  let sum = 0
  for (const dp of metric?.dataPoints ?? []) sum += numeric(dp.value)
  return sum
}

/**
 * A meter provider for one run, and its reading.
 *
 * **Example**
 *
 * ```ts
 * const telemetry = Telemetry.make()
 * const handle = yield* Pipeline.start({ source, sink, meterProvider: telemetry.meterProvider })
 * const reading = yield* telemetry.read // { failuresByClass: { Throttled: 3 }, … }
 * ```
 */
export const make = (): Telemetry => {
  const reader = new PullReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const read = Effect.promise(() => reader.collect()).pipe(
    Effect.map(({ resourceMetrics }): Reading => {
      const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
      const metric = (name: string) => metrics.find((m) => m.descriptor.name === name)
      return {
        failuresByClass: byAttribute(metric("sluice.failures"), "class"),
        verificationFailures: total(metric("sluice.verification.failures")),
        retries: total(metric("sluice.retries")),
        sealsByReason: byAttribute(metric("sluice.seals"), "reason"),
        sourceLag: total(metric("sluice.source.lag")),
        retentionGapRecords: total(metric("sluice.retention_gap.records"))
      }
    })
  )
  return { meterProvider, read, shutdown: Effect.promise(() => meterProvider.shutdown()) }
}
