/**
 * The commit path's failures, injected in the OffsetCommit request: an error
 * the client marks retriable (a broker stalled or restarting, the coordinator
 * moving) is sent again until the deadline; any other error, and a retriable
 * one past the deadline, fails the commit at once, naming it. Found on the
 * 3-broker cluster (npm run brokers): a follower stopped with SIGSTOP stalled
 * OffsetCommit and the archiver died on the first failed commit.
 */
import { NetworkError, ProtocolError } from "@platformatic/kafka"
import { Source } from "@sluice/core"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Committer from "../src/internal/Committer.ts"
import type { Context } from "../src/internal/Context.ts"
import type { Membership } from "../src/internal/Membership.ts"
import { Recorder } from "../src/KafkaStats.ts"

/** An assign-mode source with a group (commits go to the broker), `requestTimeout` as given. */
const context = (requestTimeout: number) => {
  const stats = new Recorder(16)
  // Only what the assign-mode commit path reads: the fake stands in for a connected client.
  const ctx = { config: { mode: { kind: "assign", groupId: "g" }, requestTimeout }, name: "orders", topic: "orders", consumer: {}, stats } as unknown as Context
  return { ctx, stats }
}

/** Fails the first `failures` requests with `error()`, then succeeds; counts the calls. */
const sender = (failures: number, error: () => Error) => {
  const calls = { count: 0 }
  const send = (() => {
    calls.count++
    return calls.count <= failures ? Promise.reject(error()) : Promise.resolve({})
  }) as unknown as Committer.Send
  return { calls, send }
}

const membership = {} as Membership

describe("commit (assign mode, failures injected)", () => {
  it("sends a commit that failed with a retriable error again, and records it once it succeeds", async () => {
    const { ctx, stats } = context(10_000)
    const { calls, send } = sender(2, () => new NetworkError("Connection closed"))
    const committer = Committer.make(ctx, membership, send)
    await Effect.runPromise(committer.commit(3, 120))
    expect(calls.count).toBe(3)
    expect(committer.committed.get(3)).toBe(120)
    expect(stats.view.commits).toBe(1)
  })

  it("fails at once on an error the client does not mark retriable, naming it", async () => {
    const { ctx, stats } = context(10_000)
    const { calls, send } = sender(5, () => new ProtocolError("OFFSET_METADATA_TOO_LARGE"))
    const committer = Committer.make(ctx, membership, send)
    const exit = await Effect.runPromiseExit(committer.commit(0, 7))
    expect(calls.count).toBe(1)
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
    expect(error?._tag === "Fail" && error.error instanceof Source.SourceError).toBe(true)
    expect(error?._tag === "Fail" ? (error.error as Source.SourceError).message : "").toMatch(/^commit orders\/0@7: /)
    expect(committer.committed.has(0)).toBe(false)
    expect(stats.view.commits).toBe(0)
  })

  it("gives a retriable error up at the deadline: bounded attempts, the count in the message", async () => {
    const { ctx } = context(1_000)
    const { calls, send } = sender(Infinity, () => new NetworkError("Connection closed"))
    const committer = Committer.make(ctx, membership, send)
    const started = Date.now()
    const exit = await Effect.runPromiseExit(committer.commit(1, 5))
    const elapsed = Date.now() - started
    // Waits 100, 200, 400 ms (700 ms); the next (800 ms) would end past the 1 s deadline.
    expect(calls.count).toBe(4)
    expect(elapsed).toBeLessThan(1_000)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
    expect(error?._tag === "Fail" ? (error.error as Source.SourceError).message : "").toMatch(/Connection closed \(after 4 attempts\)$/)
    expect(committer.committed.has(1)).toBe(false)
  })
})

describe("commit (group mode)", () => {
  it("a partition no longer owned: nothing sent, counted as skipped, answered CommitRefused (the pipeline must not count it)", async () => {
    const stats = new Recorder(16)
    const ctx = {
      config: { mode: { kind: "group", groupId: "g", rebalanceTimeout: 1_000 }, requestTimeout: 1_000 },
      name: "orders",
      topic: "orders",
      consumer: { memberId: "m", generationId: 4 },
      stats
    } as unknown as Context
    // Lost at the join event; the pipeline has not processed the revoke yet.
    const owned = { owned: new Set([1]), generation: 4, identity: () => ({ memberId: "m", generation: 4 }) } as unknown as Membership
    const { calls, send } = sender(0, () => new Error("unused"))
    const committer = Committer.make(ctx, owned, send)
    const outcome = await Effect.runPromise(committer.commit(0, 500))
    expect(outcome).toMatchObject({ _tag: "CommitRefused", partition: 0, nextOffset: 500 })
    expect(calls.count).toBe(0)
    expect(stats.view.commitsSkipped).toBe(1)
    expect(committer.committed.has(0)).toBe(false)
    // The owned partition still commits, and answers nothing.
    expect(await Effect.runPromise(committer.commit(1, 20))).toBeUndefined()
    expect(calls.count).toBe(1)
  })
})
