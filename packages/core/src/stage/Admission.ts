/**
 * Admission: the reader, and everything that decides whether a record may
 * enter the pipeline — the **memory budget** and the **read gate**.
 *
 * The reader takes the source's events in order:
 *
 * - each chunk is charged to the {@link MemoryBudget} before the sealer sees it
 *   (payload plus the per-record overhead). While the budget is full the chunk
 *   waits; open batches are sealed early (`pressure`) only when they alone
 *   would keep it out — sealing on every blocked chunk would turn each chunk
 *   into its own tiny batch. A chunk charged more than a quarter of the budget
 *   is split first. While the read gate is `paused`, open batches are sealed
 *   early and the source is paused; it resumes when the gate opens. A
 *   retention gap seals the partition's open batch (`gap`) and records the gap
 *   in the manifest of its next batch.
 * - while a chunk waits (for budget or the gate), a **look-ahead** fiber pulls
 *   on: a revoke is processed at once — the revoked partitions' open batches
 *   are dropped (their bytes return to the budget), the committer forgets them,
 *   the waiting chunk is skipped if it is theirs, and the revoke is
 *   acknowledged; the first other event is kept for the reader. Nothing waits:
 *   no fiber hop per chunk when chunks fit.
 * - chunks that fit at once (no split, gate open, room in the budget) are
 *   admitted in synchronous runs over the array the source handed over, not
 *   with an Effect per chunk; a run ends at each seal, so the seal is handed
 *   on and signalled before the next chunk is appended.
 *
 * Bytes held therefore never exceed the budget by more than one chunk: the
 * budget keeps a reserve of the largest chunk (see `MemoryBudget`), which
 * covers the chunk being admitted while the one pulled ahead waits; and the
 * look-ahead pulls only while held + the waiting chunk's unadmitted part fit
 * the budget. The look-ahead holds one event besides revokes: a revoke behind
 * a further chunk waits until the first is admitted (the Kafka adapter puts
 * revokes ahead of the chunks it has not handed out).
 *
 * It owns: the read-gate latch, the reader and its look-ahead, the budget charges of
 * chunks, the `recordsRead`, `bytesRead`, `openBytes`, `inflightBytes`,
 * `maxInflightBytes`, `retentionGapRecords` and `readGate` counters. It may
 * touch: the source (`events`, `pause`, `resume`), the sealer, and — through
 * callbacks — hand sealed batches on and forget revoked partitions.
 *
 * @since 0.2.0
 */
import { Clock, Effect, Fiber, Latch, Pull, Stream } from "effect"
import type { SealedBatch } from "../Batch.ts"
import { framingProblem } from "../internal/frames.ts"
import type { KnobValues, ReadGate } from "../Knob.ts"
import { Attribute } from "../Metrics.ts"
import type { Instruments } from "../Metrics.ts"
import type { RecordChunk } from "../Record.ts"
import { splitAt } from "../Record.ts"
import type { Sealer } from "../Sealer.ts"
import type { Signal } from "../Signal.ts"
import type { CaughtUp, PartitionsRevoked, RetentionGap, Source, SourceEvent } from "../Source.ts"
import { SourceError } from "../Source.ts"
import * as MemoryBudget from "./MemoryBudget.ts"
import { type PipelineStats, uploaderIdle } from "./Stats.ts"

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
  /**
   * Hands freshly sealed batches on: refreshes the open bytes and registers
   * them with the committer at once, when called (so registration follows
   * seal order whatever fibers seal), and returns the effect that queues them
   * for upload.
   */
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

/** The reader's state. */
interface Reader {
  readonly deps: AdmissionDeps
  readonly gateOpen: Latch.Latch
  /** Revokes seen per partition (one entry per partition ever owned). */
  readonly epochs: Map<number, number>
  /** Largest piece a chunk is split to (a quarter of the budget). */
  readonly maxPiece: number
  /** Charge of the chunk being admitted, not admitted yet. */
  pending: number
  /** Pulls the next array of events from the source; `undefined` at its end. */
  pull: Effect.Effect<ReadonlyArray<SourceEvent> | undefined, SourceError>
  /** Events pulled and not taken yet (the rest of the last array pulled). */
  buffer: ReadonlyArray<SourceEvent>
  at: number
  /** The look-ahead started while a chunk waits: it yields the next event that is not a revoke. */
  ahead: Fiber.Fiber<SourceEvent | undefined, SourceError> | undefined
}

