/**
 * The retry policy: how long to wait before re-uploading a failed batch, or
 * whether to give up — and the **retry budget** that bounds every policy.
 *
 * - A policy (`RetryPolicy`) chooses the delay. A policy may supply its own
 *   (the throttle classifier honours Retry-After); {@link standard} applies
 *   when none is provided: exponential backoff with per-batch jitter.
 * - The budget ({@link RetryBudget}) says when to stop, whatever the policy
 *   says: after `maxAttempts` attempts, after `maxElapsedMillis` of failures
 *   of one batch (15 minutes by default), or once a batch's failures in a row
 *   with a code that means the store cannot be reached (`ECONNREFUSED`,
 *   `ENOTFOUND`, `EAI_AGAIN`, … — adapters classify those as `Transient`, so
 *   the budget tells them by code) have lasted `unreachableMillis` (30 s by
 *   default): a server restarting is ridden through, an endpoint that stays
 *   refused fails the run at the first failure past the 30 s — within 30 s
 *   plus one retry delay (37.5-48 s with the S3 server killed, `npm run faults --
 *   --only s3-outage`). The pipeline checks it
 *   before asking the policy ({@link exhausted}); giving up fails the run with
 *   `BatchFailed`, and nothing of that batch is committed.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import type { ClassifiedFailure } from "./Failure.ts"

/**
 * What the pipeline knows about the batch being retried.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * // A policy that backs off longer for a batch that has failed for a minute.
 * const patient: RetryPolicy.RetryPolicy = {
 *   delayMillis: (failure, attempt, context) =>
 *     failure.failureClass === "Fatal" ? undefined
 *       : context !== undefined && context.now - context.firstFailureAt > 60_000 ? 10_000 : 100 * attempt
 * }
 * ```
 *
 * @since 0.2.0
 */
export interface RetryContext {
  /** The batch's object key: seeds the per-batch jitter. */
  readonly key: string
  /** When the batch's first failure happened (Clock ms). */
  readonly firstFailureAt: number
  /** Now (Clock ms). */
  readonly now: number
  /** Consecutive failures of this batch with this failure's code, this one included. */
  readonly sameCode: number
  /** When the first of those `sameCode` failures happened (Clock ms; absent: taken as `firstFailureAt`). */
  readonly sameCodeSince?: number | undefined
}

/**
 * `delayMillis(failure, attempt, context)` returns the wait before attempt
 * `attempt + 1`, or `undefined` to give up (the pipeline then fails with
 * `BatchFailed`; nothing of the batch is committed, so its records are
 * re-read on restart). `context` is given by the pipeline; a policy written
 * before it existed may ignore it.
 *
 * @since 0.1.0
 */
export interface RetryPolicy {
  /** The wait (ms) before attempt `attempt + 1`, or `undefined` to give up. */
  readonly delayMillis: (failure: ClassifiedFailure, attempt: number, context?: RetryContext) => number | undefined
}

/**
 * When to stop retrying one batch, whatever the policy says. The pipeline's
 * budget comes from its config (`retry.maxAttempts`, `retry.maxElapsed`,
 * `retry.unreachableFor`) with {@link defaultBudget}'s codes.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const oneHour: RetryPolicy.RetryBudget = { ...RetryPolicy.defaultBudget, maxElapsedMillis: 3_600_000 }
 * ```
 *
 * @since 0.2.0
 */
export interface RetryBudget {
  /** Attempts of one batch, the first included. */
  readonly maxAttempts: number
  /** Time from the batch's first failure after which it is not retried again. */
  readonly maxElapsedMillis: number
  /** How long one batch's failures in a row with one of `unreachableCodes` may last before the store counts as unreachable. */
  readonly unreachableMillis: number
  /** Codes that mean the store cannot be reached at all (connection refused, DNS). */
  readonly unreachableCodes: ReadonlyArray<string>
}

/**
 * How long a store may refuse connections (or not resolve) before a batch
 * gives up: 30 s.
 *
 * **Details**
 *
 * Long enough for what takes a store away for seconds — a process restart
 * (versitygw 0.3 s here; a JVM service on unclean logs 12 s), a load
 * balancer's failover after two or three 10 s health checks — and short
 * enough that a wrong endpoint, port or host name fails the run within a
 * minute of start (the budget is checked at each failure: 30 s plus the retry
 * delay then). It was 3 attempts in a row (~0.3 s with the default
 * backoff), which a server killed and restarted in 1 s already exceeded
 * (`npm run faults -- --only s3-kill`).
 *
 * @since 0.4.0
 */
