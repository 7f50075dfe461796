/**
 * Group membership under Kafka's consumer group protocol (KIP-848; group
 * mode's `protocol: "consumer"`): this source sends its own
 * ConsumerGroupHeartbeat requests, because the client runs that protocol only
 * inside its own message streams, which this source does not use (it fetches
 * on a pool of its own).
 *
 * One fiber heartbeats: every `heartbeatIntervalMs` the broker names, and at
 * once when the fetch loop has finished applying an assignment (revokes
 * acknowledged by the pipeline, new partitions started), reporting the
 * partitions held then. The broker gives a partition to another member only
 * after this member reported it no longer held, so a revoked partition is
 * never read by two members at once. Each new assignment
 * becomes a pending assignment of the {@link Membership} (the same path as a
 * classic join; one the broker sends again changes nothing), each new member
 * epoch the generation commits carry.
 *
 * What an error means ({@link classify}):
 * - fenced (`FENCED_MEMBER_EPOCH`, `UNKNOWN_MEMBER_ID`: the broker expired or
 *   fenced this member): every partition is lost at once (its commits
 *   refused) and the member rejoins at epoch 0 with the same member id, as
 *   after a retriable error (below: a member fenced again and again fails);
 * - retriable (the coordinator moved or is loading, a network error, a
 *   timeout, `UNRELEASED_INSTANCE_ID`: the previous holder of a static
 *   instance id is still in the group): sent again after a backoff, the
 *   coordinator looked up afresh, for at most `rebalanceTimeout` from the
 *   first failure of a streak; then the stream fails;
 * - anything else (`FENCED_INSTANCE_ID`, `UNSUPPORTED_VERSION`, a group of the
 *   classic protocol with members, …): the stream fails, naming it.
 *
 * On close the member leaves (a heartbeat with epoch -1), so the others get
 * its partitions at once, as a classic member's LeaveGroup does.
 *
 * @internal
 */
import { randomBytes } from "node:crypto"
import { Source } from "@sluice/core"
import { Clock, Effect, Scope } from "effect"
import type { HeartbeatRequest, HeartbeatResponse } from "./client.ts"
import { consumerGroupHeartbeat, describe, findCoordinator, hasApiError, isRetriable } from "./client.ts"
import type { Context } from "./Context.ts"
import { Wakeup } from "./Context.ts"
import type { Membership } from "./Membership.ts"

/** First and longest wait between heartbeats that failed retriably (the commits' backoff). */
const RETRY_FIRST_MILLIS = 100
const RETRY_MAX_MILLIS = 2_000

/** The heartbeat interval when an answer names none (every answer of Kafka 4 does): Kafka's default `group.consumer.heartbeat.interval.ms`. */
const FALLBACK_INTERVAL_MILLIS = 5_000

/** The epoch a leaving member sends (KIP-848: -1 leaves the group; -2, a static member's temporary leave, is not used). */
const LEAVE_EPOCH = -1

/** Errors after which the member must give up its partitions and rejoin at epoch 0 (KIP-848). */
const FENCED = ["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"]
/**
 * Errors a later heartbeat may not get: the coordinator moving or loading,
 * and a static instance id whose previous member the broker has not expired
 * yet (a restart after a kill: it is released by the broker's session timeout).
 */
const RETRIABLE = ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "UNRELEASED_INSTANCE_ID"]

/** What a failed heartbeat means. */
export type Verdict = "fenced" | "retriable" | "fatal"

/** What a failed heartbeat (or coordinator look-up) means; see the module's notes. */
export const classify = (error: unknown): Verdict => {
  if (FENCED.some((id) => hasApiError(error, id))) return "fenced"
  if (RETRIABLE.some((id) => hasApiError(error, id)) || isRetriable(error)) return "retriable"
  return "fatal"
}

/**
 * The partitions of `topicId` a response assigns, sorted; `undefined` when
 * the response carries no assignment (unchanged since the last one).
 */
export const assigned = (response: Pick<HeartbeatResponse, "assignment">, topicId: string): ReadonlyArray<number> | undefined => {
  if (response.assignment === null) return undefined
  const mine = response.assignment.topicPartitions.find((t) => t.topicId === topicId)?.partitions ?? []
  return [...mine].sort((a, b) => a - b)
}

/** The error's description, with the broker's own message when the response carries one ("TopicPartitions must be empty when (re-)joining."). */
const reason = (error: unknown): string => {
  const response = typeof error === "object" && error !== null ? (error as { readonly response?: unknown }).response : undefined
  const said = typeof response === "object" && response !== null ? (response as { readonly errorMessage?: unknown }).errorMessage : undefined
  return typeof said === "string" && said.length > 0 ? `${describe(error)} (broker: ${said})` : describe(error)
}

/** A member id for the first heartbeat (ConsumerGroupHeartbeat v1: the member makes its own), as Kafka's `Uuid` prints one. */
const newMemberId = (): string => randomBytes(16).toString("base64url")

/** The two requests the protocol sends (the client's; replaced in tests). */
export interface Requests {
  readonly heartbeat: typeof consumerGroupHeartbeat
  readonly findCoordinator: typeof findCoordinator
}

/** The driver of one source's membership. */
export interface ConsumerProtocol {
  /** Starts heartbeating in the source's scope (the join); assignments arrive through the membership. */
  readonly start: Effect.Effect<void>
  /** Leaves the group (one heartbeat at epoch -1, at most `requestTimeout`), if it joined; a failure is logged. */
  readonly leave: Effect.Effect<void>
}

/**
 * The driver of `membership` for a group-mode source under the consumer
 * protocol, its fiber to run in `scope` (the source's: it outlives the event
 * stream, so that the last commits of a drain are still made as a member).
 */
