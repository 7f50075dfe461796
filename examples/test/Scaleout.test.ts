/**
 * The scale-out smoke (issue 30): `npm run scaleout` with 2 instances, 6
 * partitions, 2 s holds and no capacity runs, on the suite's broker and S3
 * server — scale 1 → 2, a rolling restart of both, a SIGKILL of one, scale
 * 2 → 1 — and every verdict read from outside the archivers: the bucket's
 * audit against the group's committed offsets (nothing lost, no hole, no
 * conflict), every duplicated record inside a moved partition's uncommitted
 * window and named by the archiver that left it (its `left on revoke` line;
 * but the SIGKILL victim's), and the killed static member's restart settled
 * long before the session timeout (30 s) a dynamic member would wait out.
 * The same under KIP-848's consumer protocol (`--protocol consumer`), whose
 * killed static member is not replaced: its restart settles only after the
 * broker's session timeout for that protocol (12 s on the suite's broker).
 */
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../", import.meta.url))
/** Six steps of a few seconds each, the catch-up and the audit. */
const SMOKE_MS = 240_000
/** The Kafka source's default session timeout: a killed member without an instance id holds its partitions this long. */
const SESSION_TIMEOUT_SECONDS = 30
/** The suite's broker under the consumer protocol (`scripts/kafka-broker.sh`): session timeout and heartbeat interval. */
const CONSUMER_SESSION_TIMEOUT_SECONDS = 12
const CONSUMER_HEARTBEAT_SECONDS = 5

describe.each(["classic", "consumer"] as const)("scaleout (smoke, %s protocol)", (protocol) => {
  it("2 archivers in one group through scale-up, rolling restart, SIGKILL and scale-down: nothing lost, duplicates bounded, the killed member's restart timed", async () => {
    const run = await new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
      execFile(
        "bash",
        [
          Path.join(root, "scripts/scaleout.sh"),
          ...["--instances", "2", "--partitions", "6", "--rate", "2000", "--hold-seconds", "2", "--no-capacity", "--protocol", protocol, "--json"]
        ],
        { cwd: root, timeout: SMOKE_MS, maxBuffer: 64 << 20 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
      )
    })
    const last = run.stdout.trim().split("\n").at(-1) ?? ""
    expect(last.startsWith("{"), `no JSON line from scripts/scaleout.sh (exit ${String(run.code)}):\n${run.stderr.slice(-4000)}`).toBe(true)
    const result = JSON.parse(last) as {
      readonly instances: number
      readonly protocol: string
      readonly produced: number
      readonly lost: number
      readonly duplicatesBounded: boolean
      readonly duplicatesNamed: boolean
      readonly unnamedDuplicates: ReadonlyArray<unknown>
      readonly holes: number
      readonly conflicts: number
      readonly auditOk: boolean
      readonly settleSeconds: Record<string, number>
    }
    expect(result.instances).toBe(2)
    expect(result.produced).toBeGreaterThan(0)
    expect(result.lost).toBe(0)
    expect(result.holes).toBe(0)
    expect(result.conflicts).toBe(0)
    expect(result.auditOk).toBe(true)
    expect(result.duplicatesBounded).toBe(true)
    expect(result.unnamedDuplicates).toEqual([])
    expect(result.duplicatesNamed).toBe(true)
    expect(Object.keys(result.settleSeconds)).toEqual([
      "scale up: start archiver-0",
      "scale up: start archiver-1",
      "rolling restart: archiver-0",
      "rolling restart: archiver-1",
      "SIGKILL archiver-1, restart",
      "scale down: stop archiver-1"
    ])
    expect(result.protocol).toBe(protocol)
    if (protocol === "classic") {
      // Static membership: the restart replaces the dead member at once.
      expect(result.settleSeconds["SIGKILL archiver-1, restart"]).toBeLessThan(SESSION_TIMEOUT_SECONDS / 2)
    } else {
      // Refused its instance id until the broker expired the dead member (its last heartbeat at most one interval before the kill).
      expect(result.settleSeconds["SIGKILL archiver-1, restart"]).toBeGreaterThan(CONSUMER_SESSION_TIMEOUT_SECONDS - CONSUMER_HEARTBEAT_SECONDS)
    }
    expect(run.code, run.stderr.slice(-4000)).toBe(0)
  }, SMOKE_MS + 10_000)
})
