/**
 * The replay smoke (issue 25): a two-phase scenario in real time through the
 * real pipeline, the real S3 server behind toxiproxy (started by
 * `scripts/services.sh`), the slower store imposed by toxics at its event:
 * the summary has the simulator's fields plus `"mode": "real"`, the oracle is
 * measured (the slower phase measures a lower capacity), nothing is committed
 * unverified, and what the pipeline verified is judged per phase.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { Trace } from "@sluice/testkit"
import { replay } from "../replay/Replay.ts"
import { endpoints } from "./services.ts"

const smoke = {
  name: "replay-smoke",
  seed: 1,
  duration: "20 seconds",
  source: { recordsPerSecond: 10_000, recordBytes: 1000, partitions: 4 },
  store: { baseLatency: "5 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, kneeQueue: "arrival", jitter: 0 },
  // 32 MiB: the oracle grid stops at 32 in flight by memory (the slow store's sweep took 34 s up to 64, 22 s up to 32), and at the knee, 24, by the store proxy's serving limit.
  pipeline: { memoryBudget: "32 MiB", batch: { records: 20_000, bytes: "2 MiB", maxAge: "2 seconds" } },
  events: [{ at: "10 seconds", store: { baseLatency: "60 millis", bandwidthPerRequest: "2 MiB/s" } }]
}

describe("replay (real time, real S3 server behind toxiproxy)", { timeout: 180_000 }, () => {
  it("a two-phase smoke: simulator fields + mode real, a measured oracle per phase, nothing committed unverified", async () => {
    const { s3 } = endpoints()
    const toxiproxy = process.env["SLUICE_TOXIPROXY_URL"]
    if (toxiproxy === undefined || toxiproxy === "") throw new Error("SLUICE_TOXIPROXY_URL is not set: run `npm test` (scripts/services.sh up starts toxiproxy)")
    const dir = mkdtempSync(join(tmpdir(), "sluice-replay-"))
    try {
      const file = join(dir, "smoke.json")
      writeFileSync(file, JSON.stringify(smoke))
      const lines: Array<string> = []
      const { summary, trace } = await replay({ scenario: file, policy: "default", scale: 1, cellSeconds: 0.4, oracleRepeats: 2, s3, toxiproxy, log: (l) => lines.push(l) })
      expect(summary.mode).toBe("real")
      expect(summary.failure).toBeNull()
      expect(summary.committedNotVerified).toBe(0)
      expect(summary.phases.map((p) => [p.from, p.to, p.degraded])).toEqual([[0, 10, false], [10, 20, true]])
      const [fast, slow] = summary.phases
      // The toxics took effect: the oracle measured in the slower phase's conditions is lower.
      expect(slow?.capacityBytesPerSecond ?? Infinity).toBeLessThan((fast?.capacityBytesPerSecond ?? 0) * 0.8)
      // Bytes were verified in both phases and judged against the measured oracle.
      for (const p of summary.phases) {
        expect(p.goodputRatio).toBeGreaterThan(0)
        expect(p.oracleKeepsUp).toBe(true)
      }
      expect(summary.heldBytesMax).toBeGreaterThan(0)
      for (const field of ["goodputRatio", "phases", "worstPhaseGoodput", "maxLagSeconds", "meanLagSeconds", "heldBytesMax", "throttleRate", "lostRecords", "committedNotVerified", "failure"]) {
        expect(summary).toHaveProperty(field)
      }
      // Each store's best cell was measured twice and the spread reported.
      for (const c of Object.values(summary.oracle.capacities)) {
        expect(c.repeats).toHaveLength(2)
        expect(c.bytesPerSecond).toBe(Math.max(...c.repeats))
        expect(c.spread).toBeGreaterThanOrEqual(0)
      }
      // Every store field of the smoke is imposed (toxics and the store proxy; it has no jitter).
      expect(summary.notMapped).toEqual([])
      expect(summary.phases.map((p) => p.knee)).toEqual([24, 24])
      // The trace has the simulator's columns, one row a second, and saw the uploads the bucket verified.
      expect(trace.rows.map((r) => r.t)).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) * 1000))
      expect(trace.rows.reduce((s, r) => s + r.goodputBytesPerSecond, 0)).toBeGreaterThan(0)
      expect(trace.rows.some((r) => r.p50Millis !== null && r.inflightBatches > 0)).toBe(true)
      expect(Trace.toCsv(trace).split("\n")[0]).toBe(Trace.columns.join(","))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
