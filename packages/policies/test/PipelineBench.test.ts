/**
 * bench:pipeline's command line (`bench/pipeline.ts`, started by
 * `packages/core/bench/pipeline.ts`): the help is generated, a typo or a
 * count below 1 is refused with exit 2 before anything is built; a tiny run's
 * ratios agree with the rounds it reports. The benchmark itself runs by hand
 * (`npm run bench:pipeline`).
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

  it("a tiny run: three rounds a side, and the ratios to the recycling loop are those of the rounds it reports (best round, median CPU)", () => {
    const tiny = run("--records", "200000", "--rounds", "3", "--json")
    expect(tiny.status, tiny.stderr).toBe(0)
    const out = JSON.parse(tiny.stdout.trim().split("\n").at(-1) ?? "{}") as {
      ratioToPooledPlainBest: number
      cpuRatioToPooledPlain: number
      sluice: { wallMillis: Array<number>; cpuMillis: number; objects: number }
      plainPooled: { wallMillis: Array<number>; cpuMillis: number; objects: number }
    }
    expect(out.sluice.wallMillis).toHaveLength(3)
    expect(out.plainPooled.wallMillis).toHaveLength(3)
    expect(out.sluice.objects).toBeGreaterThan(0)
    // The JSON's rounds are whole milliseconds and its CPU medians rounded (±0.5 ms each), the ratios to 3 decimals.
    const best = (ms: Array<number>) => Math.max(1, Math.min(...ms))
    const agrees = (reported: number, numerator: number, denominator: number) => {
      const ratio = numerator / denominator
      expect(Math.abs(reported - ratio)).toBeLessThanOrEqual(ratio * (0.5 / numerator + 0.5 / denominator) * 1.01 + 0.0005)
    }
    agrees(out.ratioToPooledPlainBest, best(out.plainPooled.wallMillis), best(out.sluice.wallMillis))
    agrees(out.cpuRatioToPooledPlain, out.plainPooled.cpuMillis, out.sluice.cpuMillis)
  })
})
