/**
 * Config: inputs typed by the schema's encoded side (checked by `tsc`: this file
 * is in tsconfig.test.json), finite numbers, sizes and budgets of at least one
 * byte, and the duration forms people write.
 */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Config } from "../src/index.ts"

/** Shaped like a component's config: defaults, a nested group, durations and sizes. */
const Demo = Schema.Struct({
  step: Schema.Finite,
  memoryBudget: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("256 MiB"))),
  tick: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("100ms"))),
  batch: Schema.Struct({
    records: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(10))),
    bytes: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))),
    maxAge: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("60 seconds")))
  }).pipe(Schema.withDecodingDefaultKey(Effect.succeed({})))
})
type DemoInput = Config.Input<typeof Demo>

/** The decoded value, or `ConfigError: <message>`. */
const decode = (schema: Schema.Decoder<unknown>, input: unknown): unknown => {
  const result = Config.decodeResult("demo", schema, input)
  return Result.isSuccess(result) ? result.success : `${result.failure._tag}: ${result.failure.message}`
}

const one = <S extends Schema.Decoder<unknown>>(field: S) => Schema.Struct({ value: field })
/** `value` decoded with `field`, or the error message. */
const value = (field: Schema.Decoder<unknown>, input: unknown): unknown => {
  const out = decode(one(field), { value: input })
  return typeof out === "string" ? out : (out as { value: unknown }).value
}

describe("Config.Input (checked by tsc)", () => {
  it("is the encoded type: defaulted keys optional, durations and sizes number | string", () => {
    expectTypeOf<DemoInput>().toEqualTypeOf<{
      readonly step: number
      readonly memoryBudget?: number | string
      readonly tick?: number | string
      readonly batch?: {
        readonly records?: number
        readonly bytes?: number | string
        readonly maxAge?: number | string
      }
    }>()
    const minimal: DemoInput = { step: 1 }
    expect(decode(Demo, minimal)).toEqual({
      step: 1,
      memoryBudget: 256 * 1024 ** 2,
      tick: 100,
      batch: { records: 10, bytes: 8 * 1024 ** 2, maxAge: 60_000 }
    })
  })

  it("a misspelled key or a wrong kind of value fails to compile", () => {
    // @ts-expect-error misspelled top-level key
    const topLevel: DemoInput = { step: 1, memoryBudgt: "1 MiB" }
    // @ts-expect-error misspelled nested key
    const nested: DemoInput = { step: 1, batch: { recrods: 5 } }
    // @ts-expect-error a duration is a number or text, not a boolean
    const kind: DemoInput = { step: 1, tick: true }
    // @ts-expect-error a required key is missing
    const missing: DemoInput = {}
    // The run-time check catches them all the same.
    for (const input of [topLevel, nested, kind, missing]) expect(decode(Demo, input)).toMatch(/^ConfigError: demo: /)
  })

  it("Config.decode is typed by it", () => {
    // @ts-expect-error misspelled key in a literal
    const typo = Config.decode("demo", Demo, { stpe: 1 })
    // @ts-expect-error misspelled nested key in a literal
    const nested = Config.decode("demo", Demo, { step: 1, batch: { byts: 1 } })
    const text = { step: "1" }
    // @ts-expect-error a typed (not unknown) value of another shape
    const other = Config.decode("demo", Demo, text)
    expect(Effect.runSync(Effect.flip(typo)).message).toMatch(/\["stpe"\]/)
    expect(Effect.runSync(Effect.flip(nested)).message).toMatch(/\["batch"\]\["byts"\]/)
    expect(Effect.runSync(Effect.flip(other)).message).toMatch(/\["step"\]/)
    const ok = Config.decode("demo", Demo, { step: 1, tick: "1s", batch: { bytes: "1 MiB" } })
    expectTypeOf(ok).toEqualTypeOf<Effect.Effect<typeof Demo.Type, Config.ConfigError>>()
    expect(Effect.runSync(ok).tick).toBe(1000)
  })

  it("data of static type unknown compiles and is checked at run time only", () => {
    const data: unknown = JSON.parse(`{ "step": 1, "memoryBudgt": "1 MiB" }`)
    const error = Effect.runSync(Effect.flip(Config.decode("demo", Demo, data)))
    expect(error).toBeInstanceOf(Config.ConfigError)
    expect(error.component).toBe("demo")
    expect(error.message).toMatch(/^demo: .*\["memoryBudgt"\]/s)
  })

  it("a decoded config is a valid input and decodes to itself", () => {
    const decoded = Effect.runSync(Config.decode("demo", Demo, { step: 2, memoryBudget: "1 MiB", tick: "2s" }))
    const again: DemoInput = decoded
    expect(Effect.runSync(Config.decode("demo", Demo, again))).toEqual(decoded)
  })

  it("a schema that declares only its decoded type accepts any input at compile time", () => {
    const declared: Schema.Decoder<{ readonly step: number }> = Schema.Struct({ step: Schema.Finite })
    expectTypeOf<Config.Input<typeof declared>>().toEqualTypeOf<unknown>()
    expect(decode(declared, { stpe: 1 })).toMatch(/\["stpe"\]/)
  })
})

