import { describe, expect, it } from "@effect/vitest"
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Failure, Memory, Metrics, Pipeline } from "../src/index.ts"
import { runVirtual } from "./support.ts"

const identity = { "sluice.pipeline": "m", "messaging.destination.name": "m" }

describe("Metrics", () => {
  it.effect("the lag gauge ends on the run's last state: a run shorter than a tick still reports each partition's lag", () =>
    Effect.gen(function*() {
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
      const meterProvider = new MeterProvider({ readers: [reader] })
      // The run ends within a second; the first tick would come at 10 s.
      const source = Memory.source({ name: "m", partitions: 2, records: 100, recordBytes: 20 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink: Memory.sink(), meterProvider, config: { tick: "10 seconds" } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      yield* Effect.promise(() => reader.forceFlush())
      const lag = exporter.getMetrics().flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics).find((m) => m.descriptor.name === "sluice.source.lag")
      expect(lag?.dataPoints.map((dp) => [dp.attributes["messaging.destination.partition.id"], dp.value]).sort()).toEqual([["0", 0], ["1", 0]])
      yield* Effect.promise(() => meterProvider.shutdown())
    }))

  it.effect("records stage durations, seals, verified/committed records and failures on meter @sluice/core, every point with the pipeline's identity", () =>
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
      const exit = yield* runVirtual(Pipeline.run({ source, sink, meterProvider, config: { batch: { stagger: 0, records: 250 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      yield* Effect.promise(() => reader.forceFlush())
      const scopes = exporter.getMetrics().flatMap((r) => r.scopeMetrics)
      const version = (JSON.parse(readFileSync(join(import.meta.dirname, "../package.json"), "utf8")) as { version: string }).version
      expect(scopes.map((s) => [s.scope.name, s.scope.version])).toEqual([["@sluice/core", version]])
      for (const m of scopes.flatMap((s) => s.metrics)) {
        for (const dp of m.dataPoints) expect(dp.attributes, m.descriptor.name).toMatchObject(identity)
      }
      const metric = (name: string) => scopes.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      const sum = (name: string) =>
        (metric(name)?.dataPoints ?? []).reduce((acc, dp) => acc + (typeof dp.value === "number" ? dp.value : 0), 0)

      const duration = metric("sluice.stage.duration")
      expect(duration?.descriptor.unit).toBe("s")
      const stages = new Set(duration?.dataPoints.map((dp) => dp.attributes["sluice.stage"]))
      expect(stages).toEqual(new Set(["object_upload", "manifest_upload", "verify", "commit"]))
      expect(sum("sluice.records.verified")).toBe(2_000)
      expect(sum("sluice.records.committed")).toBe(2_000)
      expect(sum("sluice.records.committed")).toBeLessThanOrEqual(sum("sluice.records.verified"))
      expect(sum("sluice.seals")).toBe(8)
      expect(sum("sluice.throttles")).toBe(1)
      const failures = metric("sluice.failures")?.dataPoints ?? []
      expect(failures.map((dp) => dp.attributes)).toEqual([{ ...identity, "error.type": "SlowDown", "sluice.failure.class": "Throttled", "sluice.stage": "object_upload" }])
      expect(metric("sluice.throttles")?.dataPoints.map((dp) => dp.attributes)).toEqual([{ ...identity, "error.type": "SlowDown" }])
      expect(new Set(metric("sluice.source.lag")?.dataPoints.map((dp) => dp.attributes["messaging.destination.partition.id"]))).toEqual(new Set(["0", "1"]))
      expect(new Set(metric("sluice.seals")?.dataPoints.map((dp) => dp.attributes["sluice.seal.reason"]))).toEqual(new Set(["records"]))
      expect(metric("sluice.concurrency.limit")?.dataPoints[0]?.value).toBe(8)
      expect(metric("sluice.source.lag")?.dataPoints.length).toBe(2)
      // In flight is an up-down counter: back to 0 once the pipeline ended.
      const inflight = metric("sluice.inflight.bytes")
      expect(inflight !== undefined && "isMonotonic" in inflight && inflight.isMonotonic).toBe(false)
      expect(sum("sluice.inflight.bytes")).toBe(0)
      expect(sum("sluice.inflight.batches")).toBe(0)
      expect(sum("sluice.retries")).toBe(1)
      // The age of the oldest uncommitted batch (s), recorded every tick.
      const age = metric("sluice.uncommitted.oldest_age")
      expect(age?.descriptor.unit).toBe("s")
      expect(age?.dataPoints.length).toBe(1)
      expect(metric("sluice.partitions.held")?.dataPoints[0]?.value).toBe(0)
      yield* Effect.promise(() => meterProvider.shutdown())
    }))

  it.effect("two pipelines in one process stay apart (sluice.pipeline), and their in-flight bytes add up while both run", () =>
    Effect.gen(function*() {
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
      const meterProvider = new MeterProvider({ readers: [reader] })
      const a = Metrics.make(meterProvider, { pipeline: "a", topic: "orders" })
      const b = Metrics.make(meterProvider, { pipeline: "b", topic: "orders" })
      a.recordsVerified.add(10)
      b.recordsVerified.add(5)
      a.inflightBytes.add(100)
      b.inflightBytes.add(50)
      b.inflightBytes.add(-20)
      yield* Effect.promise(() => reader.forceFlush())
      const points = (name: string) =>
        exporter.getMetrics().flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics).filter((m) => m.descriptor.name === name)
          .flatMap((m) => m.dataPoints.map((dp) => [dp.attributes["sluice.pipeline"], dp.value]))
      expect(points("sluice.records.verified")).toEqual([["a", 10], ["b", 5]])
      expect(points("sluice.inflight.bytes")).toEqual([["a", 100], ["b", 30]])
      yield* Effect.promise(() => meterProvider.shutdown())
    }))
})
