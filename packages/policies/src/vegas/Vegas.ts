/**
 * Vegas: Netflix concurrency-limits' `VegasLimit` (TCP Vegas's queue estimate),
 * as a Sluice core written against the public contract.
 *
 * Per sample, with `rtt` the size-normalised latency and `noLoad` the minimum:
 *
 * ```
 * queue = ceil(limit · (1 − noLoad / rtt))
 * log   = max(1, floor(log10(limit)))
 * queue ≤ log        → limit + 6·log        (far from the knee: grow fast)
 * queue < 3·log      → limit + log
 * queue > 6·log      → limit − log
 * otherwise          → hold
 * throttle (drop)    → limit − log, once per round
 * ```
 *
 * with no growth while `inflightAtStart · 2 < limit` (idle limits do not
 * inflate), `smoothing` between old and new. Like AIMD, `noLoad` never rises
 * except through the probe: Netflix's Vegas resets it after
 * `probeMultiplier · limit` jittered samples; Sluice uses the shared forced
 * probe (pinned low, stale samples discarded, `noLoad` := probe minimum,
 * limit restored), which also fires after K windows at the floor.
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
import type { VegasState } from "../internal/vegas/State.ts"

/**
 * Vegas's config.
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initial` | 20 | floor – ceiling | starting limit (Netflix: 20) |
 * | `floor` | 1 | ≥ 1 | never below |
 * | `ceiling` | 1000 | ≥ floor | Netflix `maxConcurrency` |
 * | `smoothing` | 1 | 0.01 – 1 | weight of the new limit (Netflix: 1) |
 * | `alpha` | 3 | (0, 100] | grow while queue < alpha·log |
 * | `beta` | 6 | > alpha | shrink while queue > beta·log |
 * | `referenceBytes` | 1 MiB | ≥ 1 B | size normalisation |
 * | `probe` | see `Probe.ProbeConfig` |  | forced probe |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const VegasConfig = Schema.Struct({
  initial: Field.int(20, 1).pipe(Field.doc("starting limit (Netflix: 20)", { range: "floor – ceiling" })),
  floor: Field.int(1, 1).pipe(Field.doc("never below")),
  ceiling: Field.int(1000, 1).pipe(Field.doc("Netflix `maxConcurrency`", { range: "≥ floor" })),
  smoothing: Field.number(1, { minimum: 0.01, maximum: 1 }).pipe(Field.doc("weight of the new limit (Netflix: 1)")),
  alpha: Field.number(3, { minimum: 0, maximum: 100, exclusiveMinimum: true }).pipe(Field.doc("grow while queue < alpha·log")),
  beta: Field.number(6, { minimum: 0, maximum: 100, exclusiveMinimum: true }).pipe(Field.doc("shrink while queue > beta·log", { range: "> alpha" })),
  referenceBytes: Field.positiveBytes("1 MiB").pipe(Field.doc("size normalisation")),
  probe: Probe.ProbeConfig.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))).pipe(Field.doc("forced probe", { default: "see `Probe.ProbeConfig`" }))
}).check(
  Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]),
  Field.ordered("floor", "initial", (c) => [c.floor, c.initial]),
  Field.ordered("initial", "ceiling", (c) => [c.initial, c.ceiling]),
  Field.ordered("alpha", "beta", (c) => [c.alpha, c.beta])
)

/**
 * `VegasConfig` as a type: what the `VegasConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type VegasConfig = typeof VegasConfig.Type

/**
 * Vegas's modes.
 *
 * @since 0.1.0
 */
export type VegasMode = "steady" | "probing"

const clamp = (c: VegasConfig, v: number) => Math.min(c.ceiling, Math.max(c.floor, v))
const log10 = (limit: number) => Math.max(1, Math.floor(Math.log10(Math.max(1, limit))))

