/**
 * soak — the ends of a run that live on the local services (loaded only when
 * a run asks for them, so a synthetic → memory run does not load the AWS SDK
 * or the Kafka client): a fresh topic fed at the rate by a producer child
 * process (`producer.ts`) and read by `KafkaSource`, and a fresh bucket
 * written by `S3Sink`. Both are deleted when the run's scope closes.
 */
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { Admin } from "@platformatic/kafka"
import { KafkaSource } from "@sluice/adapter-kafka"
import { S3Sink } from "@sluice/adapter-s3"
import type { Sink, Source } from "@sluice/core"
import { Effect } from "effect"
import * as Archive from "../bench/archive.ts"
import * as Services from "../bench/services.ts"
import type { Options } from "./Options.ts"
import * as ProducerChild from "./ProducerChild.ts"

/** The services named by the environment (`.services/*.env`); dies naming the missing variable. */
export const services = Effect.try({ try: () => Services.fromEnv(), catch: (e) => e }).pipe(Effect.orDie)

/** Starts the producer child (`ProducerChild`); SIGKILLed when the scope closes if it still runs. */
const producer = (services: Services.Services, topic: string, options: Options) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      ProducerChild.start({ brokers: services.brokers, topic, partitions: options.partitions, rate: options.rate, recordBytes: options.recordBytes })
    ),
    ({ child, exited, state }) =>
      Effect.promise(async () => {
        if (!state.exited) child.kill("SIGKILL")
        await exited
      })
  )

/** A fresh topic fed by the producer at the rate, read by `KafkaSource`. */
export const kafkaSource = (options: Options, services: Services.Services) =>
  Effect.gen(function*() {
    const id = `${Date.now().toString(36)}-${process.pid}`
    const topic = `sluice-soak-${id}`
    yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const admin = new Admin({ clientId: "sluice-soak-admin", bootstrapBrokers: services.brokers })
        try {
          await admin.createTopics({ topics: [topic], partitions: options.partitions, replicas: 1 })
        } finally {
          await admin.close().catch(() => undefined)
        }
      }),
      () => Effect.promise(() => Services.deleteTopic(services, topic))
    )
    const load = yield* producer(services, topic, options)
    const source = yield* KafkaSource.make({
      brokers: services.brokers,
      topic,
      clientId: "sluice-soak",
      mode: { kind: "assign", groupId: `${topic}-archiver` },
      retentionGap: "record-and-continue"
    })
    return {
      source: source as Source.Source,
      offered: () => load.state.produced,
      stop: Effect.promise(load.stop),
      notes: [
        `source: Kafka topic ${topic} (${options.partitions} partitions) on ${services.brokers.join(",")}, fed by a producer child process at the rate; KafkaSource in assign mode, default config (prefetch 16 MiB), retention gaps recorded and continued past`
      ]
    }
  })

/** A fresh bucket written by `S3Sink`. */
export const s3Sink = (services: Services.Services) =>
  Effect.gen(function*() {
    const client = Services.s3Client(services)
    const bucket = `sluice-soak-${Date.now().toString(36)}-${process.pid}`
    yield* Effect.acquireRelease(
      Effect.promise(() => client.send(new CreateBucketCommand({ Bucket: bucket }))),
      () =>
        Effect.promise(async () => {
          await Archive.removeBucket(client, bucket).catch(() => undefined)
          client.destroy()
        })
    )
    const sink = yield* S3Sink.make({
      bucket,
      endpoint: services.s3.endpoint,
      region: services.s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey }
    })
    return { sink: sink as Sink.Sink, note: `sink: S3 bucket ${bucket} at ${services.s3.endpoint} (S3Sink defaults: CRC32, HEAD verify, manifests; deleted at the end)` }
  })

