/**
 * The consumer group protocol's decisions (KIP-848), without a broker: what a
 * failed heartbeat means (built as the client builds the broker's answer),
 * and which partitions a response assigns. Against the real broker, the
 * protocol runs in `rebalance.test.ts` and `restart.test.ts`.
 */
import { NetworkError, ResponseError } from "@platformatic/kafka"
import { describe, expect, it } from "vitest"
import { assigned, classify } from "../src/internal/ConsumerProtocol.ts"

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
