import { Ajv2020 } from "ajv/dist/2020.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import * as Scenario from "../src/Scenario.ts"

const schemaFile = new URL("../scenario.schema.json", import.meta.url)
const committed = readFileSync(schemaFile, "utf8")

/** Every shipped scenario file: the testkit's and the policies'. */
const shipped = ["../scenarios/", "../../policies/scenarios/"].flatMap((dir) => {
  const url = new URL(dir, import.meta.url)
  return readdirSync(url).filter((f) => f.endsWith(".json")).map((f) => ({ name: f, url: new URL(f, url) }))
})

// ajv: a JSON Schema validator, a devDependency of @sluice/testkit.
const ajv = new Ajv2020({ allErrors: true, strict: false })

describe("scenario.schema.json", () => {
  it("is the JSON Schema generated from Scenario.Scenario (regenerate: npm run build && npx sluice-sim schema > packages/testkit/scenario.schema.json)", () => {
    expect(committed).toBe(`${JSON.stringify(Scenario.jsonSchema(), null, 2)}\n`)
    const schema = JSON.parse(committed)
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema")
    expect(schema.additionalProperties).toBe(false)
    expect(schema.properties.$schema).toMatchObject({ type: "string" })
    expect(schema.required).toEqual(["name", "seed", "duration", "source", "store"])
  })

  it("ships in the package", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { files: Array<string> }
    expect(pkg.files).toContain("scenario.schema.json")
  })

  it.effect("every shipped scenario decodes, also with a \"$schema\" key pointing at the schema file", () =>
    Effect.gen(function*() {
      expect(shipped.length).toBeGreaterThanOrEqual(21)
      for (const file of shipped) {
        const data = JSON.parse(readFileSync(file.url, "utf8"))
        const plain = yield* Scenario.decode(data)
        const pointed = yield* Scenario.decode({ ...data, $schema: "../scenario.schema.json" })
        expect(pointed).toEqual({ ...plain, $schema: "../scenario.schema.json" })
      }
    }))

  it("every shipped scenario validates against the schema file (ajv); unknown keys do not", () => {
    const validate = ajv.compile(JSON.parse(committed))
    for (const file of shipped) {
      const data = { $schema: "../scenario.schema.json", ...JSON.parse(readFileSync(file.url, "utf8")) }
      expect({ file: file.name, valid: validate(data), errors: validate.errors ?? null }).toEqual({ file: file.name, valid: true, errors: null })
    }
    const knee = JSON.parse(readFileSync(shipped.find((f) => f.name === "knee-24.json")?.url ?? "", "utf8"))
    expect(validate({ ...knee, store: { ...knee.store, kneee: 3 } })).toBe(false)
    expect(validate({ ...knee, seed: 1.5 })).toBe(false)
  })
})
