/**
 * Retention gaps: the next offset the archiver needs was already deleted by the
 * log's retention. This module holds the pure decision (compare the position
 * with the log's bounds) and the typed error of the `fail` policy.
 *
 * @since 0.1.0
 */
import type { Source } from "@sluice/core"
import { Schema } from "effect"

/**
 * The `fail` policy met a retention gap: the stream emitted the core
 * `RetentionGap` event, then failed with a `SourceError` whose `cause` is this
 * error (the core `Source` contract fixes the stream's error type). Use
 * {@link fromSourceError} to get it back.
 *
 * **Example**
 *
 * ```ts
 * import { RetentionGap } from "@sluice/adapter-kafka"
 * declare const error: import("@sluice/core").Source.SourceError
 * const gap = RetentionGap.fromSourceError(error)
 * if (gap !== undefined) console.log(`${gap.lostRecords} records of partition ${gap.partition} were deleted unread`)
 * ```
 *
 * @since 0.1.0
 */
export class RetentionGapDetected extends Schema.TaggedError<RetentionGapDetected>()("RetentionGapDetected", {
  source: Schema.String,
  topic: Schema.String,
  partition: Schema.Number,
  expected: Schema.Number,
  logStart: Schema.Number,
  lostRecords: Schema.Number
}) {}

/**
 * The `RetentionGapDetected` carried by a source error, if any.
 *
 * @since 0.1.0
 */
export const fromSourceError = (error: Source.SourceError): RetentionGapDetected | undefined =>
  error.cause instanceof RetentionGapDetected ? error.cause : undefined

/**
 * Where a partition's read position stands against its log.
 *
 * - `Start`: no position yet: begin at the log start (not a gap).
 * - `InRange`: read on from `next`.
 * - `Gap`: `next` is below the log start: `lostRecords` offsets were deleted unread.
 * - `BeyondEnd`: `next` is past the log end (the log was truncated or recreated);
 *   never reset silently either.
 *
 * @since 0.1.0
 */
export type Position =
  | { readonly _tag: "Start"; readonly next: number }
  | { readonly _tag: "InRange"; readonly next: number }
  | { readonly _tag: "Gap"; readonly expected: number; readonly logStart: number; readonly lostRecords: number }
  | { readonly _tag: "BeyondEnd"; readonly expected: number; readonly logEnd: number }

/**
 * Classifies `next` (-1 when there is no position yet) against the log's start
 * and end offsets, as `listOffsets` EARLIEST / LATEST report them.
 *
 * **Details**
 *
 * `lostRecords` counts offsets (`logStart - next`): on a plain topic every
 * offset is one record; on a compacted or transactional topic some offsets
 * held no record, so it is an upper bound.
 *
 * **Example**
 *
 * ```ts
 * import { RetentionGap } from "@sluice/adapter-kafka"
 *
 * RetentionGap.classify(120, 300, 500) // { _tag: "Gap", expected: 120, logStart: 300, lostRecords: 180 }
 * RetentionGap.classify(-1, 300, 500)  // { _tag: "Start", next: 300 }
 * ```
 *
 * @since 0.1.0
 */
export const classify = (next: number, logStart: number, logEnd: number): Position => {
  if (next < 0) return { _tag: "Start", next: logStart }
  if (next < logStart) return { _tag: "Gap", expected: next, logStart, lostRecords: logStart - next }
  if (next > logEnd) return { _tag: "BeyondEnd", expected: next, logEnd }
  return { _tag: "InRange", next }
}
