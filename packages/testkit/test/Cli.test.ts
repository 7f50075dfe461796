import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Cli from "../src/Cli.ts"
import * as Trace from "../src/Trace.ts"

const dir = mkdtempSync(join(tmpdir(), "sluice-sim-"))
const scenario = (expect: object) => ({
  name: "cli-small",
  seed: 2,
  duration: "10 seconds",
  source: { recordsPerSecond: 100_000, recordBytes: 100, partitions: 2 },
  store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.1 },
  pipeline: { memoryBudget: "32 MiB", batch: { records: 20_000, maxAge: "1 second" } },
  events: [{ at: "5 seconds", store: { baseLatency: "20 millis" } }],
  expect
})
writeFileSync(join(dir, "ok.json"), JSON.stringify(scenario({ committedNotVerified: { max: 0 } })))
writeFileSync(join(dir, "strict.json"), JSON.stringify(scenario({ throttleRate: { min: 0.5 } })))

const capture = async (argv: ReadonlyArray<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await Cli.main(argv, (l) => out.push(l), (l) => err.push(l))
  return { code, out, err }
}

describe("sluice-sim", () => {
  it("run: prints the summary, --json on the last line, writes trace and plot; exit 0 when bounds hold", async () => {
    const trace = join(dir, "out", "trace.csv")
    const plot = join(dir, "out", "plot.svg")
    const { code, out } = await capture(["run", join(dir, "ok.json"), "--policy", "fixed:4", "--json", "--trace", trace, "--plot", plot])
    expect(code).toBe(0)
    const summary = JSON.parse(out.at(-1) ?? "{}")
    expect(summary).toMatchObject({ scenario: "cli-small", policy: "fixed:4", pass: true, committedNotVerified: 0 })
    // the freshness, phase and held-bytes fields are in the JSON and in the text
    for (const key of ["maxLagSeconds", "meanLagSeconds", "worstPhaseGoodput", "heldBytesMax", "largestChunkBytes"]) {
      expect(summary).toHaveProperty(key)
    }
    const phases = summary.phases as Array<{ from: number; to: number }>
    expect(phases.map((p) => [p.from, p.to])).toEqual([[0, 5], [5, 10]])
    const text = out.slice(0, -1).join("\n")
    for (const label of ["worstPhaseGoodput", "maxLagSeconds", "meanLagSeconds", "heldBytesMax", "largestChunkBytes"]) {
      expect(text).toContain(label)
    }
    const phaseLines = out.filter((l) => l.startsWith("    |"))
    expect(phaseLines[0]).toMatch(/^ {4}\| from s \| to s \| degraded \| oracle keeps up \| goodput \| max lag s \|$/)
    expect(phaseLines.slice(2).map((l) => l.split("|").slice(1, 3).map((c) => c.trim()))).toEqual([["0", "5"], ["5", "10"]])
    const csv = readFileSync(trace, "utf8").split("\n")
    expect(csv[0]).toBe(Trace.columns.join(","))
    expect(csv[0]?.startsWith("t,concurrency,inflightBatches,inflightBytes,goodputBytesPerSecond,")).toBe(true)
    expect(csv[1]?.startsWith("100,4,")).toBe(true)
    const svg = readFileSync(plot, "utf8")
    expect(svg.startsWith("<svg")).toBe(true)
    expect(svg).toContain("goodput")
  })

  it("run: exit 1 when an expect bound fails, naming it", async () => {
    const { code, out } = await capture(["run", join(dir, "strict.json"), "--policy", "fixed:4", "--json"])
    expect(code).toBe(1)
    expect(out.join("\n")).toContain("expect FAILED: throttleRate = 0, expected >= 0.5")
    expect(JSON.parse(out.at(-1) ?? "{}")).toMatchObject({ pass: false })
  })

  it("matrix: one row per scenario x policy", async () => {
    const { code, out } = await capture(["matrix", dir, "--policy", "fixed:2", "--policy", "fixed:8", "--json"])
    expect(code).toBe(1)
    const rows = JSON.parse(out.at(-1) ?? "[]") as Array<{ scenario: string; policy: string }>
    expect(rows.map((r) => r.policy)).toEqual(["fixed:2", "fixed:8", "fixed:2", "fixed:8"])
    const lines = (out[0] ?? "").split("\n")
    const header = (lines[0] ?? "").split("|").slice(1, -1).map((c) => c.trim())
    expect(header).toEqual([
      "scenario",
      "policy",
      "goodput",
      "worst-phase goodput",
      "latency inflation",
      "throttle rate",
      "floor violations",
      "recovery s",
      "max lag s",
      "mean lag s",
      "in-flight MiB",
      "held MiB",
      "lost records",
      "committed unverified",
      "fairness",
      "probe s",
      "wall ms",
      "expect"
    ])
    expect(lines[1]).toMatch(/^\|(-+\|)+$/)
    // one Markdown row per cell, as many cells as the header, in the JSON's order
    expect(lines).toHaveLength(2 + rows.length)
    const body = lines.slice(2).map((l) => l.split("|").slice(1, -1).map((c) => c.trim()))
    expect(body.map((r) => r.length)).toEqual(rows.map(() => header.length))
    expect(body.map((r) => r[1])).toEqual(rows.map((r) => r.policy))
  })

  it("exit 2 with a clear message on bad usage, scenario or policy", async () => {
    expect((await capture(["frobnicate"])).code).toBe(2)
    writeFileSync(join(dir, "bad.json.txt"), JSON.stringify({ ...scenario({}), seeed: 1 }))
    const bad = await capture(["run", join(dir, "bad.json.txt")])
    expect(bad.code).toBe(2)
    expect(bad.err.join("\n")).toContain("seeed")
    const unknown = await capture(["run", join(dir, "ok.json"), "--policy", "no-such-policy-xyz"])
    expect(unknown.code).toBe(2)
    expect(unknown.err.join("\n")).toContain("no-such-policy-xyz")
  })
  it("--help prints the usage to stdout and exits 0; --version prints the package version", async () => {
    for (const argv of [["--help"], ["-h"], ["run", "x.json", "--help"]]) {
      const help = await capture(argv)
      expect(help.code).toBe(0)
      expect(help.err).toEqual([])
      expect(help.out.join("\n")).toContain("sluice-sim run <scenario.json>")
    }
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
    const version = await capture(["--version"])
    expect(version).toEqual({ code: 0, out: [pkg.version], err: [] })
  })

  it("unknown options, missing values and missing commands exit 2 with the usage on stderr", async () => {
    for (const [argv, reason] of [
      [["run", join(dir, "ok.json"), "--polciy", "fixed:4"], "unknown option --polciy"],
      [["run", join(dir, "ok.json"), "--plot"], "--plot needs a value"],
      [["frobnicate"], "unknown command frobnicate"],
      [["run"], "run needs a scenario file"],
      [[], "usage:"]
    ] as const) {
      const bad = await capture(argv)
      expect(bad.code).toBe(2)
      expect(bad.out).toEqual([])
      expect(bad.err.join("\n")).toContain(reason)
      expect(bad.err.join("\n")).toContain("sluice-sim matrix <dir>")
    }
  })

  it("progress goes to stderr (the run, each matrix cell as it starts and ends); stdout keeps the results", async () => {
    const run = await capture(["run", join(dir, "ok.json"), "--policy", "fixed:4", "--json"])
    expect(run.err).toEqual(["running cli-small × fixed:4 (10 virtual s) …"])
    expect(JSON.parse(run.out.at(-1) ?? "{}")).toMatchObject({ scenario: "cli-small" })
    const matrix = await capture(["matrix", dir, "--policy", "fixed:4", "--policy", "./packages/testkit/test/fixtures/CappedPolicy.mjs"])
    const starts = matrix.err.filter((l) => l.startsWith("["))
    expect(starts).toEqual([
      "[1/4] cli-small × fixed:4 (10 virtual s) …",
      "[2/4] cli-small × ./packages/testkit/test/fixtures/CappedPolicy.mjs (10 virtual s) …",
      "[3/4] cli-small × fixed:4 (10 virtual s) …",
      "[4/4] cli-small × ./packages/testkit/test/fixtures/CappedPolicy.mjs (10 virtual s) …"
    ])
    expect(matrix.err.filter((l) => l.startsWith("  goodput "))).toHaveLength(4)
    expect(matrix.out.join("\n")).toContain("./packages/testkit/test/fixtures/CappedPolicy.mjs")
  })
})
