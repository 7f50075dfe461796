/**
 * `examples/bundle/LazyAjv2020.ts`: `compile` defers the work to the
 * validator's first call, and the validator then answers as `ajv`'s own:
 * the same result and the same `errors`, call after call.
 */
import { Ajv2020 as EagerAjv2020 } from "ajv/dist/2020.js"
import { describe, expect, it } from "vitest"
import { Ajv2020, lazily } from "../bundle/LazyAjv2020.ts"

const options = { allErrors: true, coerceTypes: false, strict: true } as const
const schema = {
  type: "object",
  properties: { clientId: { type: "string" }, retries: { type: "integer", minimum: 0 } },
  required: ["clientId"],
  additionalProperties: false
}
const data: ReadonlyArray<unknown> = [
  { clientId: "c" },
  { clientId: 5 },
  { clientId: "c", retries: -1, extra: true },
  {},
  { clientId: "c", retries: 3 },
  "not an object"
]

describe("LazyAjv2020", () => {
  it("compiles nothing until the first call", () => {
    let compiles = 0
    const validate = lazily(() => {
      compiles++
      return new EagerAjv2020(options).compile(schema)
    })
    expect(compiles).toBe(0)
    expect(validate.compiled).toBe(false)
    expect(validate({ clientId: "c" })).toBe(true)
    expect(validate({ clientId: 5 })).toBe(false)
    expect(compiles).toBe(1)
    expect(validate.compiled).toBe(true)
  })

  it("answers as ajv's own validator: the same result and errors, call after call", () => {
    const eager = new EagerAjv2020(options).compile(schema)
    const lazy = new Ajv2020(options).compile(schema)
    for (const d of data) {
      const expected = eager(d)
      expect(lazy(d)).toBe(expected)
      expect(lazy.errors).toEqual(eager.errors)
    }
    expect(lazy.errors).not.toBeNull() // the last datum is refused
  })

  it("refuses a schema ajv refuses at the first call, not at compile", () => {
    const bad = { type: "object", properties: { a: { type: "string", unknownKeyword: 1 } } }
    expect(() => new EagerAjv2020(options).compile(bad)).toThrow(/strict mode: unknown keyword: "unknownKeyword"/)
    const lazy = new Ajv2020(options).compile(bad)
    expect(() => lazy({ a: "x" })).toThrow(/strict mode: unknown keyword: "unknownKeyword"/)
  })
})
