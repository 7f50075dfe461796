/**
 * Test support: the real broker (from SLUICE_KAFKA_BROKERS), topics, producing
 * known records (value, key, headers, timestamp), reading committed offsets
 * and archived records back, and wrappers that check the commit invariant at
 * every commit.
 */
import { Admin, ConfigResourceTypes, IncrementalAlterConfigOperationTypes, ListOffsetTimestamps, Producer } from "@platformatic/kafka"
import { Batch, Memory } from "@sluice/core"
import { CommitGuard } from "@sluice/testkit"
import type { Source } from "@sluice/core"
import type * as KafkaStats from "../src/KafkaStats.ts"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"

const encoder = new TextEncoder()

/** The broker list; fails (never skips) when the environment does not name one. */
export const brokers = (): [string, ...Array<string>] => {
  const value = process.env["SLUICE_KAFKA_BROKERS"]
  if (value === undefined || value.trim() === "") {
    throw new Error(
      "SLUICE_KAFKA_BROKERS is not set. The Kafka tests need the real broker: run `bash scripts/kafka-broker.sh up` " +
        "and `set -a; . .services/kafka.env; set +a` (npm test does both)."
    )
  }
  const [first, ...rest] = value.split(",").map((s) => s.trim())
  return [first ?? value, ...rest]
}

let admin: Admin | undefined
export const getAdmin = (): Admin => {
  admin ??= new Admin({ clientId: "sluice-test-admin", bootstrapBrokers: brokers(), retries: 1, retryDelay: 200 })
  return admin
}

let producer: Producer<Buffer, Buffer, Buffer, Buffer> | undefined
const getProducer = () => {
  // Idempotent: a send retried after a timeout on a busy machine must not
  // append its records twice (offsets are the tests' ground truth).
  producer ??= new Producer({ clientId: "sluice-test-producer", bootstrapBrokers: brokers(), retries: 3, idempotent: true })
  return producer
}

export const closeClients = async (): Promise<void> => {
  await producer?.close().catch(() => undefined)
  await admin?.close().catch(() => undefined)
  producer = undefined
  admin = undefined
}

let reachable: Promise<void> | undefined
/**
 * Called first in every test: fails the test (never skips it) with a clear
 * message when the broker is not configured or does not answer.
 */
export const requireBroker = (): Promise<void> => {
  reachable ??= assertBrokerReachable()
  return reachable
}

/** Fails with a clear message when the broker does not answer. */
const assertBrokerReachable = async (): Promise<void> => {
  const list = brokers()
  try {
    await Promise.race([
      getAdmin().metadata({ topics: [] }),
      new Promise((_, reject) => setTimeout(() => reject(new Error("no answer within 10 s")), 10_000))
    ])
  } catch (error) {
    throw new Error(
      `Kafka broker ${list.join(",")} (SLUICE_KAFKA_BROKERS) is unreachable: ${error instanceof Error ? error.message : String(error)}. ` +
        "Start it with `bash scripts/kafka-broker.sh up`."
    )
  }
}

let topicSeq = 0
/** A fresh topic name for one test. */
export const topicName = (label: string): string =>
  `sluice-${label}-${process.pid}-${Date.now().toString(36)}-${topicSeq++}`

export const createTopic = async (
  topic: string,
  partitions: number,
  configs: ReadonlyArray<{ name: string; value: string }> = []
): Promise<void> => {
  await getAdmin().createTopics({ topics: [topic], partitions, replicas: 1, configs: [...configs] })
}

/**
 * A fresh topic of `partitions` partitions holding `count` records in each
 * ({@link produce}), after {@link requireBroker}: the backlog most tests start
 * from. Returns the topic's name.
 */
export const backlogTopic = async (
  label: string,
  partitions: number,
  produced: { readonly count: number; readonly recordBytes: number; readonly perSend?: number }
): Promise<string> => {
  await requireBroker()
  const topic = topicName(label)
  await createTopic(topic, partitions)
  await produce(topic, partitions, produced)
  return topic
}

export const setTopicConfig = async (topic: string, name: string, value: string): Promise<void> => {
  await getAdmin().incrementalAlterConfigs({
    resources: [{
      resourceType: ConfigResourceTypes.TOPIC,
      resourceName: topic,
      configs: [{ name, value, configOperation: IncrementalAlterConfigOperationTypes.SET }]
    }]
  })
}

/** The payload of the record at (partition, offset) of a topic produced by {@link produce}. */
export const payloadOf = (topic: string, partition: number, offset: number, recordBytes: number): Uint8Array =>
  Memory.recordPayload(encoder, topic, partition, offset, recordBytes)

