/**
 * The API reference stays buildable and complete: `npm run docs` (TypeDoc, in
 * tools/docs on its own TypeScript 6) documents every public entry point of
 * every package — each non-wildcard `exports` entry of packages/* — and its
 * validation (an export without TSDoc, a broken `{@link}`, a public type that
 * is not exported) is an error, so a missing comment fails here.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")
const toolDir = join(root, "tools/docs")

interface PackageJson {
  readonly name: string
  readonly exports: Record<string, null | Record<string, string>>
}

/** Every public entry point: `[import specifier, source file]`, wildcards and `null`s left out. */
const entryPoints = (): Array<readonly [string, string]> => {
  const out: Array<readonly [string, string]> = []
  for (const dir of readdirSync(join(root, "packages")).sort()) {
    const pkg = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")) as PackageJson
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (target === null || subpath.includes("*")) continue
      const source = target["@sluice/source"]
      if (source === undefined) throw new Error(`${pkg.name} exports ${subpath} without a "@sluice/source" file`)
      out.push([subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, resolve(root, "packages", dir, source)])
    }
  }
  return out
}

describe("npm run docs", () => {
  it("lists every package's public entry points in tools/docs/typedoc.json", () => {
    const config = JSON.parse(readFileSync(join(toolDir, "typedoc.json"), "utf8")) as { entryPoints: Array<string> }
    const configured = config.entryPoints.map((p) => resolve(toolDir, p)).sort()
    const exported = entryPoints().map(([, source]) => source).sort()
    expect(exported.length).toBeGreaterThanOrEqual(6)
    expect(configured).toEqual(exported)
  })

  it("builds the reference with TypeDoc's validation as errors: no warning, a page per entry point", () => {
    const out = mkdtempSync(join(tmpdir(), "sluice-docs-"))
    try {
      const result = spawnSync("npm", ["run", "docs", "--", "--out", out], {
        cwd: root,
        encoding: "utf8",
        timeout: 170_000,
        env: { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1" }
      })
      const output = `${result.stdout}\n${result.stderr}`
      expect(result.error, output).toBeUndefined()
      expect(output, "TypeDoc reported warnings (an undocumented export, a broken link, an unexported type)").not.toMatch(/\[warning\]/)
      expect(result.status, output.slice(-4000)).toBe(0)
      expect(output).toContain(`html generated at ${out}`)
      for (const [specifier] of entryPoints()) {
        // TypeDoc names a module page after its `@module` tag: `@sluice/core` → `_sluice_core.html`.
        const page = join(out, "modules", `${specifier.replace(/[@/]/g, "_")}.html`)
        expect(existsSync(page), `${specifier}: ${page}`).toBe(true)
      }
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  }, 180_000)
})
