/**
 * The archiver Sluice exists for: a Kafka topic into S3 through the full
 * read → seal → upload → verify → commit pipeline, with the default pressure
 * policies (`Composition.defaults()`: delivery rate + throttle classifier + adaptive batch).
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
import type { KafkaConfig } from "@sluice/adapter-kafka"
import { S3Sink } from "@sluice/adapter-s3"
import type { S3Config } from "@sluice/adapter-s3"
import { Pipeline } from "@sluice/core"
import type { Sink } from "@sluice/core"
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
    /** TLS to an `https://` endpoint: `{ ca }`, the private CA its certificate chains to (PEM text; default: Node's trust store). */
    readonly tls?: S3Config.S3ConfigInput["tls"] | undefined
  }
  /**
   * The consumer group's settings but its id (`KafkaConfig.GroupMode`:
   * `instanceId` for static membership, `sessionTimeout`, …; default: the
   * source's). Used in group mode (`follow`) only.
   */
  readonly group?: Omit<KafkaConfig.GroupModeInput, "kind" | "groupId"> | undefined
  /** Run as a service (group mode, read forever) until `stop` completes, then drain. */
  readonly follow?: { readonly stop: Effect.Effect<void>; readonly drainDeadline?: Duration.Input } | undefined
  /** Where the pipeline's metrics go (default: the global meter provider). */
  readonly meterProvider?: Pipeline.PipelineOptions["meterProvider"] | undefined
  /** The pipeline's name, `sluice.pipeline` on its metrics (default: the topic). */
  readonly name?: string | undefined
  /** The pipeline's config (default: {@link defaultConfig}). */
  readonly config?: Pipeline.PipelineConfigInput | undefined
  /** The config of the default policies (default: theirs). */
  readonly policies?: Composition.DefaultsConfig | undefined
  /** TLS to the brokers (mTLS with `cert` + `key`; PEM text), as `KafkaSource` takes it (default: plaintext). */
  readonly tls?: KafkaConfig.KafkaConfigInput["tls"] | undefined
  /** The rest of the S3 sink's config (request timeout, multipart threshold, part size, …; default: the sink's). */
  readonly sink?: SinkSettings | undefined
  /** Wraps the sink before the pipeline gets it (the fault runs' kill hook, `examples/kafka-to-s3/KillHook.ts`). */
  readonly wrapSink?: ((sink: S3Sink.S3Sink) => Sink.Sink) | undefined
  /** Called once with the Kafka source, before the pipeline starts (the example publishes its group metrics from it). */
  readonly onSource?: ((source: KafkaSource.KafkaSource) => void) | undefined
  /** SASL to the brokers (`{ mechanism, username, password }`), as `KafkaSource` takes it (default: none). */
  readonly sasl?: KafkaConfig.KafkaConfigInput["sasl"] | undefined
}

/** The S3 sink's config but what `ArchiveOptions.s3` and the archiver fix (bucket, endpoint, region, credentials, addressing, checksum). */
export type SinkSettings = Omit<S3Config.S3ConfigInput, "bucket" | "endpoint" | "region" | "credentials" | "forcePathStyle" | "checksumAlgorithm">

/**
 * The S3 endpoint and credentials the local services export
 * (`.services/s3.env`: `SLUICE_S3_*`), for `bucket`. `env` reads a required
 * variable (and says how to set it when it is missing).
 */
export const s3FromEnv = (bucket: string, env: (name: string) => string): ArchiveOptions["s3"] => ({
  bucket,
  endpoint: env("SLUICE_S3_ENDPOINT"),
  region: process.env["SLUICE_S3_REGION"] ?? "us-east-1",
  accessKeyId: env("SLUICE_S3_ACCESS_KEY"),
  secretAccessKey: env("SLUICE_S3_SECRET_KEY")
})

/** The archiver's pipeline config unless told otherwise: objects of ≤ 50 000 records or 8 MiB, sealed within 5 s. */
export const defaultConfig: Pipeline.PipelineConfigInput = {
  batch: { records: 50_000, bytes: "8 MiB", maxAge: "5 seconds" },
  memoryBudget: "256 MiB"
}

/**
 * Builds the Kafka source, the S3 sink and the pipeline with the default
 * policies in the current scope, and returns the running pipeline's handle
 * (closing the scope stops it). `archiveTopic` is this plus waiting for the
 * end; `examples/kafka-to-s3` runs it as a service with its own stop rules.
 */
export const start = (options: ArchiveOptions) =>
  Effect.gen(function*() {
    const source = yield* KafkaSource.make({
      brokers: options.brokers,
      topic: options.topic,
      mode: options.follow === undefined
        ? { kind: "assign", groupId: options.groupId }
        : { ...options.group, kind: "group", groupId: options.groupId },
      until: options.follow === undefined ? "caught-up" : "forever",
      retentionGap: "record-and-continue",
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      ...(options.sasl === undefined ? {} : { sasl: options.sasl })
    })
    options.onSource?.(source)
    const sink = yield* S3Sink.make({
      ...options.sink,
      bucket: options.s3.bucket,
      endpoint: options.s3.endpoint,
      region: options.s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: options.s3.accessKeyId, secretAccessKey: options.s3.secretAccessKey },
      checksumAlgorithm: "CRC32",
      ...(options.s3.tls === undefined ? {} : { tls: options.s3.tls })
    })
    return yield* Pipeline.start({
      source,
      sink: options.wrapSink === undefined ? sink : options.wrapSink(sink),
      config: options.config ?? defaultConfig,
      policies: Composition.defaults(options.policies ?? {}),
      meterProvider: options.meterProvider,
      name: options.name
    })
  })

/**
 * Runs a started pipeline as a service: whichever comes first, the run ends
 * (a failure), or `stop` completes and the pipeline drains (stops reading,
 * seals, finishes the uploads in flight, commits) within `drainDeadline`.
 */
export const follow = (handle: Pipeline.PipelineHandle, stop: Effect.Effect<void>, drainDeadline: Duration.Input = "30 seconds") =>
  Effect.raceFirst(handle.await, Effect.andThen(stop, handle.drain(drainDeadline)))

/**
 * Archives `topic` up to its current end into `s3.bucket` — or, with
 * `follow`, until `follow.stop` completes, then drains.
 */
export const archiveTopic = (options: ArchiveOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* start(options)
    const following = options.follow
    if (following === undefined) return yield* handle.await
    return yield* follow(handle, following.stop, following.drainDeadline)
  }))

/** Completes on the first SIGTERM or SIGINT (a second one kills the process as usual). */
export const onSignal: Effect.Effect<void> = Effect.gen(function*() {
  const signalled = yield* Deferred.make<void>()
  const stop = () => Deferred.doneUnsafe(signalled, Effect.void)
  process.once("SIGTERM", stop)
  process.once("SIGINT", stop)
  yield* Deferred.await(signalled)
  console.error("draining: stopped reading, finishing uploads in flight …")
})

// Run as a script only when started as this file (`KafkaToS3.js` built, `KafkaToS3.ts` on the
// sources). Not by `import.meta`: bundled into another entry (`examples/bundle/build.ts`), this module
// shares that entry's `import.meta`, and would take the entry's arguments as its own.
const isMain = /(^|[/\\])KafkaToS3\.[jt]s$/.test(process.argv[1] ?? "")
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
      s3: s3FromEnv(bucket, env),
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
