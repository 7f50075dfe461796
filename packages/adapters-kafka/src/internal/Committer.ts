/**
 * The commit path: one OffsetCommit per call, only ever the offset the core
 * committer asks for. In group mode the request carries the generation (the
 * consumer protocol's member epoch) the partition is owned in; it is refused
 * (a no-op, counted as skipped) for a partition no longer owned, and a commit
 * the broker rejects for a stale generation or epoch waits for the rejoin (the
 * next epoch) and is sent again only if the partition is still owned. An
 * error the client marks retriable (a broker stalled or restarting, the
 * coordinator moving, a timeout) is sent again after a backoff (100 ms
 * doubling to 2 s) until a deadline — the group's `rebalanceTimeout`, or
 * `requestTimeout` in assign mode — then fails the commit, naming the
 * attempts: an OffsetCommit is idempotent. Without a group, commits are kept
 * in memory only.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import { Clock, Deferred, Effect, Option } from "effect"
import { hasApiError, isRetriable, needsRejoin, offsetCommit } from "./client.ts"
import type { Context } from "./Context.ts"
import type { Membership } from "./Membership.ts"

/** Commits of a source, and the next offset committed per partition (bounded by the partition count). */
export interface Committer {
  readonly commit: (partition: number, nextOffset: number) => Effect.Effect<Source.CommitOutcome, Source.SourceError>
  readonly committed: ReadonlyMap<number, number>
}

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** First and longest wait between attempts of a commit the client marks retriable. */
const RETRY_FIRST_MILLIS = 100
const RETRY_MAX_MILLIS = 2_000

/** The OffsetCommit request (the client's, replaced in tests to inject failures). */
export type Send = typeof offsetCommit

/** Builds the commit path of a source. */
export const make = (ctx: Context, membership: Membership, send: Send = offsetCommit): Committer => {
  const committed = new Map<number, number>()
  const { consumer, name, topic } = ctx

  const recorded = (partition: number, nextOffset: number) =>
    Effect.map(Clock.currentTimeMillis, (at) => {
      committed.set(partition, nextOffset)
      ctx.stats.counters.commits++
      ctx.stats.record({ _tag: "Committed", partition, nextOffset, at })
    })

  /** A commit for a partition no longer owned: not sent, counted, and answered as refused (the pipeline must not count it). */
  const skipped = (partition: number, nextOffset: number) =>
    Effect.map(Clock.currentTimeMillis, (at): Source.CommitRefused => {
      ctx.stats.counters.commitsSkipped++
      ctx.stats.record({ _tag: "CommitSkipped", partition, nextOffset, at })
      return { _tag: "CommitRefused", partition, nextOffset, reason: `partition ${partition} is no longer owned by this member (generation ${membership.generation})` }
    })

  /**
   * After a retriable failure (attempt `attempts`): waits the next backoff and
   * returns true, or false when it would end past the deadline.
   */
  const backoff = (attempts: number, deadline: number, what: string, cause: unknown) =>
    Effect.gen(function*() {
      const wait = Math.min(RETRY_MAX_MILLIS, RETRY_FIRST_MILLIS * 2 ** (attempts - 1))
      if ((yield* Clock.currentTimeMillis) + wait > deadline) return false
      yield* Effect.logDebug(`commit ${what}: attempt ${attempts} failed (${describe(cause)}); again in ${wait} ms`)
      yield* Effect.sleep(wait)
      return true
    })

  /** One OffsetCommit request: whether it succeeded, and what it failed with. */
  const sendOnce = (request: Parameters<Send>[1]) =>
    Effect.tryPromise({ try: () => send(consumer, request), catch: (cause) => cause }).pipe(
      Effect.match({ onSuccess: () => ({ ok: true as const }), onFailure: (cause) => ({ ok: false as const, cause }) })
    )

  const failed = (what: string, attempts: number, cause: unknown) =>
    new Source.SourceError({
      source: name,
      operation: "commit",
      message: `commit ${what}: ${describe(cause)}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}`,
      cause
    })

  const commitAssigned = (groupId: string | undefined, partition: number, nextOffset: number) =>
    groupId === undefined ? recorded(partition, nextOffset) : Effect.gen(function*() {
      const what = `${topic}/${partition}@${nextOffset}`
      const deadline = (yield* Clock.currentTimeMillis) + ctx.config.requestTimeout
      for (let attempts = 1;; attempts++) {
        const sent = yield* sendOnce({ groupId, generation: -1, memberId: "", topic, partition, offset: nextOffset })
        if (sent.ok) return yield* recorded(partition, nextOffset)
        const cause = sent.cause
        if (!isRetriable(cause) || !(yield* backoff(attempts, deadline, what, cause))) return yield* failed(what, attempts, cause)
      }
    })

  /** Waits for the next join, at most until `deadline`. */
  const awaitJoin = (wait: Deferred.Deferred<void>, deadline: number, rebalanceTimeout: number, what: string) =>
    Effect.gen(function*() {
      const left = deadline - (yield* Clock.currentTimeMillis)
      const done = left > 0 ? yield* Effect.timeoutOption(Deferred.await(wait), left) : Option.none()
      if (Option.isNone(done)) {
        return yield* new Source.SourceError({
          source: name,
          operation: "commit",
          message: `commit ${what}: the group did not finish rebalancing within ${rebalanceTimeout} ms`
        })
      }
    })

  const commitInGroup = (groupId: string, rebalanceTimeout: number, partition: number, nextOffset: number) =>
    Effect.gen(function*() {
      const what = `${topic}/${partition}@${nextOffset}`
      const deadline = (yield* Clock.currentTimeMillis) + rebalanceTimeout
      let attempts = 0
      while (true) {
        if (!membership.owned.has(partition)) return yield* skipped(partition, nextOffset)
        const wait = membership.joined
        const generation = membership.generation
        const { coordinator, generation: current, memberId } = membership.identity()
        if (memberId === null || current !== generation) {
          // Mid-rebalance: the join event will say whether we still own it.
          yield* awaitJoin(wait, deadline, rebalanceTimeout, what)
          continue
        }
        attempts++
        const sent = yield* sendOnce({ groupId, generation, memberId, topic, partition, offset: nextOffset, coordinator })
        if (sent.ok) return yield* recorded(partition, nextOffset)
        const cause = sent.cause
        if (needsRejoin(cause) || hasApiError(cause, "STALE_MEMBER_EPOCH")) {
          // A new generation (epoch) is on its way: the next join or heartbeat says whether we still own it.
          yield* awaitJoin(wait, deadline, rebalanceTimeout, what)
          continue
        }
        if (isRetriable(cause) && (yield* backoff(attempts, deadline, what, cause))) continue
        return yield* failed(what, attempts, cause)
      }
    })

  const mode = ctx.config.mode
  return {
    committed,
    commit: (partition, nextOffset) =>
      mode.kind === "group"
        ? commitInGroup(mode.groupId, mode.rebalanceTimeout, partition, nextOffset)
        : commitAssigned(mode.groupId, partition, nextOffset)
  }
}
