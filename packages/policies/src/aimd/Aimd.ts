/**
 * AIMD: additive-increase / multiplicative-decrease of upload concurrency.
 *
 * - **Increase** by `step` per round (`step / limit` per sample, TCP-style) while
 *   latency is flat **and** the limit is used (`inflightAtStart ≥ limit / 2`), so
 *   an idle limit never inflates.
 * - **Decrease** ×`beta` when latency climbs or on a `Throttled` failure, at most
 *   once per round: samples of requests that began before the last cut are not
 *   allowed to cut again (they measured the old limit).
 *
 * **Latency climb** — EWMA + k·deviation over a no-load baseline (Vector ARC
 * style). Latency is size-normalised (`latency / (1 + bytes / referenceBytes)`,
 * see README) so that bigger batches do not read as congestion. It climbs when
 *
 * ```
 * ewma > baseline · (1 + tolerance) + deviations · ewmaDeviation
 * ```
 *
 * **The baseline does not ratchet.** It is the minimum normalised latency seen;
 * between probes it can only go *down*. Only a probe (pinned low, samples from
 * before the probe epoch discarded) may raise it, replacing it with the minimum
 * measured at probe concurrency. So load can never drag the baseline up — the
 * failure Envoy and Netflix users hit with a moving-average "no-load" RTT.
 *
 * Modes: `steady` (flat, growing when used), `backoff` (cut since the last flat
 * sample), `probing` (pinned by the probe; see `Probe`).
 *
 * @since 0.1.0
 */
import { Failure, Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Effect, Schema } from "effect"
import type { Layer } from "effect"
import * as Latency from "../internal/Latency.ts"
import * as ThrottleEpisode from "../internal/ThrottleEpisode.ts"
import * as Probe from "../probe/Probe.ts"
import type { AimdState } from "../internal/aimd/State.ts"

/** AIMD's probe: half the samples of `Probe.defaults`, half as often. */
const AimdProbeConfig = Probe.configWith({ samples: 4, intervalMillis: 120_000 })

/**
 * AIMD's config. Defaults and valid ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initial` | 8 | floor – ceiling | starting limit |
 * | `floor` | 1 | ≥ 1 | never below (still makes progress) |
 * | `ceiling` | 256 | ≥ floor | never above |
 * | `step` | 1 | (0, 100] | additive increase per round |
 * | `beta` | 0.9 | 0.1 – 0.99 | multiplicative decrease |
 * | `tolerance` | 0.25 | 0 – 10 | latency allowed above baseline, as a fraction |
 * | `deviations` | 2 | 0 – 10 | k in EWMA + k·deviation |
 * | `smoothing` | 0.2 | 0.01 – 1 | EWMA weight of a new sample |
 * | `referenceBytes` | 1 MiB | ≥ 1 B | size normalisation (see module doc); the starting value when learned |
 * | `learnReference` | true |  | learn `referenceBytes = a / b` of latency ≈ a + b·bytes (`a` from bodiless requests) |
 * | `slowStart` | true |  | at start, multiplicative increase (+`step` per sample: ×2 per round) until the first cut (TCP slow start) |
 * | `stage` | object_upload | a Stage | which samples measure latency |
 * | `probe` | `Probe.ProbeConfig`, but `samples` 4 and `intervalMillis` 120 s |  | the forced probe (cheaper than the shared defaults: its baseline only needs re-learning when the store's no-load latency moves, which also drives it to the floor and forces a probe) |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const AimdConfig = Schema.Struct({
  initial: Field.int(8, 1).pipe(Field.doc("starting limit", { range: "floor – ceiling" })),
  floor: Field.int(1, 1).pipe(Field.doc("never below (still makes progress)")),
  ceiling: Field.int(256, 1).pipe(Field.doc("never above", { range: "≥ floor" })),
  step: Field.number(1, { minimum: 0, maximum: 100, exclusiveMinimum: true }).pipe(Field.doc("additive increase per round")),
  beta: Field.number(0.9, { minimum: 0.1, maximum: 0.99 }).pipe(Field.doc("multiplicative decrease")),
  tolerance: Field.number(0.25, { minimum: 0, maximum: 10 }).pipe(Field.doc("latency allowed above baseline, as a fraction")),
  deviations: Field.number(2, { minimum: 0, maximum: 10 }).pipe(Field.doc("k in EWMA + k·deviation")),
  smoothing: Field.number(0.2, { minimum: 0.01, maximum: 1 }).pipe(Field.doc("EWMA weight of a new sample")),
  referenceBytes: Field.positiveBytes("1 MiB").pipe(Field.doc("size normalisation (see module doc); the starting value when learned")),
  learnReference: Field.boolean(true).pipe(Field.doc("learn `referenceBytes = a / b` of latency ≈ a + b·bytes (`a` from bodiless requests)")),
  slowStart: Field.boolean(true).pipe(Field.doc("at start, multiplicative increase (+`step` per sample: ×2 per round) until the first cut (TCP slow start)")),
  stage: Failure.Stage.pipe(Schema.withDecodingDefaultKey(Effect.succeed<Failure.Stage>("object_upload"))).pipe(Field.doc("which samples measure latency", { range: "a Stage" })),
  probe: AimdProbeConfig.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))).pipe(Field.doc("the forced probe (cheaper than the shared defaults: its baseline only needs re-learning when the store's no-load latency moves, which also drives it to the floor and forces a probe)", { default: "`Probe.ProbeConfig`, but `samples` 4 and `intervalMillis` 120 s" }))
}).check(
  Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]),
  Field.ordered("initial", "ceiling", (c) => [c.initial, c.ceiling]),
  Field.ordered("floor", "initial", (c) => [c.floor, c.initial])
)

/**
 * `AimdConfig` as a type: what the `AimdConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type AimdConfig = typeof AimdConfig.Type

/**
 * AIMD's modes.
 *
 * @since 0.1.0
 */