/**
 * Builds admission; the gate starts as the read-gate knob is now.
 *
 * @since 0.2.0
 */
export const make = (deps: AdmissionDeps): Effect.Effect<Admission> =>
  Effect.gen(function*() {
    const reader: Reader = {
      deps,
      gateOpen: yield* Latch.make(deps.knobs.current().readGate === "open"),
      epochs: new Map(),
      maxPiece: Math.max(1, Math.floor(deps.budget.limit / 4)),
      pending: 0,
      pull: Effect.succeed(undefined),
      buffer: [],
      at: 0,
      ahead: undefined
    }
    return {
      read: Effect.scoped(Effect.gen(function*() {
        const pull = yield* Stream.toPull(deps.source.events)
        reader.pull = Pull.catchDone(pull, () => Effect.succeed(undefined))
        yield* readAll(reader)
      })),
      sealAll: (reason) => sealAll(reader, reason),
      setGate: (gate) =>
        Effect.suspend(() => {
          const was = deps.stats.readGate
          deps.stats.readGate = gate
          const log = was === gate
            ? Effect.void
            : Effect.logDebug(gate === "open" ? "sluice: reads resumed" : "sluice: reads paused").pipe(Effect.annotateLogs({ gate, was }))
          return Effect.andThen(log, Effect.asVoid(gate === "open" ? reader.gateOpen.open : reader.gateOpen.close))
        })
    }
  })

const epochOf = (reader: Reader, partition: number): number => reader.epochs.get(partition) ?? 0

const sealAll = (reader: Reader, reason: "pressure" | "drain") =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => reader.deps.sealed(reader.deps.sealer.sealAll(reason, now), now))

/** The reader's loop: every event in order, until the source ends; then seals (`drain`). */
const readAll = (reader: Reader): Effect.Effect<void, SourceError> =>
  Effect.gen(function*() {
    while (true) {
      if (reader.ahead === undefined && admissible(reader, reader.buffer[reader.at])) {
        // The common case, without an Effect per chunk (see admitBuffered).
        yield* admitRun(reader)
        continue
      }
      const event = yield* next(reader)
      if (event === undefined) return yield* sealAll(reader, "drain")
      if (event._tag === "PartitionsRevoked") yield* onRevoke(reader, event)
      else if (event._tag === "RetentionGap") yield* onGap(reader, event)
      else if (event._tag === "CaughtUp") yield* onCaughtUp(reader, event)
      else yield* acceptChunk(reader, event, epochOf(reader, event.partition))
    }
  })

/**
 * The longest run of buffered chunks that go straight in is admitted here, in
 * one synchronous step instead of an Effect per chunk: each is a chunk that
 * needs no split, the gate is open and the budget has room for it now — what
 * {@link acceptChunk} would do without waiting. The run ends after the first
 * chunk that seals a batch, so the seal is handed on (and its `Sealed` signal
 * published, which a policy may answer with a new batch target or a closed
 * gate) before the next chunk is appended, as on the general path. Anything
 * else (a gap, a revoke, a chunk to split or to wait for) is left for the
 * general path. Returns the batches sealed, for the caller to hand on.
 */
const admitBuffered = (reader: Reader, now: number): Array<SealedBatch> => {
  while (reader.at < reader.buffer.length) {
    const chunk = reader.buffer[reader.at]
    if (!admissible(reader, chunk)) break
    reader.at++
    const sealed = chargeAndAppend(reader, chunk, MemoryBudget.chargeOf(chunk), now)
    if (sealed.length > 0) return sealed
  }
  return []
}

/** One run of {@link admitBuffered}, its seals handed on; atomic like {@link admit}. */
const admitRun = (reader: Reader): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const sealed = admitBuffered(reader, now)
    return sealed.length === 0 ? Effect.void : reader.deps.sealed(sealed, now)
  }).pipe(Effect.uninterruptible)

/**
 * Whether `event` can be admitted at once by {@link admitBuffered}: a chunk
 * (noted as delivered: it is, and the reserve must count it before `fits`)
 * that needs no split, with the gate open and room in the budget now.
 */
