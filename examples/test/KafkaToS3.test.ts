/**
 * End to end on the real services: records produced to a real Kafka topic are
 * archived by `archiveTopic` (default policies) into a real S3 bucket, each
 * exactly once with its key, headers and timestamp, and the group's offsets are
 * committed to the end only after verification: `archiveTopic` builds its own
 * source and sink, so the adapters' `make` are wrapped here (module mocks) with
 * the testkit's `CommitGuard`, which checks every commit against what was
 * verified in S3.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Admin } from "@platformatic/kafka"
import { RecordEnvelope } from "@sluice/adapter-kafka"
import { Batch } from "@sluice/core"
import type { Sink, Source } from "@sluice/core"
import { CommitGuard } from "@sluice/testkit"
import { Deferred, Effect, Schema, Stream } from "effect"
import { describe, expect, it, vi } from "vitest"
import { archiveTopic } from "../src/KafkaToS3.ts"
import { endpoints, logEnds, reachable, testProducer } from "./services.ts"

/** What the mocked `make`s wrap each source and sink they build with (set by the test). */
const wrap = vi.hoisted(() => ({
  sink: <K extends Sink.Sink>(sink: K): K => sink,
  source: <S extends Source.Source>(source: S): S => source
}))

vi.mock("@sluice/adapter-s3", async (importOriginal) => {
  const mod = await importOriginal<typeof import("@sluice/adapter-s3")>()
  const { Effect } = await import("effect")
  const make: typeof mod.S3Sink.make = (config, options) => Effect.map(mod.S3Sink.make(config, options), (sink) => wrap.sink(sink))
  return { ...mod, S3Sink: { ...mod.S3Sink, make } }
})

vi.mock("@sluice/adapter-kafka", async (importOriginal) => {
  const mod = await importOriginal<typeof import("@sluice/adapter-kafka")>()
  const { Effect } = await import("effect")
  const make: typeof mod.KafkaSource.make = (config) => Effect.map(mod.KafkaSource.make(config), (source) => wrap.source(source))
  return { ...mod, KafkaSource: { ...mod.KafkaSource, make } }
})

/** An S3 client, a Kafka admin and a producer for the test's own checks. */
const clients = (brokers: ReadonlyArray<string>, s3: ReturnType<typeof endpoints>["s3"]) => ({
  client: new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
  }),
  admin: new Admin({ clientId: "sluice-example-admin", bootstrapBrokers: [...brokers] }),
  producer: testProducer(brokers, "sluice-example-producer")
})

/** The archiver group's committed offset per partition of `topic` (-1: none). */
const committedOffsets = async (admin: Admin, topic: string, partitions: number) => {
  const committed = await admin.listConsumerGroupOffsets({ groups: [`${topic}-archiver`] })
  const offsets = new Array<number>(partitions).fill(-1)
  for (const g of committed) {
    for (const t of g.topics) {
      if (t.name === topic) for (const p of t.partitions) offsets[p.partitionIndex] = Number(p.committedOffset)
    }
  }
  return offsets
}

