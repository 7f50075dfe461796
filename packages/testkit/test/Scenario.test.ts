import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scenario from "../src/Scenario.ts"

const example = {
  name: "knee-24",
  seed: 7,
  duration: "300 seconds",
  source: { recordsPerSecond: 1000000, recordBytes: 150, partitions: 24 },
  store: {
    baseLatency: "8 millis",
    bandwidthPerRequest: "64 MiB/s",
    knee: 24,
    jitter: 0.1,
    throttleAbove: 48,
    throttleProbability: 0.5,
    errorRate: 0,
    rateLimit: null
  },
  pipeline: { memoryBudget: "256 MiB" },
  events: [{ at: "60 seconds", store: { baseLatency: "80 millis" } }, { at: "120 seconds", store: { baseLatency: "8 millis" } }],
  expect: { goodputRatio: { min: 0.9 }, recoverySeconds: { max: 15 } }
}

describe("Scenario", () => {
  it.effect("decodes the issue's example: durations, sizes and bandwidths as text", () =>
    Effect.gen(function*() {
      const s = yield* Scenario.decode(example)
      expect(s.duration).toBe(300_000)
      expect(s.store.baseLatency).toBe(8)
      expect(s.store.bandwidthPerRequest).toBe(64 * 1024 * 1024)
      expect(s.pipeline.memoryBudget).toBe(256 * 1024 * 1024)
      expect(s.events[0]?.at).toBe(60_000)
      expect(s.instances).toBe(1)
    }))

  it.effect("rejects unknown fields, naming them", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Scenario.decode({ ...example, store: { ...example.store, kneee: 3 } }))
      expect(error._tag).toBe("ConfigError")
      expect(error.message).toContain("kneee")
    }))

  it.effect("rejects bad values, naming the field", () =>
    Effect.gen(function*() {
      const badDuration = yield* Effect.flip(Scenario.decode({ ...example, events: [{ at: "soon" }] }))
      expect(badDuration.message).toContain("at")
      expect(badDuration.message).toContain("soon")
      const badProbability = yield* Effect.flip(Scenario.decode({ ...example, store: { ...example.store, errorRate: 2 } }))
      expect(badProbability.message).toContain("errorRate")
      const badBandwidth = yield* Effect.flip(Scenario.decode({ ...example, store: { ...example.store, bandwidthPerRequest: "fast" } }))
      expect(badBandwidth.message).toContain("bandwidthPerRequest")
      // Numbers must be finite, and a run must last.
      const infinite = yield* Effect.flip(Scenario.decode({ ...example, source: { ...example.source, recordsPerSecond: Infinity } }))
      expect(infinite.message).toContain("recordsPerSecond")
      const unlimited = yield* Effect.flip(Scenario.decode({ ...example, store: { ...example.store, rateLimit: Infinity } }))
      expect(unlimited.message).toContain("rateLimit")
      const instant = yield* Effect.flip(Scenario.decode({ ...example, duration: "0s" }))
      expect(instant.message).toContain("duration")
    }))

  it.effect("accepts every numeric summary field as an expect bound, and the short duration forms", () =>
    Effect.gen(function*() {
      const s = yield* Scenario.decode({
        ...example,
        duration: "90s",
        events: [], // the example's event at 120 s would fall after a 90 s end
        expect: { probeSeconds: { max: 5 }, maxLagSeconds: { max: 15 }, worstPhaseGoodput: { min: 0.8 }, heldBytesMax: { max: 1e9 } }
      })
      expect(s.duration).toBe(90_000)
      expect(Object.keys(s.expect).sort()).toEqual(["heldBytesMax", "maxLagSeconds", "probeSeconds", "worstPhaseGoodput"])
      const error = yield* Effect.flip(Scenario.decode({ ...example, expect: { goodput: { min: 1 } } }))
      expect(error.message).toContain("goodput")
    }))

  it.effect("names the field path and the value of each problem; events must fall before the end", () =>
    Effect.gen(function*() {
      const late = yield* Effect.flip(Scenario.decode({ ...example, events: [...example.events, { at: "300 seconds" }] }))
      expect(late.message).toBe("scenario: events[2].at: Expected an event before the scenario's end (duration 300 s), got 300 s")
      const two = yield* Effect.flip(Scenario.decode({ ...example, seed: 1.5, expect: { goodputRatio: { max: Infinity } } }))
      expect(two.message).toBe(
        "scenario: 2 problems:\n  seed: Expected an integer, got 1.5\n" +
          "  expect.goodputRatio.max: Expected a finite number, got Infinity (a JSON number too large for a double, like 1e999, reads as Infinity)"
      )
      const pointed = yield* Scenario.decode({ $schema: "../scenario.schema.json", ...example })
      expect(pointed.$schema).toBe("../scenario.schema.json")
    }))
})