export const UNREACHABLE_MILLIS = 30_000

/** Codes that mean the store cannot be reached at all: the connection refused, no route, DNS. */
const UNREACHABLE_CODES: ReadonlyArray<string> = ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]

/**
 * Codes that say the store gave no answer at all — the connection refused or
 * not resolved ({@link defaultBudget}'s `unreachableCodes`), reset or cut, or
 * the request timed out (`TimeoutError` is the AWS SDK's name for its
 * `requestTimeout`) — as opposed to an answer that refused the request (a 5xx
 * or a throttle).
 *
 * **Details**
 *
 * A batch backing off after one of these retries as soon as the store answers
 * another request (the pipeline's uploader wakes it when a batch is verified):
 * what failed was the connection, not the batch, so once the store answers the
 * batch's grown backoff only delays it. With the S3 server stalled 30 s
 * (`npm run faults -- --only stall`) the archiver committed again 20 s after
 * the stall ended, waiting out backoffs grown during it. An answer that refused
 * the batch is not woken early: retrying it whenever another batch succeeds
 * would spend its attempts in seconds.
 *
 * @since 0.4.0
 */
export const NO_ANSWER_CODES: ReadonlyArray<string> = [
  ...UNREACHABLE_CODES,
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "ETIMEDOUT",
  "TimeoutError"
]

/**
 * The default budget: 100 attempts, 15 minutes of failures for one batch, 30
 * seconds of connection-refused / DNS failures in a row.
 *
 * **Details**
 *
 * With the default backoff (capped at 30 s) 15 minutes is ~35 attempts, so
 * the elapsed time is the bound that binds; `maxAttempts` bounds policies
 * that retry fast. {@link UNREACHABLE_MILLIS} says why 30 s.
 *
 * @since 0.2.0
 */
export const defaultBudget: RetryBudget = {
  maxAttempts: 100,
  maxElapsedMillis: 15 * 60_000,
  unreachableMillis: UNREACHABLE_MILLIS,
  unreachableCodes: UNREACHABLE_CODES
}

/**
 * Why the budget is spent for this failure, or `undefined` if a retry is
 * still allowed (whether a `Fatal` failure is retried at all is the policy's
 * call; every built-in policy gives up on it).
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const refused = { failureClass: "Transient", code: "ECONNREFUSED", status: undefined, stage: "object_upload", retryAfterMillis: undefined } as const
 * RetryPolicy.exhausted(RetryPolicy.defaultBudget, refused, 3, { key: "k", firstFailureAt: 0, now: 1_000, sameCode: 3, sameCodeSince: 0 })
 * // undefined: refused for 1 s, within the 30 s
 * RetryPolicy.exhausted(RetryPolicy.defaultBudget, refused, 9, { key: "k", firstFailureAt: 0, now: 31_000, sameCode: 9, sameCodeSince: 0 })
 * // "store unreachable: ECONNREFUSED for 31 s (9 attempts in a row; budget 30 s)"
 * ```
 *
 * @since 0.2.0
 */
export const exhausted = (
  budget: RetryBudget,
  failure: ClassifiedFailure,
  attempt: number,
  context: RetryContext | undefined
): string | undefined => {
  if (attempt >= budget.maxAttempts) return `retry budget spent: ${attempt} attempts`
  if (context === undefined) return undefined
  const elapsed = context.now - context.firstFailureAt
  if (elapsed >= budget.maxElapsedMillis) {
    return `retry budget spent: failing for ${Math.round(elapsed / 1000)} s (budget ${Math.round(budget.maxElapsedMillis / 1000)} s)`
  }
  if (budget.unreachableCodes.includes(failure.code)) {
    const refusedFor = context.now - (context.sameCodeSince ?? context.firstFailureAt)
    if (refusedFor >= budget.unreachableMillis) {
      return `store unreachable: ${failure.code} for ${Math.round(refusedFor / 1000)} s (${context.sameCode} attempts in a row; budget ${Math.round(budget.unreachableMillis / 1000)} s)`
    }
  }
  return undefined
}

