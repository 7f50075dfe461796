/**
 * Against the real broker: produce → KafkaSource → core Pipeline → memory sink.
 * Every record archived (value, key, headers and timestamp), commits only over
 * verified offsets, crash and restart without loss, pause/resume through the
 * read gate.
 */
import { Batch, Fixed, Memory, Pipeline } from "@sluice/core"
import { Effect, Exit, Fiber, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as KafkaSource from "../src/KafkaSource.ts"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"
import {
  archived,
  backlogTopic,
  brokers,
  checkingSource,
  closeClients,
  commitsOf,
  complete,
  endOffsets,
  FULL_HISTORY,
  groupOffsets,
  partitionsOf,
  produce,
  producedOf,
  Ranges,
  sleep,
  verifyingSink,
  waitFor,
  waitForSteady
} from "./support.ts"

const RECORD_BYTES = 100

afterAll(closeClients)

describe("KafkaSource with the core pipeline", { timeout: 180_000 }, () => {
  it("archives every record exactly once (key, headers, timestamp and value) and commits the end offsets, only over verified batches", async () => {
    const partitions = 4
    const perPartition = 2500
    const topic = await backlogTopic("archive", partitions, { count: perPartition, recordBytes: RECORD_BYTES })
    const groupId = `${topic}-g`

    const verified = new Ranges()
    const sink = verifyingSink(verified)
    const program = Effect.gen(function*() {
      const kafka = yield* KafkaSource.make({
        brokers: brokers(),
        topic,
        mode: { kind: "assign", groupId },
        until: "caught-up",
        fetch: { partitionMaxBytes: "64 KiB" },
        statsHistory: FULL_HISTORY
      })
      const source = checkingSource(kafka, verified)
      const stats = yield* Pipeline.run({
        source,
        sink,
        config: { batch: { records: 700, maxAge: "200 millis" }, tick: 20 },
        policies: Fixed.layer({ concurrency: 4 })
      })
      return { stats, kafka, source }
    })
    const { kafka, source, stats } = await Effect.runPromise(Effect.scoped(program))

    expect(source.violations).toEqual([])
    expect(stats.recordsCommitted).toBe(partitions * perPartition)
    // Every record came back as an envelope with the key, headers and timestamp it was produced with.
    const { counts, envelopes, wrong } = archived(topic, [sink], RECORD_BYTES)
    expect(wrong).toEqual([])
    expect(envelopes).toBe(partitions * perPartition)
    expect(counts.size).toBe(partitions * perPartition)
    // Read back by hand, the documented way: Batch.decodeBody, then RecordEnvelope.decode.
    const text = new TextDecoder()
    const first = [...sink.manifests.values()].find((m) => m.partition === 2 && m.firstOffset === 0)
    const body = first === undefined ? undefined : sink.objects.get(first.key)?.body
    const records = body === undefined ? [] : Batch.decodeBody(body).map(RecordEnvelope.decode)
    const r0 = records[0]
    expect(r0?.key === null || r0?.key === undefined ? null : text.decode(r0.key)).toBe("key-2-0")
    expect(r0?.headers.map(([k, v]) => [text.decode(k), v === null ? null : [...v]])).toEqual([
      ["sluice-offset", [...new TextEncoder().encode("0")]],
      ["bin", [0, 255, 2]]
    ])
    expect(r0?.timestamp).toBe(producedOf(topic, 2, 0).timestamp)
    expect(r0?.value === null || r0?.value === undefined ? null : text.decode(r0.value)).toMatch(new RegExp(`^${topic}/2/0\\.+$`))
    expect(records[9]?.key).toBeNull()
    expect(records[9]?.timestamp).toBe(producedOf(topic, 2, 0).timestamp + 9)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
    expect(await groupOffsets(groupId, topic, partitions)).toEqual(await endOffsets(topic, partitions))
    // Chunks, never one event per record: every fetch answer yields at most one chunk per partition.
    expect(kafka.stats.records).toBe(partitions * perPartition)
    expect(kafka.stats.fetches).toBeLessThan(partitions * perPartition / 50)
    // Every partition read concurrently: all of them were fetched in the first requests.
    expect(kafka.stats.assignments).toBe(1)
    expect(partitionsOf(kafka, "Assigned")).toEqual([[0, 1, 2, 3]])
    // Counters agree with the events (the ring was large enough to hold them all).
    expect(complete(kafka)).toBe(true)
    expect(commitsOf(kafka)).toHaveLength(kafka.stats.commits)
  })

  it("resumes after a crash from the last committed offset: no loss, every offset committed once", async () => {
    const partitions = 3
    const perPartition = 3000
    const topic = await backlogTopic("crash", partitions, { count: perPartition, recordBytes: RECORD_BYTES })
    const groupId = `${topic}-g`
    const config = { batch: { records: 250, maxAge: "100 millis" }, tick: 20 }

    // Run 1: a sink that stores the first 18 batches and then never answers
    // again, so the crash comes mid-run whatever the machine's speed; interrupted
    // once it stalled after some commits.
    const verified = new Ranges()
    const stallAfter = 18
    let puts = 0
    const stored1 = verifyingSink(verified)
    const sink1: Memory.MemorySink = {
      ...stored1,
      putObject: (batch) => Effect.suspend(() => (++puts > stallAfter ? Effect.never : stored1.putObject(batch)))
    }
    const scope = Effect.runSync(Scope.make())
    const source1 = await Effect.runPromise(
      KafkaSource.make({ brokers: brokers(), topic, mode: { kind: "assign", groupId }, statsHistory: FULL_HISTORY }).pipe(
        Scope.provide(scope)
      )
    )
    const checked1 = checkingSource(source1, verified)
    const fiber = Effect.runFork(
      Pipeline.run({ source: checked1, sink: sink1, config, policies: Fixed.layer({ concurrency: 2 }) })
    )
    await waitFor(`run 1 to stall after ${stallAfter} batches, with commits`, () => {
      const exit = fiber.pollUnsafe()
      if (exit !== undefined) throw new Error(`run 1 ended early: ${String(exit)}`)
      return puts > stallAfter && source1.stats.commits >= 2
    })
    await Effect.runPromise(Fiber.interrupt(fiber))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    // A commit in flight at the interrupt is not cancelled: it may still land
    // shortly after the client closed. Read the offsets once they settled.
    let afterCrash = await groupOffsets(groupId, topic, partitions)
    for (let i = 0; i < 20; i++) {
      await sleep(250)
      const again = await groupOffsets(groupId, topic, partitions)
      if (again.every((o, p) => o === afterCrash[p])) break
      afterCrash = again
    }
    // Kafka holds at least what run 1 saw acknowledged (a commit in flight at the
    // interrupt may have landed too), and the crash came mid-run.
    afterCrash.forEach((o, p) => expect(o).toBeGreaterThanOrEqual(source1.committed.get(p) ?? -1))
    expect(afterCrash.reduce((a, b) => a + Math.max(0, b), 0)).toBeLessThan(partitions * perPartition)

    // Run 2: restart; reads on from the committed offsets.
    const sink2 = verifyingSink(verified)
    const source2 = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const kafka = yield* KafkaSource.make({
        brokers: brokers(),
        topic,
        mode: { kind: "assign", groupId },
        until: "caught-up",
        statsHistory: FULL_HISTORY
      })
      const from = new Map(afterCrash.map((o, p) => [p, Math.max(0, o)] as const))
      const checked = checkingSource(kafka, verified, from)
      yield* Pipeline.run({ source: checked, sink: sink2, config, policies: Fixed.layer({ concurrency: 4 }) })
      expect(checked.violations).toEqual([])
      return kafka
    })))
    expect(checked1.violations).toEqual([])

    // Run 2 started exactly at the committed offsets.
    for (let p = 0; p < partitions; p++) {
      const firsts = [...sink2.manifests.values()].filter((m) => m.partition === p).map((m) => m.firstOffset)
      if (afterCrash[p] !== perPartition) expect(Math.min(...firsts)).toBe(Math.max(0, afterCrash[p] ?? 0))
    }
    // No loss: every offset archived at least once, with the right bytes.
    const { counts, wrong } = archived(topic, [sink1, sink2], RECORD_BYTES)
    expect(wrong).toEqual([])
    for (let p = 0; p < partitions; p++) {
      for (let o = 0; o < perPartition; o++) expect(counts.get(`${p}/${o}`) ?? 0).toBeGreaterThanOrEqual(1)
    }
    // Committed once: commit points strictly increase per partition across both runs.
    expect(complete(source1) && complete(source2)).toBe(true)
    for (let p = 0; p < partitions; p++) {
      const points = [...commitsOf(source1), ...commitsOf(source2)].filter((c) => c.partition === p).map((c) => c.nextOffset)
      for (let i = 1; i < points.length; i++) expect(points[i]).toBeGreaterThan(points[i - 1] ?? -1)
    }
    expect(await groupOffsets(groupId, topic, partitions)).toEqual(await endOffsets(topic, partitions))
  })

  it("a restart's backlog is sealed once read (caughtUp), not maxAge later: committed within seconds with maxAge 60 s", async () => {
    const partitions = 2
    const perPartition = 2000
    const topic = await backlogTopic("caughtup", partitions, { count: perPartition, recordBytes: RECORD_BYTES })
    const groupId = `${topic}-g`
    const all = Array.from({ length: partitions }, (_, p) => p)
    // Batches far larger than the backlog, and a maxAge longer than the test's
    // bound: only the caught-up seal can commit the backlog in time.
    const config = { batch: { records: 1_000_000, bytes: "64 MiB", maxAge: "60 seconds" } }
    const sink = Memory.sink()
    const started = Date.now()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const kafka = yield* KafkaSource.make({ brokers: brokers(), topic, mode: { kind: "group", groupId }, statsHistory: FULL_HISTORY })
      const fiber = yield* Effect.forkChild(Pipeline.run({ source: kafka, sink, config }))
      yield* Effect.promise(() =>
        waitFor("the backlog committed", () => all.every((p) => (kafka.committed.get(p) ?? 0) >= perPartition), 20_000)
      )
      yield* Fiber.interrupt(fiber)
    })))
    const took = Date.now() - started
    // From outside: the broker holds the end offsets, well before maxAge.
    expect(await groupOffsets(groupId, topic, partitions)).toEqual(await endOffsets(topic, partitions))
    expect(took).toBeLessThan(20_000)
    const manifests = [...sink.manifests.values()]
    expect(manifests.map((m) => m.sealReason)).toEqual(all.map(() => "caughtUp"))
    expect(manifests.map((m) => m.lastOffset - m.firstOffset + 1).reduce((a, b) => a + b, 0)).toBe(partitions * perPartition)
  })

  it("pauses fetching while the read gate is closed and resumes when it opens", async () => {
    const partitions = 2
    const topic = await backlogTopic("pause", partitions, { count: 500, recordBytes: RECORD_BYTES })
    const groupId = `${topic}-g`

    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const source = yield* KafkaSource.make({
        brokers: brokers(),
        topic,
        mode: { kind: "assign", groupId },
        fetch: { maxWait: 100 },
        lagRefresh: 100
      })
      const sink = Memory.sink()
      const handle = yield* Pipeline.start({
        source,
        sink,
        config: { batch: { records: 100, maxAge: "50 millis" }, tick: 20 },
        policies: Fixed.layer({ concurrency: 4 })
      })
      const committedAll = (n: number) => () => [...Array(partitions).keys()].every((p) => source.committed.get(p) === n)
      yield* Effect.promise(() => waitFor("first 500 committed", committedAll(500)))

      yield* handle.knobs.propose("test", { readGate: "paused" })
      // The reader pauses the source at the next chunk it gets; then fetching stops.
      yield* Effect.promise(() => produce(topic, partitions, { from: 500, count: 100, recordBytes: RECORD_BYTES }))
      yield* Effect.promise(() => waitFor("source paused", () => source.stats.pauses.paused))
      // A fetch in flight when the gate closed may still answer (maxWait 100 ms):
      // wait until no fetch was answered for a whole second. A source that kept
      // fetching while paused never gets there and fails here.
      yield* Effect.promise(() => waitForSteady("fetching to stop while paused", () => source.stats.fetches, 1_000))
      const fetches = source.stats.fetches
      const records = source.stats.records
      expect(records).toBeLessThanOrEqual(partitions * 600)
      // New records arrive while paused: none is fetched (an unpaused source
      // would fetch them within its 100 ms maxWait).
      yield* Effect.promise(() => produce(topic, partitions, { from: 600, count: 400, recordBytes: RECORD_BYTES }))
      yield* Effect.sleep(700)
      expect(source.stats.fetches).toBe(fetches)
      expect(source.stats.records).toBe(records)
      // Lag is visible while paused (from the high watermark).
      const lag = yield* source.lag
      expect([...lag.values()].reduce((a, b) => a + b, 0)).toBe(partitions * 1000 - records)

      yield* handle.knobs.propose("test", { readGate: "open" })
      yield* Effect.promise(() => waitFor("all 1000 committed", committedAll(1000)))
      expect(source.stats.pauses).toEqual({ paused: false, count: 1 })
      expect(handle.stats().recordsCommitted).toBe(partitions * 1000)
      const after = yield* source.lag
      expect([...after.values()].every((n) => n === 0)).toBe(true)
      const { counts, envelopes, wrong } = archived(topic, [sink], RECORD_BYTES)
      expect(wrong).toEqual([])
      expect(envelopes).toBe(partitions * 1000)
      expect(counts.size).toBe(partitions * 1000)
    })))
    expect(await groupOffsets(`${topic}-g`, topic, partitions)).toEqual([1000, 1000])
  })
})