const admissible = (reader: Reader, event: SourceEvent | undefined): event is RecordChunk => {
  if (event === undefined || event._tag !== "RecordChunk" || reader.deps.stats.readGate === "paused") return false
  // A malformed framed chunk goes the general way, which fails the run on it.
  if (framingProblem(event) !== undefined) return false
  const charge = MemoryBudget.chargeOf(event)
  if (charge > reader.maxPiece && event.count > 1) return false
  reader.deps.budget.delivered(charge)
  return reader.deps.budget.fits(charge)
}

/** The next event in order: the look-ahead's if one was started, else the next pulled. */
const next = (reader: Reader): Effect.Effect<SourceEvent | undefined, SourceError> =>
  Effect.suspend(() => {
    const ahead = reader.ahead
    if (ahead === undefined) return takeOne(reader)
    reader.ahead = undefined
    return Fiber.join(ahead)
  })

const takeOne = (reader: Reader): Effect.Effect<SourceEvent | undefined, SourceError> =>
  Effect.suspend(() => {
    if (reader.at < reader.buffer.length) return Effect.succeed(reader.buffer[reader.at++])
    return Effect.map(reader.pull, (events) => {
      reader.buffer = events ?? []
      reader.at = events === undefined ? 0 : 1
      return events?.[0]
    })
  })

/**
 * While a chunk waits (for budget or for the gate), looks one event ahead:
 * revokes are processed as they come; the first other event is kept for the
 * reader. It pulls only while the bytes held plus the waiting chunk's
 * unadmitted part fit the budget, so that what the source handed over never
 * exceeds the budget by more than the chunk pulled.
 */
const lookAhead = (reader: Reader) =>
  Effect.gen(function*() {
    if (reader.ahead !== undefined) return
    reader.ahead = yield* Effect.forkChild(Effect.gen(function*() {
      while (true) {
        yield* Effect.suspend(() => awaitRoomToPull(reader))
        const event = yield* takeOne(reader)
        if (event?._tag !== "PartitionsRevoked") return event
        yield* onRevoke(reader, event)
      }
    }))
  })

const awaitRoomToPull = (reader: Reader): Effect.Effect<void> =>
  reader.deps.budget.held + reader.pending <= reader.deps.budget.limit ? Effect.void : Effect.gen(function*() {
    const { budget, sealer } = reader.deps
    let sealed = false
    while (budget.held + reader.pending > budget.limit) {
      // Only an admitted record larger than the budget gets here with no chunk
      // waiting: seal it so that it can be uploaded and released.
      if (reader.pending === 0 && !sealed && sealer.openCharge > 0) {
        sealed = true
        yield* sealAll(reader, "pressure")
      }
      yield* budget.awaitRelease
    }
  })

const acceptChunk = (reader: Reader, chunk: RecordChunk, epoch: number) =>
  Effect.gen(function*() {
    // A malformed framed chunk would store wrong bodies: the run fails on it, naming it.
    const problem = framingProblem(chunk)
    if (problem !== undefined) {
      return yield* new SourceError({
        source: chunk.source,
        operation: "read",
        message: `chunk of partition ${chunk.partition} at offset ${chunk.firstOffset}: ${problem}`
      })
    }
    const charge = MemoryBudget.chargeOf(chunk)
    reader.deps.budget.delivered(charge)
    reader.pending = charge
    const pieces = charge > reader.maxPiece && chunk.count > 1 ? splitToFit(chunk, reader.maxPiece) : [chunk]
    const stale = () => epochOf(reader, chunk.partition) !== epoch
    for (const piece of pieces) {
      yield* waitWhilePaused(reader)
      const pieceCharge = MemoryBudget.chargeOf(piece)
      if (!(yield* waitForRoom(reader, pieceCharge, stale))) break
      yield* admit(reader, piece, pieceCharge)
    }
    reader.pending = 0
    reader.deps.budget.poke()
  })

const waitWhilePaused = (reader: Reader): Effect.Effect<void, SourceError> =>
  reader.deps.stats.readGate !== "paused" ? Effect.void : Effect.gen(function*() {
    const { source } = reader.deps
    yield* sealAll(reader, "pressure")
    yield* source.pause
    yield* lookAhead(reader)
    yield* reader.gateOpen.await
    yield* source.resume
  })

