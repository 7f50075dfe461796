/**
 * bench:checksum's command line (`bench/checksum.ts`, read with `effect/cli`
 * through `@sluice/core/CommandLine`): its help and what it refuses. The
 * benchmark itself runs by hand or as the README's smoke
 * (`examples/test/ReadmeCommands.test.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { command } from "../bench/checksum.ts"

describe("bench:checksum — the command line", () => {
  it("generates the help from the definition: every flag and its default", () => {
    for (const flag of ["--json", "--rounds n", "--millis ms", "--crt-dir dir"]) expect(command.help).toContain(flag)
    expect(command.help).toContain("npm run bench:checksum -- [flags]")
    expect(command.help).toContain("default 5; fewer than 3 count as 3")
    expect(command.read(["--help"])).toEqual({ _tag: "Help", text: command.help })
  })

  it("reads the flags, defaults filled", () => {
    expect(command.read([])).toEqual({ _tag: "Run", flags: { json: false, rounds: 5, millis: 300, crtDir: Option.none() } })
    expect(command.read(["--millis", "30", "--rounds", "3", "--crt-dir", "/tmp/crt", "--json"])).toEqual({
      _tag: "Run",
      flags: { json: true, rounds: 3, millis: 30, crtDir: Option.some("/tmp/crt") }
    })
  })

  it("refuses a typo'd flag and a value of the wrong type", () => {
    const typo = command.read(["--crtdir", "/tmp/crt"])
    expect(typo._tag === "Invalid" && typo.message).toMatch(/^bench:checksum: Unrecognized flag: --crtdir[\s\S]*--crt-dir/)
    const bad = command.read(["--rounds", "2.5"])
    expect(bad._tag === "Invalid" && bad.message).toMatch(/^bench:checksum: Invalid value for flag --rounds: "2.5"/)
  })
})
