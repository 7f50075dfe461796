/**
 * The soak's smoke (issue 13 item 8): `examples/soak/main.ts` as a child
 * process, as `npm run soak` runs it — 5 s of the synthetic source into the
 * in-memory store, one partition so batches seal (and commit) during the run,
 * not only at the drain. The JSON line carries the audit's counts (outside
 * the pipeline): everything read is verified and committed, nothing is lost,
 * and the report folder holds its files with a row a second. Nothing here
 * depends on how fast this machine is: the rate is low and no wall-clock
 * figure is asserted.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../", import.meta.url))
const node = existsSync(Path.join(root, "node_modules/.bin/node")) ? Path.join(root, "node_modules/.bin/node") : process.execPath
const out = mkdtempSync(Path.join(Os.tmpdir(), "sluice-soak-test-"))
afterAll(() => rmSync(out, { recursive: true, force: true }))

const soak = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    execFile(node, ["--conditions=@sluice/source", "examples/soak/main.ts", ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    })
  })

describe("soak", () => {
  it("archives a 5 s synthetic → memory soak: verified = committed = read, nothing lost, the report written", async () => {
    const run = await soak(["--rate", "20000", "--duration", "5", "--partitions", "1", "--json", "--out", out])
    expect(run.code, run.stderr).toBe(0)
    const last = run.stdout.trim().split("\n").at(-1) ?? ""
    const result = JSON.parse(last) as Record<string, unknown>
    for (const field of ["rate", "achievedRecordsPerSecond", "verified", "committed", "lost", "rssMaxBytes", "inflightBytesMax", "report"]) {
      expect(result, field).toHaveProperty(field)
    }
    expect(result["rate"]).toBe(20_000)
    const read = Number(result["read"])
    expect(read).toBeGreaterThan(0)
    expect(result["verified"]).toBe(read)
    expect(result["committed"]).toBe(read)
    expect(result["lost"]).toBe(0)
    expect(result["committedNotVerified"]).toBe(0)
    expect(Number(result["rssMaxBytes"])).toBeGreaterThan(0)
    expect(Number(result["inflightBytesMax"])).toBeGreaterThan(0)
    expect(Number(result["inflightBytesMax"])).toBeLessThanOrEqual(Number(result["memoryBudgetBytes"]) * 1.05)

    const dir = String(result["report"])
    for (const file of ["samples.csv", "soak.svg", "pipeline.svg", "summary.md", "result.json"]) {
      expect(existsSync(Path.join(dir, file)), file).toBe(true)
    }
    const rows = readFileSync(Path.join(dir, "samples.csv"), "utf8").trim().split("\n").slice(1)
    expect(rows.length).toBeGreaterThanOrEqual(4)
    expect(readFileSync(Path.join(dir, "soak.svg"), "utf8")).toMatch(/^<svg[\s\S]*<path d="M/)
    const summary = readFileSync(Path.join(dir, "summary.md"), "utf8")
    for (const id of [1, 2, 3, 4]) expect(summary).toMatch(new RegExp(`\\| ${id} \\| [^|]+ \\| \\*\\*(holds|refuted|not measured by this run|not applicable)\\*\\*`))
  }, 60_000)

  it("refuses bad options with the flag named, exit code 2", async () => {
    const run = await soak(["--rate", "-1", "--duration", "5s", "--sink", "tape"])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("Expected a rate of records per second greater than 0, got -1")
    expect(run.stderr).toContain(`at ["rate"]`)
    expect(run.stderr).toContain(`at ["sink"]`)
    const more = await soak(["--rate", "1k", "--duration", "0.5", "--partitions", "0"])
    expect(more.code).toBe(2)
    expect(more.stderr).toContain(`at ["duration"]`)
    expect(more.stderr).toContain(`at ["partitions"]`)
    expect(run.stderr).toContain("npm run soak -- [flags]")
    const typo = await soak(["--rate", "1k", "--duration", "5", "--sink", "tape", "--rat", "2"])
    expect(typo.code).toBe(2)
    expect(typo.stderr).toMatch(/^soak: Unrecognized flag: --rat/)
  })

  it("prints the help generated from its flags on stdout, exit code 0", async () => {
    const run = await soak(["--help"])
    expect(run.code).toBe(0)
    for (const flag of ["--rate R", "--duration D", "--source", "--sink", "--json", "--partitions P", "--record-bytes B", "--out DIR"]) expect(run.stdout).toContain(flag)
  })
})
