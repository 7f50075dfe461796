import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { Fixed, Knob, SignalBus } from "@sluice/core"
import * as Assert from "../src/Assert.ts"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"

const scenario = Scenario.decode({
  name: "storm",
  seed: 3,
  duration: "40 seconds",
  source: { recordsPerSecond: 400_000, recordBytes: 150, partitions: 8 },
  store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.1 },
  pipeline: { memoryBudget: "128 MiB", batch: { records: 20_000, bytes: "16 MiB", maxAge: "2 seconds" } },
  events: [{ at: "10 seconds", store: { throttleAbove: 2, throttleProbability: 0.9 } }, { at: "20 seconds", store: { throttleAbove: null } }]
})

/** A shell-level policy: 2 uploads while throttled, 8 after 3 quiet seconds. */
const backoff = Layer.effectDiscard(Effect.gen(function*() {
  const bus = yield* SignalBus.SignalBus
  const knobs = yield* Knob.Knobs
  const subscription = yield* bus.subscribe
  let lastThrottle = -Infinity
  yield* Effect.forkScoped(Stream.runForEach(Stream.fromSubscription(subscription), (signal) => {
    if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") {
      lastThrottle = signal.at
      return knobs.propose("backoff", { concurrency: 2 })
    }
    if (signal._tag === "Tick" && signal.at - lastThrottle > 3_000) return knobs.propose("backoff", { concurrency: 8 })
    return Effect.void
  }))
}))

describe("Assert", () => {
  it.effect("Fixed never backs off; an adaptive shell does, keeps its floor and recovers", () =>
    Effect.gen(function*() {
      const s = yield* scenario
      const fixed = yield* Runner.run(s, { policies: Fixed.layer({ concurrency: 8 }) })
      const failed = yield* Effect.flip(Assert.expectBackoffWithin(fixed, { at: 10_000, withinMillis: 5_000 }))
      expect(failed).toMatchObject({ _tag: "AssertionFailed", assertion: "expectBackoffWithin" })
      yield* Assert.expectNeverBelowFloor(fixed, 8)
      yield* Assert.expectSafe(fixed)

      const adaptive = yield* Runner.run(s, { policies: backoff })
      yield* Assert.expectBackoffWithin(adaptive, { at: 10_000, withinMillis: 2_000, to: 2 })
      yield* Assert.expectNeverBelowFloor(adaptive, 2)
      yield* Assert.expectRecoveryWithin(adaptive, 10)
      yield* Assert.expectInflightBytesAtMost(adaptive, 128 * 1024 * 1024)
      yield* Assert.expectSafe(adaptive)
      expect(adaptive.summary.throttleRate).toBeLessThan(fixed.summary.throttleRate)
    }))
})
