/**
 * The sealer: one open batch per `(source, partition)`, sealed on the batch
 * target (records or bytes), on age, under pressure, or on drain.
 *
 * Pure bookkeeping: time is an argument, no Effect inside. The pipeline calls it
 * once per chunk (never per record) and on every tick for the age bound.
 *
 * @since 0.1.0
 */
import type { BatchTarget, GapRecord, SealedBatch, SealReason } from "./Batch.ts"
import type * as Compression from "./Compression.ts"
import * as ObjectKey from "./ObjectKey.ts"
import type { RecordChunk } from "./Record.ts"
import { framedPrefix } from "./internal/frames.ts"
import { lastOffset, splitAt } from "./Record.ts"

interface OpenBatch {
  readonly source: string
  readonly partition: number
  readonly openedAt: number
  chunks: Array<RecordChunk>
  records: number
  bytes: number
  charge: number
  gap: GapRecord | undefined
  /** Holds the last records of a backlog, to seal (`caughtUp`) once the uploader is idle ({@link Sealer.sealCaughtUp}). */
  caughtUp: boolean
  /** Reached `maxAge` and was left open by {@link Sealer.sealExpired}'s limit: sealed before any batch opened after it. */
  held: boolean
  /** Its partition's share of the target ({@link staggerFactor}): it seals at the target × this. */
  readonly scale: number
}

/**
 * Options of a {@link Sealer}.
 *
 * @since 0.2.0
 */
export interface SealerOptions {
  /** Prefix of every object key. */
  readonly prefix?: string | undefined
  /**
   * What a chunk costs the memory budget (default: its payload bytes); the
   * sealer sums it per open batch ({@link Sealer.openCharge}).
   */
  readonly charge?: ((chunk: RecordChunk) => number) | undefined
  /** How sealed batches' bodies are compressed (default: not at all). */
  readonly compression?: Compression.Setting | undefined
  /**
   * Spreads the partitions' sealing points (0 ≤ stagger < 1; default 0, every
   * batch at the target): a batch of partition `p` seals at the target ×
   * {@link staggerFactor}`(p, stagger)`, records and bytes alike, never above
   * the target. Partitions fed at the same rate then seal at different
   * moments, so their uploads reach the store spread out instead of all at
   * once (the pipeline's `batch.stagger` says what that buys).
   */
  readonly stagger?: number | undefined
}

/**
 * The golden ratio's inverse, (√5 − 1) / 2. The fractional parts of `p × φ`
 * for p = 0, 1, 2, … fill [0, 1) more evenly than those of any other
 * multiplier (the three-gap theorem; "Fibonacci hashing"): any run of
 * consecutive partitions gets shares spread over the stagger's whole range,
 * no two alike.
 */
const GOLDEN = (Math.sqrt(5) - 1) / 2

/**
 * The share of the target at which partition `partition`'s batches seal:
 * `1 − stagger × frac(partition × φ)`, in `(1 − stagger, 1]`; partition 0
 * seals at the target itself.
 *
 * **Example**
 *
 * ```ts
 * import { Sealer } from "@sluice/core"
 *
 * Sealer.staggerFactor(0, 0.25) // 1
 * Sealer.staggerFactor(1, 0.25) // 1 − 0.25 × 0.618… ≈ 0.845
 * ```
 *
 * @since 0.5.0
 */
export const staggerFactor = (partition: number, stagger: number): number =>
  stagger === 0 ? 1 : 1 - stagger * ((Math.abs(partition) * GOLDEN) % 1)

/**
 * A mutable sealer. See the module doc.
 *
 * **Example**
 *
 * ```ts
 * import { Record, Sealer } from "@sluice/core"
 *
 * const sealer = new Sealer.Sealer({ prefix: "archive" })
 * const target = { records: 2, bytes: 1 << 20, maxAgeMillis: 60_000 }
 * const sealed = sealer.append(Record.syntheticChunk("demo", 0, 0, 5, 100), target, 0)
 * // two batches of 2 records sealed on "records"; 1 record stays open
 * ```
 *
 * @since 0.1.0
 */
export class Sealer {
  private readonly open = new Map<string, OpenBatch>()
  private readonly sequences = new Map<string, number>()
  private readonly pendingGaps = new Map<string, GapRecord>()
  /** Open batches marked `held`. */
  private heldCount = 0
  /** Bytes held in open batches. */
  openBytes = 0
  /** Budget charge of the open batches (see {@link SealerOptions.charge}). */
  openCharge = 0

