/**
 * The source's parts that hold logic of their own, without a broker: the
 * bounded stats, the read-ahead buffer (bounds, revokes first), the fetch
 * request sizes cut to the room, and group membership bookkeeping.
 */
import { Record, Source } from "@sluice/core"
import { Deferred, Effect, Exit, Fiber, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { Wakeup } from "../src/internal/Context.ts"
import { EventBuffer } from "../src/internal/EventBuffer.ts"
import { expansionOf, requestSizes } from "../src/internal/Fetcher.ts"
import { Membership } from "../src/internal/Membership.ts"
import * as KafkaStats from "../src/KafkaStats.ts"

const chunk = (partition: number, firstOffset: number, bytes: number): Record.RecordChunk =>
  Record.chunkOf("orders", partition, firstOffset, [new Uint8Array(bytes)], 0)

const gap = (partition: number): Source.RetentionGap => ({
  _tag: "RetentionGap",
  source: "orders",
  partition,
  expected: 0,
  logStart: 10,
  lostRecords: 10
})

const describeEvent = (e: Source.SourceEvent): string =>
  e._tag === "RecordChunk"
    ? `chunk ${e.partition}@${e.firstOffset}`
    : e._tag === "RetentionGap"
    ? `gap ${e.partition}`
    : e._tag === "CaughtUp"
    ? `caught up ${e.partition}@${e.nextOffset}`
    : `${e._tag} ${e.partitions.join(",")}`

const bufferOf = (maxEvents: number, maxBytes: number) => {
  const stats = new KafkaStats.Recorder(8)
  return { stats, buffer: new EventBuffer({ maxEvents, maxBytes, stats, wakeup: new Wakeup() }) }
}

describe("KafkaStats.Recorder", () => {
  it("keeps counters and at most `capacity` recent events, oldest first, over a million events", () => {
    const stats = new KafkaStats.Recorder(64)
    for (let i = 0; i < 1_000_000; i++) {
      stats.counters.commits++
      stats.record({ _tag: "Committed", partition: i % 4, nextOffset: i, at: i })
    }
    const recent = stats.view.recent()
    expect(stats.view.commits).toBe(1_000_000)
    expect(recent).toHaveLength(64)
    expect(recent.map((e) => (e._tag === "Committed" ? e.nextOffset : -1))).toEqual(
      Array.from({ length: 64 }, (_, i) => 1_000_000 - 64 + i)
    )
  })

  it("a history of 0 keeps no event; the view is the live counters", () => {
    const stats = new KafkaStats.Recorder(0)
    stats.record({ _tag: "Paused", at: 1 })
    stats.counters.pauses.count++
    expect(stats.view.recent()).toEqual([])
    expect(stats.view.pauses.count).toBe(1)
  })
})

describe("EventBuffer", () => {
  it("has room until either bound is reached, and gets it back as events are taken; bytes are memory (payload + 208 B per record)", async () => {
    // One record of 60 B holds 60 + 208 = 268 B (the core's per-record overhead, written out here).
    const { buffer, stats } = bufferOf(3, 400)
    expect(buffer.room()).toBe(400)
    buffer.offerData([chunk(0, 0, 60)])
    expect(buffer.room()).toBe(132)
    buffer.offerData([chunk(0, 1, 60)])
    expect(buffer.room()).toBe(0) // bytes: 536 ≥ 400 (one fetch may overshoot; no new fetch starts)
    expect(stats.view.prefetched).toEqual({ events: 2, bytes: 536 })
    await Effect.runPromise(buffer.take)
    expect(buffer.room()).toBe(132)
    buffer.offerData([gap(1), gap(2)])
    expect(buffer.room()).toBe(0) // events: 3 ≥ 3
  })

  it("a zero-byte record (a tombstone) still takes room", () => {
    const { buffer } = bufferOf(100, 1000)
    buffer.offerData([chunk(0, 0, 0), chunk(0, 1, 0), chunk(0, 2, 0), chunk(0, 3, 0)])
    expect(buffer.room()).toBe(1000 - 4 * 208)
    buffer.offerData([chunk(0, 4, 0)])
    expect(buffer.room()).toBe(0)
  })

  it("a revoke overtakes every queued event and drops the revoked partitions' chunks and gaps", async () => {
    const { buffer, stats } = bufferOf(100, 10_000)
    buffer.offerData([chunk(0, 0, 10), chunk(1, 0, 10), gap(1), chunk(2, 0, 10), chunk(1, 1, 10), chunk(0, 1, 10)])
    buffer.offerRevoke({ _tag: "PartitionsRevoked", partitions: [1], acknowledge: Effect.void }, [1])
    expect(stats.view.prefetched).toEqual({ events: 3, bytes: 3 * (10 + 208) })
    buffer.end(Exit.void)
    const events = await Effect.runPromise(Stream.runCollect(buffer.stream))
    expect(events.map(describeEvent)).toEqual(["PartitionsRevoked 1", "chunk 0@0", "chunk 2@0", "chunk 0@1"])
  })

  it("a taker waiting on an empty buffer gets the next event; the end comes after the queued events, a failure too", async () => {
    const { buffer } = bufferOf(10, 1000)
    const fiber = Effect.runFork(buffer.take)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(fiber.pollUnsafe()).toBeUndefined()
    buffer.offerData([chunk(3, 7, 1)])
    const first = await Effect.runPromise(Fiber.join(fiber))
    expect(describeEvent(first)).toBe("chunk 3@7")

    const failing = bufferOf(10, 1000).buffer
    failing.offerData([chunk(0, 0, 1)])
    failing.end(Exit.fail(new Source.SourceError({ source: "orders", operation: "fetch", message: "boom" })))
    const taken: Array<string> = []
    const exit = await Effect.runPromiseExit(Stream.runForEach(failing.stream, (e) => Effect.sync(() => taken.push(describeEvent(e)))))
    expect(taken).toEqual(["chunk 0@0"])
    expect(Exit.isFailure(exit)).toBe(true)
  })
})

describe("Fetcher.requestSizes", () => {
  const fetch = { maxBytes: 16 * 1024 * 1024, partitionMaxBytes: 1024 * 1024 }

  it("asks each leader for its share of the room, never more than configured", () => {
    expect(requestSizes(fetch, 100 * 1024 * 1024, 1)).toEqual(fetch)
    expect(requestSizes(fetch, 300_000, 3)).toEqual({ maxBytes: 100_000, partitionMaxBytes: 100_000 })
    expect(requestSizes(fetch, 4 * 1024 * 1024, 2)).toEqual({ maxBytes: 2 * 1024 * 1024, partitionMaxBytes: 1024 * 1024 })
  })

  it("asks for at least one byte (the broker then returns one record batch, so reading progresses)", () => {
    expect(requestSizes(fetch, 1, 4)).toEqual({ maxBytes: 1, partitionMaxBytes: 1 })
  })
})

describe("Membership", () => {
  it("a join takes lost partitions out of ownership at once; the loop takes the assignment and the losses later", () => {
    const m = new Membership()
    m.onJoin(new Set([0, 1, 2, 3]), 1)
    for (const p of [0, 1, 2, 3]) m.owned.add(p)
    expect(m.takePending()).toEqual({ assignment: [0, 1, 2, 3], lost: new Set() })
    const joined = m.joined
    m.onJoin(new Set([2, 3]), 2)
    expect([...m.owned].sort()).toEqual([2, 3])
    expect(m.generation).toBe(2)
    expect(Deferred.isDoneUnsafe(joined)).toBe(true) // commits waiting for the rejoin wake up
    expect(m.hasPending).toBe(true)
    // Lost then re-assigned before the loop looked: still reported lost (its reads restart from the committed offset).
    m.onJoin(new Set([1, 2, 3]), 3)
    expect(m.takePending()).toEqual({ assignment: [1, 2, 3], lost: new Set([0, 1]) })
    expect(m.hasPending).toBe(false)
  })

  it("a fenced member (consumer protocol) loses everything at once: nothing owned, nothing held, every partition lost", () => {
    const m = new Membership()
    m.onJoin(new Set([2, 3]), 1)
    for (const p of [2, 3]) m.owned.add(p)
    m.takePending()
    m.setHeld([2, 3])
    const joined = m.joined
    m.loseAll(0)
    expect(m.owned.size).toBe(0)
    expect(m.held).toEqual([])
    expect(m.generation).toBe(0)
    expect(Deferred.isDoneUnsafe(joined)).toBe(true)
    expect(m.takePending()).toEqual({ assignment: [], lost: new Set([2, 3]) })
  })
})

describe("expansionOf (memory per wire byte, to size the next fetch)", () => {
  it("is (payload + 208 B per record) over (payload + 8 B of framing per record), at least 1; none without records", () => {
    const records = (n: number, bytes: number) => Record.chunkOf("t", 0, 0, Array.from({ length: n }, () => new Uint8Array(bytes)))
    expect(expansionOf([records(10, 100)])).toBeCloseTo(308 / 108)
    expect(expansionOf([records(10, 0)])).toBe(208 / 8) // tombstones: the next fetch asks for 1/26 of the room
    expect(expansionOf([records(1, 1 << 20)])).toBeCloseTo(((1 << 20) + 208) / ((1 << 20) + 8))
    expect(expansionOf([])).toBeUndefined()
  })
})