describe("Config.Millis", () => {
  it("reads the short forms people write", () => {
    expect(value(Config.Millis, "30s")).toBe(30_000)
    expect(value(Config.Millis, "500ms")).toBe(500)
    expect(value(Config.Millis, "2m")).toBe(120_000)
    expect(value(Config.Millis, "1h")).toBe(3_600_000)
    expect(value(Config.Millis, "1.5s")).toBe(1500)
    expect(value(Config.Millis, "30 s")).toBe(30_000)
    expect(value(Config.Millis, ".5s")).toBe(500)
    expect(value(Config.Millis, "1d")).toBe(86_400_000)
    expect(value(Config.Millis, "250us")).toBe(0.25)
    expect(value(Config.Millis, "5 min")).toBe(300_000)
  })

  it("keeps today's forms: words, and numbers as milliseconds", () => {
    expect(value(Config.Millis, "30 seconds")).toBe(30_000)
    expect(value(Config.Millis, "500 millis")).toBe(500)
    expect(value(Config.Millis, "1 second")).toBe(1000)
    expect(value(Config.Millis, "2 minutes")).toBe(120_000)
    expect(value(Config.Millis, " 1 hour ")).toBe(3_600_000)
    expect(value(Config.Millis, 250)).toBe(250)
    expect(value(Config.Millis, 0)).toBe(0)
    expect(value(Config.Millis, "0s")).toBe(0)
  })

  it("refuses NaN and ±Infinity with a message naming the field and the input", () => {
    expect(value(Config.Millis, Number.NaN)).toBe(`ConfigError: demo: Expected a finite number of milliseconds, got NaN\n  at ["value"]`)
    expect(value(Config.Millis, Number.POSITIVE_INFINITY)).toBe(
      `ConfigError: demo: Expected a finite number of milliseconds, got Infinity\n  at ["value"]`
    )
    expect(value(Config.Millis, Number.NEGATIVE_INFINITY)).toMatch(/finite number of milliseconds, got -Infinity\n {2}at \["value"\]/)
    expect(value(Config.Millis, "Infinity")).toMatch(/Expected a duration like .*, got "Infinity"\n {2}at \["value"\]/)
  })

  it("refuses negative durations, text without a unit and unknown units", () => {
    expect(value(Config.Millis, -5)).toBe(`ConfigError: demo: Expected a non-negative number of milliseconds, got -5\n  at ["value"]`)
    for (const text of ["-5s", "30", "soon", "5 fortnights", "1h30m", "30S", "", "s", "5 constructor", "1 toString"]) {
      expect(value(Config.Millis, text)).toBe(
        `ConfigError: demo: Expected a duration like "500ms", "30s", "2m", "1h" or "30 seconds" (a number is milliseconds), got ${
          JSON.stringify(text)
        }\n  at ["value"]`
      )
    }
  })

  it("PositiveMillis refuses 0", () => {
    expect(value(Config.PositiveMillis, 0)).toBe(`ConfigError: demo: Expected a duration greater than 0, got 0\n  at ["value"]`)
    expect(value(Config.PositiveMillis, "0s")).toMatch(/greater than 0, got 0\n {2}at \["value"\]/)
    expect(value(Config.PositiveMillis, Number.NaN)).toMatch(/finite number of milliseconds, got NaN/)
    expect(value(Config.PositiveMillis, "1ms")).toBe(1)
    expect(value(Config.PositiveMillis, 0.5)).toBe(0.5)
  })
})

