/**
 * Something to archive: creates the bucket and the topic and produces a
 * bounded number of records (`npm run example:kafka-to-s3` runs it first).
 *
 * ```sh
 * node --conditions=@sluice/source examples/kafka-to-s3/produce.ts <topic> <bucket> [--records 200000] [--partitions 4] [--record-bytes 150]
 * ```
 *
 * Record `o` of partition `p` has key `order-<p>-<o>`, a header
 * `source: kafka-to-s3-example`, and a value of `--record-bytes` bytes that
 * starts with `{"partition":p,"offset":o,…`. Prints the end offset of every
 * partition (checked: equal to what was produced) as one JSON line.
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { Admin, ListOffsetTimestamps, Producer } from "@platformatic/kafka"
import { Argument, Flag } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"

/** Where the broker and the S3 server are. */
export interface Services {
  readonly brokers: ReadonlyArray<string>
  readonly s3: { readonly endpoint: string; readonly region: string; readonly accessKeyId: string; readonly secretAccessKey: string }
}

/** Records in `partition` when `records` are spread over `partitions` (the first ones get the remainder). */
export const recordsIn = (records: number, partitions: number, partition: number): number =>
  Math.floor(records / partitions) + (partition < records % partitions ? 1 : 0)

/** Creates `bucket` (an existing one of ours is fine). */
export const createBucket = async (services: Services, bucket: string): Promise<void> => {
  const client = new S3Client({
    endpoint: services.s3.endpoint,
    region: services.s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey }
  })
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket })).catch((error: unknown) => {
      const name = error instanceof Error ? error.name : ""
      if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error
    })
  } finally {
    client.destroy()
  }
}

/**
 * Creates `topic` with `partitions` partitions and appends `records` records
 * (idempotent producer; each request carries ≤ 512 KiB per partition, below
 * the broker's 1 MiB `message.max.bytes`); returns every partition's end
 * offset, checked against what was sent. With `appendAfter` (the end offsets
 * a previous call returned) the topic exists and the records continue it:
 * each record's `offset` field is its offset in the partition.
 */
