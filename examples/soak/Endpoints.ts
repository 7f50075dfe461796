/**
 * soak — the two ends of a run, as the options name them:
 *
 * - `--source synthetic`: `SyntheticSource` (rate-paced, in process);
 *   `--source kafka`: a fresh topic on the local broker, fed at the rate by a
 *   producer child process, read by `KafkaSource` (`ServiceEnds.ts`);
 * - `--sink memory`: `MemoryStore`; `--sink s3`: `S3Sink` on a fresh bucket
 *   of the local S3 server (`ServiceEnds.ts`).
 *
 * The services come from the environment `scripts/services.sh up` writes
 * (`.services/*.env`, sourced by `scripts/soak.sh`).
 */
import type { Sink, Source } from "@sluice/core"
import { Effect } from "effect"
import type { Scope } from "effect"
import type { Options } from "./Options.ts"
import * as MemoryStore from "./MemoryStore.ts"
import * as SyntheticSource from "./SyntheticSource.ts"

/** A run's source and sink, and the load behind the source. */
export interface Ends {
  readonly source: Source.Source
  readonly sink: Sink.Sink
  /** Records offered so far: scheduled by the rate (synthetic), produced and acknowledged (Kafka). */
  readonly offered: () => number
  /** Stops offering (the end of the offered period); resolves with the records offered in all. */
  readonly stop: Effect.Effect<number>
  /** What the summary says about the ends (topic, bucket, producer). */
  readonly notes: ReadonlyArray<string>
}

const syntheticSource = (options: Options) =>
  Effect.sync(() => {
    const source = SyntheticSource.make({
      name: "soak",
      rate: options.rate,
      partitions: options.partitions,
      recordBytes: options.recordBytes,
      payloads: options.payloads
    })
    return {
      source: source as Source.Source,
      offered: () => source.progress().scheduled,
      stop: Effect.sync(() => {
        source.stop()
        return source.progress().scheduled
      }),
      notes: [`source: synthetic, rate-paced in this process (chunks of ≤ 1000 records per partition, one fresh buffer per chunk)`]
    }
  })

/**
 * The source and sink the options name, in the current scope.
 *
 * **Example**
 *
 * ```ts
 * const ends = yield* Endpoints.make(options)
 * const handle = yield* Pipeline.start({ source: ends.source, sink: ends.sink })
 * ```
 */
export const make = (options: Options): Effect.Effect<Ends, never, Scope.Scope> =>
  Effect.gen(function*() {
    const remote = options.source === "kafka" || options.sink === "s3"
      ? yield* Effect.promise(() => import("./ServiceEnds.ts"))
      : undefined
    const services = remote === undefined ? undefined : yield* remote.services
    const from = remote !== undefined && services !== undefined && options.source === "kafka"
      ? yield* remote.kafkaSource(options, services).pipe(Effect.orDie)
      : yield* syntheticSource(options)
    const to = remote !== undefined && services !== undefined && options.sink === "s3"
      ? yield* remote.s3Sink(services).pipe(Effect.orDie)
      : { sink: MemoryStore.make() as Sink.Sink, note: "sink: in-process store (encodes and CRC32-sums every body, keeps size and checksum until verified)" }
    return { ...from, sink: to.sink, notes: [...from.notes, to.note] }
  })
