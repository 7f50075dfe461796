/**
 * A third-party policy package outside the repository, as its author meets
 * Sluice (issue 29): `@sluice/core`, `@sluice/policies` and `@sluice/testkit`
 * packed with `npm pack` (their `prepack` builds them), the policy template
 * `examples/custom-policy` copied to a temporary directory with its
 * dependencies on those tarballs, installed with npm and with pnpm from the
 * registry, then in each: `tsc -b` and the tests' type-check (strict; the
 * template's own tsconfig), its vitest suite (the testkit's conformance suite,
 * the pure core, the scenario and the virtual-clock pipeline run), and the
 * installed `sluice-sim` with the policy alone (`./dist/index.js`, its
 * scenario's bounds hold: exit 0), composed (`./dist/index.js+throttle+shared`)
 * and as a package inside a composition (`sluice-policy-example+throttle`).
 * `publint` and `@arethetypeswrong/cli` (ESM-only profile: the packages ship
 * no CommonJS) run clean on every tarball.
 *
 * Needs the npm registry (the template's dev dependencies, pnpm, publint,
 * attw); the tool versions are pinned below.
 */
import { execFile } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const exec = promisify(execFile)
const root = fileURLToPath(new URL("../..", import.meta.url))
/** The packages a policy author installs (the testkit's peers name the policies). */
const packed = ["core", "policies", "testkit"] as const
/** Pinned tools, fetched by npx from the registry (the versions this test was written against). */
const PNPM = "pnpm@10.34.9"
const PUBLINT = "publint@0.3.25"
const ATTW = "@arethetypeswrong/cli@0.18.5"
/** Every command of this test is bounded: installs and the template's suite take tens of seconds here. */
const COMMAND_TIMEOUT_MILLIS = 240_000