/** Waits until the piece fits; `false` if its partition was revoked meanwhile. */
const waitForRoom = (reader: Reader, charge: number, stale: () => boolean): Effect.Effect<boolean, SourceError> =>
  reader.deps.budget.fits(charge) ? Effect.succeed(!stale()) : Effect.gen(function*() {
    const { budget, sealer } = reader.deps
    // Full. Sealed and uploading batches free memory as they are verified;
    // open batches do not: seal them early only when they would keep the
    // piece out even after everything sealed drained.
    if (sealer.openCharge + charge + budget.reserve > budget.limit) yield* sealAll(reader, "pressure")
    yield* lookAhead(reader)
    while (!budget.fits(charge)) {
      if (stale()) return false
      yield* budget.awaitRelease
    }
    return !stale()
  })

const admit = (reader: Reader, chunk: RecordChunk, charge: number) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* reader.deps.sealed(chargeAndAppend(reader, chunk, charge, now), now)
  }).pipe(Effect.uninterruptible)

/**
 * Charges `chunk` to the budget, counts it in the stats and appends it to its
 * partition's open batch (synchronous; both admission paths): the batches
 * that sealed, for the caller to hand on.
 */
const chargeAndAppend = (reader: Reader, chunk: RecordChunk, charge: number, now: number): Array<SealedBatch> => {
  const { budget, sealer, stats, knobs } = reader.deps
  budget.charge(charge)
  reader.pending = Math.max(0, reader.pending - charge)
  stats.inflightBytes = budget.held
  stats.maxInflightBytes = budget.maxHeld
  stats.recordsRead += chunk.count
  stats.bytesRead += chunk.bytes
  const sealed = sealer.append(chunk, knobs.current().batchTarget, now)
  stats.openBytes = sealer.openBytes
  return sealed
}

const onGap = (reader: Reader, gap: RetentionGap) =>
  Effect.gen(function*() {
    const { sealer, stats, metrics } = reader.deps
    const now = yield* Clock.currentTimeMillis
    stats.retentionGapRecords += gap.lostRecords
    metrics.retentionGapRecords.add(gap.lostRecords, { [Attribute.partition]: String(gap.partition) })
    // The records before the gap go in their own batch; the next batch starts
    // at the log start and carries the gap in its manifest.
    const submit = reader.deps.sealed(sealer.sealPartition(gap.source, gap.partition, "gap", now), now)
    sealer.recordGap(gap.source, gap.partition, { expected: gap.expected, logStart: gap.logStart, lostRecords: gap.lostRecords })
    reader.deps.publish({ ...gap, at: now })
    yield* submit
  }).pipe(Effect.uninterruptible)

/**
 * The partition's backlog is read: its open batch is sealed now (`caughtUp`),
 * not `maxAge` after it opened. For the backlog of a pause, only once its
 * oldest records are older than `maxAge` (`Source.CaughtUp`), and not while
 * sealed batches wait for the uploader: the batch is marked instead, and the
 * ticker seals it when the uploader is idle (`Stats.uploaderIdle`). In the
 * family's slow phases, sealing every partition while the uploads were the
 * bottleneck made more, smaller objects (train set: a `slower` scenario's slow
 * phase 0.848 → 0.804 of the oracle; with the wait, 0.853).
 */
const onCaughtUp = (reader: Reader, event: CaughtUp) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const { knobs, sealed, sealer, source, stats } = reader.deps
    if (event.pausedAt !== undefined) {
      const values = knobs.current()
      if (now - event.pausedAt < values.batchTarget.maxAgeMillis) return Effect.void
      if (!uploaderIdle(stats, values.concurrency)) {
        sealer.markCaughtUp(source.name, event.partition)
        return Effect.void
      }
    }
    return sealed(sealer.sealPartition(source.name, event.partition, "caughtUp", now), now)
  }).pipe(Effect.uninterruptible)

const onRevoke = (reader: Reader, event: PartitionsRevoked) =>
  Effect.gen(function*() {
    const { budget, sealer, stats, source } = reader.deps
    for (const p of event.partitions) reader.epochs.set(p, epochOf(reader, p) + 1)
    const dropped = sealer.dropPartitions(source.name, event.partitions)
    stats.openBytes = sealer.openBytes
    yield* reader.deps.revoked(event.partitions)
    budget.release(dropped.charge)
    stats.inflightBytes = budget.held
    // Wakes the reader if it waits with a chunk of a revoked partition.
    budget.poke()
    yield* event.acknowledge
  }).pipe(Effect.uninterruptible)

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
