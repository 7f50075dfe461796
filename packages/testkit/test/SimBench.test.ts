/**
 * bench:sim's command line (`bench/sim.ts`): it takes no flags, so it has a
 * help and refuses anything else. The benchmark itself runs by hand
 * (`npm run bench:sim`).
 */
import { describe, expect, it } from "@effect/vitest"
import { command } from "../bench/sim.ts"

describe("bench:sim — the command line", () => {
  it("generates the help: what it measures, the npm invocation, no flags but the global ones", () => {
    expect(command.help).toContain("npm run bench:sim -- [flags]")
    expect(command.help).toContain("knee-24")
    expect(command.help).not.toContain("\nFLAGS")
    expect(command.read(["--help"])).toEqual({ _tag: "Help", text: command.help })
    expect(command.read([])).toEqual({ _tag: "Run", flags: {} })
  })

  it("refuses a flag, rather than running the benchmark without it", () => {
    const line = command.read(["--json"])
    expect(line._tag === "Invalid" && line.message).toMatch(/^bench:sim: Unrecognized flag: --json/)
  })
})
