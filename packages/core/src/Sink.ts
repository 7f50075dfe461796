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
  /**
   * Whether the sink may still reference a batch's body (`Batch.encodeBody`)
   * after its `putObject` effect has ended. `false` declares that it does
   * not — the bytes were sent or copied, and nothing `putObject` started
   * still reads them — so the pipeline recycles the body's memory for a
   * later batch once the object is stored (`Batch.recycleBody`: encoding
   * then writes into memory already mapped instead of a fresh allocation).
   * Leave it out (the default, `true`) when the sink keeps the bytes (an
   * in-memory store) or when work it started can outlive the call (a
   * replica still uploading after quorum): a recycled body is overwritten.
   * A wrapper that spreads a sink (`{ ...s3, putObject }`) inherits the
   * flag: set it back to `true` if the wrapper keeps the body.
   */
  readonly keepsBodies?: boolean | undefined
}
