/**
 * bench:pipeline's command line (`bench/pipeline.ts`, started by
 * `packages/core/bench/pipeline.ts`): the help is generated, a typo or a
 * count below 1 is refused with exit 2 before anything is built. The
 * benchmark itself runs by hand (`npm run bench:pipeline`).
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const launcher = fileURLToPath(new URL("../../core/bench/pipeline.ts", import.meta.url))
const run = (...args: Array<string>) => spawnSync(process.execPath, [launcher, ...args], { encoding: "utf8", timeout: 60_000 })

describe("bench:pipeline — the command line", () => {
  it("prints the help generated from its flags, exit 0", () => {
    const help = run("--help")
    expect(help.status).toBe(0)
    expect(help.stdout).toContain("npm run bench:pipeline -- [flags]")
    for (const flag of ["--records", "--distinct", "--rounds", "--only", "--json"]) expect(help.stdout).toContain(flag)
  })

  it("refuses a typo with a suggestion, and a count below 1, exit 2", () => {
    const typo = run("--recrds", "5")
    expect(typo.status).toBe(2)
    expect(typo.stderr).toMatch(/^bench:pipeline: Unrecognized flag: --recrds[\s\S]*--records/)
    const zero = run("--rounds", "0")
    expect(zero.status).toBe(2)
    expect(zero.stderr).toMatch(/^bench:pipeline: --rounds needs a number ≥ 1/)
    expect(run("--only", "loop").status).toBe(2)
  })
})