  private readonly options: SealerOptions
  private readonly chargeOf: (chunk: RecordChunk) => number
  /** The batches' compression; undefined for none (batches then carry none). */
  private readonly compression: Compression.Setting | undefined
  private readonly stagger: number

  constructor(options: SealerOptions = {}) {
    this.options = options
    this.chargeOf = options.charge ?? ((chunk) => chunk.bytes)
    this.compression = options.compression?.codec === "none" ? undefined : options.compression
    const stagger = options.stagger ?? 0
    if (!(stagger >= 0 && stagger < 1)) throw new RangeError(`Sealer: stagger must be in [0, 1), got ${stagger}`)
    this.stagger = stagger
  }

  /** Number of open batches. */
  get openBatches(): number {
    return this.open.size
  }

  /**
   * Appends a chunk, splitting it across batches as needed; returns the batches
   * it sealed (on `records` or `bytes`), in order.
   */
  append(chunk: RecordChunk, target: BatchTarget, now: number): Array<SealedBatch> {
    const sealed: Array<SealedBatch> = []
    let rest: RecordChunk | undefined = chunk
    const id = keyOf(chunk.source, chunk.partition)
    while (rest !== undefined && rest.count > 0) {
      let batch = this.open.get(id)
      if (batch === undefined) {
        batch = {
          source: rest.source,
          partition: rest.partition,
          openedAt: now,
          chunks: [],
          records: 0,
          bytes: 0,
          charge: 0,
          gap: this.pendingGaps.get(id),
          caughtUp: false,
          held: false,
          scale: staggerFactor(rest.partition, this.stagger)
        }
        this.pendingGaps.delete(id)
        this.open.set(id, batch)
      }
      const roomRecords = scaled(target.records, batch.scale) - batch.records
      const roomBytes = scaled(target.bytes, batch.scale) - batch.bytes
      if (rest.count < roomRecords && rest.bytes < roomBytes) {
        this.add(batch, rest)
        rest = undefined
        break
      }
      // The chunk reaches the target: take what fits (at least one record so a
      // record larger than the target still makes progress), seal, continue.
      const byRecords = Math.min(rest.count, roomRecords)
      const byBytes = recordsFitting(rest, roomBytes)
      let take = Math.min(byRecords, byBytes)
      if (take === 0 && batch.records === 0) take = 1
      const reason: SealReason = byRecords <= byBytes ? "records" : "bytes"
      if (take >= rest.count) {
        this.add(batch, rest)
        rest = undefined
      } else if (take > 0) {
        const [head, tail] = splitAt(rest, take)
        this.add(batch, head)
        rest = tail
      }
      // Batches held open past maxAge and opened before this one go first:
      // a younger batch sealed on its target never overtakes them.
      if (this.heldCount > 0) this.sealHeldBefore(batch.openedAt, now, sealed)
      sealed.push(this.seal(id, batch, reason, now))
    }
    return sealed
  }

  /**
   * Seals the batches whose oldest record is at least `maxAgeMillis` old, the
   * longest open first, at most `limit` of them (default: all); the others
   * stay open, and keep filling, until a later call or until a batch opened
   * after them is sealed on its target ({@link append} seals them first).
   */
  sealExpired(now: number, maxAgeMillis: number, limit = Number.POSITIVE_INFINITY): Array<SealedBatch> {
    const sealed: Array<SealedBatch> = []
    // The map keeps insertion order, and a batch is inserted when it opens:
    // iterating it visits the longest open first.
    for (const [id, batch] of this.open) {
      if (now - batch.openedAt < maxAgeMillis) continue
      if (sealed.length < limit) sealed.push(this.seal(id, batch, "age", now))
      else if (!batch.held) {
        batch.held = true
        this.heldCount++
      }
    }
    return sealed
  }

  /** Seals the held batches opened before `openedAt` (on `age`), appending them to `into`. */
  private sealHeldBefore(openedAt: number, now: number, into: Array<SealedBatch>): void {
    for (const [id, batch] of this.open) {
      if (batch.held && batch.openedAt < openedAt) into.push(this.seal(id, batch, "age", now))
    }
  }

  /** Seals the open batch of one partition, if any. */
  sealPartition(source: string, partition: number, reason: SealReason, now: number): Array<SealedBatch> {
    const id = keyOf(source, partition)
    const batch = this.open.get(id)
    return batch === undefined ? [] : [this.seal(id, batch, reason, now)]
  }

  /**
   * Marks the open batch of one partition as holding the last records of a
   * backlog, for {@link sealCaughtUp}; nothing when it has none.
   */
  markCaughtUp(source: string, partition: number): void {
    const batch = this.open.get(keyOf(source, partition))
    if (batch !== undefined) batch.caughtUp = true
  }

