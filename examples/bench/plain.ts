/**
 * bench:e2e — the plain loop: what one would write without Sluice, doing the
 * same work. The `@platformatic/kafka` consumer (group mode, from the
 * earliest offset, auto-commit off, the fetch sizes `KafkaSource` uses)
 * yields messages; each partition's messages are gathered into objects of
 * `recordsPerObject` records (the size Sluice's objects had), written in the
 * same format (each record as a `RecordEnvelope`, length-prefixed as
 * `Batch.decodeBody` reads), CRC32-summed (`@node-rs/crc32`, as the S3 sink), put with that checksum,
 * checked with `HeadObject` (size and store-computed CRC32), then the
 * partition's offsets are committed up to its last verified object, in order.
 * At most 8 objects are in flight; the loop stops reading while 8 are.
 *
 * What it skips that Sluice does: manifests (one more small PUT per object),
 * memory accounting, retries, pressure policies.
 */
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { Consumer } from "@platformatic/kafka"
import type { Message } from "@platformatic/kafka"
import { RecordEnvelope } from "@sluice/adapter-kafka"
import { performance } from "node:perf_hooks"
import { crc32 } from "@node-rs/crc32"
import type { Job, Result } from "./contender.ts"
import { measure } from "./contender.ts"
import type { Services } from "./services.ts"
import { s3Client } from "./services.ts"

const CONCURRENCY = 8
const MiB = 1024 * 1024

type Msg = Message<Buffer, Buffer, Buffer, Buffer>

/** A null key or value reaches us as `undefined` (the client's types say Buffer). */
const orNull = (bytes: Buffer | null | undefined): Buffer | null => bytes ?? null

/** Frames the messages as `Batch.encodeBody` would frame their envelopes. */
const encode = (messages: ReadonlyArray<Msg>): Buffer => {
  const fields = messages.map((m) => ({
    timestamp: Number(m.timestamp),
    key: orNull(m.key),
    headers: m.headers.size === 0 ? [] : [...m.headers],
    value: orNull(m.value)
  }))
  let size = 0
  for (const f of fields) size += 4 + RecordEnvelope.encodedSize(f)
  const body = Buffer.allocUnsafe(size)
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  let at = 0
  for (const f of fields) {
    const end = RecordEnvelope.encodeInto(body, view, at + 4, f.timestamp, f)
    view.setUint32(at, end - at - 4)
    at = end
  }
  return body
}

const crc32Base64 = (body: Uint8Array): string => {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(crc32(body))
  return out.toString("base64")
}

const keyOf = (topic: string, partition: number, first: number, last: number): string =>
  `${topic}/p=${String(partition).padStart(5, "0")}/${String(first).padStart(20, "0")}-${String(last).padStart(20, "0")}.rec`

/** Archives the topic with the plain loop; throws on any failed put, verify or commit. */
export const run = async (job: Job, services: Services): Promise<Result> => {
  const client = s3Client(services)
  const measured = measure()
  let waitingForStore = 0
  let waitingForKafka = 0
  const started = performance.now()
  let firstRead = 0
  const consumer = new Consumer({
    clientId: "bench-e2e-plain",
    groupId: job.groupId,
    bootstrapBrokers: services.brokers,
    maxWaitTime: 500,
    minBytes: 1,
    maxBytes: 16 * MiB,
    maxBytesPerPartition: 1 * MiB
  })
  const stream = await consumer.consume({ topics: [job.topic], mode: "earliest", autocommit: false })
  const messages = stream[Symbol.asyncIterator]()
  const open = new Map<number, Array<Msg>>()
  const inflight = new Set<Promise<void>>()
  // Per partition: the next object sequence to commit, and the verified ones waiting for it.
  const sequences = new Map<number, number>()
  const commits = new Map<number, { next: number; verified: Map<number, Msg> }>()
  let failure: unknown
  let objects = 0

  const commitInOrder = async (partition: number, sequence: number, last: Msg): Promise<void> => {
    let c = commits.get(partition)
    if (c === undefined) commits.set(partition, c = { next: 0, verified: new Map() })
    c.verified.set(sequence, last)
    let upTo: Msg | undefined
    for (let m = c.verified.get(c.next); m !== undefined; m = c.verified.get(c.next)) {
      c.verified.delete(c.next)
      c.next++
      upTo = m
    }
    if (upTo !== undefined) await upTo.commit()
  }

  const upload = async (partition: number, sequence: number, batch: ReadonlyArray<Msg>): Promise<void> => {
    const first = batch[0]
    const last = batch[batch.length - 1]
    if (first === undefined || last === undefined) return
    const body = encode(batch)
    const checksum = crc32Base64(body)
    const key = keyOf(job.topic, partition, Number(first.offset), Number(last.offset))
    await client.send(new PutObjectCommand({
      Bucket: job.bucket,
      Key: key,
      Body: body,
      ContentLength: body.byteLength,
      ContentType: "application/octet-stream",
      ChecksumCRC32: checksum
    }))
    const head = await client.send(new HeadObjectCommand({ Bucket: job.bucket, Key: key, ChecksumMode: "ENABLED" }))
    if (head.ContentLength !== body.byteLength || head.ChecksumCRC32 !== checksum) {
      throw new Error(`${key}: stored ${head.ContentLength} B crc32 ${head.ChecksumCRC32}, sent ${body.byteLength} B crc32 ${checksum}`)
    }
    objects++
    await commitInOrder(partition, sequence, last)
  }

  const seal = async (partition: number): Promise<void> => {
    const batch = open.get(partition)
    if (batch === undefined) return
    open.delete(partition)
    const t = performance.now()
    while (inflight.size >= CONCURRENCY) await Promise.race(inflight)
    waitingForStore += performance.now() - t
    if (failure !== undefined) throw failure
    const sequence = sequences.get(partition) ?? 0
    sequences.set(partition, sequence + 1)
    const task: Promise<void> = upload(partition, sequence, batch)
      .catch((error: unknown) => {
        failure ??= error
      })
      .finally(() => {
        inflight.delete(task)
      })
    inflight.add(task)
  }

  try {
    let read = 0
    while (read < job.records) {
      const t = performance.now()
      const next = await messages.next()
      waitingForKafka += performance.now() - t
      if (next.done === true) throw new Error(`the consumer stream ended after ${read} of ${job.records} records`)
      const m = next.value
      if (read === 0) firstRead = performance.now() - started
      let batch = open.get(m.partition)
      if (batch === undefined) open.set(m.partition, batch = [])
      batch.push(m)
      read++
      if (batch.length >= job.recordsPerObject) await seal(m.partition)
    }
    const allRead = performance.now() - started
    for (const partition of [...open.keys()]) await seal(partition)
    await Promise.all(inflight)
    if (failure !== undefined) throw failure
    const m = measured.stop()
    return {
      records: read,
      objects,
      ...m,
      detail: {
        firstReadSeconds: firstRead / 1000,
        allReadSeconds: allRead / 1000,
        waitingForStore: waitingForStore / 1000 / m.seconds,
        waitingForKafka: waitingForKafka / 1000 / m.seconds
      }
    }
  } finally {
    await new Promise<void>((resolve) => stream.close(() => resolve()))
    await new Promise<void>((resolve) => consumer.close(true, () => resolve()))
    client.destroy()
  }
}
