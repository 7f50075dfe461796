/**
 * An independent held-bytes meter: wraps a pipeline's source and sink and counts
 * the payload bytes the pipeline holds from the outside — bytes the source has
 * handed it minus bytes of objects the store has verified — without trusting
 * the pipeline's own counters. Sluice's third invariant says this never exceeds
 * the memory budget by more than one chunk.
 *
 * **Details**
 *
 * - The source wrapper hands the pipeline one event at a time (`rechunk(1)`), so
 *   a chunk counts as held from the moment the pipeline pulls it (the source's
 *   own prefetch is not the pipeline's holding).
 * - The sink wrapper credits a batch's payload bytes once, on the first
 *   successful `verify` of its key; a batch uploaded again under the same key is
 *   not credited twice.
 * - The maximum is exact: held bytes only grow when a chunk is delivered, and
 *   the meter takes the maximum right then.
 * - When partitions are revoked, their bytes stop counting at the revoke (the
 *   pipeline is to drop them) and later verifications of their batches credit
 *   nothing: the meter cannot see whether the pipeline really let them go.
 *
 * @since 0.2.0
 */
import type { Sink, Source } from "@sluice/core"
import { Effect, Stream } from "effect"

/**
 * A meter and its two wrappers.
 *
 * @since 0.2.0
 */
export interface HeldBytesMeter {
  /** Wraps the pipeline's source: counts delivered chunk bytes. */
  readonly source: <S extends Source.Source>(source: S) => S
  /** Wraps the pipeline's sink: credits verified batch bytes. */
  readonly sink: <K extends Sink.Sink>(sink: K) => K
  /** Bytes held now. */
  readonly held: () => number
  /** The highest bytes held so far. */
  readonly max: () => number
  /** The largest chunk delivered so far (bytes). */
  readonly largestChunk: () => number
  /** Payload bytes of objects verified (each key once). */
  readonly verified: () => number
  /** Payload bytes delivered by the source. */
  readonly delivered: () => number
}

/**
 * Makes a meter for one pipeline.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 * import { HeldBytes } from "@sluice/testkit"
 *
 * const meter = HeldBytes.make()
 * const source = meter.source(Memory.source({ name: "t", partitions: 2, records: 10_000, recordBytes: 100 }))
 * const sink = meter.sink(Memory.sink())
 * await Effect.runPromise(Pipeline.run({ source, sink, config: { memoryBudget: "1 MiB" } }))
 * // expect(meter.max()).toBeLessThanOrEqual(1024 * 1024 + meter.largestChunk())
 * ```
 *
 * @since 0.2.0
 */
export const make = (): HeldBytesMeter => {
  let delivered = 0
  let verified = 0
  let max = 0
  let largest = 0
  // Delivered minus verified per partition (a handful of entries); revoked
  // partitions leave the sum.
  const heldBy = new Map<number, number>()
  let revoked = 0
  // Keys uploaded but not yet verified: bounded by the batches in flight.
  const pending = new Map<string, { readonly partition: number; readonly bytes: number }>()
  const held = () => delivered - verified - revoked
  return {
    source: <S extends Source.Source>(source: S): S => ({
      ...source,
      events: source.events.pipe(
        Stream.rechunk(1),
        Stream.tap((event) =>
          Effect.sync(() => {
            if (event._tag === "PartitionsRevoked") {
              for (const p of event.partitions) {
                revoked += heldBy.get(p) ?? 0
                heldBy.delete(p)
              }
              return
            }
            if (event._tag !== "RecordChunk") return
            delivered += event.bytes
            heldBy.set(event.partition, (heldBy.get(event.partition) ?? 0) + event.bytes)
            if (event.bytes > largest) largest = event.bytes
            if (held() > max) max = held()
          })
        )
      )
    }),
    sink: <K extends Sink.Sink>(sink: K): K => ({
      ...sink,
      putObject: (batch: Parameters<Sink.Sink["putObject"]>[0]) => {
        pending.set(batch.key, { partition: batch.partition, bytes: batch.bytes })
        return sink.putObject(batch)
      },
      verify: (receipt: Parameters<Sink.Sink["verify"]>[0]) =>
        Effect.tap(sink.verify(receipt), () =>
          Effect.sync(() => {
            const batch = pending.get(receipt.key)
            if (batch === undefined) return
            pending.delete(receipt.key)
            const partitionHeld = heldBy.get(batch.partition)
            // A batch of a revoked partition: its bytes already left the count.
            if (partitionHeld === undefined) return
            heldBy.set(batch.partition, partitionHeld - batch.bytes)
            verified += batch.bytes
          }))
    }),
    held,
    max: () => max,
    largestChunk: () => largest,
    verified: () => verified,
    delivered: () => delivered
  }
}
