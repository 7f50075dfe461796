/**
 * A simulated store that is down for an hour (every request fails): the run
 * must end with `BatchFailed` within the pipeline's retry budget (15 minutes of
 * failures for one batch by default), visible in the summary as `failure` —
 * what `sluice-sim run --json` prints — not keep running with nothing archived.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Fixed } from "@sluice/core"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"

const storeDown = {
  name: "store-down-1h",
  seed: 3,
  duration: "60 minutes",
  source: { recordsPerSecond: 20_000, recordBytes: 150, partitions: 2 },
  store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.1, errorRate: 1 },
  pipeline: { memoryBudget: "64 MiB", batch: { records: 20_000, bytes: "16 MiB", maxAge: "2 seconds" } }
}

describe("a store down for an hour", () => {
  it.effect("ends the run with BatchFailed within the 15-minute retry budget, reported as the summary's failure", () =>
    Effect.gen(function*() {
      const scenario = yield* Scenario.decode(storeDown)
      const { summary, trace } = yield* Runner.run(scenario, { policy: "fixed:8", policies: Fixed.layer({ concurrency: 8 }) })
      expect(summary.failure).toContain("BatchFailed")
      expect(summary.failure).toContain("retry budget spent")
      expect(summary.bytesVerified).toBe(0)
      // The run stopped at the failure: 15 minutes of failures for the first
      // batch (sealed at ~2 s), plus at most one backoff (30 s), not an hour.
      const endedAt = trace.rows[trace.rows.length - 1]?.t ?? Infinity
      expect(endedAt).toBeGreaterThanOrEqual(15 * 60_000)
      expect(endedAt).toBeLessThanOrEqual(15 * 60_000 + 2_000 + 31_000)
    }), 120_000)
})
