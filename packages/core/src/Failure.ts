/**
 * Classified failures: how a sink tells the pipeline and the policies what went
 * wrong, in the only three words a pressure controller needs.
 *
 * - `Throttled`: the store asked us to slow down (503 SlowDown, 429, …). Policies
 *   cut concurrency and rate; the batch is retried later, never at the same rate.
 * - `Transient`: a fault worth retrying (500, reset, timeout) that says nothing
 *   about load.
 * - `Fatal`: retrying the same request will not help (403, 400, checksum
 *   mismatch). Never cuts concurrency, never retried blindly.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The three failure classes.
 *
 * @since 0.1.0
 */
export const FailureClass = Schema.Literals(["Throttled", "Transient", "Fatal"])

/**
 * `FailureClass` as a type: what the `FailureClass` schema decodes to.
 *
 * @since 0.1.0
 */
export type FailureClass = typeof FailureClass.Type

/**
 * The pipeline stages whose duration and failures are observed.
 *
 * @since 0.1.0
 */
export const Stage = Schema.Literals(["object_upload", "manifest_upload", "verify", "commit"])

/**
 * `Stage` as a type: what the `Stage` schema decodes to.
 *
 * @since 0.1.0
 */
export type Stage = typeof Stage.Type

/**
 * A sink operation failed, already classified by the sink adapter.
 *
 * **Example**
 *
 * ```ts
 * import { Failure } from "@sluice/core"
 *
 * const slowDown = new Failure.SinkFailure({
 *   failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload",
 *   retryAfterMillis: undefined, message: "Please reduce your request rate."
 * })
 * ```
 *
 * @since 0.1.0
 */
export class SinkFailure extends Schema.TaggedError<SinkFailure>()("SinkFailure", {
  failureClass: FailureClass,
  /** Provider error code (`SlowDown`, `InternalError`, `Unknown`, …). */
  code: Schema.String,
  /** HTTP status when there was a response. */
  status: Schema.UndefinedOr(Schema.Number),
  stage: Stage,
  /** Server-requested delay before the next attempt (Retry-After), in ms. */
  retryAfterMillis: Schema.UndefinedOr(Schema.Number),
  message: Schema.String
}) {}

/**
 * Verification proved the stored object is not the one we uploaded (size or
 * service-computed checksum differ, or the object is missing). Never committed.
 *
 * @since 0.1.0
 */
export class VerificationFailed extends Schema.TaggedError<VerificationFailed>()("VerificationFailed", {
  key: Schema.String,
  reason: Schema.Literals(["ChecksumMismatch", "SizeMismatch", "Missing"]),
  expected: Schema.String,
  actual: Schema.String
}) {}

/**
 * The classified view of any sink error, as published on the signal bus.
 *
 * @since 0.1.0
 */
export interface ClassifiedFailure {
  /** `Throttled` (the store shedding load), `Transient` (retry) or `Fatal` (do not). */
  readonly failureClass: FailureClass
  /** The provider's error code (`SlowDown`, `InternalError`, …), or the verification failure's reason. */
  readonly code: string
  /** The HTTP status, when there was a response. */
  readonly status: number | undefined
  /** The request that failed: `object_upload`, `manifest_upload` or `verify`. */
  readonly stage: Stage
  /** The delay the server asked for before the next attempt (Retry-After), in ms. */
  readonly retryAfterMillis: number | undefined
}

/**
 * Classifies a sink error. A verification failure is `Fatal` with code
 * `ChecksumMismatch` / `SizeMismatch` / `Missing`.
 *
 * @since 0.1.0
 */
export const classify = (error: SinkFailure | VerificationFailed): ClassifiedFailure =>
  error._tag === "SinkFailure"
    ? {
      failureClass: error.failureClass,
      code: error.code,
      status: error.status,
      stage: error.stage,
      retryAfterMillis: error.retryAfterMillis
    }
    : { failureClass: "Fatal", code: error.reason, status: undefined, stage: "verify", retryAfterMillis: undefined }
