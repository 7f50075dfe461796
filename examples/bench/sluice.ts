/**
 * bench:e2e — the Sluice contender: `KafkaSource` (assign mode, standalone
 * commits under the group, until caught up) → `Pipeline` with the default
 * config and the default policies (`Composition.defaults()`, or the
 * composition `--policies` names) → `S3Sink` with
 * its default checksum (CRC32) and HEAD verify, manifests included: what
 * `examples/src/KafkaToS3.ts` runs, with every setting left at its default.
 *
 * While it runs, the pipeline's stats and knobs are sampled every 20 ms to
 * tell what bound it: uploads at the concurrency limit (the store), memory
 * held near the budget (memory), the read gate closed (pressure).
 */
import { KafkaSource } from "@sluice/adapter-kafka"
import { S3Sink } from "@sluice/adapter-s3"
import { Pipeline } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Effect } from "effect"
import { performance } from "node:perf_hooks"
import type { Job, Result } from "./contender.ts"
import { measure } from "./contender.ts"
import type { Services } from "./services.ts"

interface Samples {
  readonly started: number
  /** Seconds from the start to the first record read, and to the last. */
  firstRead: number
  allRead: number
  n: number
  atLimit: number
  memoryBound: number
  gateClosed: number
  queued: number
  concurrency: number
  maxConcurrency: number
}

const sample = (samples: Samples, handle: Pipeline.PipelineHandle, budget: number, records: number): void => {
  const stats = handle.stats()
  const knobs = handle.knobs.current()
  const now = (performance.now() - samples.started) / 1000
  if (stats.recordsRead > 0 && samples.firstRead === 0) samples.firstRead = now
  if (stats.recordsRead >= records && samples.allRead === 0) samples.allRead = now
  samples.n++
  if (stats.uploading >= knobs.concurrency) samples.atLimit++
  if (stats.inflightBytes >= 0.9 * budget) samples.memoryBound++
  if (stats.readGate !== "open") samples.gateClosed++
  if (stats.queued > 0) samples.queued++
  samples.concurrency += knobs.concurrency
  samples.maxConcurrency = Math.max(samples.maxConcurrency, knobs.concurrency)
}

/** Archives the topic with Sluice; throws when the run fails or commits fewer records than produced. */
export const run = async (job: Job, services: Services): Promise<Result> => {
  const samples: Samples = { started: performance.now(), firstRead: 0, allRead: 0, n: 0, atLimit: 0, memoryBound: 0, gateClosed: 0, queued: 0, concurrency: 0, maxConcurrency: 0 }
  const measured = measure()
  const stats = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const source = yield* KafkaSource.make({
      brokers: services.brokers,
      topic: job.topic,
      clientId: "bench-e2e-sluice",
      mode: { kind: "assign", groupId: job.groupId },
      until: "caught-up"
    })
    const sink = yield* S3Sink.make({
      bucket: job.bucket,
      endpoint: services.s3.endpoint,
      region: services.s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey }
    })
    // "default" parses to `Composition.defaults()`.
    const handle = yield* Pipeline.start({ source, sink, policies: Composition.parse(job.policies) })
    // What batches may hold: the budget less the source's reserved read-ahead.
    const budget = handle.config.memoryBudget - (source.readAheadBytes ?? 0)
    const timer = setInterval(() => sample(samples, handle, budget, job.records), 20)
    yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(timer)))
    return yield* handle.await
  })))
  const m = measured.stop()
  if (stats.recordsCommitted !== job.records) throw new Error(`sluice committed ${stats.recordsCommitted} of ${job.records} records`)
  const share = (k: number) => (samples.n === 0 ? 0 : k / samples.n)
  return {
    records: stats.recordsCommitted,
    objects: stats.batchesVerified,
    ...m,
    detail: {
      firstReadSeconds: samples.firstRead,
      allReadSeconds: samples.allRead,
      uploadsAtLimit: share(samples.atLimit),
      memoryBound: share(samples.memoryBound),
      readGateClosed: share(samples.gateClosed),
      batchesQueued: share(samples.queued),
      meanConcurrency: share(samples.concurrency),
      maxConcurrency: samples.maxConcurrency,
      maxInflightBytes: stats.maxInflightBytes,
      requests: stats.requests,
      retries: stats.retries,
      throttles: stats.throttles
    }
  }
}
