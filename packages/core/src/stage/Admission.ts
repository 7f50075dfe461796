/**
 * Admission: the reader, and everything that decides whether a record may
 * enter the pipeline — the **memory budget** and the **read gate**.
 *
 * The reader is two fibers joined by a one-slot hand-off:
 *
 * - the **puller** pulls source events. A revoke is processed at once, even
 *   while a chunk waits for budget or for the gate: the revoked partitions'
 *   open batches are dropped (their bytes return to the budget), the committer
 *   forgets them, a chunk of theirs that waits is skipped, and the revoke is
 *   acknowledged. Every other event is handed to the acceptor; the puller
 *   pulls again only once the acceptor took it, so at most one event waits
 *   beyond the one being accepted.
 * - the **acceptor** charges each chunk to the {@link MemoryBudget} before
 *   the sealer sees it (payload plus the per-record overhead). While the
 *   budget is full the chunk waits; open batches are sealed early
 *   (`pressure`) only when they alone would keep it out — sealing on every
 *   blocked chunk would turn each chunk into its own tiny batch. A chunk
 *   charged more than a quarter of the budget is split first. While the read
 *   gate is `paused`, open batches are sealed early and the source is paused;
 *   it resumes when the gate opens. A retention gap seals the partition's open
 *   batch (`gap`) and records the gap in the manifest of its next batch.
 *
 * Bytes held therefore never exceed the budget by more than one chunk: the
 * budget keeps a reserve of the largest chunk (see `MemoryBudget`), which
 * covers the chunk being admitted while the one pulled ahead waits. The
 * look-ahead is one event: a revoke the source delivers right after the
 * waiting chunk is processed at once; one behind a further chunk waits until
 * the first is admitted (the Kafka adapter puts revokes ahead of the chunks it
 * has not handed out).
 *
 * It owns: the read-gate latch, the reader fibers, the budget charges of
 * chunks, the `recordsRead`, `bytesRead`, `openBytes`, `inflightBytes`,
 * `maxInflightBytes`, `retentionGapRecords` and `readGate` counters. It may
 * touch: the source (`events`, `pause`, `resume`), the sealer, and — through
 * callbacks — hand sealed batches on and forget revoked partitions.
 *
 * @since 0.2.0
 */
import { Clock, Deferred, Effect, Latch, Queue, Stream } from "effect"
import type { SealedBatch } from "../Batch.ts"
import type { KnobValues, ReadGate } from "../Knob.ts"
import type { Instruments } from "../Metrics.ts"
import type { RecordChunk } from "../Record.ts"
import { splitAt } from "../Record.ts"
import type { Sealer } from "../Sealer.ts"
import type { Signal } from "../Signal.ts"
import type { PartitionsRevoked, RetentionGap, Source, SourceError } from "../Source.ts"
import * as MemoryBudget from "./MemoryBudget.ts"
import type { PipelineStats } from "./Stats.ts"

/**
 * What admission needs from the pipeline.
 *
 * @since 0.2.0
 */
export interface AdmissionDeps {
  readonly source: Source
  readonly sealer: Sealer
  readonly budget: MemoryBudget.MemoryBudget
  readonly knobs: { readonly current: () => KnobValues }
  readonly stats: PipelineStats
  readonly metrics: Instruments
  readonly publish: (signal: Signal) => void
  /** Hands freshly sealed batches on (to the committer and the uploader). */
  readonly sealed: (batches: ReadonlyArray<SealedBatch>, now: number) => Effect.Effect<void>
  /** Revoked partitions: forget them downstream (their sealed batches are abandoned). */
  readonly revoked: (partitions: ReadonlyArray<number>) => Effect.Effect<void>
}

/**
 * Admission of one pipeline.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as Admission from "./stage/Admission.ts"
 * declare const deps: Admission.AdmissionDeps
 *
 * const program = Effect.gen(function*() {
 *   const admission = yield* Admission.make(deps)
 *   yield* admission.read // until the source ends; open batches are then sealed (`drain`)
 * })
 * ```
 *
 * @since 0.2.0
 */
export interface Admission {
  /**
   * Reads the source to its end, then seals every open batch (`drain`).
   * Interrupting it stops reading: a chunk not yet accepted is dropped
   * uncharged (never committed, so re-read after a restart).
   */
  readonly read: Effect.Effect<void, SourceError>
  /** Opens or closes the read gate (the read-gate knob). */
  readonly setGate: (gate: ReadGate) => Effect.Effect<void>
  /** Seals every open batch with `reason` now and hands them on. */
  readonly sealAll: (reason: "pressure" | "drain") => Effect.Effect<void>
}

/** What the puller hands the acceptor, with the partition's revoke count when pulled. */
type Handed =
  | { readonly _tag: "Event"; readonly event: RecordChunk | RetentionGap; readonly epoch: number; readonly taken: Deferred.Deferred<void> }
  | { readonly _tag: "End"; readonly taken: Deferred.Deferred<void> }

/**
 * Builds admission; the gate starts as the read-gate knob is now.
 *
 * @since 0.2.0
 */
