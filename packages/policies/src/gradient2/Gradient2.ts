/**
 * Gradient2: Netflix concurrency-limits' `Gradient2Limit`, as a Sluice core —
 * an alternative concurrency controller written against the same public
 * contract a third party would use (`Policy.Policy` + `Policy.layer`).
 *
 * Every window (`windowMillis`, at least `minSamples` samples) with the window's
 * mean size-normalised latency as `shortRtt`:
 *
 * ```
 * longRtt  = ExpAvg(shortRtt, longWindow samples)     // decays ×0.95 when longRtt / shortRtt > 2
 * gradient = clamp(tolerance · longRtt / shortRtt, 0.5, 1)
 * limit'   = limit · gradient + queueSize
 * limit    = limit · (1 − smoothing) + limit' · smoothing, within [floor, ceiling]
 * ```
 *
 * and, as in the original, no growth while the limit is unused (max in-flight
 * of the window < limit / 2). A `Throttled` failure is a drop: ×`dropBeta`.
 * Sluice adds the forced probe (pinned low, then `longRtt` reset to the probe's
 * minimum and the limit restored) so the floor is never a trap.
 *
 * Modes: `steady`, `probing`.
 *
 * @since 0.1.0
 */
import { Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Effect, Schema } from "effect"
import type { Layer } from "effect"
import * as Latency from "../internal/Latency.ts"
import * as Probe from "../probe/Probe.ts"
import type { Gradient2State } from "../internal/gradient2/State.ts"

/**
 * Gradient2's config (Netflix defaults where they apply, except `floor`).
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initial` | 20 | floor – ceiling | starting limit |
 * | `floor` | 1 | ≥ 1 | Netflix `minLimit` |
 * | `ceiling` | 200 | ≥ floor | Netflix `maxConcurrency` |
 * | `smoothing` | 0.2 | 0.01 – 1 | weight of the new limit |
 * | `tolerance` | 1.5 | 1 – 10 | `rttTolerance` |
 * | `longWindow` | 600 | ≥ 1 | samples of the long-term RTT average |
 * | `queueSize` | 4 | 0 – 1000 | growth allowance per update |
 * | `dropBeta` | 0.9 | 0.1 – 0.99 | cut on a throttle |
 * | `windowMillis` | 1 s | > 0 | sample window |
 * | `minSamples` | 4 | ≥ 1 | samples needed to close a window |
 * | `referenceBytes` | 1 MiB | ≥ 1 B | size normalisation |
 * | `probe` | see `Probe.ProbeConfig` |  | forced probe |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const Gradient2Config = Schema.Struct({
  initial: Field.int(20, 1).pipe(Field.doc("starting limit", { range: "floor – ceiling" })),
  floor: Field.int(1, 1).pipe(Field.doc("Netflix `minLimit`")),
  ceiling: Field.int(200, 1).pipe(Field.doc("Netflix `maxConcurrency`", { range: "≥ floor" })),
  smoothing: Field.number(0.2, { minimum: 0.01, maximum: 1 }).pipe(Field.doc("weight of the new limit")),
  tolerance: Field.number(1.5, { minimum: 1, maximum: 10 }).pipe(Field.doc("`rttTolerance`")),
  longWindow: Field.int(600, 1).pipe(Field.doc("samples of the long-term RTT average")),
  queueSize: Field.number(4, { minimum: 0, maximum: 1000 }).pipe(Field.doc("growth allowance per update")),
  dropBeta: Field.number(0.9, { minimum: 0.1, maximum: 0.99 }).pipe(Field.doc("cut on a throttle")),
  windowMillis: Field.positiveMillis("1 second").pipe(Field.doc("sample window")),
  minSamples: Field.int(4, 1).pipe(Field.doc("samples needed to close a window")),
  referenceBytes: Field.positiveBytes("1 MiB").pipe(Field.doc("size normalisation")),
  probe: Probe.ProbeConfig.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))).pipe(Field.doc("forced probe", { default: "see `Probe.ProbeConfig`" }))
}).check(
  Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]),
  Field.ordered("floor", "initial", (c) => [c.floor, c.initial]),
  Field.ordered("initial", "ceiling", (c) => [c.initial, c.ceiling])
)

/**
 * `Gradient2Config` as a type: what the `Gradient2Config` schema decodes to.
 *
 * @since 0.1.0
 */
export type Gradient2Config = typeof Gradient2Config.Type

/**
 * Gradient2's modes.
 *
 * @since 0.1.0
 */
export type Gradient2Mode = "steady" | "probing"

const clamp = (c: Gradient2Config, v: number) => Math.min(c.ceiling, Math.max(c.floor, v))

