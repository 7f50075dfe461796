/**
 * The read gate and lag: `pause` stops new fetches (a fetch in flight still
 * delivers), `resume` restarts them after re-checking every position against
 * the log start (retention may have moved it meanwhile) and marks what was
 * produced meanwhile as a backlog (`Source.CaughtUp` once read); `lag` is the records
 * between each owned partition's read position and its high watermark,
 * refreshed with one ListOffsets when older than `lagRefresh`.
 *
 * @internal
 */
import type { Source } from "@sluice/core"
import { Clock, Effect } from "effect"
import { listOffsets } from "./client.ts"
import { type Context, UNPLACED } from "./Context.ts"

/** The gate and lag of a source. */
export interface ReadGate {
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  readonly lag: Source.Source["lag"]
  /** Whether fetching may run now. */
  readonly isOpen: () => boolean
}

/** Builds the read gate of a source. */
export const make = (ctx: Context): ReadGate => {
  const pauses = ctx.stats.counters.pauses
  /** When the gate last closed (the pipeline's clock). */
  let pausedAt = 0

  const pause = Effect.flatMap(Clock.currentTimeMillis, (at) =>
    Effect.sync(() => {
      if (!pauses.paused) {
        pauses.count++
        pausedAt = at
        ctx.stats.record({ _tag: "Paused", at })
      }
      pauses.paused = true
    }))

  const resume = Effect.flatMap(Clock.currentTimeMillis, (at) =>
    Effect.sync(() => {
      if (pauses.paused) {
        pauses.paused = false
        ctx.stats.record({ _tag: "Resumed", at })
        for (const s of ctx.parts.values()) {
          // Retention may have moved the log start while we were not reading.
          s.checkStart = true
          // What was produced while paused is a backlog, as at an assignment: announced once read
          // (one still pending keeps its earlier end).
          if (s.backlogEnd === -1) {
            s.backlogEnd = UNPLACED
            s.backlogPausedAt = pausedAt
          }
        }
      }
      ctx.wakeup.wake()
    }))

  let refreshing = false
  const refresh = (stale: ReadonlyArray<number>, now: number) =>
    Effect.gen(function*() {
      refreshing = true
      const ends = yield* listOffsets(ctx.consumer, ctx.name, ctx.topic, stale, "latest").pipe(
        Effect.ensuring(Effect.sync(() => {
          refreshing = false
        })),
        Effect.orElseSucceed(() => new Map<number, number>())
      )
      for (const [p, end] of ends) {
        const s = ctx.parts.get(p)
        if (s !== undefined) {
          s.highWatermark = end
          s.hwAt = now
        }
      }
    })

  const lag = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const stale = [...ctx.parts.values()].filter((s) => now - s.hwAt >= ctx.config.lagRefresh).map((s) => s.partition)
    if (stale.length > 0 && !refreshing) yield* refresh(stale, now)
    const out = new Map<number, number>()
    for (const s of ctx.parts.values()) {
      if (s.next >= 0 && s.highWatermark >= 0) out.set(s.partition, Math.max(0, s.highWatermark - s.next))
    }
    return out as ReadonlyMap<number, number>
  })

  return { pause, resume, lag, isOpen: () => !pauses.paused }
}
