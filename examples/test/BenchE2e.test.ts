/**
 * bench:e2e's command line (`examples/bench/e2e.ts`, read with `effect/cli`):
 * its help, what it refuses and in which words, its counts and the child
 * roles. Reading a line needs no services; the benchmark itself
 * (`npm run bench:e2e`) runs by hand.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { command, decode } from "../bench/e2e.ts"

const root = join(import.meta.dirname, "../..")

const invalid = (argv: ReadonlyArray<string>): string => {
  const line = decode(argv)
  return line._tag === "Invalid" ? line.message : `not refused: ${JSON.stringify(line)}`
}

describe("bench:e2e — the command line", () => {
  it("generates the help from the definition: every flag, its default, the npm invocation; not the child roles", () => {
    for (const flag of ["--records n", "--partitions n", "--rounds n", "--ceiling-seconds n", "--policies composition", "--cpu-prof dir", "--json"]) {
      expect(command.help).toContain(flag)
    }
    expect(command.help).toContain("npm run bench:e2e -- [flags]")
    expect(command.help).toContain("default 1,000,000")
    expect(command.help).not.toContain("--role")
    expect(command.help).not.toContain("--job")
    expect(decode(["--help"])).toEqual({ _tag: "Help", text: command.help })
    expect(decode(["-h"])._tag).toBe("Help")
  })

  it("reads the defaults, and counts written with _ or , as whole numbers", () => {
    expect(decode([])).toEqual({
      _tag: "Run",
      flags: { _tag: "Bench", records: 1_000_000, partitions: 8, rounds: 3, ceilingSeconds: 10, policies: "default", cpuProfileDir: undefined, json: false }
    })
    expect(decode(["--records", "5_000_000", "--partitions", "2", "--rounds", "1,000", "--cpu-prof", "/tmp/prof", "--json", "--policies", "fixed:32+throttle"])).toEqual({
      _tag: "Run",
      flags: { _tag: "Bench", records: 5_000_000, partitions: 2, rounds: 1000, ceilingSeconds: 10, policies: "fixed:32+throttle", cpuProfileDir: "/tmp/prof", json: true }
    })
  })

  it("refuses a typo'd flag and a stray argument in effect/cli's words, with a suggestion", () => {
    expect(invalid(["--rouns", "2"])).toMatch(/^bench:e2e: Unrecognized flag: --rouns[\s\S]*--rounds/)
    expect(invalid(["5000"])).toMatch(/^bench:e2e: Unexpected positional argument: "5000"/)
    expect(invalid(["--records"])).toMatch(/^bench:e2e: Missing value for flag --records/)
  })

  it("keeps its own messages for a count that is not a whole number ≥ 1 and a composition Composition.parse refuses", () => {
    expect(invalid(["--records", "0"])).toBe("bench:e2e: --records needs a whole number ≥ 1, got 0")
    expect(invalid(["--ceiling-seconds", "1.5"])).toBe("bench:e2e: --ceiling-seconds needs a whole number ≥ 1, got 1.5")
    expect(invalid(["--partitions", "eight"])).toBe("bench:e2e: --partitions needs a whole number ≥ 1, got eight")
    expect(invalid(["--policies", "nope"])).toMatch(/^bench:e2e: --policies: unknown policy "nope"/)
  })

  it("reads a child role and its job (how e2e.ts and peer.ts start the contenders); an unknown role is refused", () => {
    expect(decode(["--role", "sluice", "--job", "{\"topic\":\"t\"}"])).toEqual({ _tag: "Run", flags: { _tag: "Child", role: "sluice", job: "{\"topic\":\"t\"}" } })
    expect(decode(["--role", "flood"])).toEqual({ _tag: "Run", flags: { _tag: "Child", role: "flood", job: "{}" } })
    expect(invalid(["--role", "quix"])).toMatch(/^bench:e2e: Invalid value for flag --role: "quix"/)
  })

  it("gives a completion script with the flags", () => {
    const line = decode(["--completions", "bash"])
    expect(line._tag === "Completions" && line.script).toContain("--ceiling-seconds")
  })

  it("as a process: the help on stdout (exit 0); a wrong line's message, a blank line and the help on stderr (exit 2), before any service", () => {
    const node = (args: ReadonlyArray<string>) =>
      spawnSync(process.execPath, ["--conditions=@sluice/source", "examples/bench/e2e.ts", ...args], { cwd: root, encoding: "utf8", timeout: 30_000 })
    const help = node(["--help"])
    expect(help.status).toBe(0)
    expect(help.stdout.trimEnd()).toBe(command.help)
    const typo = node(["--rouns", "1"])
    expect(typo.status).toBe(2)
    expect(typo.stdout).toBe("")
    expect(typo.stderr).toMatch(/^bench:e2e: Unrecognized flag: --rouns[\s\S]*\n\nDESCRIPTION\n/)
  })
})
