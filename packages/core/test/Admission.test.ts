import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, PubSub, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Knob, Memory, Pipeline, Record, SignalBus } from "../src/index.ts"
import type { Source } from "../src/index.ts"
import * as Admission from "../src/stage/Admission.ts"
import * as MemoryBudget from "../src/stage/MemoryBudget.ts"

/** A source that delivers `events`, then `later` after 500 ms, then nothing, forever. */
const scripted = (events: ReadonlyArray<Source.SourceEvent>, later: Source.SourceEvent): Source.Source => ({
  name: "t",
  events: Stream.fromIterable(events).pipe(
    Stream.concat(Stream.fromEffect(Effect.as(Effect.sleep(500), later))),
    Stream.concat(Stream.never)
  ),
  commit: () => Effect.void,
  pause: Effect.void,
  resume: Effect.void,
  lag: Effect.succeed(new Map())
})

describe("MemoryBudget", () => {
  it("charges payload plus the measured per-record overhead; zero-byte records still cost", () => {
    const tombstones = Record.chunkOf("t", 0, 0, [new Uint8Array(0), new Uint8Array(0), new Uint8Array(0)])
    expect(MemoryBudget.chargeOf(tombstones)).toBe(3 * MemoryBudget.RECORD_OVERHEAD_BYTES)
    const records = Record.chunkOf("t", 0, 0, [new Uint8Array(100), new Uint8Array(50)])
    expect(MemoryBudget.chargeOf(records)).toBe(150 + 2 * MemoryBudget.RECORD_OVERHEAD_BYTES)
    // Size-only (simulated) chunks hold no per-record objects.
    expect(MemoryBudget.chargeOf(Record.syntheticChunk("t", 0, 0, 10, 100))).toBe(1_000)
    // Additive under split, so a batch is released exactly as it was charged.
    const [head, tail] = Record.splitAt(records, 1)
    expect(MemoryBudget.chargeOf(head) + MemoryBudget.chargeOf(tail)).toBe(MemoryBudget.chargeOf(records))
  })

  it("admits while held + charge + reserve fit, or when nothing is held", () => {
    const budget = new MemoryBudget.MemoryBudget(1_000)
    expect(budget.fits(5_000)).toBe(true) // nothing held: a huge record still makes progress
    budget.delivered(200)
    budget.charge(200)
    expect(budget.reserve).toBe(200)
    expect(budget.fits(600)).toBe(true) // 200 + 600 + 200 ≤ 1000
    expect(budget.fits(601)).toBe(false)
    budget.delivered(5_000)
    budget.charge(5_000)
    expect(budget.reserve).toBe(500) // capped at half the limit
    budget.release(5_200)
    expect(budget.held).toBe(0)
  })

  it("splitToFit cuts a chunk into pieces charged at most the bound (a single record stays whole)", () => {
    const pieces = Admission.splitToFit(Record.syntheticChunk("t", 0, 0, 100, 10), 250)
    expect(pieces.map((p) => p.count)).toEqual([25, 25, 25, 25])
    const big = Admission.splitToFit(Record.syntheticChunk("t", 0, 0, 1, 10_000), 250)
    expect(big.length).toBe(1)
  })
})

