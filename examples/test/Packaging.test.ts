/**
 * Packaging as a consumer sees it: the built packages (dist, resolved through
 * package.json exports, not the workspace sources), compiled with declarations.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const root = join(import.meta.dirname, "../..")
const packages = ["core", "policies", "testkit", "adapters-s3", "adapters-kafka"]
const manifest = (name: string) => JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8")) as {
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly sideEffects?: boolean
  readonly engines?: { readonly node?: string }
}

describe("packaging", () => {
  it("a consumer exporting values built with S3Sink.make, KafkaSource.make, policies and the testkit compiles with declarations", () => {
    const out = mkdtempSync(join(tmpdir(), "sluice-consumer-"))
    try {
      const tsc = spawnSync(join(root, "node_modules/.bin/tsc"), ["-p", join(import.meta.dirname, "consumer/tsconfig.json"), "--outDir", out], {
        cwd: root,
        encoding: "utf8",
        // A synchronous child blocks vitest's own timer: bounded here, below the test's.
        timeout: 110_000
      })
      expect(tsc.error).toBeUndefined()
      expect(tsc.stdout + tsc.stderr).toBe("")
      expect(tsc.status).toBe(0)
      const declarations = readFileSync(join(out, "index.d.ts"), "utf8")
      expect(declarations).toContain("export declare const sink")
      expect(declarations).not.toMatch(/dist\/src|node_modules/)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  }, 120_000)

  it("effect and @opentelemetry/api are peer dependencies (one copy in the consumer), every package is side-effect free", () => {
    for (const name of packages) {
      const m = manifest(name)
      expect(m.dependencies?.["effect"], name).toBeUndefined()
      expect(m.peerDependencies?.["effect"], name).toMatch(/^\^4\./)
      expect(m.dependencies?.["@sluice/core"], name).toBeUndefined()
      expect(m.sideEffects, name).toBe(false)
    }
    expect(manifest("core").peerDependencies?.["@opentelemetry/api"]).toBeDefined()
    expect(manifest("testkit").peerDependencies?.["@sluice/policies"]).toBeDefined()
  })

  it("the testkit loads its plotting libraries (vega, vega-lite) only when a plot is asked for", () => {
    const dist = join(root, "packages/testkit/dist/src")
    const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"))
    expect(files.length).toBeGreaterThan(5)
    for (const file of files) {
      expect(readFileSync(join(dist, file), "utf8"), file).not.toMatch(/^import[^;]*from "vega(-lite)?"/m)
    }
  })

  it("README and engines agree on the Node version", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    for (const name of packages) {
      const engine = manifest(name).engines?.node
      expect(engine, name).toBe(">=22")
    }
    expect(readme).toContain("Node ≥ 22")
  })
})