describe("Config.parseMillis", () => {
  it("parses a number and a unit, or returns undefined", () => {
    expect(Config.parseMillis("1.5s")).toBe(1500)
    expect(Config.parseMillis("2 minutes")).toBe(120_000)
    expect(Config.parseMillis("1w")).toBe(604_800_000)
    expect(Config.parseMillis("3000000ns")).toBe(3)
    expect(Config.parseMillis("30")).toBeUndefined()
    expect(Config.parseMillis("-1s")).toBeUndefined()
    expect(Config.parseMillis("1e3ms")).toBeUndefined()
    expect(Config.parseMillis("1 constructor")).toBeUndefined()
  })
})

describe("Config.Bytes", () => {
  it("keeps accepting sizes as text and numbers", () => {
    expect(value(Config.Bytes, "8 MiB")).toBe(8 * 1024 ** 2)
    expect(value(Config.Bytes, "8MiB")).toBe(8 * 1024 ** 2)
    expect(value(Config.Bytes, "8 MB")).toBe(8_000_000)
    expect(value(Config.Bytes, "64 kib")).toBe(65_536)
    expect(value(Config.Bytes, "1.5 KiB")).toBe(1536)
    expect(value(Config.Bytes, "512")).toBe(512)
    expect(value(Config.Bytes, 1024)).toBe(1024)
    expect(value(Config.Bytes, 0)).toBe(0)
  })

  it("refuses NaN and ±Infinity with a message naming the field and the input", () => {
    expect(value(Config.Bytes, Number.NaN)).toBe(`ConfigError: demo: Expected a finite number of bytes, got NaN\n  at ["value"]`)
    expect(value(Config.Bytes, Number.POSITIVE_INFINITY)).toBe(`ConfigError: demo: Expected a finite number of bytes, got Infinity\n  at ["value"]`)
    expect(value(Config.Bytes, Number.NEGATIVE_INFINITY)).toMatch(/finite number of bytes, got -Infinity\n {2}at \["value"\]/)
  })

  it("refuses negative sizes and text that is not a size", () => {
    expect(value(Config.Bytes, -1)).toBe(`ConfigError: demo: Expected a non-negative number of bytes, got -1\n  at ["value"]`)
    for (const text of ["lots", "8 XB", "-1 MiB", "1e3", "", "5 constructor", "1 valueOf"]) {
      expect(value(Config.Bytes, text)).toBe(
        `ConfigError: demo: Expected a byte size like "256 MiB", "8MiB" or "8 MB" (a number is bytes), got ${JSON.stringify(text)}\n  at ["value"]`
      )
    }
  })

  it("PositiveBytes refuses 0 and anything under one byte", () => {
    expect(value(Config.PositiveBytes, 0)).toBe(`ConfigError: demo: Expected at least 1 byte, got 0\n  at ["value"]`)
    expect(value(Config.PositiveBytes, "0 MiB")).toMatch(/at least 1 byte, got 0\n {2}at \["value"\]/)
    expect(value(Config.PositiveBytes, 0.5)).toMatch(/at least 1 byte, got 0.5/)
    expect(value(Config.PositiveBytes, Number.POSITIVE_INFINITY)).toMatch(/finite number of bytes, got Infinity/)
    expect(value(Config.PositiveBytes, 1)).toBe(1)
    expect(value(Config.PositiveBytes, "1 KiB")).toBe(1024)
  })
})

describe("Config.decode errors", () => {
  it("name every bad field, nested ones by their path", () => {
    const message = decode(Demo, { step: Number.NaN, memoryBudget: 0, tick: "30 secondz", batch: { bytes: 0, maxAge: Number.NaN } })
    expect(message).toMatch(/^ConfigError: demo: /)
    expect(message).toMatch(/Expected a finite number\n {2}at \["step"\]/)
    expect(message).toMatch(/Expected at least 1 byte, got 0\n {2}at \["memoryBudget"\]/)
    expect(message).toMatch(/got "30 secondz"\n {2}at \["tick"\]/)
    expect(message).toMatch(/Expected at least 1 byte, got 0\n {2}at \["batch"\]\["bytes"\]/)
    expect(message).toMatch(/finite number of milliseconds, got NaN\n {2}at \["batch"\]\["maxAge"\]/)
  })
})