export const produce = async (
  services: Services,
  topic: string,
  options: {
    readonly records: number
    readonly partitions: number
    readonly recordBytes: number
    readonly appendAfter?: ReadonlyArray<number> | undefined
  }
): Promise<Array<number>> => {
  const { records, partitions, recordBytes } = options
  const base = (p: number) => options.appendAfter?.[p] ?? 0
  const admin = new Admin({ clientId: "kafka-to-s3-example-admin", bootstrapBrokers: [...services.brokers] })
  const producer = new Producer({ clientId: "kafka-to-s3-example-producer", bootstrapBrokers: [...services.brokers], idempotent: true, retries: 3 })
  try {
    if (options.appendAfter === undefined) await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
    const header = new Map([[Buffer.from("source"), Buffer.from("kafka-to-s3-example")]])
    const perPartition = Array.from({ length: partitions }, (_, p) => recordsIn(records, partitions, p))
    const longest = Math.max(0, ...perPartition)
    const step = Math.max(1, Math.floor(512 * 1024 / (recordBytes + 64)))
    for (let from = 0; from < longest; from += step) {
      const messages = []
      for (let p = 0; p < partitions; p++) {
        const end = Math.min(perPartition[p] ?? 0, from + step)
        for (let o = from; o < end; o++) {
          const value = Buffer.alloc(recordBytes, " ")
          const offset = base(p) + o
          value.write(`{"partition":${p},"offset":${offset},"amount":${(offset * 7919) % 10_000},"note":"`, 0, "latin1")
          value.write(`"}`, Math.max(0, recordBytes - 2), "latin1")
          messages.push({ topic, partition: p, key: Buffer.from(`order-${p}-${offset}`), value, headers: header })
        }
      }
      if (messages.length > 0) await producer.send({ messages })
    }
    const answer = await admin.listOffsets({
      topics: [{ name: topic, partitions: perPartition.map((_, partitionIndex) => ({ partitionIndex, timestamp: ListOffsetTimestamps.LATEST })) }]
    })
    const ends = new Array<number>(partitions).fill(-1)
    for (const t of answer) for (const p of t.partitions) ends[p.partitionIndex] = Number(p.offset)
    ends.forEach((end, p) => {
      const expected = base(p) + (perPartition[p] ?? 0)
      if (end !== expected) throw new Error(`topic ${topic} partition ${p}: end offset ${end}, expected ${expected} (${perPartition[p]} produced after ${base(p)})`)
    })
    return ends
  } finally {
    await producer.close().catch(() => undefined)
    await admin.close().catch(() => undefined)
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, "/"))
if (isMain) {
  const fail = (message: string, code: number): never => {
    console.error(`produce: ${message}`)
    process.exit(code)
  }
  /** A count flag: a whole number ≥ `min`, checked after reading. */
  const count = (name: string, metavar: string, fallback: number, min: number, description: string) =>
    Flag.Int(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(`${description}, ≥ ${min} (default ${fallback})`), Flag.withDefault(fallback))
  const command = CommandLine.script(
    "produce",
    {
      topic: Argument.String("topic").pipe(Argument.withDescription("the topic to create and produce into")),
      bucket: Argument.String("bucket").pipe(Argument.withDescription("the S3 bucket to create")),
      records: count("records", "N", 200_000, 0, "records to produce, spread over the partitions"),
      partitions: count("partitions", "P", 4, 1, "partitions of the topic"),
      recordBytes: count("record-bytes", "B", 150, 64, "bytes of each record's value")
    },
    "Creates the bucket and the topic and produces a bounded number of records; prints every partition's end offset as one JSON line.\n\n" +
      "  environment: SLUICE_KAFKA_BROKERS, SLUICE_S3_ENDPOINT, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY [, SLUICE_S3_REGION]",
    { invocation: "node --conditions=@sluice/source examples/kafka-to-s3/produce.ts" }
  )
  /** The line read, each count checked against its minimum. */
  const line = (() => {
    const line = command.read(process.argv.slice(2))
    if (line._tag !== "Run") return line
    const { records, partitions, recordBytes } = line.flags
    const low = ([["--records", records, 0], ["--partitions", partitions, 1], ["--record-bytes", recordBytes, 64]] as const).find(([, n, min]) => n < min)
    return low === undefined ? line : { _tag: "Invalid" as const, message: `produce: ${low[0]}: expected an integer ≥ ${low[2]}, got ${low[1]}` }
  })()
  const flags = CommandLine.settle(line, command.help)
  if (flags === undefined) process.exit()
  const { topic, bucket, ...options } = flags
  const env = (name: string): string => process.env[name]?.trim() || fail(`${name} is not set (source .services/*.env)`, 2)
  const services: Services = {
    brokers: env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim()),
    s3: { endpoint: env("SLUICE_S3_ENDPOINT"), region: process.env["SLUICE_S3_REGION"] ?? "us-east-1", accessKeyId: env("SLUICE_S3_ACCESS_KEY"), secretAccessKey: env("SLUICE_S3_SECRET_KEY") }
  }
  const started = Date.now()
  createBucket(services, bucket)
    .then(() => produce(services, topic, options))
    .then((ends) => {
      const seconds = (Date.now() - started) / 1000
      console.error(`produce: ${options.records} records of ${options.recordBytes} B into ${topic} (${options.partitions} partitions) in ${seconds.toFixed(1)} s; bucket ${bucket} ready`)
      console.log(JSON.stringify({ topic, bucket, records: options.records, ends }))
    }, (error: unknown) => {
      // @platformatic/kafka aggregates the broker's answers: show the inner ones too.
      const inner = error instanceof AggregateError ? error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))) : []
      fail([error instanceof Error ? error.message : String(error), ...inner].join(": "), 1)
    })
}
