/**
 * bench:compression's command line (`bench/compression.ts`, read with
 * `effect/cli`): its help and what it refuses. The benchmark itself runs by
 * hand (`npm run bench:compression`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { command } from "../bench/compression.ts"

describe("bench:compression — the command line", () => {
  it("generates the help from the definition: every flag and its default", () => {
    for (const flag of ["--json", "--quick", "--millis ms", "--min-rounds n"]) expect(command.help).toContain(flag)
    expect(command.help).toContain("npm run bench:compression -- [flags]")
    expect(command.help).toContain("default 600; 250 with --quick")
    expect(command.read(["-h"])).toEqual({ _tag: "Help", text: command.help })
  })

  it("reads the flags, defaults filled", () => {
    expect(command.read([])).toEqual({ _tag: "Run", flags: { json: false, quick: false, millis: Option.none(), minRounds: 3 } })
    expect(command.read(["--quick", "--json", "--millis", "30", "--min-rounds", "1"])).toEqual({
      _tag: "Run",
      flags: { json: true, quick: true, millis: Option.some(30), minRounds: 1 }
    })
  })

  it("refuses a typo'd flag and a value of the wrong type, no longer read as NaN", () => {
    const typo = command.read(["--quik"])
    expect(typo._tag === "Invalid" && typo.message).toMatch(/^bench:compression: Unrecognized flag: --quik[\s\S]*--quick/)
    const bad = command.read(["--millis", "soon"])
    expect(bad._tag === "Invalid" && bad.message).toMatch(/^bench:compression: Invalid value for flag --millis: "soon"/)
  })
})
