import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { Record, Source } from "@sluice/core"
import * as SimSource from "../src/SimSource.ts"

const params = (over: Partial<SimSource.SourceParams> = {}): SimSource.SourceParams => ({
  ...SimSource.defaults,
  recordsPerSecond: 10_000,
  recordBytes: 100,
  partitions: 2,
  ...over
})

/** Collects what a consumer delivers during `millis` of virtual time. */
const collect = (source: Source.Source, millis: number) =>
  Effect.gen(function*() {
    const events: Array<Source.SourceEvent> = []
    const fiber = yield* Effect.forkChild(Stream.runForEach(source.events, (e) => Effect.sync(() => events.push(e))))
    yield* TestClock.adjust(millis)
    yield* Fiber.interrupt(fiber)
    return events
  })

const chunks = (events: ReadonlyArray<Source.SourceEvent>) =>
  events.filter((e): e is Record.RecordChunk => e._tag === "RecordChunk")

describe("SimSource", () => {
  it.effect("delivers size-only chunks per partition at the configured rate", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params())
      const consumer = log.consumer([0, 1])
      const events = yield* collect(consumer, 1000)
      const delivered = chunks(events)
      expect(delivered.every((c) => c.payloads === undefined && c.bytes === c.count * 100)).toBe(true)
      let records = 0
      for (const c of delivered) records += c.count
      expect(records).toBe(10_000)
      // contiguous offsets per partition
      expect(delivered.filter((c) => c.partition === 0).map((c) => c.firstOffset).slice(0, 3)).toEqual([0, 500, 1000])
      expect(consumer.lagAt(1000)).toBe(0)
    }))

  it.effect("pause stops delivery and lag grows; resume catches up", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params())
      const consumer = log.consumer([0, 1])
      yield* consumer.pause
      const none = yield* collect(consumer, 1000)
      expect(chunks(none)).toEqual([])
      const lag = yield* consumer.lag
      expect([...lag.values()]).toEqual([5000, 5000])
      yield* consumer.resume
      const after = yield* collect(consumer, 100)
      let records = 0
      for (const c of chunks(after)) records += c.count
      expect(records).toBe(11_000)
    }))

  it.effect("retention moves the log start; a reader behind it gets a RetentionGap", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params({ partitions: 1, retentionMillis: 1000, backlogRecords: 0 }))
      const consumer = log.consumer([0])
      yield* consumer.pause
      yield* collect(consumer, 3000)
      expect(log.startOffset(3000)).toBe(20_000)
      expect(consumer.lostAt(3000)).toBe(20_000)
      yield* consumer.resume
      const events = yield* collect(consumer, 100)
      expect(events[0]).toMatchObject({ _tag: "RetentionGap", partition: 0, expected: 0, logStart: 20_000, lostRecords: 20_000 })
      expect(chunks(events)[0]?.firstOffset).toBe(20_000)
      expect(consumer.lostFound()).toBe(20_000)
    }))

  it.effect("a backlog is read at once, in chunks of at most fetchMaxBytes", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params({ recordsPerSecond: 0, partitions: 1, backlogRecords: 100_000, fetchMaxBytes: 1_000_000 }))
      const events = yield* collect(log.consumer([0]), 1)
      expect(chunks(events).map((c) => c.count)).toEqual([10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000])
    }))

  it.effect("announces CaughtUp once, after the last chunk of the backlog it started behind", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params({ recordsPerSecond: 0, partitions: 1, backlogRecords: 30_000, fetchMaxBytes: 1_000_000 }))
      const events = yield* collect(log.consumer([0]), 1_000)
      expect(events.map((e) => e._tag)).toEqual(["RecordChunk", "RecordChunk", "RecordChunk", "CaughtUp"])
      expect(events[3]).toEqual({ _tag: "CaughtUp", partition: 0, nextOffset: 30_000, pausedAt: undefined })
    }))

  it.effect("after a resume that found it behind, announces CaughtUp at the log end of the resume, with when reading paused", () =>
    Effect.gen(function*() {
      const log = SimSource.make(params()) // 5 000 records/s a partition, nothing behind at the start
      const consumer = log.consumer([0, 1])
      const live = yield* collect(consumer, 500)
      expect(live.filter((e) => e._tag === "CaughtUp")).toEqual([])
      yield* consumer.pause // at 500 ms
      yield* collect(consumer, 1_000)
      yield* consumer.resume // at 1 500 ms: each partition's log end is 7 500
      const after = yield* collect(consumer, 100)
      const caughtUp = after.filter((e) => e._tag === "CaughtUp")
      expect(caughtUp).toEqual([
        { _tag: "CaughtUp", partition: 0, nextOffset: 7_500, pausedAt: 500 },
        { _tag: "CaughtUp", partition: 1, nextOffset: 7_500, pausedAt: 500 }
      ])
      // Each after the chunk that reached it.
      const at = after.findIndex((e) => e._tag === "CaughtUp")
      expect(after.slice(0, at).some((e) => e._tag === "RecordChunk" && e.partition === 0 && e.firstOffset + e.count >= 7_500)).toBe(true)
      // A resume without a pause announces nothing.
      yield* consumer.resume
      const more = yield* collect(consumer, 500)
      expect(more.filter((e) => e._tag === "CaughtUp")).toEqual([])
    }))
})