const update = (s: VegasState, rtt: number, inflight: number, drop: boolean): VegasState => {
  const c = s.config
  const log = log10(s.limit)
  let target: number
  if (drop) target = s.limit - log
  else {
    if (rtt < s.noLoad) return { ...s, noLoad: rtt }
    if (inflight * 2 < s.limit) return s
    const queue = Math.ceil(s.limit * (1 - s.noLoad / rtt))
    if (queue <= log) target = s.limit + c.beta * log
    else if (queue < c.alpha * log) target = s.limit + log
    else if (queue > c.beta * log) target = s.limit - log
    else return s
  }
  return { ...s, limit: clamp(c, (1 - c.smoothing) * s.limit + c.smoothing * clamp(c, target)) }
}

const endProbe = (s: VegasState, now: number, minSeen: number): VegasState => ({
  ...s,
  mode: "steady",
  limit: clamp(s.config, s.probe.saved),
  noLoad: Number.isFinite(minSeen) ? minSeen : s.noLoad,
  probe: Probe.end(s.config.probe, s.probe, now)
})

/**
 * The Vegas core.
 *
 * **When to use**
 *
 * As an alternative to AIMD when the store's no-load latency is stable: Vegas
 * aims at a small standing queue instead of probing for the knee by overshoot.
 *
 * **Details**
 *
 * Floor `floor`, ceiling `ceiling`, probe `PinnedProbe`.
 *
 * **Example**
 *
 * ```ts
 * import { Vegas } from "@sluice/policies"
 *
 * const vegas = Vegas.layer({ initial: 8, ceiling: 256 })
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<VegasConfig, VegasState, Config.Input<typeof VegasConfig>> = {
  name: "vegas",
  mode: (s) => s.mode,
  config: VegasConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: (c) => Probe.spec(c.probe, c.floor),
  withoutProbe: (c) => ({ ...c, probe: Probe.disabled(c.probe) }),
  init: (config) => ({
    config,
    mode: "steady",
    limit: config.initial,
    noLoad: Infinity,
    probe: Probe.init(config.probe),
    proposed: config.initial,
    lastCutAt: -Infinity
  }),
  initial: (s) => ({ concurrency: s.proposed }),
  step: (s, signal, now) => {
    const c = s.config
    let next = s
    if (signal._tag === "UploadSample" && signal.stage === "object_upload") {
      const value = Latency.normalised(signal, c.referenceBytes)
      if (next.mode === "probing") {
        const r = Probe.sample(next.probe, signal.startedAt, value)
        next = r.outcome === "done" ? endProbe({ ...next, probe: r.state }, now, r.state.minSeen) : { ...next, probe: r.state }
      } else {
        next = update(next, value, signal.inflightAtStart, false)
      }
    } else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled" && signal.startedAt >= next.lastCutAt) {
      // One cut per round (a drop in Netflix's Vegas): throttles of requests
      // that began before the last cut measured the old limit — five of one
      // round cut 20 → 15 before.
      next = next.mode === "probing"
        ? { ...next, lastCutAt: now, probe: { ...next.probe, saved: clamp(c, next.probe.saved - log10(next.probe.saved)) } }
        : { ...update(next, 0, signal.inflightAtStart, true), lastCutAt: now }
    }
    const current = next
    next = Probe.advance<VegasState>(c.probe, c.floor, { ...current, probing: current.mode === "probing" }, now, {
      timeout: () => endProbe(current, now, Infinity),
      idle: (probe) => ({ ...current, probe }),
      pin: (probe) => ({ ...current, mode: "probing", probe }),
      saved: () => current.limit
    }) ?? current
    return Probe.propose(c.probe, c.floor, s.proposed, next, next.mode === "probing", next.limit)
  }
}

/**
 * Vegas as a layer.
 *
 * **Details**
 *
 * `config` is typed by {@link VegasConfig}'s encoded form
 * (`Config.Input<typeof VegasConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Vegas } from "@sluice/policies"
 *
 * const vegas = Vegas.layer({ alpha: 2, beta: 4 })
 * const ablated = Vegas.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof VegasConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> => Policy.layer(policy, config, options)
