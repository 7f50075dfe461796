/**
 * The config tables in each policy's module doc and in the README are
 * generated from the schemas (`npm run docs:config`, scripts/config-tables.ts)
 * and cannot drift from them: the test fails when a file's table differs from
 * what its schema generates, and when a field has no `Field.doc` meaning.
 * Before tables were generated, DeliveryRate's had 4 of 21 defaults wrong and
 * missed a field, and the README's had no meanings (issue 26).
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Field } from "@sluice/core"
import { command, generated, policies } from "../scripts/config-tables.ts"

describe("each policy's config table is its schema's", () => {
  for (const g of generated()) {
    it(g.path.replace(/^.*packages\/policies\//, ""), () => {
      expect(readFileSync(g.path, "utf8") === g.content, `${g.path} differs from its schema: run npm run docs:config`).toBe(true)
    })
  }
  for (const p of policies) {
    it(`${p.name}: every field says what it means`, () => {
      expect(Field.rows(p.schema).filter((r) => r.meaning === "").map((r) => r.field)).toEqual([])
    })
  }
})

describe("npm run docs:config — the command line", () => {
  it("reads --check, and refuses a typo of it rather than writing the files", () => {
    expect(command.read(["--check"])).toEqual({ _tag: "Run", flags: { check: true } })
    expect(command.read([])).toEqual({ _tag: "Run", flags: { check: false } })
    const typo = command.read(["--chek"])
    expect(typo._tag === "Invalid" && typo.message).toMatch(/^docs:config: Unrecognized flag: --chek[\s\S]*--check/)
    expect(command.help).toContain("npm run docs:config -- [flags]")
  })
})
