/**
 * End to end on the real services: records produced to a real Kafka topic are
 * archived by `archiveTopic` (default policies) into a real S3 bucket, each
 * exactly once with its key, headers and timestamp, and the group's offsets are
 * committed to the end only after verification.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Admin, Producer } from "@platformatic/kafka"
import { RecordEnvelope } from "@sluice/adapter-kafka"
import { Batch } from "@sluice/core"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { archiveTopic } from "../src/KafkaToS3.ts"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") {
    throw new Error(`${name} is not set: this test needs the real Kafka broker and S3 server (run \`npm test\`, or \`bash scripts/services.sh up\` and source .services/*.env)`)
  }
  return value
}

describe("examples/KafkaToS3", () => {
  it("archives a real topic into a real bucket: every record once, offsets committed to the end", async () => {
    const brokers = env("SLUICE_KAFKA_BROKERS").split(",")
    const s3 = {
      endpoint: env("SLUICE_S3_ENDPOINT"),
      region: process.env["SLUICE_S3_REGION"] ?? "us-east-1",
      accessKeyId: env("SLUICE_S3_ACCESS_KEY"),
      secretAccessKey: env("SLUICE_S3_SECRET_KEY")
    }
    const id = `${process.pid}-${Date.now().toString(36)}`
    const topic = `sluice-example-${id}`
    const bucket = `example-${id}`
    const partitions = 3
    const perPartition = 3_000

    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
    })
    const admin = new Admin({ clientId: "sluice-example-admin", bootstrapBrokers: brokers })
    const producer = new Producer({ clientId: "sluice-example-producer", bootstrapBrokers: brokers })
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }))
      await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
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

      const stats = await Effect.runPromise(archiveTopic({ brokers, topic, groupId: `${topic}-archiver`, s3: { ...s3, bucket } }))
      expect(stats.recordsCommitted).toBe(partitions * perPartition)
      expect(stats.recordsCommitted).toBeLessThanOrEqual(stats.recordsVerified)

      // Read the archive back: manifests, then every record through its envelope.
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }))
      const keys = (listed.Contents ?? []).map((o) => o.Key ?? "")
      const seen = new Map<string, number>()
      const decoder = new TextDecoder()
      for (const key of keys.filter((k) => k.endsWith(".manifest.json"))) {
        const m = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
        const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(await m.Body?.transformToString() ?? "")
        expect(manifest.checksum.algorithm).toBe("CRC64NVME")
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
      const committed = await admin.listConsumerGroupOffsets({ groups: [`${topic}-archiver`] })
      const offsets = new Array<number>(partitions).fill(-1)
      for (const g of committed) {
        for (const t of g.topics) {
          if (t.name === topic) for (const p of t.partitions) offsets[p.partitionIndex] = Number(p.committedOffset)
        }
      }
      expect(offsets).toEqual([perPartition, perPartition, perPartition])
    } finally {
      client.destroy()
      await producer.close().catch(() => undefined)
      await admin.close().catch(() => undefined)
    }
  })
})