const timestampBases = new Map<string, number>()
/** Record timestamps of a topic start here (a minute in the past, so retention and the broker accept them). */
const timestampBase = (topic: string): number => {
  let base = timestampBases.get(topic)
  if (base === undefined) {
    base = Date.now() - 60_000
    timestampBases.set(topic, base)
  }
  return base
}

/** What {@link produce} writes besides the value: every 10th record has no key. */
export interface Produced {
  readonly timestamp: number
  readonly key: string | null
  readonly headers: ReadonlyArray<readonly [string, ReadonlyArray<number>]>
}

/** The key, headers and timestamp of the record at (partition, offset) of a topic produced by {@link produce}. */
export const producedOf = (topic: string, partition: number, offset: number): Produced => ({
  timestamp: timestampBase(topic) + offset,
  key: offset % 10 === 9 ? null : `key-${partition}-${offset}`,
  headers: [["sluice-offset", [...encoder.encode(String(offset))]], ["bin", [0, 255, partition]]]
})

/**
 * Appends records `from .. from+count-1` to every partition, each record's
 * value naming its position (`<topic>/<partition>/<offset>`), with the key,
 * headers and timestamp of {@link producedOf}, so a fresh topic holds known
 * records at known offsets.
 */
export const produce = async (
  topic: string,
  partitions: number,
  options: { readonly from?: number; readonly count: number; readonly recordBytes: number; readonly perSend?: number }
): Promise<void> => {
  const from = options.from ?? 0
  const perSend = options.perSend ?? 2000
  const p = getProducer()
  for (let start = from; start < from + options.count; start += perSend) {
    const end = Math.min(from + options.count, start + perSend)
    const messages = []
    for (let partition = 0; partition < partitions; partition++) {
      for (let offset = start; offset < end; offset++) {
        const produced = producedOf(topic, partition, offset)
        messages.push({
          topic,
          partition,
          value: Buffer.from(payloadOf(topic, partition, offset, options.recordBytes)),
          ...(produced.key === null ? {} : { key: Buffer.from(produced.key) }),
          headers: new Map(produced.headers.map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as const)),
          timestamp: BigInt(produced.timestamp)
        })
      }
    }
    await p.send({ messages })
  }
}

const offsets = async (topic: string, partitions: number, timestamp: bigint): Promise<Array<number>> => {
  const answer = await getAdmin().listOffsets({
    topics: [{
      name: topic,
      partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp }))
    }]
  })
  const out = new Array<number>(partitions).fill(-1)
  for (const t of answer) for (const p of t.partitions) out[p.partitionIndex] = Number(p.offset)
  return out
}

export const endOffsets = (topic: string, partitions: number) => offsets(topic, partitions, ListOffsetTimestamps.LATEST)
export const startOffsets = (topic: string, partitions: number) => offsets(topic, partitions, ListOffsetTimestamps.EARLIEST)

/** Offsets committed by `groupId` on `topic` (-1: none). */
export const groupOffsets = async (groupId: string, topic: string, partitions: number): Promise<Array<number>> => {
  const answer = await getAdmin().listConsumerGroupOffsets({ groups: [groupId] })
  const out = new Array<number>(partitions).fill(-1)
  for (const g of answer) {
    for (const t of g.topics) {
      if (t.name !== topic) continue
      for (const p of t.partitions) out[p.partitionIndex] = Number(p.committedOffset)
    }
  }
  return out
}

