/**
 * The archiver Sluice exists for: a Kafka topic into S3 through the full
 * read → seal → upload → verify → commit pipeline, with the default pressure
 * policies (AIMD + throttle classifier + shared pressure + adaptive batch).
 *
 * `archiveTopic` drains the topic once (assign mode, `until: "caught-up"`) and
 * returns the run's stats; offsets are committed to the consumer group only after
 * their objects are verified in S3. Swap `until: "caught-up"` for a group-mode
 * source to run it as a service.
 *
 * Run it against the local services (`bash scripts/services.sh up`):
 *
 *   set -a; . .services/kafka.env; . .services/s3.env; set +a
 *   node examples/dist/KafkaToS3.js <topic> <bucket>
 */
import { KafkaSource } from "@sluice/adapter-kafka"
import { S3Sink } from "@sluice/adapter-s3"
import { Pipeline } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Effect } from "effect"

/**
 * What to archive, and where.
 */
export interface ArchiveOptions {
  /** At least one bootstrap broker. */
  readonly brokers: readonly [string, ...Array<string>]
  readonly topic: string
  readonly groupId: string
  readonly s3: {
    readonly bucket: string
    readonly endpoint: string
    readonly region: string
    readonly accessKeyId: string
    readonly secretAccessKey: string
  }
}

/**
 * Archives `topic` up to its current end into `s3.bucket`.
 */
export const archiveTopic = (options: ArchiveOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const source = yield* KafkaSource.make({
      brokers: options.brokers,
      topic: options.topic,
      mode: { kind: "assign", groupId: options.groupId },
      until: "caught-up",
      retentionGap: "record-and-continue"
    })
    const sink = yield* S3Sink.make({
      bucket: options.s3.bucket,
      endpoint: options.s3.endpoint,
      region: options.s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: options.s3.accessKeyId, secretAccessKey: options.s3.secretAccessKey },
      checksumAlgorithm: "CRC32"
    })
    return yield* Pipeline.run({
      source,
      sink,
      config: { batch: { records: 50_000, bytes: "8 MiB", maxAge: "5 seconds" }, memoryBudget: "256 MiB" },
      policies: Composition.defaults()
    })
  }))

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, "/"))
if (isMain) {
  const [topic, bucket] = process.argv.slice(2)
  const env = (name: string) => {
    const value = process.env[name]
    if (value === undefined) throw new Error(`${name} is not set: run \`bash scripts/services.sh up\` and source .services/*.env`)
    return value
  }
  if (topic === undefined || bucket === undefined) {
    console.error("usage: node examples/dist/KafkaToS3.js <topic> <bucket>")
    process.exitCode = 2
  } else {
    const [broker, ...moreBrokers] = env("SLUICE_KAFKA_BROKERS").split(",")
    Effect.runPromise(archiveTopic({
      brokers: [broker ?? "", ...moreBrokers],
      topic,
      groupId: `${topic}-archiver`,
      s3: {
        bucket,
        endpoint: env("SLUICE_S3_ENDPOINT"),
        region: process.env["SLUICE_S3_REGION"] ?? "us-east-1",
        accessKeyId: env("SLUICE_S3_ACCESS_KEY"),
        secretAccessKey: env("SLUICE_S3_SECRET_KEY")
      }
    })).then(
      (stats) => console.log(`archived ${stats.recordsCommitted} records in ${stats.batchesVerified} objects`),
      (error) => {
        console.error(error)
        process.exitCode = 1
      }
    )
  }
}