/**
 * A policy that also gives up when `budget` is spent (see {@link exhausted}).
 *
 * **When to use**
 *
 * Outside the pipeline (which checks its own budget before any policy), or to
 * give a policy a tighter budget than the pipeline's.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const retry = RetryPolicy.bounded(RetryPolicy.standard, { ...RetryPolicy.defaultBudget, maxElapsedMillis: 60_000 })
 * ```
 *
 * @since 0.2.0
 */
export const bounded = (policy: RetryPolicy, budget: RetryBudget = defaultBudget): RetryPolicy => ({
  delayMillis: (failure, attempt, context) =>
    exhausted(budget, failure, attempt, context) === undefined ? policy.delayMillis(failure, attempt, context) : undefined
})

/**
 * A number in [0, 1) drawn from the batch key and the attempt: deterministic
 * (a simulation replays exactly), different for every batch (two batches
 * throttled on the same attempt do not retry at the same instant).
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * RetryPolicy.jitter("t/p=00000/a.rec", 2) !== RetryPolicy.jitter("t/p=00001/a.rec", 2) // true
 * ```
 *
 * @since 0.2.0
 */
export const jitter = (key: string, attempt: number): number => {
  // FNV-1a over the key, mixed with the attempt, then one mulberry32 step.
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  let t = (h ^ Math.imul(attempt, 0x9e3779b1)) >>> 0
  t = (t + 0x6d2b79f5) >>> 0
  let r = Math.imul(t ^ (t >>> 15), 1 | t)
  r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r
  return ((r ^ (r >>> 14)) >>> 0) / 4294967296
}

/**
 * Exponential backoff from `baseMillis`, doubling per attempt up to `maxMillis`,
 * never shorter than the server's Retry-After; `Fatal` failures are not retried.
 *
 * **Details**
 *
 * With `jitter: true` (and a context from the pipeline) the delay is "equal
 * jitter": half the backoff fixed, half drawn by {@link jitter} from the batch
 * key and the attempt — deterministic, and different per batch. Without it the
 * delay is the full backoff.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const retry = RetryPolicy.exponential({ baseMillis: 50, maxMillis: 5_000, jitter: true })
 * ```
 *
 * @since 0.1.0
 */
export const exponential = (options: {
  readonly baseMillis: number
  readonly maxMillis: number
  readonly jitter?: boolean | undefined
}): RetryPolicy => ({
  delayMillis: (failure, attempt, context) => {
    if (failure.failureClass === "Fatal") return undefined
    const backoff = Math.min(options.maxMillis, options.baseMillis * 2 ** Math.max(0, attempt - 1))
    const delay = options.jitter === true && context !== undefined
      ? Math.round(backoff / 2 + (backoff / 2) * jitter(context.key, attempt))
      : backoff
    return Math.max(delay, failure.retryAfterMillis ?? 0)
  }
})

/**
 * The default delays: `exponential({ baseMillis: 100, maxMillis: 30_000,
 * jitter: true })`. The pipeline's retry budget bounds it (and every other
 * policy); {@link bounded} bounds it outside a pipeline.
 *
 * **Example**
 *
 * ```ts
 * import { RetryPolicy } from "@sluice/core"
 *
 * const slowDown = { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined } as const
 * RetryPolicy.standard.delayMillis(slowDown, 3, { key: "k", firstFailureAt: 0, now: 0, sameCode: 3 }) // 200..400 ms, fixed for key "k"
 * ```
 *
 * @since 0.2.0
 */
export const standard: RetryPolicy = exponential({ baseMillis: 100, maxMillis: 30_000, jitter: true })

/**
 * The retry policy in force (a `Context.Reference`, defaulting to
 * {@link standard}).
 *
 * **Example**
 *
 * ```ts
 * import { Layer } from "effect"
 * import { RetryPolicy } from "@sluice/core"
 *
 * const fastRetry = Layer.succeed(RetryPolicy.CurrentRetryPolicy, RetryPolicy.exponential({ baseMillis: 20, maxMillis: 500 }))
 * ```
 *
 * @since 0.1.0
 */
export const CurrentRetryPolicy = Context.Reference<RetryPolicy>("@sluice/core/RetryPolicy", {
  defaultValue: () => standard
})