export const make = (deps: AdmissionDeps): Effect.Effect<Admission> =>
  Effect.gen(function*() {
    const gateOpen = yield* Latch.make(deps.knobs.current().readGate === "open")
    const slot = yield* Queue.bounded<Handed>(1)
    const { source, sealer, budget, stats } = deps
    const maxPiece = Math.max(1, Math.floor(budget.limit / 4))
    // Revokes seen per partition (one entry per partition ever owned): an event
    // pulled before a revoke of its partition is stale and skipped.
    const epochs = new Map<number, number>()
    const epochOf = (partition: number) => epochs.get(partition) ?? 0

    const sealAll = (reason: "pressure" | "drain") =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const sealed = sealer.sealAll(reason, now)
        stats.openBytes = sealer.openBytes
        return deps.sealed(sealed, now)
      })

    const waitWhilePaused = Effect.gen(function*() {
      if (stats.readGate !== "paused") return
      yield* sealAll("pressure")
      yield* source.pause
      yield* gateOpen.await
      yield* source.resume
    })

    /** Waits until the chunk fits; `false` if its partition was revoked meanwhile. */
    const waitForRoom = (charge: number, stale: () => boolean) =>
      Effect.gen(function*() {
        if (budget.fits(charge)) return true
        // Full. Sealed and uploading batches free memory as they are verified;
        // open batches do not: seal them early only when they would keep the
        // chunk out even after everything sealed drained.
        if (sealer.openCharge + charge + budget.reserve > budget.limit) yield* sealAll("pressure")
        while (!budget.fits(charge)) {
          if (stale()) return false
          yield* budget.awaitRelease
        }
        return !stale()
      })

    const admit = (chunk: RecordChunk, charge: number) =>
      Effect.gen(function*() {
        budget.charge(charge)
        stats.inflightBytes = budget.held
        stats.maxInflightBytes = budget.maxHeld
        stats.recordsRead += chunk.count
        stats.bytesRead += chunk.bytes
        const now = yield* Clock.currentTimeMillis
        const sealed = sealer.append(chunk, deps.knobs.current().batchTarget, now)
        stats.openBytes = sealer.openBytes
        yield* deps.sealed(sealed, now)
      }).pipe(Effect.uninterruptible)

    const accept = (chunk: RecordChunk, epoch: number) =>
      Effect.gen(function*() {
        const stale = () => epochOf(chunk.partition) !== epoch
        yield* waitWhilePaused
        const charge = MemoryBudget.chargeOf(chunk)
        if (!(yield* waitForRoom(charge, stale))) return
        yield* admit(chunk, charge)
      })

    const onGap = (gap: RetentionGap) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        stats.retentionGapRecords += gap.lostRecords
        deps.metrics.retentionGapRecords.add(gap.lostRecords, { partition: gap.partition })
        // The records before the gap go in their own batch; the next batch starts
        // at the log start and carries the gap in its manifest.
        yield* deps.sealed(sealer.sealPartition(gap.source, gap.partition, "gap", now), now)
        stats.openBytes = sealer.openBytes
        sealer.recordGap(gap.source, gap.partition, { expected: gap.expected, logStart: gap.logStart, lostRecords: gap.lostRecords })
        deps.publish({ ...gap, at: now })
      }).pipe(Effect.uninterruptible)

    const onRevoke = (event: PartitionsRevoked) =>
      Effect.gen(function*() {
        for (const p of event.partitions) epochs.set(p, epochOf(p) + 1)
        const dropped = sealer.dropPartitions(source.name, event.partitions)
        stats.openBytes = sealer.openBytes
        yield* deps.revoked(event.partitions)
        budget.release(dropped.charge)
        stats.inflightBytes = budget.held
        // Wakes the acceptor if it waits with a chunk of a revoked partition.
        budget.poke()
        yield* event.acknowledge
      }).pipe(Effect.uninterruptible)

    const hand = (handed: Handed) => Effect.andThen(Queue.offer(slot, handed), Deferred.await(handed.taken))

    const puller = source.events.pipe(
      Stream.runForEach((event) =>
        event._tag === "PartitionsRevoked"
          ? onRevoke(event)
          : Effect.flatMap(Deferred.make<void>(), (taken) =>
            hand({ _tag: "Event", event, epoch: epochOf(event.partition), taken }))
      ),
      Effect.andThen(Effect.flatMap(Deferred.make<void>(), (taken) => hand({ _tag: "End", taken })))
    )

    const acceptor = Effect.gen(function*() {
      while (true) {
        const handed = yield* Queue.take(slot)
        yield* Deferred.succeed(handed.taken, undefined)
        if (handed._tag === "End") return yield* sealAll("drain")
        const { event, epoch } = handed
        if (epochOf(event.partition) !== epoch) continue
        if (event._tag === "RetentionGap") {
          yield* onGap(event)
          continue
        }
        budget.delivered(MemoryBudget.chargeOf(event))
        if (MemoryBudget.chargeOf(event) > maxPiece && event.count > 1) {
          for (const piece of splitToFit(event, maxPiece)) yield* accept(piece, epoch)
        } else {
          yield* accept(event, epoch)
        }
      }
    })

    return {
      read: Effect.asVoid(Effect.all([puller, acceptor], { concurrency: 2 })),
      sealAll,
      setGate: (gate) =>
        Effect.suspend(() => {
          stats.readGate = gate
          return Effect.asVoid(gate === "open" ? gateOpen.open : gateOpen.close)
        })
    }
  })

/**
 * Splits a chunk into pieces charged at most `maxCharge` (a single record
 * larger than that stays whole), so no chunk alone can hold the memory budget.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { syntheticChunk } from "./Record.ts"
 * import * as Admission from "./stage/Admission.ts"
 *
 * Admission.splitToFit(syntheticChunk("t", 0, 0, 100, 10), 250).length // 4
 * ```
 *
 * @since 0.2.0
 */
export const splitToFit = (chunk: RecordChunk, maxCharge: number): Array<RecordChunk> => {
  const out: Array<RecordChunk> = []
  let rest = chunk
  let charge = MemoryBudget.chargeOf(rest)
  while (charge > maxCharge && rest.count > 1) {
    const take = Math.max(1, Math.min(rest.count - 1, Math.floor((rest.count * maxCharge) / charge)))
    const [head, tail] = splitAt(rest, take)
    out.push(head)
    rest = tail
    charge = MemoryBudget.chargeOf(rest)
  }
  out.push(rest)
  return out
}
