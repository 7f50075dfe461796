/**
 * Every code example a reader can copy compiles: the ```ts blocks of the
 * READMEs (the root's, each package's, examples/README.md) and the ```ts
 * blocks of the TSDoc comments in packages/∗/src (the `**Example**` sections),
 * as effect's docgen checks its own. Each block becomes a module of its own in
 * a scratch folder inside the repo (so `@sluice/*` and `effect` resolve as
 * they do for a user, from the sources), and one `tsc` run type-checks them
 * all; an error names the block's file and line.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")

/** One example: where it is (file, 1-based line of its first code line) and its code. */
interface Example {
  readonly file: string
  readonly line: number
  readonly code: string
}

const lineOf = (text: string, index: number): number => text.slice(0, index).split("\n").length

/** The ```ts blocks of a Markdown file. */
const markdownExamples = (file: string): Array<Example> => {
  const text = readFileSync(join(root, file), "utf8")
  return [...text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)].map((m) => ({ file, line: lineOf(text, m.index) + 1, code: m[1] ?? "" }))
}

/** The ```ts blocks inside the `/** … *\/` comments of a source file. */
const tsdocExamples = (file: string): Array<Example> => {
  const text = readFileSync(join(root, file), "utf8")
  const out: Array<Example> = []
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const body = comment[0]
    for (const m of body.matchAll(/^[ \t]*\* ?```(?:ts|typescript)\n([\s\S]*?)^[ \t]*\* ?```/gm)) {
      const code = (m[1] ?? "").split("\n").map((l) => l.replace(/^[ \t]*\* ?/, "")).join("\n")
      out.push({ file, line: lineOf(text, comment.index + m.index) + 1, code })
    }
  }
  return out
}

const sources = (dir: string): Array<string> =>
  readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) return sources(path)
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : []
  })

const examples = (): Array<Example> => {
  const readmes = ["README.md", "examples/README.md", ...readdirSync(join(root, "packages")).sort().map((p) => `packages/${p}/README.md`)]
  const packages = readdirSync(join(root, "packages")).sort().flatMap((p) => sources(`packages/${p}/src`))
  return [...readmes.flatMap(markdownExamples), ...packages.flatMap(tsdocExamples)]
}

/**
 * A TSDoc example's relative imports, rebased to the scratch folder `dir`: from the file's folder
 * where the module is there, else from its package's `src` (the examples of
 * `packages/core/src/stage/*` import `./stage/…` as from `src`).
 */
const rebased = (e: Example, dir: string): string => {
  if (e.file.endsWith(".md")) return e.code
  const src = join(root, e.file.split("/").slice(0, 3).join("/"))
  return e.code.replace(/(from |import\()"(\.{1,2}\/[^"]+)"/g, (whole, keyword: string, spec: string) => {
    const near = resolve(root, dirname(e.file), spec)
    const target = existsSync(near) ? near : resolve(src, spec)
    return existsSync(target) ? `${keyword}${JSON.stringify(relative(dir, target))}` : whole
  })
}

describe("code examples", () => {
  it("every ```ts block of the READMEs and of the packages' TSDoc compiles", () => {
    const all = examples()
    expect(all.length, "the READMEs' and TSDoc's examples").toBeGreaterThanOrEqual(200)
    const dir = mkdtempSync(join(root, "examples", ".code-examples-"))
    try {
      const names = all.map((e, i) => {
        const name = `example-${String(i).padStart(3, "0")}.ts`
        // Each a module of its own (top-level await allowed, names not shared).
        writeFileSync(join(dir, name), `${rebased(e, dir)}\nexport {}\n`)
        return name
      })
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          extends: "../../tsconfig.base.json",
          compilerOptions: { noEmit: true, customConditions: ["@sluice/source"], noUnusedLocals: false, noUnusedParameters: false, declaration: false, declarationMap: false, sourceMap: false, rootDir: "../.." },
          include: names
        })
      )
      const result = spawnSync(join(root, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json"), "--pretty", "false"], { cwd: root, encoding: "utf8", timeout: 170_000 })
      expect(result.error).toBeUndefined()
      const output = `${result.stdout}${result.stderr}`
      const problems = output.split("\n").filter((l) => l.trim() !== "").map((l) => {
        const m = /example-(\d{3})\.ts\((\d+),\d+\): (.*)$/.exec(l)
        if (m === null) return l
        const e = all[Number(m[1])] as Example
        return `${e.file}:${e.line + Number(m[2]) - 1}: ${m[3]}`
      })
      expect(problems, `${relative(root, dir)}`).toEqual([])
      expect(result.status).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
