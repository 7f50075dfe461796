/**
 * The versioning rule of the policy author's guide (examples/custom-policy/README.md,
 * "Which versions to accept"), checked on the packages as they are: no `@since` tag
 * above its package's version, and every peer range on a `@sluice/*` package
 * `>=X <1` with X no newer than that package (a `^0.x` range would refuse the
 * next minor release; a tag may name the version the pending changesets
 * release). And the changelog kept with changesets
 * (`.changeset/README.md`): every package ships a `CHANGELOG.md` whose newest
 * section is its version, the five are released at one version, and every
 * pending changeset names only those packages with a bump changesets knows.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const packageDirs = readdirSync(join(root, "packages")).map((d) => join(root, "packages", d)).filter((d) => statSync(d).isDirectory())

interface Manifest {
  readonly name: string
  readonly version: string
  readonly files?: ReadonlyArray<string>
  readonly peerDependencies?: Readonly<Record<string, string>>
}
const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest

const parts = (v: string): ReadonlyArray<number> => v.split(".").map(Number)
const compare = (a: string, b: string): number => {
  const [x, y] = [parts(a), parts(b)]
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0)
  return 0
}

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  )

const versions = new Map(packageDirs.map((d) => [manifestOf(d).name, manifestOf(d).version] as const))

/** The pending changesets' bumps (`.changeset/*.md` front matter), by file. */
const changesetDir = join(root, ".changeset")
const pending = readdirSync(changesetDir)
  .filter((f) => f.endsWith(".md") && f !== "README.md")
  .map((f) => ({ file: f, text: readFileSync(join(changesetDir, f), "utf8") }))
const bumps = pending.flatMap(({ text }) => [...text.matchAll(/^"@sluice\/[a-z0-9-]+": (major|minor|patch)$/gm)].map((m) => m[1] ?? ""))

/**
 * The version the next release gets: the packages' version bumped by the
 * largest pending changeset (the five are one `fixed` group). What it adds is
 * tagged `@since` that version before `changeset version` writes it into the
 * manifests.
 */
const next = (version: string): string => {
  const [major = 0, minor = 0, patch = 0] = parts(version)
  if (bumps.includes("major")) return `${major + 1}.0.0`
  if (bumps.includes("minor")) return `${major}.${minor + 1}.0`
  if (bumps.includes("patch")) return `${major}.${minor}.${patch + 1}`
  return version
}

describe("versions", () => {
  for (const dir of packageDirs) {
    const manifest = manifestOf(dir)
    it(`${manifest.name}: no @since tag above ${next(manifest.version)} (its version with the pending changesets)`, () => {
      const above = sources(join(dir, "src")).flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/@since (\d+\.\d+\.\d+)/g)]
          .map((m) => m[1] ?? "")
          .filter((v) => compare(v, next(manifest.version)) > 0)
          .map((v) => `${file.slice(root.length)}: @since ${v}`)
      )
      expect(above).toEqual([])
    })
    it(`${manifest.name}: ships CHANGELOG.md, its newest section ${manifest.version}`, () => {
      expect(manifest.files ?? []).toContain("CHANGELOG.md")
      const changelog = readFileSync(join(dir, "CHANGELOG.md"), "utf8")
      expect(changelog.startsWith(`# ${manifest.name}\n`)).toBe(true)
      expect(/^## (\S+)$/m.exec(changelog)?.[1]).toBe(manifest.version)
    })
    it(`${manifest.name}: peer ranges on @sluice/* are >=X <1, X no newer than the package`, () => {
      const wrong = Object.entries(manifest.peerDependencies ?? {})
        .filter(([name]) => name.startsWith("@sluice/"))
        .filter(([name, range]) => {
          const m = /^>=(\d+\.\d+\.\d+) <1$/.exec(range)
          const current = versions.get(name)
          return m === null || current === undefined || compare(m[1] ?? "", current) > 0
        })
        .map(([name, range]) => `${name}: ${range}`)
      expect(wrong).toEqual([])
    })
  }

  it("every package is released at one version, the changesets' `fixed` group", () => {
    const config = JSON.parse(readFileSync(join(root, ".changeset", "config.json"), "utf8")) as { readonly fixed: ReadonlyArray<ReadonlyArray<string>> }
    expect([...(config.fixed[0] ?? [])].sort()).toEqual([...versions.keys()].sort())
    expect(new Set(versions.values()).size).toBe(1)
  })

  it("every pending changeset names only these packages, with major, minor or patch", () => {
    const wrong = pending
      .flatMap(({ file: f, text }) => {
        const front = /^---\n([\s\S]*?)\n---\n\s*\S/.exec(text)
        if (front === null) return [`${f}: no front matter followed by a summary`]
        return (front[1] ?? "").split("\n").filter((line) => line.trim() !== "").flatMap((line) => {
          const m = /^"(@sluice\/[a-z0-9-]+)": (major|minor|patch)$/.exec(line.trim())
          return m !== null && versions.has(m[1] ?? "") ? [] : [`${f}: ${line}`]
        })
      })
    expect(wrong).toEqual([])
  })
})
