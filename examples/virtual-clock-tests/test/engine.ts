/**
 * The engine under test: the policy composition our archiver ships with, and
 * the world it is proved in — a scenario built in code with the testkit's
 * `Scenario` API (no JSON file), ten virtual minutes long.
 *
 * | from | to | store |
 * |---|---|---|
 * | 0 s | 120 s | room: 8 ms + 64 MiB/s per request, knee 24; 503 SlowDown only above 48 in flight |
 * | 120 s | 240 s | **throttle storm**: 503 SlowDown to 90 % of requests above 2 in flight |
 * | 240 s | 360 s | **10× slower**: 80 ms + 6.4 MiB/s per request (throttling back to normal) |
 * | 360 s | 600 s | clear again: recovery |
 *
 * The inflow is 75 MB/s (500 000 records/s of 150 B over 4 partitions). With
 * room it needs ~2–4 uploads in flight; in the storm the store still serves it
 * at 2 in flight (2 × 64 MiB/s ≫ 75 MB/s), so backing off costs no goodput;
 * 10× slower it needs ~12 in flight (under the knee of 24), so cutting
 * concurrency there would be wrong. The oracle keeps up in every phase: every
 * shortfall is the pipeline's.
 */
import { Composition } from "@sluice/policies"
import { Runner, Scenario } from "@sluice/testkit"
import { Effect } from "effect"

/** Virtual times (ms) of the scenario's events. */
export const STORM_FROM = 120_000
export const SLOWDOWN_FROM = 240_000
export const CLEAR_AT = 360_000
export const DURATION = 600_000

/** The scenario's own seed (the bounds were chosen on it and on two more, see `composition.test.ts`). */
export const SCENARIO_SEED = 42

/** The memory budget of the pipeline (bytes). */
export const MEMORY_BUDGET = 256 * 1024 * 1024

/** The concurrency floor the engine declares: never fewer than 2 uploads. */
export const FLOOR = 2
/** Adaptive batch's default `minBytes` (1 MiB): the batch target's floor. */
export const BATCH_FLOOR_BYTES = 1024 * 1024

/**
 * The engine's composition: the default set (delivery rate + throttle
 * classifier + shared pressure + adaptive batch) with our floor and ceiling.
 */
export const policies = (): Composition.Policies =>
  Composition.defaults({
    deliveryRate: { floor: FLOOR, ceiling: 64 },
    throttle: { floor: FLOOR }
  })

/** The scenario on `seed` (same seed → byte-identical trace). */
export const scenario = (seed: number = SCENARIO_SEED) =>
  Scenario.decode({
    name: "archiver-storm-then-slowdown",
    description: "Room, then a throttle storm (120–240 s), then the store 10x slower (240–360 s), then clear (360–600 s).",
    seed,
    duration: DURATION,
    source: { recordsPerSecond: 500_000, recordBytes: 150, partitions: 4 },
    store: {
      baseLatency: "8 millis",
      bandwidthPerRequest: "64 MiB/s",
      knee: 24,
      jitter: 0.1,
      throttleAbove: 48,
      throttleProbability: 0.5
    },
    pipeline: { memoryBudget: MEMORY_BUDGET, batch: { records: 50_000, bytes: "16 MiB", maxAge: "5 seconds" } },
    events: [
      { at: STORM_FROM, store: { throttleAbove: 2, throttleProbability: 0.9 } },
      {
        at: SLOWDOWN_FROM,
        store: { throttleAbove: 48, throttleProbability: 0.5, baseLatency: "80 millis", bandwidthPerRequest: "6.4 MiB/s" }
      },
      { at: CLEAR_AT, store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s" } }
    ]
  })

/** Runs the engine's composition through the scenario on `seed`, under the runner's virtual clock. */
export const run = (seed: number = SCENARIO_SEED) =>
  Effect.gen(function*() {
    const world = yield* scenario(seed)
    return yield* Runner.run(world, {
      policy: "archiver (default composition, floor 2, ceiling 64)",
      policies: policies(),
      floors: { concurrency: FLOOR, batchBytes: BATCH_FLOOR_BYTES }
    })
  })
