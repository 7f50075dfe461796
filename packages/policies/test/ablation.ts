/**
 * Probe ablation in the simulated pipeline: the same scenario run twice
 * through the testkit runner (the real core `Pipeline` on the simulated store,
 * under `TestClock`) — once with the policy as declared, once built with
 * `{ probe: false }` — and helpers that read the outcome off the traces (knob
 * values, goodput against the oracle), never off a policy's own counters.
 */
import type { Config, Policy } from "@sluice/core"
import { Runner, Scenario, Summary } from "@sluice/testkit"
import type { Trace } from "@sluice/testkit"
import { Effect } from "effect"

export const MiB = 1024 * 1024

type Row = Trace.TraceRow

/** When the storm starts and ends (ms): the store after it is slower for good. */
export const stormFrom = 30_000
export const stormUntil = 60_000

/**
 * 30 s of a store with room (10 ms + 32 MiB/s per request, knee 32), a throttle
 * storm from 30 s to 60 s (503 SlowDown above 1 request in flight with
 * probability 0.5, knee 4, 40 ms), then a store that comes back **slower for
 * good** (40 ms + 8 MiB/s per request, knee 32): the world of
 * `Properties.standardWorld` in the real pipeline. 150 MB/s inflow, 8
 * partitions, 7.5 MB batches, 512 MiB budget, base concurrency 32.
 */
export const stormThenSlower = (
  seed: number,
  overrides: Record<string, unknown> = {}
): Effect.Effect<Scenario.Scenario, Config.ConfigError> =>
  Scenario.decode({
    name: "storm-then-slower",
    seed,
    duration: "120 seconds",
    source: { recordsPerSecond: 1_000_000, recordBytes: 150, partitions: 8 },
    store: { baseLatency: "10 millis", bandwidthPerRequest: "32 MiB/s", knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
    pipeline: { memoryBudget: "512 MiB", concurrency: 32, batch: { records: 50_000, bytes: "8 MiB", maxAge: "2 seconds" } },
    events: [
      { at: stormFrom, store: { baseLatency: "40 millis", knee: 4, throttleAbove: 1, throttleProbability: 0.5 } },
      { at: stormUntil, store: { baseLatency: "40 millis", bandwidthPerRequest: "8 MiB/s", knee: 32, throttleAbove: 64, throttleProbability: 0.5 } }
    ],
    ...overrides
  })

/** When the burst of `burstThenQuiet` starts and ends (ms). */
export const burstFrom = 20_000
export const burstUntil = 45_000

/**
 * Open-batch pressure, then a quiet source: 256 partitions at 5 MB/s (batches
 * seal on age, 10 s), a burst of 20 MB/s from 20 s to 45 s — open batches of
 * 256 partitions would hold most of the 128 MiB budget — then no records at
 * all: the open batches age out, and no upload completes any more.
 */
export const burstThenQuiet = (seed: number): Effect.Effect<Scenario.Scenario, Config.ConfigError> =>
  Scenario.decode({
    name: "burst-then-quiet",
    seed,
    duration: "75 seconds",
    source: { recordsPerSecond: 33_333, recordBytes: 150, partitions: 256 },
    store: { baseLatency: "10 millis", bandwidthPerRequest: "32 MiB/s", knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
    pipeline: { memoryBudget: "128 MiB", concurrency: 32, batch: { records: 50_000, bytes: "8 MiB", maxAge: "10 seconds" } },
    events: [
      { at: burstFrom, source: { recordsPerSecond: 133_333 } },
      { at: burstUntil, source: { recordsPerSecond: 0 } }
    ]
  })

export interface Ablation {
  readonly probed: Runner.RunResult
  readonly ablated: Runner.RunResult
}

/** Runs `scenario` with the policies built as declared and with `{ probe: false }`. */
export const ablation = <E>(
  scenario: Scenario.Scenario,
  build: (options: Policy.LayerOptions) => Runner.PoliciesLayer<E>,
  floors?: Runner.Floors
): Promise<Ablation> =>
  Effect.runPromise(Effect.gen(function*() {
    const probed = yield* Runner.run(scenario, { policy: "probed", policies: build({ probe: true }), floors })
    const ablated = yield* Runner.run(scenario, { policy: "probe disabled", policies: build({ probe: false }), floors })
    return { probed, ablated }
  }))

export const rows = (r: Runner.RunResult, from = 0, to = Infinity): Array<Row> =>
  r.trace.rows.filter((row) => row.t > from && row.t <= to)

/** The value of `f` in the last sample at or before `t` (`NaN` before the first). */
export const at = (r: Runner.RunResult, t: number, f: (row: Row) => number): number => {
  const row = rows(r, 0, t).at(-1)
  return row === undefined ? Number.NaN : f(row)
}

export const min = (xs: ReadonlyArray<Row>, f: (row: Row) => number): number => Math.min(...xs.map(f))
export const max = (xs: ReadonlyArray<Row>, f: (row: Row) => number): number => Math.max(...xs.map(f))

/** Seconds after `from` until the first sample satisfying `p`; `null` if none. */
export const secondsUntil = (r: Runner.RunResult, from: number, p: (row: Row) => boolean): number | null => {
  const hit = rows(r, from).find(p)
  return hit === undefined ? null : (hit.t - from) / 1000
}

/** Verified ÷ oracle bytes over `(from, to]`. */
export const goodputShare = (r: Runner.RunResult, from: number, to: number): number => {
  let good = 0
  let oracle = 0
  for (const row of rows(r, from, to)) {
    good += row.goodputBytesPerSecond
    oracle += row.oracleBytesPerSecond
  }
  return oracle === 0 ? 1 : good / oracle
}

/** Seconds after `from` until goodput over 1 s is back to 90 % of the oracle (`Summary.recoverySeconds`). */
export const recoverySeconds = (r: Runner.RunResult, from: number): number | null =>
  Summary.recoverySeconds(r.trace.rows, r.trace.sampleMillis, from)

/** The read gate's pauses: start (ms), length (ms), and whether uploads delivered during it. */
export const pauses = (r: Runner.RunResult): Array<{ readonly from: number; readonly millis: number; readonly progressing: boolean }> => {
  const out: Array<{ from: number; millis: number; progressing: boolean }> = []
  let current: { from: number; millis: number; progressing: boolean } | undefined
  for (const row of r.trace.rows) {
    if (row.readGatePaused > 0) {
      current ??= { from: row.t - r.trace.sampleMillis, millis: 0, progressing: false }
      current.millis += r.trace.sampleMillis
      if (row.goodputBytesPerSecond > 0) current.progressing = true
    } else if (current !== undefined) {
      out.push(current)
      current = undefined
    }
  }
  if (current !== undefined) out.push(current)
  return out
}
