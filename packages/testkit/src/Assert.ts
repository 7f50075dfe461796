/**
 * Assertions for test suites over a run's trace and summary. Each returns an
 * `Effect` that fails with {@link AssertionFailed} (so `yield*` it inside
 * `it.effect`), and has a pure `check…` twin returning the failure message or
 * `undefined`.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import type { RunResult } from "./Runner.ts"
import type { Trace } from "./Trace.ts"

/**
 * An assertion did not hold.
 *
 * @since 0.1.0
 */
export class AssertionFailed extends Schema.TaggedError<AssertionFailed>()("AssertionFailed", {
  assertion: Schema.String,
  message: Schema.String
}) {}

const toEffect = (assertion: string, message: string | undefined): Effect.Effect<void, AssertionFailed> =>
  message === undefined ? Effect.void : Effect.fail(new AssertionFailed({ assertion, message }))

/**
 * Concurrency never below `floor` in any sample.
 *
 * @since 0.1.0
 */
export const checkNeverBelowFloor = (trace: Trace, floor: number): string | undefined => {
  const row = trace.rows.find((r) => r.concurrency < floor)
  return row === undefined ? undefined : `concurrency ${row.concurrency} < floor ${floor} at ${row.t / 1000} s`
}

/**
 * Effect form of {@link checkNeverBelowFloor}.
 *
 * **Example**
 *
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Effect } from "effect"
 * import { Assert, Runner } from "@sluice/testkit"
 * declare const scenario: import("@sluice/testkit").Scenario.Scenario
 *
 * it.effect("keeps its floor", () =>
 *   Effect.gen(function*() {
 *     const result = yield* Runner.run(scenario)
 *     yield* Assert.expectNeverBelowFloor(result, 1)
 *   }))
 * ```
 *
 * @since 0.1.0
 */
export const expectNeverBelowFloor = (result: RunResult, floor: number): Effect.Effect<void, AssertionFailed> =>
  toEffect("expectNeverBelowFloor", checkNeverBelowFloor(result.trace, floor))

/**
 * After `at` (ms), concurrency drops below its value at `at` (or to at most
 * `to`, when given) within `withinMillis`.
 *
 * @since 0.1.0
 */
export const checkBackoffWithin = (
  trace: Trace,
  options: { readonly at: number; readonly withinMillis: number; readonly to?: number }
): string | undefined => {
  const start = trace.rows.filter((r) => r.t <= options.at).at(-1)?.concurrency ?? trace.rows[0]?.concurrency
  if (start === undefined) return "empty trace"
  const target = options.to ?? start - 1
  const hit = trace.rows.find((r) => r.t > options.at && r.t <= options.at + options.withinMillis && r.concurrency <= target)
  return hit === undefined
    ? `concurrency did not drop to <= ${target} within ${options.withinMillis / 1000} s after ${options.at / 1000} s (was ${start})`
    : undefined
}

/**
 * Effect form of {@link checkBackoffWithin}.
 *
 * @since 0.1.0
 */
export const expectBackoffWithin = (
  result: RunResult,
  options: { readonly at: number; readonly withinMillis: number; readonly to?: number }
): Effect.Effect<void, AssertionFailed> => toEffect("expectBackoffWithin", checkBackoffWithin(result.trace, options))

/**
 * The run recovered (see `Summary.recoverySeconds`) within `seconds`.
 *
 * @since 0.1.0
 */
export const checkRecoveryWithin = (result: RunResult, seconds: number): string | undefined => {
  const r = result.summary.recoverySeconds
  return r !== null && r <= seconds ? undefined : `recoverySeconds = ${r === null ? "never" : r}, expected <= ${seconds}`
}

/**
 * Effect form of {@link checkRecoveryWithin}.
 *
 * @since 0.1.0
 */
export const expectRecoveryWithin = (result: RunResult, seconds: number): Effect.Effect<void, AssertionFailed> =>
  toEffect("expectRecoveryWithin", checkRecoveryWithin(result, seconds))

/**
 * Goodput ratio at least `ratio`.
 *
 * @since 0.1.0
 */
export const expectGoodputAtLeast = (result: RunResult, ratio: number): Effect.Effect<void, AssertionFailed> =>
  toEffect(
    "expectGoodputAtLeast",
    result.summary.goodputRatio >= ratio ? undefined : `goodputRatio = ${result.summary.goodputRatio}, expected >= ${ratio}`
  )

/**
 * Bytes held never above `bytes` (the memory budget invariant).
 *
 * @since 0.1.0
 */
export const expectInflightBytesAtMost = (result: RunResult, bytes: number): Effect.Effect<void, AssertionFailed> =>
  toEffect(
    "expectInflightBytesAtMost",
    result.summary.maxInflightBytes <= bytes ? undefined : `maxInflightBytes = ${result.summary.maxInflightBytes} > ${bytes}`
  )

/**
 * Nothing committed that was not verified, and every retention loss reported.
 *
 * @since 0.1.0
 */
export const expectSafe = (result: RunResult): Effect.Effect<void, AssertionFailed> =>
  toEffect(
    "expectSafe",
    result.summary.committedNotVerified > 0
      ? `${result.summary.committedNotVerified} records committed but not verified`
      : result.summary.undetectedLostRecords > 0
      ? `${result.summary.undetectedLostRecords} records lost to retention without a RetentionGap`
      : undefined
  )
