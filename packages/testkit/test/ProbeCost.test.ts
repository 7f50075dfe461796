import { describe, expect, it } from "@effect/vitest"
import { Policy } from "@sluice/core"
import { Effect, Schema } from "effect"
import { Runner, Scenario } from "../src/index.ts"

/** A store where 8 uploads are needed (16 MiB/s per request, 60 MB/s inflow). */
const scenario = Scenario.decode({
  name: "probe-cost",
  seed: 3,
  duration: "40 seconds",
  source: { recordsPerSecond: 400_000, recordBytes: 150, partitions: 8 },
  store: { baseLatency: "20 millis", bandwidthPerRequest: "16 MiB/s", knee: 32, jitter: 0.1, throttleAbove: null, throttleProbability: 0 },
  pipeline: { memoryBudget: "512 MiB", batch: { records: 20_000, bytes: "4 MiB", maxAge: "2 seconds" } }
})

/** Concurrency 8, pinned at 1 ("probing") from 10 s to 15 s. */
const prober = (withMode: boolean): Policy.Policy<{}, "steady" | "probing"> => ({
  name: "prober",
  config: Schema.Struct({}),
  bounds: () => ({ concurrency: { floor: 1, ceiling: 8 } }),
  probe: () => ({ _tag: "PinnedProbe", level: 1, samples: 1, jitter: 0, forcedAfterWindowsAtFloor: 1 }),
  init: () => "steady",
  initial: () => ({ concurrency: 8 }),
  step: (mode, signal, now) => {
    if (signal._tag !== "Tick") return { state: mode }
    const next = now > 10_000 && now <= 15_000 ? "probing" : "steady"
    return next === mode ? { state: mode } : { state: next, proposal: { concurrency: next === "probing" ? 1 : 8 } }
  },
  ...(withMode ? { mode: (mode: "steady" | "probing") => mode } : {})
})

describe("probe cost in the summary", () => {
  it.effect("counts the seconds a policy spent probing and the goodput it cost", () =>
    Effect.gen(function*() {
      const s = yield* scenario
      const { summary, trace } = yield* Runner.run(s, { policy: "prober", policies: Policy.layer(prober(true), {}) })
      expect(summary.probeSeconds).toBeGreaterThanOrEqual(4.9)
      expect(summary.probeSeconds).toBeLessThanOrEqual(5.1)
      expect(summary.probeCost).toBeGreaterThan(0.02)
      expect(trace.rows.filter((r) => r.t > 11_000 && r.t <= 15_000).every((r) => r.probing === 1)).toBe(true)
      expect(trace.rows.filter((r) => r.t > 16_000).every((r) => r.probing === 0)).toBe(true)
      // A policy that does not declare its mode: nothing is attributed to probing.
      const silent = yield* Runner.run(s, { policy: "prober", policies: Policy.layer(prober(false), {}) })
      expect(silent.summary.probeSeconds).toBe(0)
      expect(silent.summary.probeCost).toBe(0)
    }))
})
