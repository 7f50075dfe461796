/**
 * The consumer group protocol's decisions (KIP-848), without a broker: what a
 * failed heartbeat means (built as the client builds the broker's answer),
 * which partitions a response assigns, and how often it heartbeats (on a
 * virtual clock, against a broker double). Against the real broker, the
 * protocol runs in `rebalance.test.ts` and `restart.test.ts`.
 */
import { it as effectIt } from "@effect/vitest"
import { NetworkError, ResponseError } from "@platformatic/kafka"
import { Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import type { HeartbeatRequest, HeartbeatResponse } from "../src/internal/client.ts"
import { Wakeup } from "../src/internal/Context.ts"
import type { Context } from "../src/internal/Context.ts"
import * as ConsumerProtocol from "../src/internal/ConsumerProtocol.ts"
import { assigned, classify } from "../src/internal/ConsumerProtocol.ts"
import { Membership } from "../src/internal/Membership.ts"
import * as KafkaStats from "../src/KafkaStats.ts"

/** ConsumerGroupHeartbeat's API key. */
const HEARTBEAT_API = 68

/** The error the client throws for a heartbeat answered with `code`. */
const answered = (code: number, message: string | null = null) =>
  new ResponseError(HEARTBEAT_API, 1, { "/": [code, message] }, { errorCode: code, errorMessage: message })

describe("ConsumerProtocol.classify", () => {
  it("a fenced or forgotten member gives up its partitions and rejoins", () => {
    expect(classify(answered(110))).toBe("fenced") // FENCED_MEMBER_EPOCH
    expect(classify(answered(25))).toBe("fenced") // UNKNOWN_MEMBER_ID
  })

  it("a moving coordinator, a network error and an unreleased static instance id are retried", () => {
    expect(classify(answered(16))).toBe("retriable") // NOT_COORDINATOR
    expect(classify(answered(15))).toBe("retriable") // COORDINATOR_NOT_AVAILABLE
    expect(classify(answered(14))).toBe("retriable") // COORDINATOR_LOAD_IN_PROGRESS
    expect(classify(answered(111))).toBe("retriable") // UNRELEASED_INSTANCE_ID
    expect(classify(new NetworkError("Connection closed"))).toBe("retriable")
  })

  it("anything else fails the stream", () => {
    expect(classify(answered(82))).toBe("fatal") // FENCED_INSTANCE_ID: two live members share an instance id
    expect(classify(answered(42, "TopicPartitions must be empty when (re-)joining."))).toBe("fatal") // INVALID_REQUEST
    expect(classify(answered(35))).toBe("fatal") // UNSUPPORTED_VERSION
    expect(classify(new Error("something else"))).toBe("fatal")
  })
})

describe("ConsumerProtocol.assigned", () => {
  const topicId = "AAAAAAAAAAAAAAAAAAAAAQ"
  it("takes this topic's partitions, sorted, and nothing of other topics", () => {
    const response = {
      assignment: { topicPartitions: [{ topicId: "other", partitions: [0, 1] }, { topicId, partitions: [5, 2, 3] }] }
    }
    expect(assigned(response, topicId)).toEqual([2, 3, 5])
  })

  it("an assignment without the topic is an empty one; no assignment is no change", () => {
    expect(assigned({ assignment: { topicPartitions: [] } }, topicId)).toEqual([])
    expect(assigned({ assignment: null }, topicId)).toBeUndefined()
  })
})

describe("ConsumerProtocol heartbeats", () => {
  const topicId = "AAAAAAAAAAAAAAAAAAAAAQ"
  /** The broker's interval, as Kafka's default. */
  const INTERVAL_MS = 5_000

  effectIt.effect("one per broker interval, and one more when the held partitions change: an assignment sent again does not start a storm", () =>
    Effect.gen(function*() {
      const ctx = {
        config: { mode: { kind: "group", groupId: "g", protocol: "consumer", rebalanceTimeout: 60_000 }, requestTimeout: 30_000 },
        name: "orders",
        topic: "orders",
        consumer: {},
        stats: new KafkaStats.Recorder(8),
        wakeup: new Wakeup()
      } as unknown as Context
      const membership = new Membership()
      const sent: Array<HeartbeatRequest> = []
      // The broker answers every full request with the assignment again, as Kafka 4.1 does.
      const heartbeat = (_consumer: unknown, _coordinator: number, request: HeartbeatRequest): Promise<HeartbeatResponse> => {
        sent.push(request)
        return Promise.resolve({
          throttleTimeMs: 0,
          errorCode: 0,
          errorMessage: null,
          memberId: request.memberId,
          memberEpoch: 1,
          heartbeatIntervalMs: INTERVAL_MS,
          assignment: { topicPartitions: [{ topicId, partitions: [0, 1] }] }
        })
      }
      const scope = yield* Scope.make()
      const protocol = ConsumerProtocol.make(ctx, membership, topicId, scope, { heartbeat, findCoordinator: () => Promise.resolve(1) })
      // The fetch loop's part: each pending assignment applied, then reported held.
      yield* Effect.forkIn(
        Effect.forever(Effect.gen(function*() {
          yield* ctx.wakeup.until(() => membership.hasPending)
          const pending = membership.takePending()
          if (pending !== undefined) membership.setHeld(pending.assignment)
        })),
        scope
      )
      yield* protocol.start
      for (let t = 0; t < 20; t++) yield* TestClock.adjust(1_000)
      yield* Scope.close(scope, Exit.void)
      // 20 s: the join, the report of the first assignment held, then one per 5 s.
      expect(sent.length).toBeGreaterThanOrEqual(5)
      expect(sent.length).toBeLessThanOrEqual(2 + 20_000 / INTERVAL_MS)
      expect(sent.at(-1)?.owned).toEqual([0, 1])
    }))
})
