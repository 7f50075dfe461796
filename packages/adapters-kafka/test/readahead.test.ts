/**
 * Against the real broker: the read-ahead (memory, counted as the pipeline's
 * budget counts it) is bounded by `prefetchBytes` (a
 * pipeline that takes nothing holds back fetching), and a revoke reaches the
 * pipeline ahead of chunks it has not taken, even when the read-ahead is full.
 */
import { Source } from "@sluice/core"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as KafkaSource from "../src/KafkaSource.ts"
import {
  backlogTopic,
  brokers,
  closeClients,
  produce,
  sleep,
  waitFor,
  waitForSteady
} from "./support.ts"

const RECORD_BYTES = 100
/** Records per produce request, so record batches are small (a broker may overshoot a fetch's size by one batch). */
const PER_SEND = 50
/** The core's per-record heap overhead (`Record.RECORD_OVERHEAD_BYTES`, written out: checked from outside). */
const RECORD_OVERHEAD_BYTES = 208
/** A generous bound on one record batch's memory once decoded (50 envelopes of ~170 B, plus the per-record overhead). */
const BATCH_BYTES = PER_SEND * (250 + RECORD_OVERHEAD_BYTES)

afterAll(closeClients)

/** Pulls one event at a time from a source's stream, in `scope`. */
const puller = (source: Source.Source, scope: Scope.Scope) =>
  Effect.runPromise(Stream.toPull(source.events).pipe(Scope.provide(scope))).then((pull) => async () => {
    const events = await Effect.runPromise(pull)
    return events[0]
  })

