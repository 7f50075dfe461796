/**
 * Config decoding and the pure pieces (no broker needed).
 */
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as KafkaConfig from "../src/KafkaConfig.ts"
import * as KafkaSource from "../src/KafkaSource.ts"
import * as RetentionGap from "../src/RetentionGap.ts"

const base = { brokers: ["127.0.0.1:19092"], topic: "orders", mode: { kind: "group", groupId: "g" } }

const messageOf = (input: unknown): string => {
  const exit = Effect.runSyncExit(KafkaConfig.decode(input))
  if (Exit.isSuccess(exit)) return "ok"
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  return reason !== undefined && reason._tag === "Fail" ? `${reason.error._tag}: ${reason.error.message}` : "defect"
}

describe("KafkaConfig", () => {
  it("fills documented defaults", () => {
    const config = Effect.runSync(KafkaConfig.decode(base))
    expect(config).toMatchObject({
      clientId: "sluice",
      retentionGap: "fail",
      until: "forever",
      recordFormat: "envelope",
      isolation: "read_uncommitted",
      prefetch: 256,
      fetch: { minBytes: 1, maxWait: 500, maxBytes: 16 * 1024 * 1024, partitionMaxBytes: 1024 * 1024 },
      mode: { kind: "group", groupId: "g", sessionTimeout: 30_000, heartbeatInterval: 1000, rebalanceTimeout: 60_000 }
    })
  })

  it("under the consumer protocol, refuses the keys the broker sets, naming the broker's setting", () => {
    const group = { kind: "group", groupId: "g", protocol: "consumer" } as const
    expect(messageOf({ ...base, mode: { ...group, sessionTimeout: 6000 } })).toMatch(
      /ConfigError: kafka: mode\.sessionTimeout is not used under protocol "consumer": the broker sets it \(group\.consumer\.session\.timeout\.ms\)/
    )
    expect(messageOf({ ...base, mode: { ...group, heartbeatInterval: "1 second" } })).toMatch(/group\.consumer\.heartbeat\.interval\.ms/)
    expect(messageOf({ ...base, mode: { ...group, protocol: "classic", sessionTimeout: 6000 } })).toBe("ok")
    expect(messageOf({ ...base, mode: { ...group, rebalanceTimeout: "20 seconds" } })).toBe("ok")
  })

  it("rejects bad config with a ConfigError naming the field", () => {
    expect(messageOf({ ...base, brokers: ["localhost"] })).toMatch(/ConfigError: kafka: .*\["brokers"\]\[0\]/s)
    expect(messageOf({ ...base, brokers: [] })).toMatch(/ConfigError: .*\["brokers"\]/s)
    expect(messageOf({ ...base, retentionGap: "skip" })).toMatch(/ConfigError: .*\["retentionGap"\]/s)
    expect(messageOf({ ...base, recordFormat: "json" })).toMatch(/ConfigError: .*\["recordFormat"\]/s)
    expect(messageOf({ ...base, recordFormat: "value" })).toBe("ok")
    expect(messageOf({ ...base, mode: { kind: "group" } })).toMatch(/ConfigError: .*\["mode"\]/s)
    expect(messageOf({ ...base, fetch: { maxWait: "soon" } })).toMatch(/ConfigError: .*\["fetch"\]\["maxWait"\]/s)
    expect(messageOf({ ...base, tls: { ca: 1 } })).toMatch(/ConfigError: .*\["tls"\]\["ca"\]/s)
    expect(messageOf({ ...base, topics: ["x"] })).toMatch(/ConfigError: .*\["topics"\]/s)
    expect(messageOf({ ...base, mode: { kind: "group", groupId: "g", instanceId: "archiver 0" } })).toMatch(
      /ConfigError: .*an id without whitespace.*\["mode"\]\["instanceId"\]/s
    )
    expect(messageOf({ ...base, mode: { kind: "group", groupId: "g", instanceId: "" } })).toMatch(/ConfigError: .*\["mode"\]/s)
    expect(messageOf({ ...base, mode: { kind: "group", groupId: "g", instanceId: "archiver-0" } })).toBe("ok")
  })

  it("accepts assign mode with start offsets, TLS and SASL", () => {
    expect(messageOf({
      ...base,
      mode: { kind: "assign", partitions: [0, 2], startOffsets: { "0": 10 } },
      tls: { ca: "-----BEGIN CERTIFICATE-----", cert: "c", key: "k" },
      sasl: { mechanism: "SCRAM-SHA-512", username: "u", password: "p" }
    })).toBe("ok")
  })

  it("a misspelled key fails tsc (the config is typed by its schema's encoded form)", () => {
    // @ts-expect-error — "untill" is not a KafkaSource config key
    const typo = () => KafkaSource.make({ brokers: ["127.0.0.1:1"], topic: "t", mode: { kind: "assign" }, untill: "caught-up" })
    expect(typeof typo).toBe("function")
  })

  it("KafkaSource.make fails on bad config before connecting", () => {
    const bad: unknown = { ...base, mode: { kind: "nope" } }
    const exit = Effect.runSyncExit(Effect.scoped(KafkaSource.make(bad as KafkaConfig.KafkaConfigInput)))
    expect(Exit.isFailure(exit)).toBe(true)
  })
})

describe("RetentionGap.classify", () => {
  it("classifies a position against the log bounds", () => {
    expect(RetentionGap.classify(-1, 300, 500)).toEqual({ _tag: "Start", next: 300 })
    expect(RetentionGap.classify(300, 300, 500)).toEqual({ _tag: "InRange", next: 300 })
    expect(RetentionGap.classify(500, 300, 500)).toEqual({ _tag: "InRange", next: 500 })
    expect(RetentionGap.classify(120, 300, 500)).toEqual({ _tag: "Gap", expected: 120, logStart: 300, lostRecords: 180 })
    expect(RetentionGap.classify(501, 300, 500)).toEqual({ _tag: "BeyondEnd", expected: 501, logEnd: 500 })
  })
})
