/**
 * The counters of a run: one mutable record every stage writes its own fields
 * of, readable at any time through `PipelineHandle.stats()`.
 *
 * Each field names the stage that writes it; no stage writes another's.
 *
 * @since 0.2.0
 */
import type { ReadGate } from "../Knob.ts"
import type { RunningUpload } from "../Signal.ts"

/**
 * Counters of a run, readable at any time (`PipelineHandle.stats()`) and
 * returned at the end. Re-exported as `Pipeline.PipelineStats`.
 *
 * **Details**
 *
 * Every field is a number, the read gate, a map with one entry per
 * partition (bounded by the partitions the source owns), or the set of
 * running uploads (bounded by the concurrency limit).
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 *
 * const program = Effect.gen(function*() {
 *   const handle = yield* Pipeline.start({ source: Memory.source({ name: "t", partitions: 1, records: 10, recordBytes: 8 }), sink: Memory.sink() })
 *   const stats = yield* handle.await
 *   return stats.recordsCommitted // 10
 * })
 * ```
 *
 * @since 0.1.0
 */
export interface PipelineStats {
  /** Admission: records accepted from the source. */
  recordsRead: number
  /** Admission: payload bytes accepted from the source. */
  bytesRead: number
  /** Sealing: batches sealed. */
  batchesSealed: number
  /** Limiter: batches uploading now (holding a concurrency permit). */
  uploading: number
  /** Uploader: sealed batches waiting for a permit, a retry or their partition's commit. */
  queued: number
  /**
   * Uploader: sealed batches handed to it and not yet verified (and
   * committed) or abandoned: queued, waiting out a retry, held for their
   * partition's commit, or uploading.
   *
   * @since 0.5.0
   */
  batchesOutstanding: number
  /**
   * Admission: bytes charged to the memory budget now — payload plus the
   * per-record overhead (see `MemoryBudget`) of open, sealed and uploading
   * batches. Never above the budget by more than one chunk.
   */
  inflightBytes: number
  /** Admission: the highest `inflightBytes` so far. */
  maxInflightBytes: number
  /** Admission: payload bytes in open (unsealed) batches. */
  openBytes: number
  /** Uploader: batches verified in storage. */
  batchesVerified: number
  /** Uploader: records verified in storage. */
  recordsVerified: number
  /** Uploader: payload bytes verified. */
  bytesVerified: number
  /** Committer: records whose position was committed to the source (a commit the source refused is not counted). */
  recordsCommitted: number
  /** Committer: commits the source refused (`Source.CommitRefused`: the partition was no longer its own). */
  commitsRefused: number
  /**
   * Committer: records verified in storage whose partition was revoked before
   * their position was committed. The partition's next owner archives them
   * again: a rebalance's duplicates (see `SignalBus.LeftOnRevokeSignal`).
   *
   * @since 0.5.0
   */
  recordsLeftOnRevoke: number
  /** Limiter: sink requests made. */
  requests: number
  /** Limiter: sink requests failed. */
  failures: number
  /** Limiter: sink requests throttled. */
  throttles: number
  /** Uploader: retries scheduled (each one is also logged). */
  retries: number
  /** Admission: records lost to retention before being read. */
  retentionGapRecords: number
  /** Admission: the read gate in force. */
  readGate: ReadGate
  /** Committer: next offset committed, per `source/partition`. */
  readonly committed: Map<string, number>
  /**
   * Committer: age (ms) of the oldest sealed batch not yet committed (from its
   * first record's arrival); 0 when everything sealed is committed. Updated
   * every tick.
   */
  oldestUncommittedAgeMillis: number
  /**
   * Committer: partitions whose verified-but-uncommitted batches reached the
   * cap (`maxVerifiedAhead`): their new batches wait until the batch holding
   * them back is verified or fails the run.
   */
  partitionsHeld: number
  /**
   * Limiter: the object uploads running now: when each began, its bytes and
   * the uploads in flight when it began (at most one per batch holding a
   * permit: bounded by the concurrency limit). The ticker publishes their
   * median (`Inflight.medianUpload`).
   */
  readonly runningUploads: Set<RunningUpload>
}

/**
 * Fresh counters, all zero.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import * as Stats from "./stage/Stats.ts"
 * const stats = Stats.make("open")
 * ```
 *
 * @since 0.2.0
 */
export const make = (readGate: ReadGate): PipelineStats => ({
  recordsRead: 0,
  bytesRead: 0,
  batchesSealed: 0,
  uploading: 0,
  queued: 0,
  batchesOutstanding: 0,
  inflightBytes: 0,
  maxInflightBytes: 0,
  openBytes: 0,
  batchesVerified: 0,
  recordsVerified: 0,
  bytesVerified: 0,
  recordsCommitted: 0,
  commitsRefused: 0,
  requests: 0,
  failures: 0,
  throttles: 0,
  retries: 0,
  retentionGapRecords: 0,
  recordsLeftOnRevoke: 0,
  readGate,
  committed: new Map(),
  oldestUncommittedAgeMillis: 0,
  partitionsHeld: 0,
  runningUploads: new Set()
})

/**
 * Whether a batch sealed now would find a permit free: fewer batches are
 * outstanding (queued, retrying, held or uploading) than the concurrency
 * knob's value. Counted from what the uploader was handed, not from
 * `queued` and `uploading`: a batch between the queue and its permit is in
 * neither.
 *
 * @since 0.5.0
 */
export const uploaderIdle = (stats: PipelineStats, concurrency: number): boolean => stats.batchesOutstanding < concurrency
