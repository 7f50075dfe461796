/**
 * Conformance for policies shipped only as layers (no pure core to drive): the
 * layer runs in the full simulated pipeline (`Runner`) through a standard
 * scenario — a store with room for the inflow, then 60 s of overload (its knee
 * and throttle threshold drop to 4 in-flight requests and its latency rises),
 * then room again — and the properties are read off the trace's concurrency
 * column against the bounds the caller states.
 *
 * @since 0.1.0
 */
import type { Knob, SignalBus } from "@sluice/core"
import { Effect } from "effect"
import type { Layer } from "effect"
import type { Verdict } from "./Properties.ts"
import * as Runner from "./Runner.ts"
import * as Scenario from "./Scenario.ts"
import * as Summary from "./Summary.ts"
import type { TraceRow } from "./Trace.ts"
import * as Trace from "./Trace.ts"

/**
 * The standard scenario for layer conformance (see the module doc).
 *
 * @since 0.1.0
 */
export const standardScenario = {
  name: "layer-conformance",
  seed: 42,
  duration: "210 seconds",
  source: { recordsPerSecond: 1_000_000, recordBytes: 150, partitions: 8 },
  store: { baseLatency: "10 millis", bandwidthPerRequest: "32 MiB/s", knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
  pipeline: { memoryBudget: "512 MiB", batch: { records: 50_000, bytes: "8 MiB", maxAge: "2 seconds" } },
  events: [
    { at: "60 seconds", store: { baseLatency: "40 millis", knee: 4, throttleAbove: 4, throttleProbability: 0.5 } },
    { at: "120 seconds", store: { baseLatency: "10 millis", knee: 32, throttleAbove: 64, throttleProbability: 0.5 } }
  ]
} as const

/**
 * The concurrency bounds the layer promises.
 *
 * @since 0.1.0
 */
export interface LayerBounds {
  readonly floor: number
  readonly ceiling: number
}

const overloadFrom = 60_000
const overloadUntil = 120_000

/**
 * Runs the layer through the standard scenario twice and returns one verdict
 * per property: within bounds, backs off under overload (its limit drops below
 * the pre-overload value), recovers within 60 s after it clears (goodput over a
 * 1 s window back to ≥ 90 % of the oracle), deterministic (byte-identical
 * traces), finite values.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Fixed } from "@sluice/core"
 * import { LayerProperties } from "@sluice/testkit"
 *
 * const verdicts = Effect.runPromise(LayerProperties.verdicts(Fixed.layer({ concurrency: 8 }), { floor: 8, ceiling: 8 }))
 * // backsOffUnderOverload and recoversAfterOverload fail for Fixed
 * ```
 *
 * @since 0.1.0
 */
export const verdicts = <E>(
  layer: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>,
  bounds: LayerBounds
): Effect.Effect<Array<Verdict>, unknown> =>
  Effect.gen(function*() {
    const scenario = yield* Scenario.decode(standardScenario)
    const first = yield* Runner.run(scenario, { policy: "layer", policies: layer })
    const second = yield* Runner.run(scenario, { policy: "layer", policies: layer })
    const rows = first.trace.rows
    return [
      withinBounds(rows, bounds),
      backsOff(rows),
      recovers(rows, first.trace.sampleMillis),
      {
        property: "deterministic",
        pass: Trace.toCsv(first.trace) === Trace.toCsv(second.trace),
        detail: "two runs with the same seed give byte-identical traces"
      },
      {
        property: "finiteProposals",
        pass: rows.every((r) => Number.isFinite(r.concurrency) && Number.isFinite(r.batchTargetBytes)),
        detail: "every concurrency and batch target in the trace is finite"
      }
    ]
  })

const withinBounds = (rows: ReadonlyArray<TraceRow>, b: LayerBounds): Verdict => {
  const out = rows.find((r) => r.concurrency < b.floor || r.concurrency > b.ceiling)
  return out === undefined
    ? { property: "withinBounds", pass: true, detail: `concurrency stayed in [${b.floor}, ${b.ceiling}]` }
    : { property: "withinBounds", pass: false, detail: `concurrency ${out.concurrency} at ${out.t} ms is outside [${b.floor}, ${b.ceiling}]` }
}

const before = (rows: ReadonlyArray<TraceRow>) => rows.filter((r) => r.t <= overloadFrom).at(-1)?.concurrency ?? 0
const during = (rows: ReadonlyArray<TraceRow>) => rows.filter((r) => r.t > overloadFrom && r.t <= overloadUntil)

const backsOff = (rows: ReadonlyArray<TraceRow>): Verdict => {
  const start = before(rows)
  const lowest = Math.min(...during(rows).map((r) => r.concurrency))
  return lowest < start
    ? { property: "backsOffUnderOverload", pass: true, detail: `concurrency ${start} -> ${lowest} under overload` }
    : { property: "backsOffUnderOverload", pass: false, detail: `concurrency stayed at ${start} through 60 s of overload` }
}

const recovers = (rows: ReadonlyArray<TraceRow>, sampleMillis: number): Verdict => {
  const start = before(rows)
  const lowest = Math.min(...during(rows).map((r) => r.concurrency))
  if (lowest >= start) return { property: "recoversAfterOverload", pass: false, detail: "never backed off, so nothing to recover" }
  // Recovery is judged by what the store delivers, not by the limit coming back
  // to a value that may have been inflated before the overload.
  const seconds = Summary.recoverySeconds(rows, sampleMillis, overloadUntil)
  return seconds !== null && seconds <= 60
    ? { property: "recoversAfterOverload", pass: true, detail: `goodput back to 90 % of the oracle ${seconds} s after the overload cleared` }
    : { property: "recoversAfterOverload", pass: false, detail: `goodput not back to 90 % of the oracle within 60 s after the overload cleared` }
}