describe("examples/KafkaToS3", () => {
  it("archives a real topic into a real bucket: every record once, offsets committed to the end", async () => {
    const { brokers, s3 } = endpoints()
    const id = `${process.pid}-${Date.now().toString(36)}`
    const topic = `sluice-example-${id}`
    const bucket = `example-${id}`
    const partitions = 3
    const perPartition = 3_000

    const { client, admin, producer } = clients(brokers, s3)
    try {
      await reachable(`S3 server at ${s3.endpoint}`, client.send(new CreateBucketCommand({ Bucket: bucket })))
      await reachable(`Kafka broker ${brokers.join(",")}`, admin.createTopics({ topics: [topic], partitions, replicas: 1 }))
      const messages = []
      for (let partition = 0; partition < partitions; partition++) {
        for (let offset = 0; offset < perPartition; offset++) {
          messages.push({
            topic,
            partition,
            key: Buffer.from(`k-${partition}-${offset}`),
            value: Buffer.from(`order ${partition}/${offset}`),
            headers: new Map([[Buffer.from("source"), Buffer.from("example")]])
          })
        }
      }
      await producer.send({ messages })
      // The topic holds what was produced, once: the counts below are the archiver's.
      expect(await logEnds(admin, topic, partitions)).toEqual(new Array(partitions).fill(perPartition))

      // The commit guard: the sink marks each batch's offsets verified when its
      // verify in S3 succeeded; the source checks every commit against them.
      const verified = new CommitGuard.Ranges()
      const verifiedKeys = new Set<string>()
      const guards: Array<CommitGuard.Checked> = []
      wrap.sink = (sink) => CommitGuard.verifying(sink, verified, verifiedKeys)
      wrap.source = (source) => {
        const checked = CommitGuard.checking(source, verified)
        guards.push(checked)
        return checked.source
      }

      const stats = await Effect.runPromise(archiveTopic({ brokers, topic, groupId: `${topic}-archiver`, s3: { ...s3, bucket } }))
      expect(stats.recordsCommitted).toBe(partitions * perPartition)
      expect(stats.recordsCommitted).toBeLessThanOrEqual(stats.recordsVerified)
      // The guard saw the run (one source), every commit, and no commit past a verified offset.
      expect(guards).toHaveLength(1)
      const guard = guards[0]
      expect(guard?.violations).toEqual([])
      expect(verifiedKeys.size).toBe(stats.batchesVerified)
      for (let p = 0; p < partitions; p++) {
        expect(guard?.commits.filter((c) => c.partition === p).at(-1)?.nextOffset).toBe(perPartition)
      }

      // Read the archive back: manifests, then every record through its envelope.
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }))
      const keys = (listed.Contents ?? []).map((o) => o.Key ?? "")
      // Every object the guard saw verified is in the bucket with its manifest.
      expect(keys.filter((k) => !k.endsWith(".manifest.json")).sort()).toEqual([...verifiedKeys].sort())
      const seen = new Map<string, number>()
      const decoder = new TextDecoder()
      for (const key of keys.filter((k) => k.endsWith(".manifest.json"))) {
        const m = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
        const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(await m.Body?.transformToString() ?? "")
        expect(manifest.checksum.algorithm).toBe("CRC32")
        const o = await client.send(new GetObjectCommand({ Bucket: bucket, Key: manifest.key }))
        const records = Batch.decodeBody(await o.Body?.transformToByteArray() ?? new Uint8Array(0))
        expect(records.length).toBe(manifest.records)
        records.forEach((payload, i) => {
          const envelope = RecordEnvelope.decode(payload)
          const value = decoder.decode(envelope.value ?? new Uint8Array(0))
          const offset = (Batch.recordOffsets(manifest)[i] ?? -1)
          expect(value).toBe(`order ${manifest.partition}/${offset}`)
          expect(decoder.decode(envelope.key ?? new Uint8Array(0))).toBe(`k-${manifest.partition}-${offset}`)
          expect(envelope.headers.map(([k, v]) => [decoder.decode(k), decoder.decode(v ?? new Uint8Array(0))])).toEqual([["source", "example"]])
          seen.set(value, (seen.get(value) ?? 0) + 1)
        })
      }
      expect(seen.size).toBe(partitions * perPartition)
      expect([...seen.values()].every((n) => n === 1)).toBe(true)

      // The group's committed offsets are the end of every partition.
      const offsets = await committedOffsets(admin, topic, partitions)
      expect(offsets).toEqual([perPartition, perPartition, perPartition])
    } finally {
      client.destroy()
      await producer.close().catch(() => undefined)
      await admin.close().catch(() => undefined)
    }
  })

  it("follow mode drains on stop: open batches are sealed (drain), uploaded, verified and committed before it returns", async () => {
    const { brokers, s3 } = endpoints()
    const id = `${process.pid}-${Date.now().toString(36)}-follow`
    const topic = `sluice-example-${id}`
    const bucket = `example-${id}`
    const partitions = 2
    const perPartition = 500
    const { client, admin, producer } = clients(brokers, s3)
    try {
      await reachable(`S3 server at ${s3.endpoint}`, client.send(new CreateBucketCommand({ Bucket: bucket })))
      await reachable(`Kafka broker ${brokers.join(",")}`, admin.createTopics({ topics: [topic], partitions, replicas: 1 }))
      const messages = []
      for (let partition = 0; partition < partitions; partition++) {
        for (let offset = 0; offset < perPartition; offset++) {
          messages.push({ topic, partition, key: Buffer.from(`k-${offset}`), value: Buffer.from(`order ${partition}/${offset}`) })
        }
      }
      await producer.send({ messages })
      expect(await logEnds(admin, topic, partitions)).toEqual(new Array(partitions).fill(perPartition))

      // From outside: records the source handed the pipeline, and commits checked against verifies.
      let read = 0
      const verified = new CommitGuard.Ranges()
      const guards: Array<CommitGuard.Checked> = []
      wrap.sink = (sink) => CommitGuard.verifying(sink, verified)
      wrap.source = (source) => {
        const checked = CommitGuard.checking(source, verified)
        guards.push(checked)
        const events = checked.source.events.pipe(
          Stream.tap((e) => Effect.sync(() => void (read += e._tag === "RecordChunk" ? e.count : 0)))
        )
        return { ...checked.source, events }
      }
      const stop = Effect.runSync(Deferred.make<void>())
      const run = Effect.runPromise(archiveTopic({
        brokers,
        topic,
        groupId: `${topic}-archiver`,
        s3: { ...s3, bucket },
        follow: { stop: Deferred.await(stop), drainDeadline: "30 seconds" }
      }))
      // The backlog produced before the start is sealed once read (caughtUp). Records
      // produced after it sit in open batches (50 000 records, 5 s max age) until the
      // drain seals them.
      const readAll = async (records: number) => {
        const deadline = Date.now() + 60_000
        while (read < records) {
          if (Date.now() > deadline) throw new Error(`read ${read} of ${records} records in 60 s`)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      await readAll(partitions * perPartition)
      const more = []
      for (let partition = 0; partition < partitions; partition++) {
        for (let offset = perPartition; offset < 2 * perPartition; offset++) {
          more.push({ topic, partition, key: Buffer.from(`k-${offset}`), value: Buffer.from(`order ${partition}/${offset}`) })
        }
      }
      await producer.send({ messages: more })
      await readAll(2 * partitions * perPartition)
      Effect.runSync(Deferred.succeed(stop, undefined))
      const stats = await run
      expect(stats.recordsCommitted).toBe(2 * partitions * perPartition)
      expect(guards[0]?.violations).toEqual([])

      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }))
      const manifests = (listed.Contents ?? []).map((o) => o.Key ?? "").filter((k) => k.endsWith(".manifest.json"))
      const reasons = new Set<string>()
      let records = 0
      for (const key of manifests) {
        const m = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
        const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(await m.Body?.transformToString() ?? "")
        reasons.add(manifest.sealReason)
        records += manifest.records
      }
      expect(records).toBe(2 * partitions * perPartition)
      expect(reasons).toEqual(new Set(["caughtUp", "drain"]))
      const offsets = await committedOffsets(admin, topic, partitions)
      expect(offsets).toEqual([2 * perPartition, 2 * perPartition])
    } finally {
      client.destroy()
      await producer.close().catch(() => undefined)
      await admin.close().catch(() => undefined)
    }
  })
})