const closeWindow = (s: Gradient2State, now: number): Gradient2State => {
  const c = s.config
  const reset = { ...s, windowStart: now, windowSum: 0, windowCount: 0, windowMaxInflight: 0 }
  if (s.windowCount < c.minSamples) return { ...reset, windowSum: s.windowSum, windowCount: s.windowCount, windowMaxInflight: s.windowMaxInflight }
  const shortRtt = s.windowSum / s.windowCount
  // Netflix ExpAvgMeasurement: a plain average during warm-up (10), then EWMA.
  const warmup = Math.min(10, c.longWindow)
  const longCount = s.longCount + 1
  let longRtt = longCount <= warmup
    ? s.longRtt + (shortRtt - s.longRtt) / longCount
    : s.longRtt + (shortRtt - s.longRtt) * (2 / (c.longWindow + 1))
  if (longRtt / shortRtt > 2) longRtt *= 0.95
  const next = { ...reset, longRtt, longCount }
  if (s.windowMaxInflight < s.limit / 2) return next
  const gradient = Math.max(0.5, Math.min(1, (c.tolerance * longRtt) / shortRtt))
  const proposed = s.limit * gradient + c.queueSize
  return { ...next, limit: clamp(c, s.limit * (1 - c.smoothing) + proposed * c.smoothing) }
}

const endProbe = (s: Gradient2State, now: number, minSeen: number): Gradient2State => ({
  ...s,
  mode: "steady",
  limit: clamp(s.config, s.probe.saved),
  longRtt: Number.isFinite(minSeen) ? minSeen : s.longRtt,
  windowStart: now,
  windowSum: 0,
  windowCount: 0,
  windowMaxInflight: 0,
  probe: Probe.end(s.config.probe, s.probe, now)
})

/**
 * The Gradient2 core.
 *
 * **When to use**
 *
 * As an alternative to AIMD when latency is noisy: the gradient of a long
 * average against a short one tolerates jitter better than a threshold.
 *
 * **Details**
 *
 * Floor `floor`, ceiling `ceiling`, probe `PinnedProbe`.
 *
 * **Example**
 *
 * ```ts
 * import { Gradient2 } from "@sluice/policies"
 *
 * const layer = Gradient2.layer({ initial: 8, ceiling: 128 })
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<Gradient2Config, Gradient2State, Config.Input<typeof Gradient2Config>> = {
  name: "gradient2",
  mode: (s) => s.mode,
  config: Gradient2Config,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: (c) => Probe.spec(c.probe, c.floor),
  withoutProbe: (c) => ({ ...c, probe: Probe.disabled(c.probe) }),
  init: (config) => ({
    config,
    mode: "steady",
    limit: config.initial,
    longRtt: 0,
    longCount: 0,
    windowStart: -Infinity,
    windowSum: 0,
    windowCount: 0,
    windowMaxInflight: 0,
    lastDropAt: -Infinity,
    probe: Probe.init(config.probe),
    proposed: config.initial
  }),
  initial: (s) => ({ concurrency: s.proposed }),
  step: (s, signal, now) => {
    const c = s.config
    let next = s
    if (next.windowStart === -Infinity) next = { ...next, windowStart: now }
    if (signal._tag === "UploadSample" && signal.stage === "object_upload") {
      const value = Latency.normalised(signal, c.referenceBytes)
      if (next.mode === "probing") {
        const r = Probe.sample(next.probe, signal.startedAt, value)
        next = r.outcome === "done" ? endProbe({ ...next, probe: r.state }, now, r.state.minSeen) : { ...next, probe: r.state }
      } else {
        next = {
          ...next,
          windowSum: next.windowSum + value,
          windowCount: next.windowCount + 1,
          windowMaxInflight: Math.max(next.windowMaxInflight, signal.inflightAtStart)
        }
      }
    } else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled" && signal.startedAt >= s.lastDropAt) {
      next = next.mode === "probing"
        ? { ...next, lastDropAt: now, probe: { ...next.probe, saved: clamp(c, next.probe.saved * c.dropBeta) } }
        : { ...next, lastDropAt: now, limit: clamp(c, next.limit * c.dropBeta) }
    }
    if (next.mode === "steady" && now - next.windowStart >= Math.max(1, c.windowMillis)) next = closeWindow(next, now)
    const current = next
    next = Probe.advance<Gradient2State>(c.probe, c.floor, { ...current, probing: current.mode === "probing" }, now, {
      timeout: () => endProbe(current, now, Infinity),
      idle: (probe) => ({ ...current, probe }),
      pin: (probe) => ({ ...current, mode: "probing", probe }),
      saved: () => current.limit
    }) ?? current
    return Probe.propose(c.probe, c.floor, s.proposed, next, next.mode === "probing", next.limit)
  }
}

/**
 * Gradient2 as a layer.
 *
 * **Details**
 *
 * `config` is typed by {@link Gradient2Config}'s encoded form
 * (`Config.Input<typeof Gradient2Config>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Gradient2 } from "@sluice/policies"
 *
 * const gradient2 = Gradient2.layer({ tolerance: 2 })
 * const ablated = Gradient2.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof Gradient2Config>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> => Policy.layer(policy, config, options)
