/**
 * The fetch loop: the initial assignment, then, round after round, wait until
 * fetching may run (gate open and room in the buffer) or something needs an
 * answer (a new assignment, a client error); apply the assignment; check the
 * positions that need it; fetch the active partitions, asking for at most the
 * buffer's room; queue the chunks.
 *
 * A broker that cannot be reached (killed, restarting, a leader gone with its
 * node) is ridden through: a failed round that the client marks retriable is
 * tried again after a backoff (100 ms doubling to 2 s), its metadata
 * refreshed, for as long as commits wait for one (`rebalanceTimeout` in group
 * mode, `requestTimeout` in assign mode); then the stream fails, naming how
 * long. The first failure of a streak is logged.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import { Clock, Effect } from "effect"
import * as Assignment from "./Assignment.ts"
import { isRetriable } from "./client.ts"
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
  /** Starts the consumer protocol's membership (group mode under KIP-848); absent: the classic join, or assign mode. */
  readonly join?: Effect.Effect<void> | undefined
}

const groupFailure = (name: string, error: unknown) =>
  new Source.SourceError({
    source: name,
    operation: "group",
    message: `group membership failed: ${error instanceof Error ? error.message : String(error)}`,
    cause: error
  })

/** First and longest wait between rounds while the broker cannot be reached (the commits' backoff). */
const UNAVAILABLE_FIRST_MILLIS = 100
const UNAVAILABLE_MAX_MILLIS = 2_000

/** How long the loop rides through an unreachable broker: as long as a commit waits for one. */
const unavailableBudget = (ctx: Context): number =>
  ctx.config.mode.kind === "group" ? ctx.config.mode.rebalanceTimeout : ctx.config.requestTimeout

/**
 * `effect` (one client round trip or round), tried again while it fails with
 * an error the client marks retriable, within {@link unavailableBudget} from
 * the first failure of the streak.
 */
export const rideThrough = <A>(ctx: Context, what: string, effect: Effect.Effect<A, Source.SourceError>): Effect.Effect<A, Source.SourceError> => {
  const budget = unavailableBudget(ctx)
  const go = (attempts: number, since: number | undefined): Effect.Effect<A, Source.SourceError> =>
    Effect.catch(effect, (error) =>
      Effect.gen(function*() {
        if (!isRetriable(error.cause)) return yield* Effect.fail(error)
        const now = yield* Clock.currentTimeMillis
        const first = since ?? now
        if (now - first >= budget) {
          return yield* new Source.SourceError({
            source: ctx.name,
            operation: error.operation,
            message: `${what}: broker unreachable for ${Math.round((now - first) / 1000)} s (${attempts} attempts; budget ${Math.round(budget / 1000)} s): ${error.message}`,
            cause: error.cause
          })
        }
        if (attempts === 1) yield* Effect.logWarning(`sluice: ${ctx.name}: ${what} failed (${error.message}); retrying for up to ${Math.round(budget / 1000)} s`)
        // Leaders may have moved (a node gone): ask for fresh metadata next round.
        ctx.consumer.clearMetadata()
        yield* Effect.sleep(Math.min(UNAVAILABLE_MAX_MILLIS, UNAVAILABLE_FIRST_MILLIS * 2 ** (attempts - 1)))
        return yield* go(attempts + 1, first)
      }))
  return go(1, undefined)
}

/**
 * Runs until the stream ends (`until: "caught-up"` in assign mode: every
 * partition reached the end offset seen at assignment) or fails.
 */
export const run = ({ buffer, ctx, gate, join, membership, partitionsCount }: Parts): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    yield* Assignment.start(ctx, membership, partitionsCount, join)
    const round = Fetcher.makeRound(ctx)
    const caughtUp = ctx.config.until === "caught-up"
    const mayFetch = () => gate.isOpen() && buffer.room() > 0
    while (true) {
      yield* ctx.wakeup.until(() => membership.hasPending || membership.clientError !== undefined || mayFetch())
      if (membership.clientError !== undefined) return yield* groupFailure(ctx.name, membership.clientError)
      // Revokes go first, paused or not, buffer full or not.
      yield* Assignment.applyPending(ctx, membership, buffer)
      if (!mayFetch()) continue
      yield* rideThrough(ctx, "position check", Positions.check(ctx, buffer))
      const active = [...ctx.parts.values()].filter((s) => !(caughtUp && s.endAt >= 0 && s.next >= s.endAt))
      if (active.length === 0) {
        if (caughtUp && ctx.config.mode.kind === "assign") return
        yield* Effect.sleep(Math.max(10, ctx.config.fetch.maxWait))
        continue
      }
      buffer.offerData(yield* rideThrough(ctx, "fetch", round(active, buffer.room())))
    }
  })
