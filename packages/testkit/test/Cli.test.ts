import { describe, expect, it } from "@effect/vitest"
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as Cli from "../src/Cli.ts"
import * as Family from "../src/Family.ts"
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

// Bad inputs live in their own directory, so the matrix test above sees only the two good files.
const bad = mkdtempSync(join(tmpdir(), "sluice-sim-bad-"))
const badFile = (name: string, text: string) => {
  writeFileSync(join(bad, name), text)
  return join(bad, name)
}
const pretty = (value: object) => JSON.stringify(value, null, 2)

const FIXTURES = "./packages/testkit/test/fixtures"
const BAD_CONFIG = `${FIXTURES}/BadConfigPolicy.mjs`
const FAILING_LAYER = `${FIXTURES}/FailingLayer.mjs`
const BELOW_FLOOR = `${FIXTURES}/BelowFloorPolicy.mjs`
const CAPPED_PATH = new URL("fixtures/CappedPolicy.mjs", import.meta.url)

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

  it("help is generated from the effect/cli definition: the whole CLI, or one command's flags (issue 29)", async () => {
    const whole = await capture(["--help"])
    for (const command of ["run <scenario.json>", "matrix <dir>", "generate", "family <dir>", "schema"]) {
      expect(whole.out.join("\n")).toContain(`sluice-sim ${command}`)
    }
    expect(whole.out.join("\n")).toBe(Cli.usage)
    const run = await capture(["run", "--help"])
    expect(run).toMatchObject({ code: 0, err: [] })
    const text = run.out.join("\n")
    expect(text).toBe(Cli.help("run"))
    expect(text).toContain("sluice-sim run <scenario.json> [--policy <spec>] [--json] [--trace <csv>] [--plot <svg>] [--max-duration <d>]")
    expect(text).not.toContain("--family") // generate's flags are not run's
    // --family lists its choices, from Family.kinds
    expect((await capture(["generate", "-h"])).out.join("\n")).toContain("(choices: slower, slower-throttle, knee-drop")
    expect(Cli.parseArgs(["run", "x.json", "-V"])).toEqual({ _tag: "Version" })
  })

  it("--completions <shell> prints a completion script generated from the definition; exit 0 (issue 29)", async () => {
    for (const shell of ["bash", "zsh", "fish"] as const) {
      const { code, out, err } = await capture(["--completions", shell])
      expect(code).toBe(0)
      expect(err).toEqual([])
      const script = out.join("\n")
      expect(script).toBe(Cli.completions(shell))
      for (const word of ["sluice-sim", "matrix", "generate", "max-duration", "slower-throttle"]) expect(script).toContain(word)
    }
    expect(Cli.parseArgs(["--completions", "sh"])).toEqual({ _tag: "Completions", shell: "bash" })
    const bad = await capture(["--completions"])
    expect(bad.code).toBe(2)
    expect(bad.err.join("\n").split("\n")[0]).toBe("sluice-sim: --completions needs a value")
  })

  it("each command takes only its own flags; a flag's value may start with - (as before) (issue 29)", async () => {
    expect(Cli.parseArgs(["schema", "--json"])).toEqual({ _tag: "Invalid", message: "unknown option --json" })
    expect(Cli.parseArgs(["run", "x.json", "--family", "ramp"])).toEqual({ _tag: "Invalid", message: "unknown option --family" })
    expect(Cli.parseArgs(["run", "x.json", "--max-duration", "-5s"])).toEqual({
      _tag: "Invalid",
      message: `--max-duration needs a positive duration like 48h or "7 days", got "-5s"`
    })
    expect(Cli.parseArgs(["run", "x.json", "--trace", "a.csv", "--trace", "b.csv"])).toMatchObject({ trace: "b.csv" }) // the last wins
    expect(Cli.parseArgs(["generate", "--family", "slowr"])).toEqual({
      _tag: "Invalid",
      message: `generate needs --family, one of ${Family.kinds.join(", ")}; got "slowr" (did you mean slower?)`
    })
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

  it("floorViolations counts samples below the floor a module policy declares (Policy.bounds), not 1 (issue 29)", async () => {
    // BelowFloorPolicy declares a concurrency floor of 4 and proposes 2: every sample is below it.
    const { code, out } = await capture(["run", join(dir, "ok.json"), "--policy", BELOW_FLOOR, "--json"])
    expect(code).toBe(0)
    const summary = JSON.parse(out.at(-1) ?? "{}") as { floorViolations: number; durationSeconds: number }
    expect(summary.floorViolations).toBe(summary.durationSeconds * 10) // one per 100 ms sample
    // Composed with a policy whose floor is higher (fixed:8), the module's floor (the lowest) still counts.
    const composed = await capture(["run", join(dir, "ok.json"), "--policy", `${BELOW_FLOOR}+fixed:8`, "--json"])
    expect(JSON.parse(composed.out.at(-1) ?? "{}")).toMatchObject({ floorViolations: 100 })
  })

  describe("bad input: one message naming the file, flag or value; exit 2; no stack trace", () => {
    const ok = join(dir, "ok.json")
    /** Runs the CLI and returns its first stderr line, after checking exit 2, nothing on stdout and no stack. */
    const refused = async (argv: ReadonlyArray<string>) => {
      const { code, out, err } = await capture(argv)
      const text = err.join("\n")
      expect(code).toBe(2)
      expect(out).toEqual([])
      expect(text).not.toMatch(/^\s+at /m) // no stack frames
      return { first: text.split("\n")[0], text, err }
    }

    it("a scenario that is not JSON: the file, line:column and what was expected", async () => {
      const syntax = badFile("syntax.json", '{ "name": "x",\n  "seed": 1,, }\n')
      expect((await refused(["run", syntax])).first).toBe(
        `sluice-sim: ${syntax}:2:13: scenario is not valid JSON: expected a property name in double quotes, got ","`
      )
      // V8 gives no position for this one ("Unexpected token ']'"): the CLI finds it.
      const comma = badFile("trailing-comma.json", '{\n  "name": "x",\n  "events": [1, 2,]\n}\n')
      expect((await refused(["run", comma])).first).toBe(
        `sluice-sim: ${comma}:3:19: scenario is not valid JSON: expected a value, got "]"`
      )
      const empty = badFile("empty.json", "")
      expect((await refused(["run", empty])).first).toBe(
        `sluice-sim: ${empty}:1:1: scenario is not valid JSON: expected a value, got the end of the file`
      )
    })

    it("a missing scenario file: its path (and, when relative, where it was looked for)", async () => {
      const missing = join(bad, "nope.json")
      expect((await refused(["run", missing])).first).toBe(`sluice-sim: scenario file not found: ${missing}`)
      expect((await refused(["run", "nope-xyz.json"])).first).toBe(
        `sluice-sim: scenario file not found: nope-xyz.json (looked in ${process.cwd()})`
      )
      expect((await refused(["run", bad])).first).toBe(`sluice-sim: cannot read scenario file ${bad}: it is a directory, not a file`)
    })

    it("non-finite and negative numbers: the file, the field path and the value", async () => {
      const huge = badFile("huge.json", pretty(scenario({})).replace('"recordsPerSecond": 100000', '"recordsPerSecond": 1e999'))
      expect((await refused(["run", huge])).first).toBe(
        `sluice-sim: scenario ${huge}: source.recordsPerSecond: Expected a finite number, got Infinity` +
          " (a JSON number too large for a double, like 1e999, reads as Infinity)"
      )
      const negative = badFile("negative.json", pretty({ ...scenario({}), store: { ...scenario({}).store, jitter: -0.5 } }))
      expect((await refused(["run", negative])).first).toBe(
        `sluice-sim: scenario ${negative}: store.jitter: Expected a value greater than or equal to 0, got -0.5`
      )
      const bound = badFile("bound.json", pretty(scenario({ goodputRatio: { min: 1 } })).replace('"min": 1', '"min": -1e999'))
      expect((await refused(["run", bound])).first).toBe(
        `sluice-sim: scenario ${bound}: expect.goodputRatio.min: Expected a finite number, got -Infinity` +
          " (a JSON number too large for a double, like 1e999, reads as Infinity)"
      )
      // Every problem at once, one per line.
      const two = badFile("two.json", pretty({ ...scenario({}), seed: 2.5, store: { ...scenario({}).store, knee: 0 } }))
      expect((await refused(["run", two])).err).toEqual([
        `sluice-sim: scenario ${two}: 2 problems:\n  seed: Expected an integer, got 2.5\n  store.knee: Expected a value greater than or equal to 1, got 0`
      ])
    })

    it("an event at or after the scenario's end: the file, the event index and both times", async () => {
      const late = badFile("late.json", pretty({ ...scenario({}), events: [{ at: "5 seconds" }, { at: "12 seconds", store: { knee: 4 } }] }))
      expect((await refused(["run", late])).first).toBe(
        `sluice-sim: scenario ${late}: events[1].at: Expected an event before the scenario's end (duration 10 s), got 12 s`
      )
    })

    it("a virtual duration above the cap (24 h, or --max-duration): the file, both durations and the flag", async () => {
      const long = badFile("long.json", pretty({ ...scenario({}), duration: "30 days" }))
      expect((await refused(["run", long])).first).toBe(
        `sluice-sim: scenario ${long}: duration 720 h of virtual time is above the cap of 24 h;` +
          " raise the cap with --max-duration (e.g. --max-duration 720h)"
      )
      expect((await refused(["run", ok, "--max-duration", "5s"])).first).toBe(
        `sluice-sim: scenario ${ok}: duration 10 s of virtual time is above the cap of 5 s;` +
          " raise the cap with --max-duration (e.g. --max-duration 10s)"
      )
      expect((await refused(["matrix", dir, "--max-duration=2 hours", "--max-duration", "9s"])).first).toContain("above the cap of 9 s")
      expect(Cli.defaultMaxDuration).toBe(24 * 3_600_000)
      expect(Cli.parseArgs(["run", long, "--max-duration", "800h"])).toMatchObject({ _tag: "Command", maxDuration: 800 * 3_600_000 })
      expect(Cli.parseArgs(["run", long, "--max-duration=30 days"])).toMatchObject({ _tag: "Command", maxDuration: 30 * 86_400_000 })
      for (const value of ["abc", "0s", "10"]) {
        expect((await refused(["run", ok, "--max-duration", value])).first).toBe(
          `sluice-sim: --max-duration needs a positive duration like 48h or "7 days", got ${JSON.stringify(value)}`
        )
      }
    })

    it("fixed:N with N not a whole number >= 1: the value, before anything runs", async () => {
      for (const [spec, message] of [
        ["fixed:-3", "--policy fixed:-3: N must be a whole number ≥ 1, got -3"],
        ["fixed:2.5", "--policy fixed:2.5: N must be a whole number ≥ 1, got 2.5"],
        ["fixed:abc", "--policy fixed:abc: N must be a whole number ≥ 1, got abc"],
        ["fixed:0", "--policy fixed:0: N must be a whole number ≥ 1, got 0"],
        ["fixed:", `--policy "fixed:": N must be a whole number ≥ 1, got ""`],
        ["aimd+fixed:-1", "--policy aimd+fixed:-1: fixed:-1: N must be a whole number ≥ 1, got -1"]
      ] as const) {
        // One line: the run never started (no progress line).
        expect((await refused(["run", ok, "--policy", spec])).err).toEqual([`sluice-sim: ${message}`])
      }
      // matrix checks every policy before the first cell.
      expect((await refused(["matrix", dir, "--policy", "fixed:4", "--policy", "fixed:-3"])).err).toEqual([
        "sluice-sim: --policy fixed:-3: N must be a whole number ≥ 1, got -3"
      ])
    })

    it("unknown commands and options: named, with a suggestion when one is near, and the usage", async () => {
      for (const [argv, message] of [
        [["frobnicate"], "unknown command frobnicate"],
        [["runn", ok], "unknown command runn (did you mean run?)"],
        [["run", ok, "--polciy", "fixed:4"], "unknown option --polciy (did you mean --policy?)"],
        [["run", ok, "--max-durration=2h"], "unknown option --max-durration=2h (did you mean --max-duration?)"],
        [["run", ok, "--frob"], "unknown option --frob"],
        [["run", ok, "other.json"], "unexpected argument other.json: run takes one scenario file"],
        [["schema", "x"], "unexpected argument x: schema takes none"],
        [["run", ok, "--trace"], "--trace needs a value"],
        [["run", ok, "--policy", "fixed:2", "--policy", "fixed:4"], "run takes one --policy (use matrix for several)"],
        [["matrix"], "matrix needs a directory of scenario files"],
        [[], "a command is needed"]
      ] as const) {
        const { first, text } = await refused(argv)
        expect(first).toBe(`sluice-sim: ${message}`)
        expect(text).toContain(Cli.usage)
      }
    })

    it("matrix: a missing, non-directory or empty directory, and a bad file among good ones, before any cell runs", async () => {
      const missing = join(bad, "no-such-dir")
      expect((await refused(["matrix", missing])).first).toBe(`sluice-sim: scenario directory not found: ${missing}`)
      expect((await refused(["matrix", ok])).first).toBe(
        `sluice-sim: ${ok} is not a directory (matrix takes a directory of scenario files; run takes one file)`
      )
      const empty = mkdtempSync(join(tmpdir(), "sluice-sim-empty-"))
      expect((await refused(["matrix", empty])).first).toBe(`sluice-sim: no scenario files (*.json) in ${empty}`)
      const mixed = mkdtempSync(join(tmpdir(), "sluice-sim-mixed-"))
      writeFileSync(join(mixed, "a-good.json"), JSON.stringify(scenario({})))
      writeFileSync(join(mixed, "b-bad.json"), "{]")
      expect((await refused(["matrix", mixed, "--policy", "fixed:4"])).err).toEqual([
        `sluice-sim: ${join(mixed, "b-bad.json")}:1:2: scenario is not valid JSON: expected a property name in double quotes, got "]"`
      ])
    })

    it("matrix: a module policy that cannot be built (bad config) among good ones, before any cell runs (issue 29)", async () => {
      for (const [module, message] of [
        [BAD_CONFIG, `capped: Expected an integer\n  at ["concurrency"]`],
        [FAILING_LAYER, "its layer failed to build: window: Expected a duration greater than 0, got 0"]
      ] as const) {
        // (Not `refused`: the schema's message ends with its field path, `  at ["concurrency"]`.)
        const { code, out, err } = await capture(["matrix", dir, "--policy", "fixed:4", "--policy", module])
        expect(code).toBe(2)
        expect(out).toEqual([])
        // One message, no progress line: no cell ran.
        expect(err).toEqual([`sluice-sim: --policy ${module}: ${message}`])
      }
    })

    it("a policy module that resolves another copy of effect: both copies named, exit 2 (issue 29)", async () => {
      // A project with its own copy of effect (as after `npm install ../my-policy`)
      // and a policy module importing it.
      const project = mkdtempSync(join(tmpdir(), "sluice-sim-two-effects-"))
      const ours = dirname(realpathSync(createRequire(import.meta.url).resolve("effect/package.json")))
      const theirs = join(project, "node_modules", "effect")
      mkdirSync(theirs, { recursive: true })
      cpSync(join(ours, "package.json"), join(theirs, "package.json"))
      cpSync(join(ours, "dist"), join(theirs, "dist"), { recursive: true })
      const policy = join(project, "policy.mjs")
      cpSync(CAPPED_PATH, policy)
      const version = (JSON.parse(readFileSync(join(ours, "package.json"), "utf8")) as { version: string }).version
      try {
        expect((await refused(["run", ok, "--policy", policy])).err).toEqual([
          `sluice-sim: --policy ${policy}: two copies of effect: ${ours} (${version}) and ${realpathSync(theirs)} (${version})` +
          " — dedupe (npm dedupe, or make effect a peer dependency of the policy)"
        ])
      } finally {
        rmSync(project, { recursive: true, force: true }) // the copy is ~40 MB
      }
      // The same package linked (one copy on disk, one module instance): accepted.
      const linked = mkdtempSync(join(tmpdir(), "sluice-sim-linked-effect-"))
      mkdirSync(join(linked, "node_modules"))
      symlinkSync(ours, join(linked, "node_modules", "effect"), "dir")
      cpSync(CAPPED_PATH, join(linked, "policy.mjs"))
      const run = await capture(["run", ok, "--policy", join(linked, "policy.mjs"), "--json"])
      expect(run.code).toBe(0)
    })

    it("an unwritable --trace or --plot path: named, before the run", async () => {
      const under = join(bad, "syntax.json", "trace.csv") // a path under a file
      writeFileSync(join(bad, "syntax.json"), "{")
      expect((await refused(["run", ok, "--policy", "fixed:4", "--trace", under])).err).toEqual([
        `sluice-sim: cannot write --trace ${under}: a parent of it is a file, not a directory`
      ])
    })
  })
})
