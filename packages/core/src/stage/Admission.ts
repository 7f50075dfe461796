/**
 * Admission: the reader, and everything that decides whether a record may
 * enter the pipeline — the **memory budget** and the **read gate**.
 *
 * - Every chunk is charged to the {@link MemoryBudget} before the sealer sees
 *   it (payload plus the per-record overhead). While the budget is full the
 *   chunk waits; open batches are sealed early (`pressure`) only when they
 *   alone would keep it out — sealing on every blocked chunk would turn each
 *   chunk into its own tiny batch. A chunk larger than a quarter of the budget
 *   is split first, so no chunk alone can hold the budget.
 * - While the read gate is `paused` (a policy's proposal), open batches are
 *   sealed early and the source is paused; it resumes when the gate opens.
 * - A retention gap seals the partition's open batch (`gap`) and records the
 *   gap in the manifest of its next batch; it is counted and published.
 * - A revoke drops the revoked partitions' open batches (their bytes return to
 *   the budget), tells the committer to forget them, and acknowledges.
 *
 * It owns: the read-gate latch, the reader fiber, the budget charges of
 * chunks, the `recordsRead`, `bytesRead`, `openBytes`, `inflightBytes`,
 * `retentionGapRecords` and `readGate` counters. It may touch: the source
 * (`events`, `pause`, `resume`), the sealer, and — through callbacks — hand
 * sealed batches on and forget revoked partitions.
 *
 * @since 0.2.0
 */
import { Clock, Effect, Latch, Stream } from "effect"
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
  /** Reads the source to its end, then seals every open batch (`drain`). */
  readonly read: Effect.Effect<void, SourceError>
  /** Opens or closes the read gate (the read-gate knob). */
  readonly setGate: (gate: ReadGate) => Effect.Effect<void>
  /** Seals every open batch with `reason` now and hands them on. */
  readonly sealAll: (reason: "pressure" | "drain") => Effect.Effect<void>
}

/**
 * Builds admission; the gate starts as the read-gate knob is now.
 *
 * @since 0.2.0
 */
export const make = (deps: AdmissionDeps): Effect.Effect<Admission> =>
  Effect.map(Latch.make(deps.knobs.current().readGate === "open"), (gateOpen) => {
    const { source, sealer, budget, stats } = deps
    const limitPiece = budget.limit / 2

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

    const waitForRoom = (charge: number) =>
      Effect.gen(function*() {
        if (budget.fits(charge)) return
        // Full. Sealed and uploading batches free memory as they are verified;
        // open batches do not: seal them early only when they would keep the
        // chunk out even after everything sealed drained.
        if (sealer.openCharge + charge + budget.reserve > budget.limit) yield* sealAll("pressure")
        while (!budget.fits(charge)) yield* budget.awaitRelease
      })

    const accept = (chunk: RecordChunk) =>
      Effect.gen(function*() {
        yield* waitWhilePaused
        const charge = MemoryBudget.chargeOf(chunk)
        yield* waitForRoom(charge)
        budget.charge(charge)
        stats.inflightBytes = budget.held
        stats.maxInflightBytes = budget.maxHeld
        stats.recordsRead += chunk.count
        stats.bytesRead += chunk.bytes
        const now = yield* Clock.currentTimeMillis
        const sealed = sealer.append(chunk, deps.knobs.current().batchTarget, now)
        stats.openBytes = sealer.openBytes
        yield* deps.sealed(sealed, now)
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
      })

    const onRevoke = (event: PartitionsRevoked) =>
      Effect.gen(function*() {
        const dropped = sealer.dropPartitions(source.name, event.partitions)
        stats.openBytes = sealer.openBytes
        yield* deps.revoked(event.partitions)
        budget.release(dropped.charge)
        stats.inflightBytes = budget.held
        yield* event.acknowledge
      })

    const read = source.events.pipe(
      Stream.runForEach((event) => {
        switch (event._tag) {
          case "RecordChunk":
            return MemoryBudget.chargeOf(event) > limitPiece && event.count > 1
              ? Effect.forEach(splitToFit(event, limitPiece), accept, { discard: true })
              : accept(event)
          case "RetentionGap":
            return onGap(event)
          case "PartitionsRevoked":
            return onRevoke(event)
        }
      }),
      Effect.andThen(sealAll("drain"))
    )

    return {
      read,
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
