/**
 * The honest memory budget, observed from outside the pipeline: `HeldBytes`
 * counts payload bytes the source handed the pipeline minus bytes the store
 * verified, and a record counter beside it does the same for records. Under a
 * slow sink, for tiny, zero-byte and large records, bytes held never exceed
 * the budget by more than one chunk — and, since zero-byte records carry no
 * payload, the records held stay within what the budget pays for at the
 * per-record overhead, plus one chunk pulled ahead.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Memory, Pipeline } from "@sluice/core"
import type { Sink, Source } from "@sluice/core"
import * as HeldBytes from "../src/HeldBytes.ts"

/** The per-record heap cost the core charges (core `stage/MemoryBudget.ts`, measured there). */
const RECORD_OVERHEAD_BYTES = 208
const BUDGET = 1024 * 1024

/** Records handed to the pipeline minus records verified in the store (each key once). */
const recordMeter = () => {
  let read = 0
  let verified = 0
  let max = 0
  const pending = new Map<string, number>()
  return {
    source: <S extends Source.Source>(source: S): S => ({
      ...source,
      events: source.events.pipe(
        Stream.tap((event) =>
          Effect.sync(() => {
            if (event._tag !== "RecordChunk") return
            read += event.count
            max = Math.max(max, read - verified)
          })
        )
      )
    }),
    sink: <K extends Sink.Sink>(sink: K): K => ({
      ...sink,
      putObject: (batch: Parameters<Sink.Sink["putObject"]>[0]) => {
        pending.set(batch.key, batch.records)
        return sink.putObject(batch)
      },
      verify: (receipt: Parameters<Sink.Sink["verify"]>[0]) =>
        Effect.tap(sink.verify(receipt), () =>
          Effect.sync(() => {
            verified += pending.get(receipt.key) ?? 0
            pending.delete(receipt.key)
          }))
    }),
    max: () => max,
    verified: () => verified
  }
}

const cases = [
  { name: "tiny records (8 B)", records: 40_000, recordBytes: 8, chunkRecords: 500, budget: BUDGET },
  { name: "zero-byte records (Kafka tombstones)", records: 40_000, recordBytes: 0, chunkRecords: 500, budget: BUDGET },
  { name: "large records (64 KiB)", records: 96, recordBytes: 64 * 1024, chunkRecords: 4, budget: BUDGET },
  // Chunks of ~60 KiB charged under a 64 KiB budget: larger than the reserve can cover.
  { name: "chunks near the budget (48 × 1 KiB under 64 KiB)", records: 4_800, recordBytes: 1024, chunkRecords: 48, budget: 64 * 1024 }
] as const

describe("memory budget, observed outside the pipeline", () => {
  for (const c of cases) {
    it.effect(`${c.name}: held ≤ budget + one chunk under a slow sink`, () =>
      Effect.gen(function*() {
        const bytes = HeldBytes.make()
        const records = recordMeter()
        const memory = Memory.source({ name: "m", partitions: 2, records: c.records / 2, recordBytes: c.recordBytes, chunkRecords: c.chunkRecords })
        const source = records.source(bytes.source(memory))
        const sink = records.sink(bytes.sink(Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 500 : 5) })))
        const fiber = yield* Effect.forkChild(
          Pipeline.run({ source, sink, config: { memoryBudget: c.budget, batch: { records: 2_000, bytes: "256 KiB" }, concurrency: 2 } })
        )
        for (let t = 0; t < 3_600_000 && fiber.pollUnsafe() === undefined; t += 50) yield* TestClock.adjust(50)
        const exit = yield* Fiber.await(fiber)
        expect(Exit.isSuccess(exit)).toBe(true)
        expect(records.verified()).toBe(c.records)
        expect(bytes.max()).toBeLessThanOrEqual(c.budget + bytes.largestChunk())
        // Records held: what the budget pays for at the per-record overhead,
        // plus one chunk pulled ahead of the one waiting.
        const perRecord = c.recordBytes + RECORD_OVERHEAD_BYTES
        expect(records.max()).toBeLessThanOrEqual(Math.floor(c.budget / perRecord) + c.chunkRecords)
      }))
  }

  it.effect("a source's read-ahead is reserved from the budget: the pipeline holds at most budget − readAheadBytes + one chunk", () =>
    Effect.gen(function*() {
      const budget = 1024 * 1024
      const readAheadBytes = 768 * 1024
      const recordBytes = 8
      const chunkRecords = 100
      const records = recordMeter()
      const memory = Memory.source({ name: "m", partitions: 2, records: 20_000, recordBytes, chunkRecords })
      const source = records.source({ ...memory, readAheadBytes })
      const sink = records.sink(Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 500 : 5) }))
      const fiber = yield* Effect.forkChild(
        Pipeline.run({ source, sink, config: { memoryBudget: budget, batch: { records: 2_000, bytes: "256 KiB" }, concurrency: 2 } })
      )
      for (let t = 0; t < 3_600_000 && fiber.pollUnsafe() === undefined; t += 50) yield* TestClock.adjust(50)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(records.verified()).toBe(40_000)
      const perRecord = recordBytes + RECORD_OVERHEAD_BYTES
      expect(records.max()).toBeLessThanOrEqual(Math.floor((budget - readAheadBytes) / perRecord) + chunkRecords)
      // …and the budget still binds: more than half of what it pays for is held at the peak.
      expect(records.max()).toBeGreaterThan((budget - readAheadBytes) / perRecord / 2)
    }))

  it.effect("a budget not above the source's read-ahead is refused with a ConfigError", () =>
    Effect.gen(function*() {
      const memory = Memory.source({ name: "m", partitions: 1, records: 10, recordBytes: 8 })
      const exit = yield* Effect.exit(
        Pipeline.run({ source: { ...memory, readAheadBytes: 16 * 1024 * 1024 }, sink: Memory.sink(), config: { memoryBudget: "16 MiB" } })
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(exit)).toContain("readAheadBytes")
    }))
})
