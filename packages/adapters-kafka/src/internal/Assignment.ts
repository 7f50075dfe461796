/**
 * Which partitions the source reads: the initial assignment (join the group,
 * or the configured partitions in assign mode), each partition's start
 * position (`startOffsets`, else the group's committed offset, else the log
 * start), and applying a group's new assignment: revoke first (announced
 * ahead of queued data, fetching held until the pipeline acknowledges it),
 * then start the new partitions, then tell the membership what is held now.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import { Clock, Deferred, Effect } from "effect"
import { attempt, committedOffsets } from "./client.ts"
import { UNPLACED } from "./Context.ts"
import type { Context } from "./Context.ts"
import type { EventBuffer } from "./EventBuffer.ts"
import type { Membership } from "./Membership.ts"

/** Starts reading `partitions` from their start positions, and owns them. */
export const assign = (
  ctx: Context,
  membership: Membership,
  partitions: ReadonlyArray<number>,
  startOffsets: ReadonlyMap<number, number>
): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    if (partitions.length === 0) return
    const groupId = ctx.config.mode.groupId
    const fromGroup = groupId !== undefined
      ? yield* committedOffsets(ctx.consumer, ctx.name, ctx.topic, partitions)
      : new Map<number, number>()
    for (const p of partitions) {
      ctx.parts.set(p, {
        partition: p,
        next: startOffsets.get(p) ?? fromGroup.get(p) ?? -1,
        highWatermark: -1,
        hwAt: 0,
        checkStart: true,
        endAt: -1,
        backlogEnd: UNPLACED,
        backlogPausedAt: undefined
      })
      membership.owned.add(p)
    }
    ctx.stats.counters.assignments++
    ctx.stats.record({ _tag: "Assigned", partitions: [...partitions], at: yield* Clock.currentTimeMillis })
  })

/** Announces a revoke (ahead of queued data) and waits for the pipeline's acknowledgement, at most the rebalance timeout. */
const revoke = (ctx: Context, buffer: EventBuffer, partitions: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    for (const p of partitions) ctx.parts.delete(p)
    ctx.stats.counters.revokes++
    ctx.stats.record({ _tag: "Revoked", partitions, at: yield* Clock.currentTimeMillis })
    const ack = yield* Deferred.make<void>()
    buffer.offerRevoke({
      _tag: "PartitionsRevoked",
      partitions,
      acknowledge: Effect.asVoid(Deferred.succeed(ack, undefined))
    }, partitions)
    const rebalanceTimeout = ctx.config.mode.kind === "group" ? ctx.config.mode.rebalanceTimeout : 60_000
    yield* Effect.timeoutOption(Deferred.await(ack), rebalanceTimeout)
  })

/** Applies the latest group assignment, if any: revoke (and wait for the ack), then assign. */
export const applyPending = (ctx: Context, membership: Membership, buffer: EventBuffer): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    const pending = membership.takePending()
    if (pending === undefined) return
    const keep = new Set(pending.assignment)
    const revoked = [...ctx.parts.keys()].filter((p) => !keep.has(p) || pending.lost.has(p))
    if (revoked.length > 0) yield* revoke(ctx, buffer, revoked)
    // New partitions, and those re-assigned right after a revoke (dropped
    // above): start from their committed offsets.
    yield* assign(ctx, membership, pending.assignment.filter((p) => !ctx.parts.has(p)), new Map())
    membership.setHeld(pending.assignment)
  })

/**
 * The initial assignment: join the group (group mode: `join` starts the
 * consumer protocol's heartbeats; without it, the classic protocol's join), or
 * read the configured partitions (assign mode).
 */
export const start = (
  ctx: Context,
  membership: Membership,
  partitionsCount: number,
  join?: Effect.Effect<void>
): Effect.Effect<void, Source.SourceError> =>
  Effect.gen(function*() {
    const mode = ctx.config.mode
    if (mode.kind === "group" && join !== undefined) return yield* join
    if (mode.kind === "group") {
      ctx.consumer.topics.track(ctx.topic)
      yield* attempt(ctx.name, "joinGroup", () =>
        ctx.consumer.joinGroup({
          sessionTimeout: mode.sessionTimeout,
          heartbeatInterval: mode.heartbeatInterval,
          rebalanceTimeout: mode.rebalanceTimeout
        }))
      return
    }
    const partitions = mode.partitions ?? Array.from({ length: partitionsCount }, (_, i) => i)
    const invalid = partitions.filter((p) => p >= partitionsCount)
    if (invalid.length > 0) {
      return yield* new Source.SourceError({
        source: ctx.name,
        operation: "assign",
        message: `${ctx.topic} has ${partitionsCount} partitions; no partition ${invalid.join(", ")}`
      })
    }
    const starts = new Map<number, number>()
    for (const [p, o] of Object.entries(mode.startOffsets ?? {})) starts.set(Number(p), o)
    yield* assign(ctx, membership, partitions, starts)
  })
