/**
 * Retention-gap detection: before fetching a partition at start, after every
 * resume and on OFFSET_OUT_OF_RANGE, its read position is compared with the
 * log's bounds (`RetentionGap.classify`). A position below the log start is a
 * gap: it is counted, emitted as a core `RetentionGap` event in the data lane
 * (between the chunks before and after it), and the `retentionGap` policy
 * applies. A position past the log end always fails.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import { Clock, Effect } from "effect"
import * as RetentionGap from "../RetentionGap.ts"
import { listOffsets } from "./client.ts"
import { UNPLACED } from "./Context.ts"
import type { Context, PartitionState } from "./Context.ts"
import type { EventBuffer } from "./EventBuffer.ts"

/** Counts and emits a gap; with the `fail` policy, the typed failure. */
const onGap = (
  ctx: Context,
  buffer: EventBuffer,
  s: PartitionState,
  position: Extract<RetentionGap.Position, { readonly _tag: "Gap" }>,
  now: number
): Effect.Effect<void, Source.SourceError> => {
  const gap: Source.RetentionGap = {
    _tag: "RetentionGap",
    source: ctx.name,
    partition: s.partition,
    expected: position.expected,
    logStart: position.logStart,
    lostRecords: position.lostRecords
  }
  ctx.stats.counters.gaps++
  ctx.stats.counters.gapRecords += position.lostRecords
  ctx.stats.record({ _tag: "RetentionGap", gap, at: now })
  buffer.offerData([gap])
  if (ctx.config.retentionGap === "record-and-continue") {
    s.next = position.logStart
    return Effect.void
  }
  return Effect.fail(
    new Source.SourceError({
      source: ctx.name,
      operation: "fetch",
      message:
        `retention gap on ${ctx.topic}/${s.partition}: next offset ${position.expected} is below the log start ${position.logStart} (${position.lostRecords} records deleted unread)`,
      cause: new RetentionGap.RetentionGapDetected({
        source: ctx.name,
        topic: ctx.topic,
        partition: s.partition,
        expected: position.expected,
        logStart: position.logStart,
        lostRecords: position.lostRecords
      })
    })
  )
}

/** Places one partition against its log bounds. */
const place = (
  ctx: Context,
  buffer: EventBuffer,
  s: PartitionState,
  logStart: number,
  logEnd: number,
  now: number
): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    s.highWatermark = logEnd
    s.hwAt = now
    const position = RetentionGap.classify(s.next, logStart, logEnd)
    switch (position._tag) {
      case "Start":
      case "InRange":
        s.next = position.next
        break
      case "Gap":
        yield* onGap(ctx, buffer, s, position, now)
        break
      case "BeyondEnd":
        return yield* new Source.SourceError({
          source: ctx.name,
          operation: "fetch",
          message:
            `${ctx.topic}/${s.partition}: next offset ${position.expected} is past the log end ${position.logEnd} (log truncated or topic recreated); not resetting`
        })
    }
    if (ctx.config.until === "caught-up" && s.endAt < 0) s.endAt = logEnd
    if (s.backlogEnd === UNPLACED) s.backlogEnd = s.next >= 0 && s.next < logEnd ? logEnd : -1
    s.checkStart = false
  })

/** Compares the positions marked `checkStart` with the log bounds; emits gaps; applies the policy. */
export const check = (ctx: Context, buffer: EventBuffer): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    const toCheck = [...ctx.parts.values()].filter((s) => s.checkStart)
    if (toCheck.length === 0) return
    const ps = toCheck.map((s) => s.partition)
    const [starts, ends] = yield* Effect.all([
      listOffsets(ctx.consumer, ctx.name, ctx.topic, ps, "earliest"),
      listOffsets(ctx.consumer, ctx.name, ctx.topic, ps, "latest")
    ], { concurrency: 2 })
    const now = yield* Clock.currentTimeMillis
    for (const s of toCheck) {
      if (ctx.parts.get(s.partition) !== s) continue // revoked meanwhile
      const logStart = starts.get(s.partition)
      const logEnd = ends.get(s.partition)
      if (logStart === undefined || logEnd === undefined) {
        return yield* new Source.SourceError({
          source: ctx.name,
          operation: "listOffsets",
          message: `no log offsets for ${ctx.topic}/${s.partition}`
        })
      }
      yield* place(ctx, buffer, s, logStart, logEnd, now)
    }
  })
