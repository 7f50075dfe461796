/**
 * The retry policy: how long to wait before re-uploading a failed batch, or
 * whether to give up. Supplied by a policy (the throttle classifier provides one
 * that honours Retry-After and never retries fatal failures); the default below
 * applies when none is provided.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import type { ClassifiedFailure } from "./Failure.ts"

/**
 * `delayMillis(failure, attempt)` returns the wait before attempt `attempt + 1`,
 * or `undefined` to give up (the pipeline then fails with `BatchFailed`; nothing
 * of the batch is committed, so its records are re-read on restart).
 *
 * @since 0.1.0
 */
export interface RetryPolicy {
  readonly delayMillis: (failure: ClassifiedFailure, attempt: number) => number | undefined
}

/**
 * Exponential backoff from `baseMillis`, doubling per attempt up to `maxMillis`,
 * never shorter than the server's Retry-After; `Fatal` failures are not retried.
 * Deterministic (no jitter) so simulations are reproducible.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const retry = RetryPolicy.exponential({ baseMillis: 50, maxMillis: 5_000 })
 * ```
 *
 * @since 0.1.0
 */
export const exponential = (options: { readonly baseMillis: number; readonly maxMillis: number }): RetryPolicy => ({
  delayMillis: (failure, attempt) => {
    if (failure.failureClass === "Fatal") return undefined
    const backoff = Math.min(options.maxMillis, options.baseMillis * 2 ** Math.max(0, attempt - 1))
    return Math.max(backoff, failure.retryAfterMillis ?? 0)
  }
})

/**
 * The retry policy in force (a `Context.Reference`, defaulting to
 * `exponential({ baseMillis: 100, maxMillis: 30_000 })`).
 *
 * @since 0.1.0
 */
export const CurrentRetryPolicy = Context.Reference<RetryPolicy>("@sluice/core/RetryPolicy", {
  defaultValue: () => exponential({ baseMillis: 100, maxMillis: 30_000 })
})
