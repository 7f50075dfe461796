/**
 * The faults' smoke (issue 27 item 7): `scripts/faults.sh --smoke`, as
 * `npm run faults -- --smoke` runs it — one fault of each class against its
 * own S3 server, broker and toxiproxy (`.services/faults/`, ports of their
 * own, so the instances the rest of the suite shares are never killed): the
 * S3 server killed and restarted, the broker killed and restarted, half the
 * connections stalled, a SIGKILL aimed after verify before commit, the S3
 * server's disk full. Every verdict is read from outside the archiver — the
 * bucket's audit against the group's committed offsets, the archiver's exit
 * status — and each must hold: nothing lost, every record archived and
 * committed, the archiver rode through (or was killed where aimed and
 * resumed).
 */
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import type { FaultRow } from "../faults/FaultRow.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))
/** The smoke's bound: five faults of seconds each, services started and stopped, a broker restart on unclean logs (~12 s). */
const SMOKE_MS = 420_000

describe("faults (smoke)", () => {
  it("one fault of each class, real services: nothing lost, every record archived and committed, each fault's checks hold", async () => {
    const run = await new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
      execFile("bash", [Path.join(root, "scripts/faults.sh"), "--smoke", "--json"], { cwd: root, timeout: SMOKE_MS, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
      })
    })
    const last = run.stdout.trim().split("\n").at(-1) ?? ""
    expect(last.startsWith("{"), `no JSON line from scripts/faults.sh (exit ${String(run.code)}):\n${run.stderr.slice(-4000)}`).toBe(true)
    const result = JSON.parse(last) as { readonly faults?: ReadonlyArray<FaultRow>; readonly lost?: number }
    const rows = result.faults ?? []
    expect(rows.map((r) => r.name)).toEqual(["s3-kill", "broker-kill", "stall", "kill-after-verify", "disk-full"])
    for (const row of rows) {
      expect(row.ok, `${row.name}: ${row.detail}\n${run.stderr.slice(-4000)}`).toBe(true)
      expect(row.injected, row.name).toBeGreaterThanOrEqual(1)
      expect(row.lost, row.name).toBe(0)
      expect(row.found, row.name).toBe(row.records)
      expect(row.exit, row.name).toBe(0)
    }
    expect(result.lost).toBe(0)
    expect(run.code, run.stderr.slice(-4000)).toBe(0)
  }, SMOKE_MS + 10_000)
})
