/**
 * A real retention gap: the archiver stops with a committed offset, more
 * records arrive, retention deletes them unread (log start passes the committed
 * offset), the archiver restarts. Both policies, exact counts.
 */
import { Batch, Fixed, Memory, Pipeline, Source } from "@sluice/core"
import { Effect, Exit } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as KafkaSource from "../src/KafkaSource.ts"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"
import * as RetentionGap from "../src/RetentionGap.ts"
import {
  archived,
  brokers,
  checkingSource,
  closeClients,
  gapsOf,
  requireBroker,
  createTopic,
  endOffsets,
  groupOffsets,
  payloadOf,
  produce,
  Ranges,
  setTopicConfig,
  startOffsets,
  topicName,
  verifyingSink,
  waitFor,
  waitForSteady
} from "./support.ts"

const RECORD_BYTES = 100
const PARTITIONS = 2
const pipelineConfig = { batch: { records: 80, maxAge: "100 millis" }, tick: 20 }

afterAll(closeClients)

const archive = (topic: string, groupId: string, retentionGap: "fail" | "record-and-continue", verified: Ranges, sink: Memory.MemorySink) =>
  Effect.scoped(Effect.gen(function*() {
    const kafka = yield* KafkaSource.make({
      brokers: brokers(),
      topic,
      mode: { kind: "assign", groupId },
      until: "caught-up",
      retentionGap
    })
    const from = new Map<number, number>()
    for (let p = 0; p < PARTITIONS; p++) from.set(p, (yield* Effect.promise(() => groupOffsets(groupId, topic, PARTITIONS)))[p] ?? 0)
    const source = checkingSource(kafka, verified, from)
    const exit = yield* Effect.exit(Pipeline.run({ source, sink, config: pipelineConfig, policies: Fixed.layer({ concurrency: 2 }) }))
    return { exit, kafka, source }
  }))

