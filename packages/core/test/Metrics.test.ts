import { describe, expect, it } from "@effect/vitest"
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { Effect, Exit } from "effect"
import { Failure, Memory, Pipeline } from "../src/index.ts"
import { runVirtual } from "./support.ts"

describe("Metrics", () => {
  it.effect("records stage durations, seals, verified/committed records and failures on meter `sluice`", () =>
    Effect.gen(function*() {
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
      const meterProvider = new MeterProvider({ readers: [reader] })
      let n = 0
      const source = Memory.source({ name: "m", partitions: 2, records: 1_000, recordBytes: 20, intervalMillis: 50 })
      const sink = Memory.sink({
        latencyMillis: () => 20,
        fault: (op) =>
          op === "putObject" && n++ === 1
            ? new Failure.SinkFailure({
              failureClass: "Throttled",
              code: "SlowDown",
              status: 503,
              stage: "object_upload",
              retryAfterMillis: undefined,
              message: "slow down"
            })
            : undefined
      })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, meterProvider, config: { batch: { records: 250 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      yield* Effect.promise(() => reader.forceFlush())
      const scopes = exporter.getMetrics().flatMap((r) => r.scopeMetrics)
      expect(scopes.every((s) => s.scope.name === "sluice")).toBe(true)
      const metric = (name: string) => scopes.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      const sum = (name: string) =>
        (metric(name)?.dataPoints ?? []).reduce((acc, dp) => acc + (typeof dp.value === "number" ? dp.value : 0), 0)

      const duration = metric("sluice.stage.duration")
      expect(duration?.descriptor.unit).toBe("s")
      const stages = new Set(duration?.dataPoints.map((dp) => dp.attributes["stage"]))
      expect(stages).toEqual(new Set(["object_upload", "manifest_upload", "verify", "commit"]))
      expect(sum("sluice.records.verified")).toBe(2_000)
      expect(sum("sluice.records.committed")).toBe(2_000)
      expect(sum("sluice.records.committed")).toBeLessThanOrEqual(sum("sluice.records.verified"))
      expect(sum("sluice.seals")).toBe(8)
      expect(sum("sluice.throttles")).toBe(1)
      const failures = metric("sluice.failures")?.dataPoints ?? []
      expect(failures.map((dp) => dp.attributes)).toEqual([{ class: "Throttled", code: "SlowDown", stage: "object_upload" }])
      expect(metric("sluice.concurrency.limit")?.dataPoints[0]?.value).toBe(8)
      expect(metric("sluice.source.lag")?.dataPoints.length).toBe(2)
      expect(metric("sluice.inflight.bytes")).toBeDefined()
      expect(sum("sluice.retries")).toBe(1)
      // The age of the oldest uncommitted batch (s), recorded every tick.
      const age = metric("sluice.uncommitted.oldest_age")
      expect(age?.descriptor.unit).toBe("s")
      expect(age?.dataPoints.length).toBe(1)
      expect(metric("sluice.partitions.held")?.dataPoints[0]?.value).toBe(0)
      yield* Effect.promise(() => meterProvider.shutdown())
    }))
})
