/**
 * What `npm pack` ships from a clean checkout (issue 29): each package's
 * `prepack` builds it, so the tarball carries `dist/` (a clean clone used to
 * pack 39 files of `@sluice/core` and none of its code), with the LICENSE and
 * README. The packages are copied without `dist/` to a temporary directory
 * laid out like the repository, and packed there with `npm pack --dry-run`.
 */
import { execFile } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const run = promisify(execFile)
const root = fileURLToPath(new URL("../..", import.meta.url))
const packages = ["core", "policies", "adapters-s3", "adapters-kafka", "testkit"] as const

describe("npm pack from a clean checkout", { timeout: 300_000 }, () => {
  it("builds each package before packing it: the tarball has its dist/ (code and types), LICENSE and README", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-pack-"))
    try {
      cpSync(join(root, "tsconfig.base.json"), join(dir, "tsconfig.base.json"))
      for (const name of packages) {
        cpSync(join(root, "packages", name), join(dir, "packages", name), {
          recursive: true,
          filter: (src) => !/[/\\](dist|node_modules|\.turbo)$/.test(src) && !src.endsWith(".tsbuildinfo")
        })
      }
      symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
      for (const name of packages) {
        const cwd = join(dir, "packages", name)
        const manifest = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8")) as { readonly license: string; readonly scripts: Record<string, string> }
        expect(manifest.scripts["prepack"], name).toBe("tsc -b")
        const { stdout } = await run("npm", ["pack", "--dry-run", "--json"], { cwd, maxBuffer: 16 * 1024 * 1024 })
        const [packed] = JSON.parse(stdout) as Array<{ readonly files: ReadonlyArray<{ readonly path: string }> }>
        const files = (packed?.files ?? []).map((f) => f.path)
        expect(files, name).toContain("dist/src/index.js")
        expect(files, name).toContain("dist/src/index.d.ts")
        expect(files, name).toContain("LICENSE")
        expect(files, name).toContain("README.md")
        expect(readFileSync(join(cwd, "LICENSE"), "utf8"), name).toContain("Apache License")
        expect(manifest.license).toBe("Apache-2.0")
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
