/**
 * bench:e2e — the services a run talks to (the local Kafka broker and S3
 * server that `scripts/services.sh up` starts, read from the `SLUICE_*`
 * environment), the topic it archives, and the CPU the services spend.
 *
 * The topic's records are known: record `o` of partition `p` is a 150-byte
 * value starting `p/o/` (padded with `x`), no key, no headers, so the archive
 * can be checked record by record from outside.
 */
import * as Http from "node:http"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { Admin, ListOffsetTimestamps, Producer } from "@platformatic/kafka"
import { S3Client } from "@aws-sdk/client-s3"

/** Where the broker and the S3 server are. */
export interface Services {
  readonly brokers: [string, ...Array<string>]
  readonly s3: {
    readonly endpoint: string
    readonly region: string
    readonly accessKeyId: string
    readonly secretAccessKey: string
  }
}

const HOW = "run it through `npm run bench:e2e` (it starts the services), or `bash scripts/services.sh up` and source .services/*.env"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value.trim() === "") throw new Error(`${name} is not set: ${HOW}`)
  return value.trim()
}

/** The services named by the environment; throws naming the missing variable. */
export const fromEnv = (): Services => {
  const [first, ...rest] = env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim())
  return {
    brokers: [first ?? "", ...rest],
    s3: {
      endpoint: env("SLUICE_S3_ENDPOINT"),
      region: process.env["SLUICE_S3_REGION"] ?? "us-east-1",
      accessKeyId: env("SLUICE_S3_ACCESS_KEY"),
      secretAccessKey: env("SLUICE_S3_SECRET_KEY")
    }
  }
}

/**
 * An S3 client set up as the S3 sink sets up its own (`S3Sink.makeClient`):
 * keep-alive sockets, no SDK-side checksums (the caller sends its own), so the
 * plain loop and the ceiling pay for exactly what they ask for.
 */
export const s3Client = (services: Services): S3Client =>
  new S3Client({
    endpoint: services.s3.endpoint,
    region: services.s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { httpAgent: new Http.Agent({ keepAlive: true, maxSockets: 256 }) }
  })

/** Value bytes of every record. */
export const RECORD_BYTES = 150

/** The text every value of record `offset` of `partition` starts with. */
export const valuePrefix = (partition: number, offset: number): string => `${partition}/${offset}/`

/** Records in `partition` when `records` are spread over `partitions` (the first ones get the remainder). */
export const recordsIn = (records: number, partitions: number, partition: number): number =>
  Math.floor(records / partitions) + (partition < records % partitions ? 1 : 0)

/**
 * Creates `topic` and appends `records` records spread over its partitions,
 * record `o` of partition `p` holding {@link valuePrefix}. The producer is
 * idempotent and sends one request at a time, so offsets follow send order
 * exactly. Returns the end offset of every partition (checked: it must equal
 * what was sent).
 */
export const produceTopic = async (
  services: Services,
  topic: string,
  partitions: number,
  records: number
): Promise<Array<number>> => {
  const admin = new Admin({ clientId: "bench-e2e-admin", bootstrapBrokers: services.brokers })
  const producer = new Producer({ clientId: "bench-e2e-producer", bootstrapBrokers: services.brokers, idempotent: true, retries: 3 })
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
    const padding = Buffer.alloc(RECORD_BYTES, "x")
    const perPartition = Array.from({ length: partitions }, (_, p) => recordsIn(records, partitions, p))
    const longest = Math.max(...perPartition)
    // Records per partition per send: one partition's batch stays under the broker's 1 MiB
    // message.max.bytes (6 000 × ~160 B ≈ 0.96 MB). 48 000 ÷ partitions exceeded it below 8 partitions
    // (`--partitions 2`: Produce failed).
    const step = 6_000
    for (let from = 0; from < longest; from += step) {
      const messages = []
      for (let p = 0; p < partitions; p++) {
        const end = Math.min(perPartition[p] ?? 0, from + step)
        for (let o = from; o < end; o++) {
          const value = Buffer.from(padding)
          value.write(valuePrefix(p, o), 0, "latin1")
          messages.push({ topic, partition: p, value })
        }
      }
      if (messages.length > 0) await producer.send({ messages })
    }
    const ends = await endOffsets(admin, topic, partitions)
    ends.forEach((end, p) => {
      if (end !== perPartition[p]) throw new Error(`topic ${topic} partition ${p}: end offset ${end}, produced ${perPartition[p]}`)
    })
    return ends
  } finally {
    await producer.close().catch(() => undefined)
    await admin.close().catch(() => undefined)
  }
}

/** The end offset (high watermark) of every partition of `topic` (-1: not listed). */
export const endOffsets = async (admin: Admin, topic: string, partitions: number): Promise<Array<number>> => {
  const answer = await admin.listOffsets({
    topics: [{
      name: topic,
      partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp: ListOffsetTimestamps.LATEST }))
    }]
  })
  const out = new Array<number>(partitions).fill(-1)
  for (const t of answer) for (const p of t.partitions) out[p.partitionIndex] = Number(p.offset)
  return out
}

/** Committed offsets of `group` on `topic`, per partition (-1 when none) for `partitions` partitions. */
export const committedOffsets = async (admin: Admin, group: string, topic: string, partitions: number): Promise<Array<number>> => {
  const out = new Array<number>(partitions).fill(-1)
  for (const g of await admin.listConsumerGroupOffsets({ groups: [group] })) {
    for (const t of g.topics) if (t.name === topic) for (const p of t.partitions) out[p.partitionIndex] = Number(p.committedOffset)
  }
  return out
}

/** The offsets `groupId` committed on `topic` (-1: none), through an admin client of its own. */
export const groupOffsets = async (services: Services, groupId: string, topic: string, partitions: number): Promise<Array<number>> => {
  const admin = new Admin({ clientId: "bench-e2e-admin", bootstrapBrokers: services.brokers })
  try {
    return await committedOffsets(admin, groupId, topic, partitions)
  } finally {
    await admin.close().catch(() => undefined)
  }
}

/** Deletes the topic (best effort: the broker's data goes with `services.sh down` anyway). */
export const deleteTopic = async (services: Services, topic: string): Promise<void> => {
  const admin = new Admin({ clientId: "bench-e2e-admin", bootstrapBrokers: services.brokers })
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined)
  await admin.close().catch(() => undefined)
}

/**
 * CPU seconds (user + system) spent so far by the S3 server and the broker,
 * read from `/proc/<pid>/stat` with the pids `scripts/services.sh` records in
 * `.services/`; `undefined` for a service whose pid cannot be read (e.g. not
 * on Linux).
 */
export const serviceCpu = (repoRoot: string): { readonly s3: number | undefined; readonly kafka: number | undefined } => ({
  s3: cpuOfPidFile(`${repoRoot}/.services/s3.pid`),
  kafka: cpuOfPidFile(`${repoRoot}/.services/kafka.pid`)
})

let ticks: number | undefined
/** Clock ticks per second, the unit of the CPU times in `/proc/<pid>/stat` (`getconf CLK_TCK`; 100 when it cannot be read). */
export const clockTicks = (): number => {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      ticks = 100
    }
  }
  return ticks
}

const cpuOfPidFile = (file: string): number | undefined => {
  try {
    const pid = readFileSync(file, "utf8").trim()
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / clockTicks()
  } catch {
    return undefined
  }
}