describe("Admission", () => {
  it.effect("CaughtUp seals the partition's open batch at once (caughtUp), not maxAge later; other partitions wait for maxAge", () =>
    Effect.gen(function*() {
      // Partition 0's backlog is read and announced caught up; partition 1 has
      // no announcement. maxAge is 60 s: within a second only partition 0's
      // records are stored, in one batch sealed `caughtUp`.
      const sink = Memory.sink()
      const committed = new Map<number, number>()
      const source: Source.Source = {
        ...scripted([
          Record.syntheticChunk("t", 0, 0, 100, 10),
          Record.syntheticChunk("t", 1, 0, 100, 10),
          Record.syntheticChunk("t", 0, 100, 50, 10),
          { _tag: "CaughtUp", partition: 0, nextOffset: 150 }
        ], Record.syntheticChunk("t", 1, 100, 1, 10)),
        commit: (partition, nextOffset) => Effect.sync(() => void committed.set(partition, nextOffset))
      }
      const fiber = yield* Effect.forkChild(Pipeline.run({ source, sink, config: { batch: { records: 10_000, maxAge: "60 seconds" } } }))
      yield* TestClock.adjust(1_000)
      expect(committed.get(0)).toBe(150)
      expect(committed.get(1)).toBeUndefined()
      expect([...sink.manifests.values()].map((m) => [m.partition, m.firstOffset, m.lastOffset, m.sealReason])).toEqual([[0, 0, 149, "caughtUp"]])
      yield* TestClock.adjust(60_000)
      expect(committed.get(1)).toBe(101)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a pause's CaughtUp seals only a backlog older than maxAge; a younger one waits for its age", () =>
    Effect.gen(function*() {
      // maxAge 5 s. Partition 0's backlog was held since 6 s ago (older than maxAge): sealed now.
      // Partition 1's since 1 s ago (a short pause of a toggling read gate): left to its age.
      const sink = Memory.sink()
      const committed = new Map<number, number>()
      const source: Source.Source = {
        ...scripted([
          Record.syntheticChunk("t", 0, 0, 100, 10),
          Record.syntheticChunk("t", 1, 0, 100, 10),
          { _tag: "CaughtUp", partition: 0, nextOffset: 100, pausedAt: -6_000 },
          { _tag: "CaughtUp", partition: 1, nextOffset: 100, pausedAt: -1_000 }
        ], Record.syntheticChunk("t", 2, 0, 1, 10)),
        commit: (partition, nextOffset) => Effect.sync(() => void committed.set(partition, nextOffset))
      }
      const fiber = yield* Effect.forkChild(Pipeline.run({ source, sink, config: { batch: { records: 10_000, maxAge: "5 seconds" } } }))
      yield* TestClock.adjust(1_000)
      expect(committed.get(0)).toBe(100)
      expect(committed.get(1)).toBeUndefined()
      yield* TestClock.adjust(5_000)
      expect(committed.get(1)).toBe(100)
      expect([...sink.manifests.values()].map((m) => [m.partition, m.sealReason])).toEqual([[0, "caughtUp"], [1, "age"], [2, "age"]])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("a pause's CaughtUp while uploads wait is sealed when the uploader idles, not maxAge later", () =>
    Effect.gen(function*() {
      // One upload at a time, each request taking 2 s (put, manifest and verify: ~6 s a batch). Partition 1's
      // full batch is queued when partition 0's backlog (held since 70 s ago, past maxAge) is caught up:
      // sealing it then would only queue a small object behind it; it is sealed once the uploader idles
      // (~6 s), long before the 60 s maxAge.
      const sink = Memory.sink({ latencyMillis: () => 2_000 })
      const committed = new Map<number, number>()
      const source: Source.Source = {
        ...scripted([
          Record.syntheticChunk("t", 1, 0, 100, 10),
          Record.syntheticChunk("t", 0, 0, 50, 10),
          { _tag: "CaughtUp", partition: 0, nextOffset: 50, pausedAt: -70_000 }
        ], Record.syntheticChunk("t", 2, 0, 1, 10)),
        commit: (partition, nextOffset) => Effect.sync(() => void committed.set(partition, nextOffset))
      }
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { concurrency: 1, batch: { stagger: 0, records: 100, maxAge: "60 seconds" } } }).pipe(
        Scope.provide(scope)
      )
      yield* TestClock.adjust(5_000)
      const whileBusy = handle.stats().batchesSealed
      yield* TestClock.adjust(15_000)
      const after = { sealed: handle.stats().batchesSealed, zero: committed.get(0), one: committed.get(1) }
      yield* Scope.close(scope, Exit.void)
      expect(whileBusy).toBe(1) // partition 1's; partition 0's still open, marked
      expect(after).toEqual({ sealed: 2, zero: 50, one: 100 })
      expect([...sink.manifests.values()].map((m) => [m.partition, m.sealReason])).toEqual([[1, "records"], [0, "caughtUp"]])
    }))

  it.effect("a revoke is processed while a chunk waits for budget: the waiting chunk of the revoked partition is skipped", () =>
    Effect.gen(function*() {
      const acked = yield* Deferred.make<void>()
      const source = scripted([
        Record.syntheticChunk("t", 0, 0, 40, 100), // 4 000 B: admitted
        Record.syntheticChunk("t", 1, 0, 50, 100) // 5 000 B: waits (4 000 + a piece + the reserve of one chunk > 10 000)
      ], { _tag: "PartitionsRevoked", partitions: [1], acknowledge: Deferred.succeed(acked, undefined).pipe(Effect.asVoid) })
      const sink = Memory.sink({ latencyMillis: () => 3_600_000 }) // nothing verifies for an hour
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { memoryBudget: 10_000, batch: { records: 1_000 } } }).pipe(
        Scope.provide(scope)
      )
      yield* TestClock.adjust(400)
      const before = handle.stats().recordsRead
      yield* TestClock.adjust(600)
      const done = yield* Deferred.isDone(acked)
      const stats = handle.stats()
      yield* Scope.close(scope, Exit.void)
      expect(done).toBe(true)
      // The chunk was waiting when the revoke came, and was never admitted (never charged, never read).
      expect(before).toBe(40)
      expect(stats.recordsRead).toBe(40)
      expect(stats.inflightBytes).toBe(4_000)
    }))

  it.effect("a revoke of another partition is processed too while a chunk waits", () =>
    Effect.gen(function*() {
      const acked = yield* Deferred.make<void>()
      const source = scripted([
        Record.syntheticChunk("t", 0, 0, 40, 100),
        Record.syntheticChunk("t", 1, 0, 50, 100)
      ], { _tag: "PartitionsRevoked", partitions: [0], acknowledge: Deferred.succeed(acked, undefined).pipe(Effect.asVoid) })
      const sink = Memory.sink({ latencyMillis: () => 3_600_000 })
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { memoryBudget: 10_000, batch: { records: 1_000 } } }).pipe(
        Scope.provide(scope)
      )
      yield* TestClock.adjust(400)
      const before = handle.stats().recordsRead
      yield* TestClock.adjust(600)
      const done = yield* Deferred.isDone(acked)
      const stats = handle.stats()
      yield* Scope.close(scope, Exit.void)
      expect(done).toBe(true)
      expect(before).toBe(40)
      // The waiting chunk (partition 1) is admitted once memory frees, never dropped.
      expect(stats.recordsRead).toBeGreaterThanOrEqual(40)
    }))

  it.effect("zero-byte records cost budget: 200 000 tombstones under 1 MiB are not all read at once", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 200_000, recordBytes: 0, chunkRecords: 1_000 })
      const sink = Memory.sink({ latencyMillis: () => 3_600_000 })
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink, config: { memoryBudget: "1 MiB", batch: { records: 100_000 } } }).pipe(
        Scope.provide(scope)
      )
      yield* TestClock.adjust(1_000)
      const lag = yield* source.lag
      const stats = handle.stats()
      yield* Scope.close(scope, Exit.void)
      const delivered = 200_000 - (lag.get(0) ?? 0)
      const perBudget = Math.floor((1024 * 1024) / MemoryBudget.RECORD_OVERHEAD_BYTES)
      // Admitted: within the budget. Delivered: plus the chunk in hand and the one pulled ahead.
      expect(stats.recordsRead).toBeLessThanOrEqual(perBudget)
      expect(delivered).toBeLessThanOrEqual(perBudget + 2 * 1_000)
      expect(stats.maxInflightBytes).toBeLessThanOrEqual(1024 * 1024)
    }))

  it.effect("chunks admitted in one run see the batch target a policy proposed on the previous seal", () =>
    Effect.gen(function*() {
      // Ten chunks of 10 records in one array: admitted without an Effect per
      // chunk, but the run stops at each seal so that the seal's signal is
      // answered before the next chunk is appended.
      const chunks = Array.from({ length: 10 }, (_, i) => Record.syntheticChunk("t", 0, i * 10, 10, 100))
      const source: Source.Source = {
        name: "t",
        events: Stream.fromIterable(chunks),
        commit: () => Effect.void,
        pause: Effect.void,
        resume: Effect.void,
        lag: Effect.succeed(new Map())
      }
      // After the first seal, batches of 50 records.
      const growOnSeal = Layer.effectDiscard(Effect.gen(function*() {
        const bus = yield* SignalBus.SignalBus
        const knobs = yield* Knob.Knobs
        const signals = yield* bus.subscribe
        yield* Effect.forkScoped(Effect.forever(
          Effect.flatMap(PubSub.takeAll(signals), (all) =>
            all.some((s) => s._tag === "Sealed") ? knobs.propose("grow", { batchTarget: { records: 50 } }) : Effect.void),
          { disableYield: true }
        ))
      }))
      const sink = Memory.sink()
      yield* Pipeline.run({ source, sink, config: { batch: { records: 20 } }, policies: growOnSeal })
      const sizes = [...sink.manifests.values()].sort((a, b) => a.firstOffset - b.firstOffset).map((m) => m.records)
      expect(sizes).toEqual([20, 50, 30])
    }))
})
