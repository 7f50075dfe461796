/**
 * The sink contract: where sealed batches are stored, and how they are proven
 * to have landed intact.
 *
 * Quorum replication over several sinks is `Replicated.make`; it builds on
 * this contract, which imports nothing back (no cycle).
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import type { Checksum, Manifest, SealedBatch } from "./Batch.ts"
import type { SinkFailure, VerificationFailed } from "./Failure.ts"

/**
 * What a successful object upload returns.
 *
 * @since 0.1.0
 */
export interface PutReceipt {
  readonly key: string
  /** Bytes of the stored object body. */
  readonly objectBytes: number
  /** The checksum computed locally and sent with the upload. */
  readonly checksum: Checksum
  /**
   * Milliseconds of the call spent computing the checksum locally (on this
   * process's CPU, not waiting for the store). The pipeline takes them out of
   * the `object_upload` latency sample, so that policies read the store's
   * latency, not a local CPU limit. Optional: a sink that leaves it out is
   * timed whole.
   */
  readonly checksumMillis?: number | undefined
}

/**
 * Proof that the object is in storage with the expected size and checksum, as
 * reported by the store (never an ETag).
 *
 * @since 0.1.0
 */
export interface VerifiedReceipt {
  readonly key: string
  readonly objectBytes: number
  readonly checksum: Checksum
}

/**
 * The sink contract.
 *
 * **Details**
 *
 * - `putObject` stores the batch's body under `batch.key` (overwriting: keys are
 *   deterministic, so a replay replaces rather than duplicates).
 * - `putManifest` stores the manifest next to it.
 * - `verify` asks the store for the object's size and checksum and fails with
 *   `VerificationFailed` if they differ from the receipt.
 * - Errors are classified by the adapter (`SinkFailure.failureClass`), so
 *   policies see every throttle.
 *
 * **Example**
 *
 * ```ts
 * import { Memory } from "@sluice/core"
 *
 * const sink = Memory.sink() // stores objects in a Map; sink.objects for inspection
 * ```
 *
 * @since 0.1.0
 */
export interface Sink {
  /** The sink's name (the replicas of a replicated sink need distinct names). */
  readonly name: string
  /** Stores the batch's body under `batch.key`, overwriting (keys are deterministic). */
  readonly putObject: (batch: SealedBatch) => Effect.Effect<PutReceipt, SinkFailure>
  /** Stores the batch's manifest next to its object. */
  readonly putManifest: (manifest: Manifest) => Effect.Effect<void, SinkFailure>
  /**
   * Asks the store for the object's size and checksum; fails with
   * `VerificationFailed` if they differ from the receipt.
   */
  readonly verify: (receipt: PutReceipt) => Effect.Effect<VerifiedReceipt, SinkFailure | VerificationFailed>
}
