import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Config, Field } from "@sluice/core"

const Cfg = Schema.Struct({
  floor: Field.int(1, 1),
  ceiling: Field.int(64, 1, 1000),
  beta: Field.number(0.5, { minimum: 0, maximum: 1, exclusiveMinimum: true }),
  window: Field.positiveMillis("5 seconds"),
  target: Field.positiveBytes("8 MiB"),
  idle: Field.millis(0),
  spare: Field.bytes(0),
  enabled: Field.boolean(true)
}).check(Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]))

const decode = (input: unknown) => Config.decodeResult("my-policy", Cfg, input)
const message = (input: unknown) => {
  const result = decode(input)
  return Result.isFailure(result) ? result.failure.message : "decoded"
}

describe("Field: config helpers for policy authors", () => {
  it("fills every absent key with its default, parsing durations and sizes", () => {
    const result = decode({})
    expect(Result.isSuccess(result) && result.success).toEqual({
      floor: 1, ceiling: 64, beta: 0.5, window: 5000, target: 8 * 1024 * 1024, idle: 0, spare: 0, enabled: true
    })
  })

  it("reads text quantities", () => {
    const result = decode({ window: "250ms", target: "1 KiB" })
    expect(Result.isSuccess(result) && [result.success.window, result.success.target]).toEqual([250, 1024])
  })

  it("rejects out-of-range and non-integer values with a ConfigError naming the component and the key", () => {
    expect(message({ floor: 0 })).toMatch(/^my-policy: [\s\S]*floor/)
    expect(message({ floor: 2.5 })).toMatch(/floor/)
    expect(message({ ceiling: 1001 })).toMatch(/ceiling/)
    expect(message({ beta: 0 })).toMatch(/beta/)
    expect(message({ window: 0 })).toMatch(/greater than 0/)
    expect(message({ target: "lots" })).toMatch(/target/)
    const result = decode({ floor: 0 })
    expect(Result.isFailure(result) && result.failure._tag).toBe("ConfigError")
  })

  it("ordered reports low > high at the low key", () => {
    expect(message({ floor: 9, ceiling: 4 })).toMatch(/floor \(9\) must be ≤ ceiling \(4\)/)
    expect(message({ floor: 4, ceiling: 4 })).toBe("decoded")
  })

  it("rows and table print the schema's own defaults, derived ranges and meanings, in field order", () => {
    const Documented = Schema.Struct({
      floor: Field.int(1, 1).pipe(Field.doc("never below")),
      ceiling: Field.int(64, 1, 1000).pipe(Field.doc("never above", { range: "floor – 1000" })),
      beta: Field.number(0.5, { minimum: 0, maximum: 1, exclusiveMinimum: true }).pipe(Field.doc("cut | per round")),
      window: Field.positiveMillis("90 seconds"),
      idle: Field.millis(250),
      target: Field.positiveBytes("8 MiB"),
      spare: Field.bytes(1536),
      enabled: Field.boolean(false).pipe(Field.doc("off", { default: "off by default" }))
    })
    expect(Field.rows(Documented)).toEqual([
      { field: "floor", default: "1", range: "≥ 1", meaning: "never below" },
      { field: "ceiling", default: "64", range: "floor – 1000", meaning: "never above" },
      { field: "beta", default: "0.5", range: "(0, 1]", meaning: "cut | per round" },
      { field: "window", default: "90 s", range: "> 0", meaning: "" },
      { field: "idle", default: "250 ms", range: "≥ 0", meaning: "" },
      { field: "target", default: "8 MiB", range: "≥ 1 B", meaning: "" },
      { field: "spare", default: "1.5 KiB", range: "≥ 0", meaning: "" },
      { field: "enabled", default: "off by default", range: "", meaning: "off" }
    ])
    const table = Field.table(Documented).split("\n")
    expect(table.slice(0, 2)).toEqual(["| field | default | range | meaning |", "|---|---|---|---|"])
    expect(table[4]).toBe("| `beta` | 0.5 | (0, 1] | cut \\| per round |")
    // A default changed in the schema is the table's default.
    const Changed = Schema.Struct({ floor: Field.int(3, 1).pipe(Field.doc("never below")) })
    expect(Field.table(Changed).split("\n")[2]).toBe("| `floor` | 3 | ≥ 1 | never below |")
  })
})