export type AimdMode = "steady" | "backoff" | "probing"

const clamp = (c: AimdConfig, v: number) => Math.min(c.ceiling, Math.max(c.floor, v))

const withLimit = (s: AimdState, next: AimdState): Policy.Step<AimdState> =>
  Probe.propose(s.config.probe, s.config.floor, s.proposed, next, next.mode === "probing", next.limit)

/**
 * Whether a signal may cut: one cut per round. A request that began before the
 * last cut, or while more uploads were in flight than the limit now allows (a
 * later stage of an upload admitted before the cut), measured the old regime.
 */
const fresh = (s: AimdState, startedAt: number, inflightAtStart: number): boolean =>
  startedAt >= s.lastCutAt && (s.mode !== "backoff" || inflightAtStart <= Math.max(s.config.floor, Math.floor(s.limit)))

/**
 * A cut ×`beta`; it ends slow start (`ssthresh` := the cut limit). A latency
 * climb measured during slow start cuts from the in-flight count the request
 * saw (`measured`), not from the limit: the limit doubled meanwhile (HyStart).
 */
const cut = (s: AimdState, now: number, measured: number = Infinity): AimdState => {
  if (s.mode === "probing") {
    const saved = clamp(s.config, s.probe.saved * s.config.beta)
    return { ...s, probe: { ...s.probe, saved }, ssthresh: saved, lastCutAt: now }
  }
  const from = s.limit < s.ssthresh ? Math.min(s.limit, Math.max(s.config.floor, measured)) : s.limit
  const limit = clamp(s.config, from * s.config.beta)
  return { ...s, mode: "backoff", limit, ssthresh: limit, lastCutAt: now }
}

const endProbe = (s: AimdState, now: number, baseline: number, baselineBytes: number): AimdState => ({
  ...s,
  mode: "steady",
  limit: clamp(s.config, s.probe.saved),
  baseline,
  baselineBytes,
  // The EWMA restarts from the new baseline: older samples measured another regime.
  latency: Latency.emptyEwma,
  probe: Probe.end(s.config.probe, s.probe, now),
  // Samples of requests started during the probe must not cut the restored limit.
  lastCutAt: now
})

/**
 * Learns the size normalisation from any sample (bodiless ones measure the
 * per-request overhead). When the reference moves, the baseline and the probe's
 * minimum are re-normalised exactly for the size of the sample that set them —
 * rescaling a minimum at some other size (say the mean) would drift it, and a
 * baseline drifted down reads an idle store as congested — and the EWMA at the
 * mean size.
 */
const learn = (s: AimdState, sample: SignalBus.UploadSample): AimdState => {
  if (!s.config.learnReference) return s
  const reference = Latency.learnReference(s.reference, sample)
  const from = s.reference.bytes
  const to = reference.bytes
  if (to === from) return { ...s, reference }
  return {
    ...s,
    reference,
    baseline: s.baseline * Latency.rescaleFactor(s.baselineBytes, from, to),
    latency: Latency.rescaleEwma(s.latency, Latency.rescaleFactor(Latency.meanBytes(reference), from, to)),
    probe: { ...s.probe, minSeen: s.probe.minSeen * Latency.rescaleFactor(s.probeMinBytes, from, to) }
  }
}