export const make = (
  ctx: Context,
  membership: Membership,
  topicId: string,
  scope: Scope.Scope,
  requests: Requests = { heartbeat: consumerGroupHeartbeat, findCoordinator }
): ConsumerProtocol => {
  const mode = ctx.config.mode
  if (mode.kind !== "group") throw new Error("ConsumerProtocol.make: the source is not in group mode")
  const memberId = newMemberId()
  let epoch = 0
  let coordinator: number | undefined
  let joined = false
  /** Bumped at each change of `membership.held`; the heartbeat sent last carried `sentHeld`. */
  let heldVersion = 0
  let sentHeld = -1
  const heldChanged = new Wakeup()
  membership.identity = () => ({ memberId: epoch > 0 ? memberId : null, generation: epoch, coordinator })
  membership.onHeld = () => {
    heldVersion++
    heldChanged.wake()
  }

  const request = (memberEpoch: number): HeartbeatRequest => ({
    groupId: mode.groupId,
    memberId,
    memberEpoch,
    instanceId: mode.instanceId ?? null,
    rebalanceTimeout: mode.rebalanceTimeout,
    topic: ctx.topic,
    topicId,
    owned: membership.held
  })

  /** One heartbeat at `memberEpoch`, the coordinator looked up first when unknown. */
  const heartbeat = (memberEpoch: number) =>
    Effect.tryPromise({
      try: async () => {
        coordinator ??= await requests.findCoordinator(ctx.consumer, mode.groupId)
        return requests.heartbeat(ctx.consumer, coordinator, request(memberEpoch))
      },
      catch: (cause) => cause
    })

  /** The last assignment answered (sorted, joined), to tell a new one from one sent again. */
  let lastAssigned: string | undefined
  const applied = (response: HeartbeatResponse) =>
    Effect.sync(() => {
      joined = true
      const mine = assigned(response, topicId)
      epoch = response.memberEpoch
      // The broker sends the assignment again in answers to full requests (this source's): the same one changes nothing.
      if (mine === undefined || mine.join() === lastAssigned) return membership.onEpoch(epoch)
      lastAssigned = mine.join()
      const keep = new Set(mine)
      if ([...membership.owned].some((p) => !keep.has(p))) ctx.stats.counters.rebalances++
      membership.onJoin(keep, epoch)
      ctx.wakeup.wake()
    })

  const fenced = (cause: unknown) =>
    Effect.gen(function*() {
      yield* Effect.logWarning(`sluice: ${ctx.name}: fenced by the group coordinator (${reason(cause)}); every partition lost, rejoining`)
      epoch = 0
      lastAssigned = undefined
      if (membership.owned.size > 0) ctx.stats.counters.rebalances++
      // Nothing may be committed any more, and nothing is reported held, at once, without waiting for the revokes.
      membership.loseAll(0)
      ctx.wakeup.wake()
    })

  const failed = (cause: unknown, message: string) =>
    Effect.sync(() => {
      membership.clientError = new Source.SourceError({ source: ctx.name, operation: "group", message, cause })
      ctx.wakeup.wake()
    })

  const loop = Effect.gen(function*() {
    // Every answer names the interval; this holds only if one did not.
    let interval = FALLBACK_INTERVAL_MILLIS
    let failingSince: number | undefined
    let attempts = 0
    while (true) {
      const version = heldVersion
      const outcome = yield* Effect.match(heartbeat(epoch), {
        onSuccess: (response) => ({ ok: true as const, response }),
        onFailure: (cause) => ({ ok: false as const, cause })
      })
      if (outcome.ok) {
        sentHeld = version
        failingSince = undefined
        attempts = 0
        if (outcome.response.heartbeatIntervalMs > 0) interval = outcome.response.heartbeatIntervalMs
        yield* applied(outcome.response)
        yield* Effect.timeoutOption(heldChanged.until(() => heldVersion !== sentHeld), interval)
        continue
      }
      const cause = outcome.cause
      const verdict = classify(cause)
      if (verdict === "fatal") {
        return yield* failed(cause, `group membership failed (consumer protocol): ${reason(cause)}`)
      }
      // A fenced member rejoins, on the retriable path's backoff and budget.
      if (verdict === "fenced") yield* fenced(cause)
      const now = yield* Clock.currentTimeMillis
      failingSince ??= now
      attempts++
      if (now - failingSince >= mode.rebalanceTimeout) {
        return yield* failed(
          cause,
          `group membership failed (consumer protocol): heartbeats failing for ${Math.round((now - failingSince) / 1000)} s (${attempts} attempts): ${reason(cause)}`
        )
      }
      if (attempts === 1) {
        yield* Effect.logWarning(`sluice: ${ctx.name}: heartbeat failed (${reason(cause)}); retrying for up to ${Math.round(mode.rebalanceTimeout / 1000)} s`)
      }
      // The coordinator may have moved: look it up again.
      coordinator = undefined
      yield* Effect.sleep(Math.min(RETRY_MAX_MILLIS, RETRY_FIRST_MILLIS * 2 ** (attempts - 1)))
    }
  })

  return {
    start: Effect.asVoid(Effect.forkIn(loop, scope)),
    leave: Effect.suspend(() => {
      if (!joined) return Effect.void
      joined = false
      epoch = LEAVE_EPOCH
      return heartbeat(LEAVE_EPOCH).pipe(
        Effect.timeoutOption(ctx.config.requestTimeout),
        Effect.asVoid,
        Effect.catch((cause) => Effect.logWarning(`sluice: ${ctx.name}: leaving the group failed (${reason(cause)}); the broker's session timeout will expire this member`))
      )
    })
  }
}
