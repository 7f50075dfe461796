/**
 * The archiver Sluice exists for: a Kafka topic into S3 through the full
 * read → seal → upload → verify → commit pipeline, with the default pressure
 * policies (AIMD + throttle classifier + shared pressure + adaptive batch).
 *
 * `archiveTopic` drains the topic once (assign mode, `until: "caught-up"`) and
 * returns the run's stats; offsets are committed to the consumer group only after
 * their objects are verified in S3. With `follow`, it runs as a service (group
 * mode, reading forever) until `stop` completes — on SIGTERM or SIGINT when run
 * from the command line — and then drains: it stops reading, seals the open
 * batches, finishes the uploads in flight, commits what was verified and returns
 * the stats (within `drainDeadline`, 30 s by default).
 *
 * Run it against the local services (`bash scripts/services.sh up`):
 *
 *   set -a; . .services/kafka.env; . .services/s3.env; set +a
 *   node examples/dist/KafkaToS3.js <topic> <bucket> [--follow]
 */
import { KafkaSource } from "@sluice/adapter-kafka"
import { S3Sink } from "@sluice/adapter-s3"
import { Pipeline } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Deferred, Effect } from "effect"
import type { Duration } from "effect"

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
  /** Run as a service (group mode, read forever) until `stop` completes, then drain. */
  readonly follow?: { readonly stop: Effect.Effect<void>; readonly drainDeadline?: Duration.Input } | undefined
}

/**
 * Archives `topic` up to its current end into `s3.bucket` — or, with
 * `follow`, until `follow.stop` completes, then drains.
 */
export const archiveTopic = (options: ArchiveOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const source = yield* KafkaSource.make({
      brokers: options.brokers,
      topic: options.topic,
      mode: options.follow === undefined ? { kind: "assign", groupId: options.groupId } : { kind: "group", groupId: options.groupId },
      until: options.follow === undefined ? "caught-up" : "forever",
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
    const handle = yield* Pipeline.start({
      source,
      sink,
      config: { batch: { records: 50_000, bytes: "8 MiB", maxAge: "5 seconds" }, memoryBudget: "256 MiB" },
      policies: Composition.defaults()
    })
    const follow = options.follow
    if (follow === undefined) return yield* handle.await
    // Whichever comes first: the run ends (a failure), or stop → a graceful drain.
    return yield* Effect.raceFirst(handle.await, Effect.andThen(follow.stop, handle.drain(follow.drainDeadline ?? "30 seconds")))
  }))

/** Completes on the first SIGTERM or SIGINT (a second one kills the process as usual). */
const onSignal: Effect.Effect<void> = Effect.gen(function*() {
  const signalled = yield* Deferred.make<void>()
  const stop = () => Deferred.doneUnsafe(signalled, Effect.void)
  process.once("SIGTERM", stop)
  process.once("SIGINT", stop)
  yield* Deferred.await(signalled)
  console.error("draining: stopped reading, finishing uploads in flight …")
})

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, "/"))
if (isMain) {
  const [topic, bucket, flag] = process.argv.slice(2)
  const env = (name: string) => {
    const value = process.env[name]
    if (value === undefined) throw new Error(`${name} is not set: run \`bash scripts/services.sh up\` and source .services/*.env`)
    return value
  }
  if (topic === undefined || bucket === undefined) {
    console.error("usage: node examples/dist/KafkaToS3.js <topic> <bucket> [--follow]")
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
      },
      follow: flag === "--follow" ? { stop: onSignal } : undefined
    })).then(
      (stats) => console.log(`archived ${stats.recordsCommitted} records in ${stats.batchesVerified} objects`),
      (error) => {
        console.error(error)
        process.exitCode = 1
      }
    )
  }
}
