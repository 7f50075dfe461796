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