/** The group's type as the broker lists it (`"classic"`, `"consumer"`), from outside the source; undefined when not listed. */
export const groupTypeOf = async (groupId: string): Promise<string | undefined> => {
  const groups = await getAdmin().listGroups({ types: ["classic", "consumer"] })
  return groups.get(groupId)?.groupType
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Polls `check` until it holds, or fails naming `what` after `timeoutMs`. The
 * bound is generous on purpose: it is there to fail a stuck test with a clear
 * message, not to measure speed.
 */
export const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

/**
 * Waits until `read()` has not changed for `quietMs` (e.g. no fetch answered
 * for a second: nothing is in flight any more), or fails naming `what` after
 * `timeoutMs`.
 */
export const waitForSteady = async (what: string, read: () => number, quietMs: number, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  let value = read()
  let since = Date.now()
  for (;;) {
    await sleep(50)
    const now = Date.now()
    const next = read()
    if (next !== value) {
      value = next
      since = now
    } else if (now - since >= quietMs) return
    if (now > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (still changing: ${value})`)
  }
}

// --- the commit invariant ------------------------------------------------------
// From the testkit: `Ranges` of verified offsets shared across runs, a sink
// wrapper that marks them on verify, and a source wrapper that checks each commit.

export const Ranges = CommitGuard.Ranges
export type Ranges = CommitGuard.Ranges

/** A memory sink whose verified batches are added to `verified`. */
export const verifyingSink = (verified: CommitGuard.Ranges, sink: Memory.MemorySink = Memory.sink()): Memory.MemorySink =>
  CommitGuard.verifying(sink, verified)

/**
 * Wraps a source so every commit is checked against `verified` (and the gaps it
 * reported); `violations` collects what failed, `seen` the non-record events.
 */
export const checkingSource = <S extends Source.Source>(
  source: S,
  verified: CommitGuard.Ranges,
  from: ReadonlyMap<number, number> = new Map()
): S & { readonly violations: Array<string>; readonly seen: Array<Source.SourceEvent> } => {
  const checked = CommitGuard.checking(source, verified, from)
  return Object.assign(checked.source, { violations: checked.violations, seen: checked.events })
}

/**
 * Reads every stored object back: how often each (partition, offset) was
 * archived, and whether each record is the one produced there. With the
 * `"envelope"` format (the default) each payload is decoded with
 * `RecordEnvelope.decode` and its key, headers and timestamp are checked too;
 * `envelopes` counts the envelopes checked.
 */
export const archived = (
  topic: string,
  sinks: ReadonlyArray<Memory.MemorySink>,
  recordBytes: number,
  format: "envelope" | "value" = "envelope"
): { readonly counts: Map<string, number>; readonly wrong: Array<string>; readonly envelopes: number } => {
  const counts = new Map<string, number>()
  const wrong: Array<string> = []
  let envelopes = 0
  const decoder = new TextDecoder()
  const report = (message: string) => {
    if (wrong.length < 10) wrong.push(message)
  }
  for (const sink of sinks) {
    for (const [key, object] of sink.objects) {
      const manifest = sink.manifests.get(key)
      if (manifest === undefined) continue
      const payloads = Batch.decodeBody(object.body)
      if (payloads.length !== manifest.records) report(`${key}: ${payloads.length} payloads for ${manifest.records} records`)
      payloads.forEach((payload, i) => {
        const offset = manifest.firstOffset + i
        const id = `${manifest.partition}/${offset}`
        counts.set(id, (counts.get(id) ?? 0) + 1)
        let value: Uint8Array | null = payload
        if (format === "envelope") {
          let record: RecordEnvelope.Envelope
          try {
            record = RecordEnvelope.decode(payload)
          } catch (error) {
            report(`${id}: ${error instanceof Error ? error.message : String(error)}`)
            return
          }
          envelopes++
          value = record.value
          const expected = producedOf(topic, manifest.partition, offset)
          const got = {
            timestamp: record.timestamp,
            key: record.key === null ? null : decoder.decode(record.key),
            headers: record.headers.map(([k, v]) => [decoder.decode(k), v === null ? null : [...v]] as const)
          }
          if (JSON.stringify(got) !== JSON.stringify(expected)) report(`${id}: got ${JSON.stringify(got)}, produced ${JSON.stringify(expected)}`)
        }
        const expected = decoder.decode(payloadOf(topic, manifest.partition, offset, recordBytes))
        const text = value === null ? "<null>" : decoder.decode(value)
        if (text !== expected) report(`${id}: got value ${text.slice(0, 40)}`)
      })
    }
  }
  return { counts, wrong, envelopes }
}

// --- stats ---------------------------------------------------------------------
// The source keeps counters and a bounded ring of recent events; tests that read
// a whole history make the ring large enough (`statsHistory`) and check it held
// everything (`complete`).

/** Ring size for tests that read every event of a run. */
export const FULL_HISTORY = 10_000

type Recent = { readonly stats: KafkaStats.KafkaSourceStats }

/** Every commit in the ring, in order. */
export const commitsOf = (source: Recent): Array<{ readonly partition: number; readonly nextOffset: number }> =>
  source.stats.recent().flatMap((e) => (e._tag === "Committed" ? [{ partition: e.partition, nextOffset: e.nextOffset }] : []))

/** Every retention gap in the ring, in order. */
export const gapsOf = (source: Recent): Array<Source.RetentionGap> =>
  source.stats.recent().flatMap((e) => (e._tag === "RetentionGap" ? [e.gap] : []))

/** The partitions of every assignment (or revoke) in the ring, in order. */
export const partitionsOf = (source: Recent, tag: "Assigned" | "Revoked"): Array<ReadonlyArray<number>> =>
  source.stats.recent().flatMap((e) => (e._tag === tag ? [e.partitions] : []))

/** Whether the ring still holds every event the counters counted (none was dropped). */
export const complete = (source: Recent): boolean => {
  const s = source.stats
  return s.recent().length === s.commits + s.commitsSkipped + s.gaps + s.assignments + s.revokes + 2 * s.pauses.count - (s.pauses.paused ? 1 : 0)
}
