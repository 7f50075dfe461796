/**
 * The fetch loop: the initial assignment, then, round after round, wait until
 * fetching may run (gate open and room in the buffer) or something needs an
 * answer (a new assignment, a client error); apply the assignment; check the
 * positions that need it; fetch the active partitions, asking for at most the
 * buffer's room; queue the chunks.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import { Effect } from "effect"
import * as Assignment from "./Assignment.ts"
import type { Context } from "./Context.ts"
import type { EventBuffer } from "./EventBuffer.ts"
import * as Fetcher from "./Fetcher.ts"
import type { Membership } from "./Membership.ts"
import * as Positions from "./Positions.ts"
import type { ReadGate } from "./ReadGate.ts"

/** What the loop drives. */
export interface Parts {
  readonly ctx: Context
  readonly membership: Membership
  readonly buffer: EventBuffer
  readonly gate: ReadGate
  /** The topic's partition count at connect. */
  readonly partitionsCount: number
}

const groupFailure = (name: string, error: unknown) =>
  new Source.SourceError({
    source: name,
    operation: "group",
    message: `group membership failed: ${error instanceof Error ? error.message : String(error)}`,
    cause: error
  })

/**
 * Runs until the stream ends (`until: "caught-up"` in assign mode: every
 * partition reached the end offset seen at assignment) or fails.
 */
export const run = ({ buffer, ctx, gate, membership, partitionsCount }: Parts): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    yield* Assignment.start(ctx, membership, partitionsCount)
    const round = Fetcher.makeRound(ctx)
    const caughtUp = ctx.config.until === "caught-up"
    const mayFetch = () => gate.isOpen() && buffer.room() > 0
    while (true) {
      yield* ctx.wakeup.until(() => membership.hasPending || membership.clientError !== undefined || mayFetch())
      if (membership.clientError !== undefined) return yield* groupFailure(ctx.name, membership.clientError)
      // Revokes go first, paused or not, buffer full or not.
      yield* Assignment.applyPending(ctx, membership, buffer)
      if (!mayFetch()) continue
      yield* Positions.check(ctx, buffer)
      const active = [...ctx.parts.values()].filter((s) => !(caughtUp && s.endAt >= 0 && s.next >= s.endAt))
      if (active.length === 0) {
        if (caughtUp && ctx.config.mode.kind === "assign") return
        yield* Effect.sleep(Math.max(10, ctx.config.fetch.maxWait))
        continue
      }
      buffer.offerData(yield* round(active, buffer.room()))
    }
  })