// npx, npm and the installed bins run on the repository's Node (as every npm script does).
const env = { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", PATH: `${join(root, "node_modules", "node", "bin")}:${join(root, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}` }

const run = async (command: string, args: ReadonlyArray<string>, cwd: string): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> => {
  try {
    const { stdout, stderr } = await exec(command, [...args], { cwd, env, timeout: COMMAND_TIMEOUT_MILLIS, maxBuffer: 64 * 1024 * 1024 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { readonly code?: number | string; readonly stdout?: string; readonly stderr?: string }
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(error) }
  }
}

const ok = (r: { readonly code: number; readonly stdout: string; readonly stderr: string }, what: string) =>
  expect(r.code, `${what}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`).toBe(0)

let dir = ""
const tarballs = new Map<string, string>()

/** The template copied to `name`, its `@sluice/*` devDependencies on the tarballs. */
const project = (name: string): string => {
  const at = join(dir, name)
  mkdirSync(at)
  for (const entry of ["src", "test", "scenarios", "tsconfig.json", "tsconfig.test.json", "package.json", "README.md"]) {
    cpSync(join(root, "examples", "custom-policy", entry), join(at, entry), { recursive: true })
  }
  const manifest = JSON.parse(readFileSync(join(at, "package.json"), "utf8")) as { devDependencies: Record<string, string> }
  for (const [pkg, file] of tarballs) manifest.devDependencies[pkg] = `file:${file}`
  writeFileSync(join(at, "package.json"), JSON.stringify(manifest, null, 2))
  return at
}

describe("a policy package outside the repository, from the packed tarballs", { timeout: 20 * 60_000 }, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sluice-outside-"))
    const out = join(dir, "tarballs")
    mkdirSync(out)
    for (const name of packed) {
      ok(await run("npm", ["pack", "--pack-destination", out], join(root, "packages", name)), `npm pack ${name}`)
    }
    for (const file of readdirSync(out)) {
      const pkg = `@sluice/${file.replace(/^sluice-/, "").replace(/-\d+\.\d+\.\d+\.tgz$/, "")}`
      tarballs.set(pkg, join(out, file))
    }
    expect([...tarballs.keys()].sort()).toEqual(["@sluice/core", "@sluice/policies", "@sluice/testkit"])
  }, COMMAND_TIMEOUT_MILLIS * 3)

  afterAll(() => {
    if (dir !== "") rmSync(dir, { recursive: true, force: true })
  })

  it("publint and attw (ESM-only) are clean on every tarball", async () => {
    for (const [pkg, file] of tarballs) {
      ok(await run("npx", ["--yes", PUBLINT, file, "--strict"], dir), `publint ${pkg}`)
      ok(await run("npx", ["--yes", ATTW, file, "--profile", "esm-only"], dir), `attw ${pkg}`)
    }
  })

  for (const manager of ["npm", "pnpm"] as const) {
    it(`${manager}: installs, builds and type-checks strictly, passes its suite, and runs in the installed sluice-sim alone, composed and as a package`, async () => {
      const at = project(manager)
      ok(
        manager === "npm"
          ? await run("npm", ["install", "--no-audit", "--no-fund"], at)
          : await run("npx", ["--yes", PNPM, "install", "--config.confirmModulesPurge=false"], at),
        `${manager} install`
      )
      ok(await run("npx", ["tsc", "-b"], at), "tsc -b")
      expect(readdirSync(join(at, "dist"))).toContain("index.js")
      ok(await run("npx", ["tsc", "-p", "tsconfig.test.json", "--noEmit"], at), "tsc -p tsconfig.test.json")
      const suite = await run("npx", ["vitest", "run"], at)
      ok(suite, "vitest run")
      const report = suite.stdout.replace(/\u001b\[[0-9;]*m/g, "")
      expect(report).toMatch(/Tests\s+\d+ passed/)
      expect(report).not.toMatch(/failed/)
      const sim = async (spec: string) => {
        const r = await run("npx", ["sluice-sim", "run", "scenarios/storm-then-slower.json", "--policy", spec, "--json"], at)
        const last = r.stdout.trim().split("\n").at(-1) ?? ""
        return { ...r, summary: JSON.parse(last) as { readonly policy: string; readonly goodputRatio: number } }
      }
      // Plotting is optional: vega and vega-lite are not installed with the testkit, and
      // asking for a plot says how to install them, before the run, with nothing written.
      expect(existsSync(join(at, "node_modules", "vega")), "vega installed without being asked for").toBe(false)
      const plot = await run("npx", ["sluice-sim", "run", "scenarios/storm-then-slower.json", "--policy", "./dist/index.js", "--plot", "out.svg"], at)
      expect(plot.code, plot.stderr).toBe(2)
      expect(plot.stderr).toContain("plotting needs vega and vega-lite, which @sluice/testkit does not install")
      expect(plot.stderr).toContain("npm install --save-dev vega@^6.4.0 vega-lite@^6.5.0")
      expect(existsSync(join(at, "out.svg"))).toBe(false)
      // The scenarios the docs cite ship in the packages, at importable paths (issue 29).
      for (const shipped of ["@sluice/testkit/scenarios/knee-24.json", "@sluice/policies/scenarios/slowdown-outage.json"]) {
        const where = await run("node", ["--input-type=module", "-e", `import { fileURLToPath } from "node:url"; console.log(fileURLToPath(import.meta.resolve(${JSON.stringify(shipped)})))`], at)
        ok(where, `resolve ${shipped}`)
        const file = where.stdout.trim()
        const r = await run("npx", ["sluice-sim", "run", file, "--policy", "default", "--json"], at)
        ok(r, `sluice-sim run ${shipped} (its bounds hold with the default)`)
        expect((JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}") as { readonly scenario?: string }).scenario).toBe(shipped.replace(/^.*\/(.*)\.json$/, "$1"))
      }
      const alone = await sim("./dist/index.js")
      ok(alone, "sluice-sim alone (its scenario's bounds hold)")
      expect(alone.summary.policy).toBe("./dist/index.js")
      for (const spec of ["./dist/index.js+throttle+shared", "sluice-policy-example+throttle"]) {
        const composed = await sim(spec)
        // 0: every bound of the scenario held; 1: one failed (the bounds were written for ARC alone). 2 would be a refused spec.
        expect([0, 1], `${spec}\n${composed.stderr.slice(-2000)}`).toContain(composed.code)
        expect(composed.summary.policy).toBe(spec)
        expect(composed.summary.goodputRatio).toBeGreaterThan(0)
      }
    })
  }
})
