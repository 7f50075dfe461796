import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema } from "effect"
import { Batch, Failure, Fixed, Knob, Memory, Pipeline, Policy, Record } from "../src/index.ts"
import { listSource, runVirtual } from "./support.ts"

const throttle = (stage: Failure.Stage) =>
  new Failure.SinkFailure({
    failureClass: "Throttled",
    code: "SlowDown",
    status: 503,
    stage,
    retryAfterMillis: undefined,
    message: "Please reduce your request rate."
  })

/** Every position in the sink, decoded from the stored bodies. */
const positions = (sink: Memory.MemorySink): Map<string, number> => {
  const seen = new Map<string, number>()
  const decoder = new TextDecoder()
  for (const { body } of sink.objects.values()) {
    for (const p of Batch.decodeBody(body)) {
      const pos = decoder.decode(p).replace(/\.+$/, "")
      seen.set(pos, (seen.get(pos) ?? 0) + 1)
    }
  }
  return seen
}

describe("Pipeline", () => {
  it.effect("archives every record once and commits every partition to its end", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 3, records: 2_500, recordBytes: 32, chunkRecords: 300 })
      const sink = Memory.sink({ latencyMillis: () => 5 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { records: 1_000 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(Object.fromEntries(source.committed)).toEqual({ 0: 2_500, 1: 2_500, 2: 2_500 })
      const seen = positions(sink)
      expect(seen.size).toBe(7_500)
      expect([...seen.values()].every((n) => n === 1)).toBe(true)
      // Manifests carry the checksum the sink reported and the exact positions.
      const m = sink.manifests.get("t/p=00000/00000000000000000000-00000000000000000999.rec")
      expect(m?.records).toBe(1_000)
      expect(m?.checksum.algorithm).toBe("SHA256")
    }))

  it.effect("never has more uploads in flight than the concurrency knob", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 4, records: 4_000, recordBytes: 16, payloads: false })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 50 : 1) })
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, config: { batch: { records: 100 } }, policies: Fixed.layer({ concurrency: 3 }) })
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(sink.peak.maxUploading).toBe(3)
    }))

  it.effect("a shrink of the gate drains in-flight uploads instead of cancelling them", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 2, records: 3_000, recordBytes: 16, payloads: false })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 40 : 1) })
      // A policy that drops the limit from 8 to 2 after 100 ms.
      const shrink: Policy.Policy<{}, { shrunk: boolean }> = {
        name: "shrink",
        config: Schema.Struct({}),
        bounds: () => ({ concurrency: { floor: 2, ceiling: 8 } }),
        probe: () => ({ _tag: "NoProbe", reason: "test" }),
        init: () => ({ shrunk: false }),
        initial: () => ({ concurrency: 8 }),
        step: (s, signal, now) =>
          !s.shrunk && signal._tag === "Tick" && now >= 100
            ? { state: { shrunk: true }, proposal: { concurrency: 2 } }
            : { state: s }
      }
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, config: { batch: { records: 100, stagger: 0 } }, policies: Policy.layer(shrink, {}) })
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      // Nothing was cancelled: every upload that started also completed.
      const puts = sink.requests.filter((r) => r.op === "putObject").length
      expect(puts).toBe(60)
      expect(sink.objects.size).toBe(60)
      expect(sink.peak.maxUploading).toBe(8)
    }))

  it.effect("retries throttled batches while running, with the policy's schedule", () =>
    Effect.gen(function*() {
      let n = 0
      const source = Memory.source({ name: "t", partitions: 2, records: 1_000, recordBytes: 16 })
      const sink = Memory.sink({
        latencyMillis: () => 2,
        fault: (op) => (op === "putObject" && n++ % 3 === 0 ? throttle("object_upload") : undefined)
      })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { records: 100 } } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) {
        expect(exit.value.throttles).toBeGreaterThan(0)
        expect(exit.value.retries).toBe(exit.value.throttles)
        expect(exit.value.recordsCommitted).toBe(2_000)
      }
      expect(positions(sink).size).toBe(2_000)
    }))

  it.effect("a checksum mismatch on verify is never committed and fails the run", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 500, recordBytes: 16 })
      const badKey = "t/p=00000/00000000000000000200-00000000000000000299.rec"
      const sink = Memory.sink({ fault: (op, key) => (op === "putObject" && key === badKey ? "corrupt" : undefined) })
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { records: 100 }, concurrency: 1 } }))
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      expect(error?._tag === "Fail" && error.error._tag).toBe("BatchFailed")
      expect(error?._tag === "Fail" && error.error._tag === "BatchFailed" && error.error.code).toBe("ChecksumMismatch")
      // Committed at most up to the corrupted batch, never past it.
      expect(source.committed.get(0) ?? 0).toBeLessThanOrEqual(200)
    }))

  it.effect("framed chunks are archived as their payloads would be; a malformed one fails the run, naming it, with nothing committed past it", () =>
    Effect.gen(function*() {
      const payloads = Array.from({ length: 50 }, (_, i) => new TextEncoder().encode(`r${i}`))
      const chunks = [Record.frame(Record.chunkOf("t", 0, 0, payloads.slice(0, 25))), Record.frame(Record.chunkOf("t", 0, 25, payloads.slice(25)))]
      const sink = Memory.sink()
      const first = listSource(chunks)
      const ok = yield* runVirtual(Pipeline.run({ source: first.source, sink, config: { batch: { records: 20 } } }))
      expect(Exit.isSuccess(ok)).toBe(true)
      expect(first.committed.get(0)).toBe(50)
      const stored = [...sink.objects.values()].flatMap(({ body }) => Batch.decodeBody(body).map((p) => new TextDecoder().decode(p)))
      expect(stored.sort()).toEqual(payloads.map((p) => new TextDecoder().decode(p)).sort())

      // A framed buffer one byte short of bytes + 4 × count (25 records of 3 bytes: 175), after a good chunk.
      const [good, last] = chunks
      if (good === undefined || last === undefined) throw new Error("two chunks")
      const short = { ...last, framed: last.framed?.subarray(1) }
      const second = listSource([good, short])
      const bad = yield* runVirtual(Pipeline.run({ source: second.source, sink: Memory.sink(), config: { batch: { records: 20 } } }))
      const error = Exit.isFailure(bad) ? bad.cause.reasons.find((r) => r._tag === "Fail") : undefined
      expect(error?._tag === "Fail" && error.error._tag).toBe("SourceError")
      expect(error?._tag === "Fail" && error.error._tag === "SourceError" && error.error.message).toBe(
        "chunk of partition 0 at offset 25: framed records take 174 bytes, not bytes + 4 × count = 175"
      )
      expect(second.committed.get(0) ?? 0).toBeLessThanOrEqual(25)
      // Both forms at once is refused too.
      const both = yield* runVirtual(Pipeline.run({ source: listSource([{ ...good, payloads: payloads.slice(0, 25) }]).source, sink: Memory.sink() }))
      const bothError = Exit.isFailure(both) ? both.cause.reasons.find((r) => r._tag === "Fail") : undefined
      expect(bothError?._tag === "Fail" && bothError.error._tag === "SourceError" && bothError.error.message).toContain("carries both payloads and framed records")
    }))

  it.effect("the memory budget bounds bytes held, even when uploads are slow", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 4, records: 20_000, recordBytes: 100, chunkRecords: 50, payloads: false })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 200 : 1) })
      const budget = 300_000
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, config: { batch: { records: 500 }, memoryBudget: budget, concurrency: 2 } }),
        { stepMillis: 50, maxMillis: 3_600_000 }
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) {
        expect(exit.value.maxInflightBytes).toBeLessThanOrEqual(budget)
        expect(exit.value.recordsCommitted).toBe(80_000)
      }
      // Under sustained overload batches stay full: blocked reads do not seal
      // every open batch early (only when open batches alone would not fit).
      const manifests = [...sink.manifests.values()]
      const full = manifests.filter((m) => m.sealReason === "records").length
      expect(full / manifests.length).toBeGreaterThan(0.9)
    }))

  it.effect("chunks larger than the memory budget are split, so bytes held stay within it", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 2, records: 5_000, recordBytes: 100, chunkRecords: 1_000 })
      const sink = Memory.sink({ latencyMillis: () => 20 })
      const budget = 30_000 // a chunk is 100 000 bytes
      const exit = yield* runVirtual(Pipeline.run({ source, sink, config: { batch: { records: 100 }, memoryBudget: budget } }))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) {
        expect(exit.value.maxInflightBytes).toBeLessThanOrEqual(budget)
        expect(exit.value.recordsCommitted).toBe(10_000)
      }
      expect(positions(sink).size).toBe(10_000)
    }))

  it.effect("a paused read gate seals open batches early and pauses the source", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 2_000, recordBytes: 10, chunkRecords: 50, intervalMillis: 20 })
      const sink = Memory.sink({ latencyMillis: () => 10 })
      const pauser: Policy.Policy<{}, number> = {
        name: "pauser",
        config: Schema.Struct({}),
        bounds: () => ({ readGate: { floor: 500, ceiling: Infinity } }),
        probe: () => ({ _tag: "ReopenProbe", afterMillis: 500 }),
        init: () => 0,
        initial: () => ({ readGate: "open" }),
        step: (ticks, signal) => {
          if (signal._tag !== "Tick") return { state: ticks }
          const next = ticks + 1
          return { state: next, proposal: { readGate: next === 2 ? "paused" : next === 6 ? "open" : signal.knobs.readGate } }
        }
      }
      const exit = yield* runVirtual(
        Pipeline.run({ source, sink, config: { batch: { records: 100_000 }, concurrency: 1 }, policies: Policy.layer(pauser, {}) })
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(source.pauses.count).toBeGreaterThanOrEqual(1)
      expect([...sink.manifests.values()].some((m) => m.sealReason === "pressure")).toBe(true)
      expect(source.committed.get(0)).toBe(2_000)
    }))

  it.effect("bad config fails at construction with a message naming the field", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
      const error = yield* Effect.flip(
        // @ts-expect-error — "concurency" is not a pipeline config key: tsc refuses it, and so does the decoder at run time
        Pipeline.run({ source, sink: Memory.sink(), config: { batch: { bytes: "lots" }, concurency: 3 } })
      )
      expect(error._tag).toBe("ConfigError")
      expect(error.message).toContain(`["batch"]["bytes"]`)
      expect(error.message).toContain(`["concurency"]`)
      const policyError = yield* Effect.flip(
        Pipeline.run({ source, sink: Memory.sink(), policies: Fixed.layer({ concurrency: 0 }) })
      )
      expect(policyError._tag).toBe("ConfigError")
      expect(policyError.message).toContain(`["concurrency"]`)
    }))

  it.effect("refuses a memory budget or a batch size of 0, naming the field", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
      const budget = yield* Effect.flip(Pipeline.run({ source, sink: Memory.sink(), config: { memoryBudget: 0 } }))
      expect(budget._tag).toBe("ConfigError")
      expect(budget.message).toBe(`pipeline: Expected at least 1 byte, got 0\n  at ["memoryBudget"]`)
      const budgetText = yield* Effect.flip(Pipeline.run({ source, sink: Memory.sink(), config: { memoryBudget: "0 MiB" } }))
      expect(budgetText.message).toBe(`pipeline: Expected at least 1 byte, got 0\n  at ["memoryBudget"]`)
      const batch = yield* Effect.flip(Pipeline.run({ source, sink: Memory.sink(), config: { batch: { bytes: 0 } } }))
      expect(batch._tag).toBe("ConfigError")
      expect(batch.message).toBe(`pipeline: Expected at least 1 byte, got 0\n  at ["batch"]["bytes"]`)
    }))

  it.effect("refuses a batch stagger outside [0, 1), naming the field; 0.25 by default", () =>
    Effect.gen(function*() {
      const source = () => Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
      for (const stagger of [-0.1, 1, 2, Number.NaN]) {
        const error = yield* Effect.flip(Pipeline.run({ source: source(), sink: Memory.sink(), config: { batch: { stagger } } }))
        expect(error._tag).toBe("ConfigError")
        expect(error.message).toContain(`at ["batch"]["stagger"]`)
      }
      const handle = yield* Pipeline.start({ source: source(), sink: Memory.sink(), config: {} })
      expect(handle.config.batch.stagger).toBe(0.25)
      expect((yield* handle.await).recordsCommitted).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("refuses a rate that is NaN, ±Infinity or ≤ 0; null is unlimited", () =>
    Effect.gen(function*() {
      const source = () => Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
      for (const rate of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -1]) {
        const error = yield* Effect.flip(Pipeline.run({ source: source(), sink: Memory.sink(), config: { rate } }))
        expect(error._tag).toBe("ConfigError")
        expect(error.message).toMatch(/^pipeline: /)
        expect(error.message).toContain(`at ["rate"]`)
      }
      const unlimited = yield* Pipeline.run({ source: source(), sink: Memory.sink(), config: { rate: null } })
      expect(unlimited.recordsCommitted).toBe(1)
    }))

  it.effect("refuses a tick, a batch age or a retry time of 0", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
      const error = yield* Effect.flip(
        Pipeline.run({ source, sink: Memory.sink(), config: { tick: 0, batch: { maxAge: "0s" }, retry: { maxElapsed: 0 } } })
      )
      expect(error.message).toMatch(/Expected a duration greater than 0, got 0\n {2}at \["tick"\]/)
      expect(error.message).toMatch(/Expected a duration greater than 0, got 0\n {2}at \["batch"\]\["maxAge"\]/)
      expect(error.message).toMatch(/Expected a duration greater than 0, got 0\n {2}at \["retry"\]\["maxElapsed"\]/)
    }))

  it.effect("accepts durations in short forms (\"30s\", \"500ms\", \"2m\") and sizes as text", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 10, recordBytes: 8 })
      const handle = yield* Pipeline.start({
        source,
        sink: Memory.sink(),
        config: { batch: { maxAge: "30s", bytes: "64 KiB" }, tick: "500ms", retry: { maxElapsed: "2m" }, memoryBudget: "1 MiB" }
      })
      expect(handle.config.batch.maxAge).toBe(30_000)
      expect(handle.config.batch.bytes).toBe(65_536)
      expect(handle.config.tick).toBe(500)
      expect(handle.config.retry.maxElapsed).toBe(120_000)
      expect(handle.config.memoryBudget).toBe(1_048_576)
      const stats = yield* handle.await
      expect(stats.recordsCommitted).toBe(10)
    }).pipe(Effect.scoped))

  it("types config by its encoded form: a misspelled key or a wrong kind of value fails tsc", () => {
    const source = Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 })
    // @ts-expect-error — "memoryBudgett" is not a pipeline config key
    const typo = () => Pipeline.start({ source, sink: Memory.sink(), config: { memoryBudgett: "1 MiB" } })
    // @ts-expect-error — concurrency is a number, not text
    const kind = () => Pipeline.start({ source, sink: Memory.sink(), config: { concurrency: "8" } })
    // @ts-expect-error — data of unknown shape must be decoded (or checked) first
    const data = (json: unknown) => Pipeline.start({ source, sink: Memory.sink(), config: json })
    expect([typo, kind, data].every((f) => typeof f === "function")).toBe(true)
    // A decoded config is a valid input (numbers are valid sizes and durations).
    const decoded: Pipeline.PipelineConfigInput = Schema.decodeUnknownSync(Pipeline.PipelineConfig)({ tick: "1s" })
    expect(decoded).toMatchObject({ tick: 1000, memoryBudget: 256 * 1024 * 1024 })
  })

  it.effect("combines several policies' proposals on one knob: the most conservative wins", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 2, records: 2_000, recordBytes: 16, payloads: false })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 30 : 1) })
      const eight = Fixed.layer({ concurrency: 8 })
      const two: Policy.Policy<Fixed.FixedConfig, Knob.Proposal> = { ...Fixed.policy, name: "fixed-2" }
      const exit = yield* runVirtual(
        Pipeline.run({
          source,
          sink,
          config: { batch: { records: 50 } },
          policies: Layer.mergeAll(eight, Policy.layer(two, { concurrency: 2 }))
        })
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(sink.peak.maxUploading).toBe(2)
    }))
})