  /** Seals the batches {@link markCaughtUp} marked (`caughtUp`). */
  sealCaughtUp(now: number): Array<SealedBatch> {
    const sealed: Array<SealedBatch> = []
    for (const [id, batch] of this.open) {
      if (batch.caughtUp) sealed.push(this.seal(id, batch, "caughtUp", now))
    }
    return sealed
  }

  /** Seals every open batch with `reason` (`pressure` or `drain`). */
  sealAll(reason: SealReason, now: number): Array<SealedBatch> {
    const sealed: Array<SealedBatch> = []
    for (const [id, batch] of this.open) sealed.push(this.seal(id, batch, reason, now))
    return sealed
  }

  /**
   * Drops the open batches of `partitions` of `source` without sealing them
   * (a revoke: the new owner re-reads those records). Returns the bytes freed.
   */
  drop(source: string, partitions: ReadonlyArray<number>): number {
    return this.dropPartitions(source, partitions).bytes
  }

  /**
   * Like {@link drop}, returning both the payload bytes and the budget charge
   * freed.
   */
  dropPartitions(source: string, partitions: ReadonlyArray<number>): { readonly bytes: number; readonly charge: number } {
    let bytes = 0
    let charge = 0
    for (const partition of partitions) {
      const id = keyOf(source, partition)
      const batch = this.open.get(id)
      if (batch !== undefined) {
        if (batch.held) this.heldCount--
        bytes += batch.bytes
        charge += batch.charge
        this.openBytes -= batch.bytes
        this.openCharge -= batch.charge
        this.open.delete(id)
      }
      this.pendingGaps.delete(id)
    }
    return { bytes, charge }
  }

  /** Records a retention gap; the partition's next batch carries it in its manifest. */
  recordGap(source: string, partition: number, gap: GapRecord): void {
    const id = keyOf(source, partition)
    const batch = this.open.get(id)
    if (batch !== undefined && batch.records === 0) batch.gap = gap
    else this.pendingGaps.set(id, gap)
  }

  private add(batch: OpenBatch, chunk: RecordChunk): void {
    const charge = this.chargeOf(chunk)
    batch.chunks.push(chunk)
    batch.records += chunk.count
    batch.bytes += chunk.bytes
    batch.charge += charge
    this.openBytes += chunk.bytes
    this.openCharge += charge
  }

  private seal(id: string, batch: OpenBatch, reason: SealReason, now: number): SealedBatch {
    this.open.delete(id)
    if (batch.held) this.heldCount--
    this.openBytes -= batch.bytes
    this.openCharge -= batch.charge
    const sequence = this.sequences.get(id) ?? 0
    this.sequences.set(id, sequence + 1)
    const first = batch.chunks[0]
    const last = batch.chunks[batch.chunks.length - 1]
    const firstOffset = first === undefined ? 0 : first.firstOffset
    const lastOff = last === undefined ? firstOffset : lastOffset(last)
    return {
      key: ObjectKey.make({
        prefix: this.options.prefix,
        source: batch.source,
        partition: batch.partition,
        firstOffset,
        lastOffset: lastOff
      }),
      source: batch.source,
      partition: batch.partition,
      sequence,
      firstOffset,
      lastOffset: lastOff,
      records: batch.records,
      bytes: batch.bytes,
      sealReason: reason,
      openedAt: batch.openedAt,
      sealedAt: now,
      chunks: batch.chunks,
      gap: batch.gap,
      ...(this.compression !== undefined ? { compression: this.compression } : {})
    }
  }
}

/** `target × scale`, at least 1 (a target of 1 stays 1: every record alone). */
const scaled = (target: number, scale: number): number => (scale === 1 ? target : Math.max(1, Math.floor(target * scale)))

const keyOf = (source: string, partition: number): string => `${source}\u0000${partition}`

/** How many leading records of `chunk` fit in `roomBytes`. */
const recordsFitting = (chunk: RecordChunk, roomBytes: number): number => {
  if (roomBytes <= 0) return 0
  if (chunk.bytes <= roomBytes) return chunk.count
  if (chunk.framed !== undefined) return framedPrefix(chunk.framed, chunk.count, roomBytes).records
  if (chunk.payloads === undefined) {
    return Math.floor((roomBytes * chunk.count) / chunk.bytes)
  }
  let used = 0
  let i = 0
  for (; i < chunk.payloads.length; i++) {
    const size = chunk.payloads[i]?.byteLength ?? 0
    if (used + size > roomBytes) break
    used += size
  }
  return i
}

