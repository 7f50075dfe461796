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
  readonly exports: Record<string, null | string | Record<string, string>>
}

/** Every public entry point: `[import specifier, source file]`, wildcards, `null`s and data files (a plain path: JSON the package ships) left out. */
const entryPoints = (): Array<readonly [string, string]> => {
  const out: Array<readonly [string, string]> = []
  for (const dir of readdirSync(join(root, "packages")).sort()) {
    const pkg = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")) as PackageJson
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (target === null || typeof target === "string" || subpath.includes("*")) continue
      const source = target["@sluice/source"]
      if (source === undefined) throw new Error(`${pkg.name} exports ${subpath} without a "@sluice/source" file`)
      out.push([subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, resolve(root, "packages", dir, source)])
    }
  }
  return out
}

/**
 * The ```ts blocks of the guides (docs/*.md): each must be marked
 * `<!-- excerpt: path -->` on the line before, and be an excerpt of that file —
 * verbatim, in order, with `// …` lines standing for what was left out — so a
 * guide's code compiles and is tested wherever its file is.
 */
const guideSamples = (): Array<{ readonly doc: string; readonly file: string | undefined; readonly code: string }> => {
  const out: Array<{ readonly doc: string; readonly file: string | undefined; readonly code: string }> = []
  for (const name of readdirSync(join(root, "docs")).sort()) {
    if (!name.endsWith(".md")) continue
    const text = readFileSync(join(root, "docs", name), "utf8")
    for (const m of text.matchAll(/(?:<!-- excerpt: (\S+) -->\n)?```(?:ts|typescript)\n([\s\S]*?)```/g)) {
      out.push({ doc: `docs/${name}`, file: m[1], code: m[2] ?? "" })
    }
  }
  return out
}

/** Why `code` is not an excerpt of `source`, or undefined when it is. */
const notAnExcerpt = (code: string, source: string): string | undefined => {
  const parts = code.split(/^[ \t]*\/\/ …[ \t]*\n/m).map((p) => p.replace(/^\n+|\s+$/g, ""))
  let from = 0
  for (const part of parts) {
    const at = source.indexOf(part, from)
    if (at < 0) return `not found in order:\n${part}`
    from = at + part.length
  }
  return undefined
}

describe("guides", () => {
  it("every code sample in docs/*.md is a marked excerpt of a file CI compiles", () => {
    const samples = guideSamples()
    expect(samples.length).toBeGreaterThanOrEqual(9)
    const problems: Array<string> = []
    for (const { doc, file, code } of samples) {
      if (file === undefined) {
        problems.push(`${doc}: a code sample without <!-- excerpt: path --> before it:\n${code.slice(0, 200)}`)
        continue
      }
      const path = join(root, file)
      if (!existsSync(path)) {
        problems.push(`${doc}: excerpt of ${file}, which does not exist`)
        continue
      }
      const why = notAnExcerpt(code, readFileSync(path, "utf8"))
      if (why !== undefined) problems.push(`${doc}: excerpt of ${file}: ${why}`)
    }
    expect(problems).toEqual([])
  })
})

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
