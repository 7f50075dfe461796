/**
 * The ablation harness (`npm run ablation`) in small: two variants on one
 * shipped scenario, through the same entry and table scripts.ablation.sh runs.
 * The runs are the simulator's (the testkit runner), judged from its ground
 * truth; the table names each variant and its verdict.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, copyFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")
const node = join(root, "node_modules/.bin/node")

describe("ablation harness", () => {
  it("runs each variant on each scenario (one JSON line a run, nothing lost) and tables what switching a rule off costs", () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-ablation-"))
    try {
      const scenarios = join(dir, "scenarios")
      mkdirSync(scenarios)
      copyFileSync(join(root, "packages/testkit/scenarios/slowdown-10x.json"), join(scenarios, "slowdown-10x.json"))
      const run = (out: string) =>
        spawnSync(node, ["--conditions=@sluice/source", "examples/ablation/main.ts", scenarios, "--variants", "default,no-probes,with-shared", "--out", join(dir, out)], { cwd: root, encoding: "utf8", timeout: 170_000 })
      const family = run("family.0.jsonl")
      expect(family.status, family.stderr).toBe(0)
      const matrix = run("matrix.x.0.jsonl")
      expect(matrix.status, matrix.stderr).toBe(0)
      const lines = readFileSync(join(dir, "family.0.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(lines.map((l) => [l["variant"], l["scenario"]])).toEqual([["default", "slowdown-10x"], ["no-probes", "slowdown-10x"], ["with-shared", "slowdown-10x"]])
      for (const l of lines) expect([l["lostRecords"], l["committedNotVerified"]]).toEqual([0, 0])
      const table = spawnSync(node, ["--conditions=@sluice/source", "examples/ablation/table.ts", dir], { cwd: root, encoding: "utf8", timeout: 60_000 })
      expect(table.status, table.stderr).toBe(0)
      const md = readFileSync(join(dir, "table.md"), "utf8")
      expect(md).toMatch(/^\| default \| nothing: the reference \|.*\| reference \|$/m)
      expect(md).toMatch(/^\| no-probes \| every probe .*\| [+-]\d+\.\d % \| 0 \| (kept|\*\*has not shown what it buys\*\*) \|$/m)
      // A rule the default removed, added back: its verdict says what adding it back would buy.
      expect(md).toMatch(/^\| with-shared \| nothing: adds back the SharedPressure member.*\| (removed: adding it back buys nothing|\*\*removed, but adding it back buys something\*\*) \|$/m)
      // An unknown variant is refused, naming it.
      const bad = spawnSync(node, ["--conditions=@sluice/source", "examples/ablation/main.ts", scenarios, "--variants", "no-such", "--out", join(dir, "x.jsonl")], { cwd: root, encoding: "utf8", timeout: 60_000 })
      expect(bad.status).toBe(2)
      expect(bad.stderr).toContain("unknown variant(s) no-such")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