describe("bounded read-ahead", { timeout: 120_000 }, () => {
  it("holds at most prefetchBytes (+ one record batch) while the pipeline takes nothing, and reads on as it takes", async () => {
    const partitions = 2
    const topic = await backlogTopic("readahead", partitions, { count: 4000, recordBytes: RECORD_BYTES, perSend: PER_SEND })
    const prefetchBytes = 64 * 1024
    const scope = Effect.runSync(Scope.make())
    try {
      const source = await Effect.runPromise(
        KafkaSource.make({ brokers: brokers(), topic, mode: { kind: "assign" }, prefetchBytes, fetch: { maxWait: 100 } }).pipe(
          Scope.provide(scope)
        )
      )
      const next = await puller(source, scope)
      await next()
      // Nothing more is taken: fetching must stop once the read-ahead is full.
      await waitForSteady("fetching to stop with the read-ahead full", () => source.stats.fetches, 1_000)
      const held = source.stats.prefetched.bytes
      expect(held).toBeGreaterThan(prefetchBytes / 2)
      expect(held).toBeLessThanOrEqual(prefetchBytes + BATCH_BYTES)
      expect(source.stats.records).toBeLessThan(partitions * 4000 / 2) // far from everything
      // Taking events makes room, and reading goes on, still within the bound.
      let maxHeld = held
      // Each partition's backlog (the whole topic, produced before the source
      // started) is announced read once, after its last chunk.
      const caughtUp: Array<readonly [number, number]> = []
      const readTo = new Map<number, number>()
      for (let taken = 0; source.stats.records < partitions * 4000 || source.stats.prefetched.events > 0; taken++) {
        const event = await next()
        if (event?._tag === "CaughtUp") {
          expect(readTo.get(event.partition)).toBe(event.nextOffset)
          caughtUp.push([event.partition, event.nextOffset])
        } else {
          expect(event?._tag).toBe("RecordChunk")
          if (event?._tag === "RecordChunk") readTo.set(event.partition, event.firstOffset + event.count)
        }
        maxHeld = Math.max(maxHeld, source.stats.prefetched.bytes)
        if (taken > 100_000) throw new Error("did not read the whole topic")
      }
      expect(maxHeld).toBeLessThanOrEqual(prefetchBytes + BATCH_BYTES)
      expect(source.stats.records).toBe(partitions * 4000)
      expect(caughtUp.sort((a, b) => a[0] - b[0])).toEqual(Array.from({ length: partitions }, (_, p) => [p, 4000]))
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("what is produced while paused is a backlog: announced caught up once read after the resume, with when reading paused", async () => {
    const topic = await backlogTopic("resume-caught-up", 1, { count: 500, recordBytes: RECORD_BYTES, perSend: PER_SEND })
    const scope = Effect.runSync(Scope.make())
    try {
      const source = await Effect.runPromise(
        KafkaSource.make({ brokers: brokers(), topic, mode: { kind: "assign" }, fetch: { maxWait: 100 } }).pipe(Scope.provide(scope))
      )
      const next = await puller(source, scope)
      /** Takes events until a CaughtUp (each within 15 s); the offset read up to before it, and it. */
      const untilCaughtUp = async () => {
        let readTo = -1
        for (let taken = 0; taken < 10_000; taken++) {
          const event = await Promise.race([
            next(),
            sleep(15_000).then(() => Promise.reject(new Error(`no CaughtUp within 15 s of the last event (read to ${readTo})`)))
          ])
          if (event?._tag === "CaughtUp") return { readTo, event }
          if (event?._tag === "RecordChunk") readTo = event.firstOffset + event.count
        }
        throw new Error("no CaughtUp")
      }
      const first = await untilCaughtUp()
      expect(first).toEqual({ readTo: 500, event: { _tag: "CaughtUp", partition: 0, nextOffset: 500, pausedAt: undefined } })
      const before = Date.now()
      await Effect.runPromise(source.pause)
      const after = Date.now()
      await produce(topic, 1, { from: 500, count: 300, recordBytes: RECORD_BYTES, perSend: PER_SEND })
      await Effect.runPromise(source.resume)
      const second = await untilCaughtUp()
      expect(second.readTo).toBe(800)
      expect(second.event).toMatchObject({ _tag: "CaughtUp", partition: 0, nextOffset: 800 })
      expect(second.event.pausedAt).toBeGreaterThanOrEqual(before)
      expect(second.event.pausedAt).toBeLessThanOrEqual(after)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("a revoke reaches the pipeline ahead of chunks it has not taken, although the read-ahead is full", async () => {
    const partitions = 4
    const topic = await backlogTopic("revoke-ahead", partitions, { count: 3000, recordBytes: RECORD_BYTES, perSend: PER_SEND })
    const mode = { kind: "group", groupId: `${topic}-g`, heartbeatInterval: 200, sessionTimeout: 6000, rebalanceTimeout: 10_000 } as const
    const config = { brokers: brokers(), topic, mode, prefetch: 4, fetch: { maxWait: 100, partitionMaxBytes: "4 KiB" } }
    const scopeA = Effect.runSync(Scope.make())
    const scopeB = Effect.runSync(Scope.make())
    try {
      const a = await Effect.runPromise(KafkaSource.make({ ...config, clientId: "member-a" }).pipe(Scope.provide(scopeA)))
      const nextA = await puller(a, scopeA)
      expect((await nextA())?._tag).toBe("RecordChunk")
      await waitFor("A owning every partition, its read-ahead full", () =>
        a.owned().length === partitions && a.stats.prefetched.events >= 4)
      await waitForSteady("A to stop fetching", () => a.stats.fetches, 500)

      // B joins and takes what it is given (acknowledging its own revokes).
      const b = await Effect.runPromise(KafkaSource.make({ ...config, clientId: "member-b" }).pipe(Scope.provide(scopeB)))
      const fiberB = Effect.runFork(
        Stream.runForEach(b.events, (e) => (e._tag === "PartitionsRevoked" ? e.acknowledge : Effect.void)).pipe(Scope.provide(scopeB))
      )
      // A announces the revoke although nobody takes its chunks...
      await waitFor("A to announce the revoke", () => a.stats.revokes > 0)
      // ... and it is the very next event A's pipeline gets.
      const revoke = await nextA()
      expect(revoke?._tag).toBe("PartitionsRevoked")
      if (revoke?._tag !== "PartitionsRevoked") return
      await Effect.runPromise(revoke.acknowledge)
      expect(revoke.partitions.length).toBeGreaterThan(0)
      // No chunk of a revoked partition follows.
      for (let i = 0; i < 8; i++) {
        const event = await nextA()
        if (event?._tag === "RecordChunk") expect(revoke.partitions).not.toContain(event.partition)
      }
      await Effect.runPromise(Fiber.interrupt(fiberB))
    } finally {
      await Effect.runPromise(Scope.close(scopeB, Exit.void))
      await Effect.runPromise(Scope.close(scopeA, Exit.void))
    }
  })
})