const onSample = (s: AimdState, sample: SignalBus.UploadSample, now: number): AimdState => {
  const c = s.config
  const value = Latency.normalised(sample, s.reference.bytes)
  if (s.mode === "probing") {
    const r = Probe.sample(s.probe, sample.startedAt, value)
    const probeMinBytes = r.state.minSeen < s.probe.minSeen ? sample.bytes : s.probeMinBytes
    if (r.outcome === "done") return endProbe({ ...s, probe: r.state, probeMinBytes }, now, r.state.minSeen, probeMinBytes)
    return { ...s, probe: r.state, probeMinBytes }
  }
  const lower = value < s.baseline
  const baseline = lower ? value : s.baseline
  const baselineBytes = lower ? sample.bytes : s.baselineBytes
  const latency = Latency.addEwma(s.latency, value, c.smoothing)
  const threshold = baseline * (1 + c.tolerance) + c.deviations * latency.deviation
  const next = { ...s, baseline, baselineBytes, latency }
  if (latency.mean > threshold) {
    return fresh(s, sample.startedAt, sample.inflightAtStart) ? cut(next, now, sample.inflightAtStart) : next
  }
  const episode = ThrottleEpisode.succeeded(s.episode, sample.startedAt, sample.inflightAtStart)
  // The storm has cleared (clean requests above the level that was throttled):
  // slow start again toward the limit before it (BBR/CUBIC fast recovery); the
  // first latency climb or throttle ends it as usual.
  const over = ThrottleEpisode.cleared(episode)
  const ssthresh = over ? Math.max(s.ssthresh, s.beforeStorm) : s.ssthresh
  const storm = over ? { episode: ThrottleEpisode.end(episode), beforeStorm: 0, ssthresh } : { episode, ssthresh }
  const used = sample.inflightAtStart >= s.limit / 2
  const slow = c.slowStart && s.limit < ssthresh
  const limit = !used ? s.limit : slow
    ? clamp(c, Math.min(ssthresh, s.limit + c.step))
    : clamp(c, s.limit + c.step / Math.max(1, s.limit))
  return { ...next, ...storm, mode: "steady", limit, lastGood: limit }
}

const maybeProbe = (s: AimdState, now: number): AimdState => {
  const c = s.config
  return Probe.advance<AimdState>(c.probe, c.floor, { ...s, probing: s.mode === "probing" }, now, {
    timeout: () => endProbe(s, now, s.baseline, s.baselineBytes),
    idle: (probe) => ({ ...s, probe }),
    pin: (probe) => ({ ...s, mode: "probing", probe }),
    // A forced probe from the floor restores the last good limit (BBR); a
    // periodic one restores the limit it interrupted.
    saved: (reason) => reason === "floor" ? Math.max(s.lastGood, s.limit) : s.limit
  }) ?? s
}

/**
 * The AIMD core.
 *
 * **When to use**
 *
 * The default concurrency controller: a store with a latency knee (latency
 * rises past some concurrency) and occasional throttles.
 *
 * **Details**
 *
 * Floor `floor`, ceiling `ceiling`, probe `PinnedProbe` (see `Probe`). Only
 * `stage` samples (default `object_upload`) move the limit; throttles of any
 * stage cut it.
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { Aimd } from "@sluice/policies"
 * import { Schema } from "effect"
 *
 * const config = Schema.decodeUnknownSync(Aimd.AimdConfig)({ ceiling: 64 })
 * const { proposals } = Policy.replay(Aimd.policy, config, [])
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<AimdConfig, AimdState, Config.Input<typeof AimdConfig>> = {
  name: "aimd",
  mode: (s) => s.mode,
  config: AimdConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: (c) => Probe.spec(c.probe, c.floor),
  withoutProbe: (c) => ({ ...c, probe: Probe.disabled(c.probe) }),
  init: (config) => ({
    config,
    mode: "steady",
    limit: config.initial,
    lastGood: config.initial,
    ssthresh: config.slowStart ? config.ceiling : config.initial,
    baseline: Infinity,
    baselineBytes: 0,
    probeMinBytes: 0,
    latency: Latency.emptyEwma,
    reference: Latency.initReference(config.referenceBytes),
    lastCutAt: -Infinity,
    probe: Probe.init(config.probe),
    proposed: config.initial,
    episode: ThrottleEpisode.none,
    beforeStorm: 0
  }),
  initial: (s) => ({ concurrency: s.proposed }),
  step: (s, signal, now) => {
    let next = s
    if (signal._tag === "UploadSample") {
      next = learn(s, signal)
      if (signal.stage === s.config.stage) next = onSample(next, signal, now)
    } else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") {
      const storm: AimdState = {
        ...s,
        episode: ThrottleEpisode.throttled(s.episode, s.config.floor, signal.inflightAtStart, now),
        beforeStorm: ThrottleEpisode.active(s.episode) ? s.beforeStorm : Math.max(s.limit, s.mode === "probing" ? s.probe.saved : 0)
      }
      next = fresh(s, signal.startedAt, signal.inflightAtStart) ? cut(storm, now) : storm
    }
    return withLimit(s, maybeProbe(next, now))
  }
}

/**
 * AIMD as a layer (config decoded with {@link AimdConfig}).
 *
 * **Details**
 *
 * `config` is typed by {@link AimdConfig}'s encoded form
 * (`Config.Input<typeof AimdConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Aimd } from "@sluice/policies"
 *
 * const aimd = Aimd.layer({ floor: 2, ceiling: 64, beta: 0.8 })
 * const ablated = Aimd.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof AimdConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> =>
  Policy.layer(policy, config, options)
