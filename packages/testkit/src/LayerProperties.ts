/**
 * Conformance for policies shipped only as layers (no pure core to drive): the
 * layer runs in the full simulated pipeline (`Runner`) through a standard
 * scenario that mirrors `Properties.standardWorld` — a store with room for the
 * inflow (knee 32), then 60 s of overload (a throttle storm: 503 SlowDown above
 * 1 request in flight with probability 0.5, knee 4, 4× base latency), then a
 * store that comes back **changed for good**: knee 32 again, but 40 ms base
 * latency and 8 MiB/s per request instead of 10 ms and 32 MiB/s. A controller
 * whose latency baseline only moves down between probes reads that store as
 * congested forever unless its probe re-learns it, and one that remembers the
 * storm's throttled level regrows only a step per (now 1 s) round unless its
 * probe restores it — see `Properties` for the reasoning. The properties are
 * read off the trace (concurrency column, goodput against the oracle) against
 * the bounds the caller states.
 *
 * Given a builder `(options) => layer` instead of a layer, the recovery
 * property is an ablation, as for cores: the layer is also built with
 * `{ probe: false }`, and only the probed run may recover.
 *
 * @since 0.1.0
 */
import type { Policy } from "@sluice/core"
import { Effect, Layer } from "effect"
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
  pipeline: { memoryBudget: "512 MiB", concurrency: 32, batch: { records: 50_000, bytes: "8 MiB", maxAge: "2 seconds" } },
  events: [
    { at: "60 seconds", store: { baseLatency: "40 millis", knee: 4, throttleAbove: 1, throttleProbability: 0.5 } },
    {
      at: "120 seconds",
      store: { baseLatency: "40 millis", bandwidthPerRequest: "8 MiB/s", knee: 32, throttleAbove: 64, throttleProbability: 0.5 }
    }
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

/**
 * A layer of policies, as `Pipeline.start` takes it (`Runner.PoliciesLayer`).
 *
 * @since 0.1.0
 */
export type PoliciesLayer<E> = Runner.PoliciesLayer<E>

/**
 * Builds the policies as declared (`{}` or `{ probe: true }`) or with their
 * probes disabled (`{ probe: false }`): what `Aimd.layer(config, options)`,
 * `Policy.layer(policy, config, options)` and `Composition.defaults(config,
 * { probes })` offer.
 *
 * @since 0.1.0
 */
export type LayerBuilder<E> = (options: Policy.LayerOptions) => PoliciesLayer<E>

const isBuilder = <E>(p: PoliciesLayer<E> | LayerBuilder<E>): p is LayerBuilder<E> => !Layer.isLayer(p)

const overloadFrom = 60_000
const overloadUntil = 120_000
/** Recovery must come within this long after the overload. */
const recoveryMillis = 60_000

/**
 * Runs the policies through the standard scenario twice (and, given a
 * builder, once more with their probes disabled) and returns one verdict per
 * property: within bounds, backs off under overload (its limit drops below the
 * pre-overload value), recovers within 60 s after it clears (goodput over a
 * 1 s window back to ≥ 90 % of the oracle) — with a builder, only if the run
 * with `{ probe: false }` does **not** — deterministic (byte-identical traces),
 * finite values.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Fixed, Policy } from "@sluice/core"
 * import { LayerProperties } from "@sluice/testkit"
 *
 * const verdicts = Effect.runPromise(LayerProperties.verdicts(Fixed.layer({ concurrency: 8 }), { floor: 8, ceiling: 8 }))
 * // backsOffUnderOverload and recoversAfterOverload fail for Fixed
 * const ablation = LayerProperties.verdicts((o) => Policy.layer(Fixed.policy, { concurrency: 8 }, o), { floor: 8, ceiling: 8 })
 * ```
 *
 * @since 0.1.0
 */
export const verdicts = <E>(
  policies: PoliciesLayer<E> | LayerBuilder<E>,
  bounds: LayerBounds
): Effect.Effect<Array<Verdict>, unknown> =>
  Effect.gen(function*() {
    const scenario = yield* Scenario.decode(standardScenario)
    const build = isBuilder(policies) ? policies : undefined
    const layer = isBuilder(policies) ? policies({ probe: true }) : policies
    const first = yield* Runner.run(scenario, { policy: "layer", policies: layer })
    const second = yield* Runner.run(scenario, { policy: "layer", policies: layer })
    const ablated = build === undefined
      ? undefined
      : (yield* Runner.run(scenario, { policy: "layer (probe disabled)", policies: build({ probe: false }) })).trace.rows
    const rows = first.trace.rows
    return [
      withinBounds(rows, bounds),
      backsOff(rows),
      recovers(rows, first.trace.sampleMillis, ablated),
      deterministic(Trace.toCsv(first.trace), Trace.toCsv(second.trace)),
      finite(rows)
    ]
  })

/** Same seed, byte-identical traces; else the first row (its `t`) where they differ. */
const deterministic = (a: string, b: string): Verdict => {
  if (a === b) return { property: "deterministic", pass: true, detail: "two runs with the same seed give byte-identical traces" }
  const linesA = a.split("\n")
  const linesB = b.split("\n")
  const i = linesA.findIndex((line, k) => line !== linesB[k])
  const at = i < 0 ? linesA.length : i
  return {
    property: "deterministic",
    pass: false,
    detail: `two runs with the same seed differ first at trace row ${at} (t = ${(linesA[at] ?? linesB[at] ?? "").split(",")[0]} ms)`
  }
}

const finite = (rows: ReadonlyArray<TraceRow>): Verdict => {
  const bad = rows.find((r) => !Number.isFinite(r.concurrency) || !Number.isFinite(r.batchTargetBytes))
  return bad === undefined
    ? { property: "finiteProposals", pass: true, detail: "every concurrency and batch target in the trace is finite" }
    : {
      property: "finiteProposals",
      pass: false,
      detail: `concurrency ${bad.concurrency}, batch target ${bad.batchTargetBytes} bytes at ${bad.t} ms`
    }
}

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

/**
 * Goodput ÷ the oracle's over the 1 s window ending at `t` (the window
 * `Summary.recoverySeconds` judges), rounded to 2 digits; `null` when the
 * oracle moved nothing.
 */
const goodputRatioAt = (rows: ReadonlyArray<TraceRow>, sampleMillis: number, t: number): number | null => {
  const window = rows.filter((r) => r.t > t - 1_000 && r.t <= t)
  const oracle = window.reduce((sum, r) => sum + r.oracleBytesPerSecond, 0)
  if (window.length === 0 || sampleMillis <= 0 || oracle === 0) return null
  return Math.round((window.reduce((sum, r) => sum + r.goodputBytesPerSecond, 0) / oracle) * 100) / 100
}

const recovers = (rows: ReadonlyArray<TraceRow>, sampleMillis: number, ablated: ReadonlyArray<TraceRow> | undefined): Verdict => {
  const name = "recoversAfterOverload"
  const start = before(rows)
  const lowest = Math.min(...during(rows).map((r) => r.concurrency))
  if (lowest >= start) {
    return { property: name, pass: false, detail: `never backed off (concurrency ${start}, lowest ${lowest} under overload), so nothing to recover` }
  }
  // Recovery is judged by what the store delivers, not by the limit coming back
  // to a value that may have been inflated before the overload.
  const within = (s: number | null): s is number => s !== null && s <= recoveryMillis / 1000
  const seconds = Summary.recoverySeconds(rows, sampleMillis, overloadUntil)
  if (!within(seconds)) {
    const bound = recoveryMillis / 1000
    const ratio = goodputRatioAt(rows, sampleMillis, overloadUntil + recoveryMillis)
    const atBound = rows.filter((r) => r.t <= overloadUntil + recoveryMillis).at(-1)?.concurrency
    return {
      property: name,
      pass: false,
      detail: `goodput not back to 90 % of the oracle within ${bound} s after the overload cleared: ${
        ratio === null ? "no oracle goodput" : ratio
      } at ${bound} s (concurrency ${start} before the overload, ${lowest} lowest, ${atBound ?? "-"} at ${bound} s)`
    }
  }
  const back = `goodput back to 90 % of the oracle ${seconds} s after the overload cleared`
  if (ablated === undefined) {
    return { property: name, pass: true, detail: `${back} (not ablated: pass a builder (options) => layer to run it with its probe disabled too)` }
  }
  const without = Summary.recoverySeconds(ablated, sampleMillis, overloadUntil)
  return within(without)
    ? { property: name, pass: false, detail: `recovers without its probe: the probe is not what recovers (${back}; with { probe: false } ${without} s)` }
    : { property: name, pass: true, detail: `${back}; with { probe: false } not within ${recoveryMillis / 1000} s` }
}
