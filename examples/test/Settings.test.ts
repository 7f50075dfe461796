/**
 * The archiver's settings file (`kafka-to-s3/Settings.ts`): its `group` part is
 * decoded with the Kafka source's `GroupMode` schema, and what the command
 * line sets (the group id, the instance id) is refused in the file.
 */
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as Settings from "../kafka-to-s3/Settings.ts"

const messageOf = (data: unknown): string => {
  const exit = Effect.runSyncExit(Settings.decode(data))
  if (Exit.isSuccess(exit)) return "ok"
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  return reason !== undefined && reason._tag === "Fail" ? `${reason.error._tag}: ${reason.error.message}` : "defect"
}

describe("archiver settings: group", () => {
  it("passes the group's timeouts through as written, and none by default", () => {
    expect(Effect.runSync(Settings.decode({})).group).toEqual({})
    const settings = Effect.runSync(Settings.decode({ group: { sessionTimeout: "10 seconds", heartbeatInterval: 500 } }))
    expect(settings.group).toEqual({ sessionTimeout: "10 seconds", heartbeatInterval: 500 })
  })

  it("refuses a bad value with the field named, and keys the command line owns", () => {
    expect(messageOf({ group: { sessionTimeout: "soon" } })).toMatch(/ConfigError: group: .*\["sessionTimeout"\]/s)
    expect(messageOf({ group: { instanceId: "a" } })).toMatch(/ConfigError: settings\.group: unknown key\(s\) instanceId/)
    expect(messageOf({ group: { groupId: "g" } })).toMatch(/ConfigError: settings\.group: unknown key\(s\) groupId/)
  })
})

describe("archiver settings: policies", () => {
  it("decodes the members over Composition.defaultsBase, as the default composes them (the file's keys win), and refuses a member the default has not", () => {
    const { policies } = Effect.runSync(Settings.decode({}))
    // defaultsBase's throttle answers, not each policy's own (firstBeta 0.5, a rate cut on the first, throttleBeta 0.7).
    expect([policies.throttle.firstBeta, policies.throttle.rateOnFirstCut, policies.deliveryRate.throttleBeta]).toEqual([0.7, false, 0.85])
    const written = Effect.runSync(Settings.decode({ policies: { throttle: { firstBeta: 0.5 }, deliveryRate: { ceiling: 64 } } })).policies
    expect([written.throttle.firstBeta, written.throttle.rateOnFirstCut, written.deliveryRate.ceiling, written.deliveryRate.throttleBeta]).toEqual([0.5, false, 64, 0.85])
    expect(messageOf({ policies: { shared: { highWater: 0.8 } } })).toMatch(/ConfigError: settings\.policies: unknown key\(s\) shared \(expected deliveryRate, throttle, batch\)/)
    expect(messageOf({ policies: { throttle: { firstBeta: 2 } } })).toMatch(/ConfigError: throttle: .*firstBeta/s)
  })
})
