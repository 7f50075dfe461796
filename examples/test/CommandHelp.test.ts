/**
 * The command lines of the entries that read theirs with `effect/cli`
 * (`CommandLine.script`) in their own main module — `npm run faults`,
 * `npm run replay` (and its store proxy and sim-vs-real table),
 * `npm run ablation` (its runs and its table), the Kafka → S3 archiver and
 * its producer, `npm start` — run as processes on the workspace's sources,
 * without services: nothing of theirs starts before the line is read. Each
 * prints the help generated from its flags (exit 0), refuses a typo'd flag in
 * `effect/cli`'s words with the help (exit 2), and refuses the values only
 * the command checks with the messages it has always given (exit 2).
 * `npm run brokers`' line is read purely in Brokers.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { join } from "node:path"

const root = join(import.meta.dirname, "../..")
const node = join(root, "node_modules/.bin/node")

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `file` (from the repository root) on the workspace's sources with `args`; `env` adds to the environment. */
const run = (file: string, args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Ran> =>
  new Promise((resolve) => {
    execFile(node, ["--conditions=@sluice/source", file, ...args], { cwd: root, timeout: 60_000, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    })
  })

const commands = [
  { file: "examples/faults/main.ts", usage: "npm run faults -- [flags]", flags: ["--only NAME[,NAME…]", "--smoke", "--json"], typo: ["--smok"], wrong: "--smok", meant: "--smoke" },
  {
    file: "examples/replay/main.ts",
    usage: "npm run replay -- [flags] <scenario>",
    flags: ["--policy SPEC", "--scale X", "--record-bytes N", "--cell-seconds S", "--oracle-repeats N", "--oracle-cache DIR", "--trace F.csv", "--plot F.svg", "--signals F.jsonl", "--write-sim F.json", "--json"],
    typo: ["s.json", "--polcy", "default"],
    wrong: "--polcy",
    meant: "--policy"
  },
  { file: "examples/replay/store-proxy.ts", usage: "examples/replay/store-proxy.ts [flags]", flags: ["--upstream URL", "--seed N", "--port PORT"], typo: ["--upstream", "http://127.0.0.1:9", "--sed", "1"], wrong: "--sed", meant: "--seed" },
  { file: "examples/replay/table.ts", usage: "examples/replay/table.ts [flags] <dir>", flags: ["dir"], typo: ["d", "--jsn"], wrong: "--jsn", meant: undefined },
  { file: "examples/ablation/main.ts", usage: "examples/ablation/main.ts [flags] <dir>", flags: ["--variants a,b,…", "no-probes", "--out F.jsonl"], typo: ["d", "--variant", "default", "--out", "x"], wrong: "--variant", meant: "--variants" },
  { file: "examples/ablation/table.ts", usage: "examples/ablation/table.ts [flags] <dir>", flags: ["dir"], typo: ["d", "--jsn"], wrong: "--jsn", meant: undefined },
  {
    file: "examples/kafka-to-s3/main.ts",
    usage: "examples/kafka-to-s3/main.ts [flags] <topic> <bucket>",
    flags: ["--config FILE", "--prometheus-host HOST", "--prometheus-port PORT", "--name NAME", "--group ID", "--instance-id ID", "--until-committed N", "--max-seconds S", "--drain-seconds S", "--progress-seconds S", "--linger-seconds S", "--print-metrics", "--tls-ca FILE", "--tls-cert FILE", "--tls-key FILE", "SLUICE_KAFKA_BROKERS", "SLUICE_TEST_KILL_AT"],
    typo: ["t", "b", "--max-secnds", "3"],
    wrong: "--max-secnds",
    meant: "--max-seconds"
  },
  { file: "examples/kafka-to-s3/produce.ts", usage: "examples/kafka-to-s3/produce.ts [flags] <topic> <bucket>", flags: ["--records N", "--partitions P", "--record-bytes B"], typo: ["t", "b", "--record", "5"], wrong: "--record", meant: "--records" },
  { file: "examples/src/demo.ts", usage: "npm start -- [flags]", flags: ["--scenario file.json", "--policy spec", "--baseline spec", "--report dir", "--quiet"], typo: ["--polcy", "aimd"], wrong: "--polcy", meant: "--policy" }
] as const

const name = (file: string) => file.replace(/^examples\//, "")

describe.concurrent("the command lines of the example entries", () => {
  for (const { file, usage, flags, typo, wrong, meant } of commands) {
    it(`${name(file)}: --help prints the help generated from its flags, exit 0; -h too`, async () => {
      const help = await run(file, ["--help"])
      expect(help.code, help.stderr).toBe(0)
      for (const text of [usage, ...flags, "--help, -h", "--completions"]) expect(help.stdout, text).toContain(text)
      const short = await run(file, ["-h"])
      expect(short).toEqual(help)
    })

    it(`${name(file)}: a typo'd flag is refused in effect/cli's words, then the help, exit 2`, async () => {
      const bad = await run(file, typo)
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain(`Unrecognized flag: ${wrong} `)
      if (meant !== undefined) expect(bad.stderr).toMatch(new RegExp(`Did you mean this\\?\\s+${meant}\\b`))
      expect(bad.stderr).toContain(`\n\nDESCRIPTION`)
      expect(bad.stderr).toContain(usage)
      expect(bad.stdout).toBe("")
    })
  }

  it("--completions prints the shell's completion script, exit 0", async () => {
    const out = await run("examples/faults/main.ts", ["--completions", "bash"])
    expect(out.code).toBe(0)
    expect(out.stdout).toContain("--only")
  })

  /** The values only the commands check: refused with the messages they have always given, exit 2. */
  const kept: ReadonlyArray<{ readonly file: string; readonly args: ReadonlyArray<string>; readonly message: string; readonly env?: Record<string, string> }> = [
    { file: "examples/faults/main.ts", args: ["--only", "s3-kill,nope"], message: "faults: --only: no fault named nope" },
    {
      file: "examples/replay/main.ts",
      args: ["s.json", "--scale", "2"],
      message: "replay: one scenario file, --scale in (0, 1], --cell-seconds in (0, 30], --record-bytes a whole number ≥ 16, --oracle-repeats 1–10"
    },
    { file: "examples/ablation/main.ts", args: ["d", "--variants", "default,no-such", "--out", "x.jsonl"], message: "ablation: unknown variant(s) no-such; one scenario directory, --variants and --out" },
    { file: "examples/kafka-to-s3/main.ts", args: ["t", "b", "--prometheus-port", "70000"], message: "kafka-to-s3: --prometheus-port: expected a port, got 70000" },
    { file: "examples/kafka-to-s3/main.ts", args: ["t", "b", "--max-seconds", "-1"], message: "kafka-to-s3: --max-seconds: expected a number ≥ 0, got \"-1\"", env: { SLUICE_KAFKA_BROKERS: "127.0.0.1:9" } },
    { file: "examples/kafka-to-s3/main.ts", args: ["t", "b", "--tls-key", "k.pem"], message: "kafka-to-s3: --tls-key: cannot read k.pem", env: { SLUICE_KAFKA_BROKERS: "127.0.0.1:9" } },
    { file: "examples/kafka-to-s3/produce.ts", args: ["t", "b", "--partitions", "0"], message: "produce: --partitions: expected an integer ≥ 1, got 0" }
  ]
  for (const { file, args, message, env } of kept) {
    it(`${name(file)} ${args.join(" ")}: ${message}`, async () => {
      const bad = await run(file, args, env)
      expect(bad.code).toBe(2)
      expect(bad.stderr.startsWith(message), bad.stderr).toBe(true)
      expect(bad.stderr).toContain("\n\nDESCRIPTION")
    })
  }
})

/** Runs a script of `scripts/` with `args`, bounded: these answers must come before any service starts. */
const script = (name: string, args: ReadonlyArray<string>): Promise<Ran> =>
  new Promise((resolve) => {
    execFile("bash", [join(root, "scripts", name), ...args], { cwd: root, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    })
  })

describe("the npm scripts' shell wrappers answer the line before starting anything", () => {
  it("ablation and sim-vs-real print their usage for --help and refuse a flag (it was taken as the output folder)", async () => {
    for (const [name, usage] of [["ablation.sh", "npm run ablation [-- OUT_DIR]"], ["sim-vs-real.sh", "npm run sim-vs-real [-- OUT_DIR [SCENARIO…]]"]] as const) {
      const help = await script(name, ["--help"])
      expect(help.code, name).toBe(0)
      expect(help.stdout).toContain(usage)
      const flag = await script(name, ["--jsn"])
      expect(flag.code, name).toBe(2)
      expect(flag.stderr).toContain("unknown option --jsn")
    }
  })

  it("chaos, recovery and scaleout give -h and --completions without starting the services", async () => {
    for (const name of ["chaos", "recovery", "scaleout"]) {
      const help = await script(`${name}.sh`, ["-h"])
      expect(help.code, name).toBe(0)
      expect(help.stdout).toContain(`npm run ${name} -- [flags]`)
      expect(help.stderr, name).not.toMatch(/kafka-broker|s3-server/)
      const completions = await script(`${name}.sh`, ["--completions", "bash"])
      expect(completions.code, name).toBe(0)
      expect(completions.stdout).toContain(`###-begin-${name}-completions-###`)
    }
  })
})
