/**
 * Spans and debug logs: each batch's upload, manifest, verify and each commit
 * is a span through Effect's tracer; throttles, read-gate pauses and policy
 * decisions are logged at debug level with structured annotations.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, References, Tracer } from "effect"
import { Failure, Knob, Memory, Pipeline } from "../src/index.ts"
import { runVirtual } from "./support.ts"

const throttled = () =>
  new Failure.SinkFailure({ failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined, message: "slow down" })

describe("Telemetry", () => {
  it.effect("a span per batch stage and per commit, with the batch's identity; a failed attempt's span ends failed", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const base = yield* Tracer.Tracer
      const tracer = Tracer.make({
        span(options) {
          const span = base.span(options)
          spans.push(span)
          return span
        }
      })
      let puts = 0
      const source = Memory.source({ name: "orders", partitions: 2, records: 200, recordBytes: 16 })
      const sink = Memory.sink({ fault: (op) => (op === "putObject" && puts++ === 0 ? throttled() : undefined) })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { stagger: 0, records: 100 } } }).pipe(Effect.withTracer(tracer)))
      expect(Exit.isSuccess(exit)).toBe(true)
      const named = (name: string) => spans.filter((s) => s.name === name)
      // 4 batches: 5 upload attempts (one throttled), 4 manifests, 4 verifies; commits per partition advance.
      expect(named("sluice.batch.upload").length).toBe(5)
      expect(named("sluice.batch.manifest").length).toBe(4)
      expect(named("sluice.batch.verify").length).toBe(4)
      expect(named("sluice.commit").length).toBeGreaterThanOrEqual(2)
      for (const span of spans) expect(span.status._tag, span.name).toBe("Ended")
      const first = named("sluice.batch.upload")[0]
      expect(first?.kind).toBe("client")
      expect(Object.fromEntries(first?.attributes ?? [])).toMatchObject({
        "messaging.destination.name": "orders",
        "sluice.batch.records": 100,
        "sluice.attempt": 1
      })
      const failed = named("sluice.batch.upload").filter((s) => s.status._tag === "Ended" && Exit.isFailure(s.status.exit))
      expect(failed.length).toBe(1)
      const commit = named("sluice.commit")[0]
      expect(Object.fromEntries(commit?.attributes ?? [])).toMatchObject({ "messaging.destination.name": "orders" })
      expect(commit?.attributes.get("messaging.destination.partition.id")).toMatch(/^[01]$/)
    }))

  it.effect("debug logs: a throttle, a policy decision and a read-gate pause, each with its annotations", () =>
    Effect.gen(function*() {
      const lines: Array<{ readonly message: string; readonly level: string; readonly annotations: Record<string, unknown> }> = []
      const logger = Logger.make((options) => {
        const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
        lines.push({ message, level: options.logLevel, annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) } })
      })
      // A policy that halves concurrency and pauses reads once, then lets them go.
      const policy = Layer.effectDiscard(Effect.gen(function*() {
        const knobs = yield* Knob.Knobs
        yield* knobs.propose("test", { concurrency: 4, readGate: "paused" })
        yield* Effect.sleep("50 millis")
        yield* knobs.propose("test", { concurrency: 4, readGate: "open" })
      }).pipe(Effect.forkDetach, Effect.asVoid))
      let puts = 0
      const source = Memory.source({ name: "orders", partitions: 1, records: 300, recordBytes: 16, intervalMillis: 10 })
      const sink = Memory.sink({ latencyMillis: () => 5, fault: (op) => (op === "putObject" && puts++ === 0 ? throttled() : undefined) })
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, policies: policy, config: { batch: { records: 100 } } }).pipe(
          Effect.provide(Logger.layer([logger])),
          Effect.provideService(References.MinimumLogLevel, "Debug")
        )
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      const debug = (message: string) => lines.filter((l) => l.level === "Debug" && l.message === message)
      expect(debug("sluice: throttled")[0]?.annotations).toMatchObject({ stage: "object_upload", code: "SlowDown" })
      expect(debug("sluice: policy decision").map((l) => l.annotations)).toContainEqual(expect.objectContaining({ knob: "concurrency", from: 8, to: 4 }))
      expect(debug("sluice: reads paused").length).toBe(1)
      expect(debug("sluice: reads resumed").length).toBe(1)
    }))
})