describe("retention gaps on a real broker", { timeout: 180_000 }, () => {
  it("detects the exact number of records deleted unread, under both policies", async () => {
    await requireBroker()
    const topic = topicName("gap")
    await createTopic(topic, PARTITIONS)
    const groupId = `${topic}-g`
    const verified = new Ranges()

    // 1. Archive offsets 0..199 and commit them.
    await produce(topic, PARTITIONS, { count: 200, recordBytes: RECORD_BYTES })
    const sink1 = verifyingSink(verified)
    const first = await Effect.runPromise(archive(topic, groupId, "fail", verified, sink1))
    expect(Exit.isSuccess(first.exit)).toBe(true)
    expect(await groupOffsets(groupId, topic, PARTITIONS)).toEqual([200, 200])

    // 2. The archiver is stopped; 120 more records per partition arrive and
    //    retention deletes everything before anyone reads them.
    await produce(topic, PARTITIONS, { from: 200, count: 120, recordBytes: RECORD_BYTES })
    await setTopicConfig(topic, "retention.ms", "100")
    await waitFor("retention to move the log start past the committed offset", async () =>
      (await startOffsets(topic, PARTITIONS)).every((o) => o === 320))
    await setTopicConfig(topic, "retention.ms", "-1")
    const logStart = await startOffsets(topic, PARTITIONS)
    expect(logStart).toEqual([320, 320])

    // 3. Policy "fail": the gap event, then a typed failure; nothing committed.
    const sink2 = verifyingSink(verified)
    const failed = await Effect.runPromise(archive(topic, groupId, "fail", verified, sink2))
    expect(Exit.isFailure(failed.exit)).toBe(true)
    const error = Exit.isFailure(failed.exit) ? failed.exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
    const sourceError = error !== undefined && error._tag === "Fail" ? error.error : undefined
    expect(sourceError).toBeInstanceOf(Source.SourceError)
    const detected = sourceError instanceof Source.SourceError ? RetentionGap.fromSourceError(sourceError) : undefined
    expect(detected).toBeInstanceOf(RetentionGap.RetentionGapDetected)
    expect(detected).toMatchObject({ topic, expected: 200, logStart: 320, lostRecords: 120 })
    expect(gapsOf(failed.kafka)[0]).toMatchObject({ _tag: "RetentionGap", expected: 200, logStart: 320, lostRecords: 120 })
    expect(failed.kafka.stats).toMatchObject({ gaps: 1, gapRecords: 120 })
    expect(await groupOffsets(groupId, topic, PARTITIONS)).toEqual([200, 200])

    // 4. Policy "record-and-continue": both gaps counted, reading goes on from the
    //    log start, the next batch's manifest records the gap.
    await produce(topic, PARTITIONS, { from: 320, count: 50, recordBytes: RECORD_BYTES })
    const sink3 = verifyingSink(verified)
    const continued = await Effect.runPromise(archive(topic, groupId, "record-and-continue", verified, sink3))
    expect(Exit.isSuccess(continued.exit)).toBe(true)
    const stats = Exit.isSuccess(continued.exit) ? continued.exit.value : undefined
    expect(stats?.retentionGapRecords).toBe(PARTITIONS * 120)
    expect(continued.kafka.stats).toMatchObject({ gaps: PARTITIONS, gapRecords: PARTITIONS * 120 })
    expect(gapsOf(continued.kafka).map((g) => [g.partition, g.expected, g.logStart, g.lostRecords]).sort()).toEqual([
      [0, 200, 320, 120],
      [1, 200, 320, 120]
    ])
    expect(continued.source.violations).toEqual([])
    for (let p = 0; p < PARTITIONS; p++) {
      const manifests = [...sink3.manifests.values()].filter((m) => m.partition === p).sort((a, b) => a.firstOffset - b.firstOffset)
      expect(manifests[0]?.firstOffset).toBe(320)
      expect(manifests[0]?.gap).toEqual({ expected: 200, logStart: 320, lostRecords: 120 })
    }
    const { counts, wrong } = archived(topic, [sink3], RECORD_BYTES)
    expect(wrong).toEqual([])
    expect(counts.size).toBe(PARTITIONS * 50)
    expect(await groupOffsets(groupId, topic, PARTITIONS)).toEqual(await endOffsets(topic, PARTITIONS))
  })

  it("detects a gap that opens while the source is paused, when it resumes (recordFormat \"value\")", async () => {
    await requireBroker()
    const topic = topicName("gap-paused")
    await createTopic(topic, 1)
    await produce(topic, 1, { count: 100, recordBytes: RECORD_BYTES })

    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const source = yield* KafkaSource.make({
        brokers: brokers(),
        topic,
        mode: { kind: "assign" },
        retentionGap: "record-and-continue",
        recordFormat: "value",
        fetch: { maxWait: 100 }
      })
      const sink = Memory.sink()
      const handle = yield* Pipeline.start({ source, sink, config: pipelineConfig, policies: Fixed.layer({ concurrency: 2 }) })
      yield* Effect.promise(() => waitFor("100 committed", () => source.committed.get(0) === 100))
      yield* handle.knobs.propose("test", { readGate: "paused" })
      yield* Effect.promise(() => produce(topic, 1, { from: 100, count: 1, recordBytes: RECORD_BYTES }))
      yield* Effect.promise(() => waitFor("paused", () => source.stats.pauses.paused))
      // A fetch already in flight when the gate closed may still deliver (maxWait
      // 100 ms): wait until no fetch was answered for a whole second.
      yield* Effect.promise(() => waitForSteady("fetching to stop while paused", () => source.stats.fetches, 1_000))
      // Paused: 59 more records arrive and are deleted before the gate opens.
      yield* Effect.promise(() => produce(topic, 1, { from: 101, count: 59, recordBytes: RECORD_BYTES }))
      yield* Effect.promise(() => setTopicConfig(topic, "retention.ms", "100"))
      yield* Effect.promise(() => waitFor("log start 160", async () => (await startOffsets(topic, 1))[0] === 160))
      yield* Effect.promise(() => setTopicConfig(topic, "retention.ms", "-1"))
      yield* Effect.promise(() => produce(topic, 1, { from: 160, count: 40, recordBytes: RECORD_BYTES }))
      yield* handle.knobs.propose("test", { readGate: "open" })
      yield* Effect.promise(() => waitFor("200 committed", () => source.committed.get(0) === 200))
      // The one record fetched before the pause was read; the 59 after it were lost.
      const gaps = gapsOf(source)
      expect(gaps).toEqual([{ _tag: "RetentionGap", source: topic, partition: 0, expected: gaps[0]?.expected, logStart: 160, lostRecords: 160 - (gaps[0]?.expected ?? 0) }])
      expect(source.stats.gaps).toBe(1)
      const gap = gaps[0]
      expect(gap?.expected).toBeGreaterThanOrEqual(100)
      expect(handle.stats().retentionGapRecords).toBe(gap?.lostRecords)
      // Everything read was archived (values alone): 0..expected-1 and 160..199.
      const { counts, envelopes } = archived(topic, [sink], RECORD_BYTES, "value")
      expect(envelopes).toBe(0)
      expect(counts.size).toBe((gap?.expected ?? 0) + 40)
      // No object spans the gap: the batch before it was sealed on the gap, and
      // the batch starting at the log start records it in its manifest.
      const manifests = [...sink.manifests.values()]
      expect(manifests.every((m) => m.lastOffset < 160 || m.firstOffset >= 160)).toBe(true)
      expect(manifests.find((m) => m.firstOffset === 160)?.gap).toEqual({
        expected: gap?.expected,
        logStart: 160,
        lostRecords: gap?.lostRecords
      })
      // Payloads are the raw values, not envelopes.
      const first = [...sink.manifests.values()].find((m) => m.firstOffset === 0)
      const body = first === undefined ? undefined : sink.objects.get(first.key)?.body
      const payload = body === undefined ? new Uint8Array(0) : (Batch.decodeBody(body)[0] ?? new Uint8Array(0))
      expect([...payload]).toEqual([...payloadOf(topic, 0, 0, RECORD_BYTES)])
      expect(() => RecordEnvelope.decode(payload)).toThrow(RecordEnvelope.MalformedEnvelope)
    })))
  })
})
