import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { Batch, Memory, Pipeline } from "../src/index.ts"

/** Offsets stored per partition, from the verified objects' manifests. */
const storedOffsets = (sink: Memory.MemorySink): Map<number, Array<number>> => {
  const out = new Map<number, Array<number>>()
  for (const m of sink.manifests.values()) {
    const list = out.get(m.partition) ?? []
    list.push(...Batch.recordOffsets(m))
    out.set(m.partition, list)
  }
  return out
}

const advance = (millis: number, step = 10) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) yield* TestClock.adjust(step)
  })

describe("Pipeline drain", () => {
  it.effect("stops reading, seals open batches (drain), finishes in flight, commits what was verified, returns the stats", () =>
    Effect.gen(function*() {
      // An endless source: 3 partitions, a chunk of 50 records every 20 ms.
      const source = Memory.source({ name: "t", partitions: 3, records: 10_000_000, recordBytes: 32, chunkRecords: 50, intervalMillis: 20 })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 300 : 20) })
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { batch: { records: 400 } } }).pipe(Scope.provide(scope))
      yield* advance(2_000)
      const drained = yield* Effect.forkChild(handle.drain("30 seconds"))
      yield* advance(1)
      const lagAtDrain = yield* source.lag
      yield* advance(10_000)
      const exit = yield* Fiber.await(drained)
      const after = yield* source.lag
      const awaited = yield* Effect.exit(handle.await)
      yield* Scope.close(scope, Exit.void)

      expect(Exit.isSuccess(exit)).toBe(true)
      expect(Exit.isSuccess(awaited)).toBe(true)
      // Reading stopped: the source was paused and nothing more was pulled.
      expect(source.pauses.paused).toBe(true)
      expect(after).toEqual(lagAtDrain)
      // Open batches were sealed with reason drain.
      const reasons = [...sink.manifests.values()].map((m) => m.sealReason)
      expect(reasons.filter((r) => r === "drain").length).toBe(3)
      // Everything sealed was verified and committed; committed = verified, contiguous from 0.
      const stats = Exit.isSuccess(exit) ? exit.value : undefined
      expect(stats?.recordsCommitted).toBe(stats?.recordsVerified)
      expect(stats?.recordsVerified).toBe(stats?.recordsRead)
      for (const [partition, offsets] of storedOffsets(sink)) {
        const sorted = [...offsets].sort((a, b) => a - b)
        expect(sorted).toEqual(sorted.map((_, i) => i))
        expect(source.committed.get(partition)).toBe(sorted.length)
      }
    }))

  it.effect("past the deadline it interrupts the uploads and reports what was abandoned; nothing unverified is committed", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 2, records: 10_000_000, recordBytes: 32, chunkRecords: 50, intervalMillis: 20 })
      let slow = false
      // After the drain starts, uploads take an hour.
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? (slow ? 3_600_000 : 100) : 10) })
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { batch: { records: 400 } } }).pipe(Scope.provide(scope))
      yield* advance(1_000)
      slow = true
      const drained = yield* Effect.forkChild(handle.drain(5_000))
      yield* advance(6_000)
      const exit = yield* Fiber.await(drained)
      const stats = handle.stats()
      yield* Scope.close(scope, Exit.void)

      expect(Exit.isFailure(exit)).toBe(true)
      const reason = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      const error = reason?._tag === "Fail" ? reason.error : undefined
      expect(error?._tag).toBe("DrainTimedOut")
      if (error?._tag !== "DrainTimedOut") return
      expect(error.deadlineMillis).toBe(5_000)
      expect(error.abandoned.length).toBeGreaterThan(0)
      expect(error.abandoned.some((b) => !b.verified)).toBe(true)
      expect(error.recordsAbandoned).toBe(stats.recordsRead - stats.recordsCommitted)
      // Committed stops right before the first abandoned batch of each partition, and was verified.
      const stored = storedOffsets(sink)
      for (const b of error.abandoned) {
        const committed = source.committed.get(b.partition) ?? 0
        expect(committed).toBeLessThanOrEqual(b.firstOffset)
      }
      for (const [partition, committed] of source.committed) {
        const offsets = new Set(stored.get(partition) ?? [])
        for (let o = 0; o < committed; o++) expect(offsets.has(o)).toBe(true)
      }
    }))
})
