/**
 * Delivery rate: upload concurrency sized from what the store delivers —
 * Linux BBR's model (`tcp_bbr.c`; Cardwell et al., "BBR: Congestion-Based
 * Congestion Control", ACM Queue 2016) carried over to object uploads.
 *
 * A latency-driven controller reads "the store got slower" as congestion and
 * cuts concurrency exactly when more uploads are needed to move the same bytes.
 * BBR separates the two: it estimates the bottleneck **delivery rate** (a
 * windowed max) and the **minimum round trip** (a windowed min, refreshed by a
 * short drain), and keeps in flight what the pipe holds:
 *
 * ```
 * concurrency = gain × rate × slot(s̄) / s̄         (clamped to [floor, ceiling] and ≤ inflightHi)
 * slot(s)     = minLatency × (1 + s / ref + k)     (one batch's time holding a slot, unloaded)
 * ```
 *
 * - `rate`: bytes per second of object bodies delivered, per completion over
 *   that upload's own interval (BBR's rate sample), max over the last
 *   `RATE_WINDOW_ROUNDS` rounds. Samples of requests that found the limit unused
 *   (the pipeline had less to send) only count when they raise the max (BBR's
 *   app-limited rule).
 * - `minLatency`: the minimum **size-normalised** latency
 *   `latency / (1 + bytes / ref)` of every request (`ref = a / b` of
 *   `latency ≈ a + b·bytes`, learned as AIMD learns it): the store's no-load
 *   per-request latency whatever the object size. `slot(s)` adds the `k`
 *   bodiless requests (manifest, verify) each batch makes, measured.
 * - `s̄`: the mean object size. A round ends when an upload that began after
 *   the round began completes.
 *
 * **Modes** (BBR's state machine; each phase is its own module under
 * `internal/deliveryrate/`, whose table gives the constants' values):
 *
 * | mode | in flight | leaves when |
 * |---|---|---|
 * | `startup` | ×`STARTUP_GAIN` (2) per round that used the limit, ≥ 2 × BDP | the rate grew < 25 % in 3 rounds that used the limit, or a throttle → `drain` |
 * | `drain` | 1 × BDP | a round ran at ≤ what drain proposes (⌈BDP⌉), or 3 rounds → `cruise` |
 * | `cruise` | `CRUISE_GAIN` (1.25) × BDP | 4 rounds, or 2 rounds without a throttle while a throttle's bound holds → `probeUp` (never without the probe) |
 * | `probeUp` | `UP_GAIN` (1.5) × BDP, ×1.5 per round while the rate keeps growing, +1, +2, +4, … above `inflightHi` | the rate grew less than half the in-flight increase (the **knee**), a throttle, or the limit was not used → `probeDown` |
 * | `probeDown` | `DOWN_GAIN` (0.9) × BDP (drains the queue `probeUp` built) | an upload starts with ≤ BDP in flight, or one round → `cruise` |
 * | `probing` | `PROBE_GAIN` (0.5) × the in-flight of the round that started it, ≥ floor (BBR's PROBE_RTT) | 8 samples at that level, or 10 s → the mode it left (`startup`, or `cruise`) |
 *
 * From any mode but `probing`: the minimum falls by half or more → `startup`
 * (the store got faster); running uploads raise the minimum → `probeUp` and
 * `probeDown` go to `cruise`. Every mode proposes at least the in-flight a
 * throttle episode's end restored (until the rate filter has measured it) and
 * at most `inflightHi` (`probeUp` excepted), within `[floor, ceiling]`.
 *
 * **The probe (PROBE_RTT) and the knee.** `minLatency` can only go down,
 * except through the probe. The probe runs when the minimum is older than
 * `MIN_LATENCY_WINDOW_MILLIS` (samples within `CONFIRM_TOLERANCE` of it keep it
 * fresh) and — what a store that got slower needs — as soon as a whole round's
 * minimum is ≥ (1 + `RISE_TOLERANCE`) × `minLatency`; in both cases only once
 * a request found the limit full. While none does, the pipeline is
 * app-limited: its in-flight is the inflow × the latency (Little's law) and
 * grows *because* the store got slower, a drain would halve the uploads the
 * slower store needs, and there is no limit to correct (BBR's app-limited
 * rule). It drains in-flight to `PROBE_GAIN` of the elevated round's and
 * measures again:
 *
 * - latency fell with in-flight (by at least half as much): it was our own
 *   queue — the store queues above `knee ≈ inflight × minLatency / latency`,
 *   which becomes `inflightHi`, the bound in-flight stays under;
 * - it did not: the store itself is slower, and the probe's minimum becomes
 *   `minLatency` — so concurrency *rises*, to `rate × slot / s̄` at the new
 *   latency (the rate the max filter still remembers).
 *
 * **Running uploads** (`Inflight.medianUpload`, the median object upload in
 * flight): a store 20× slower takes seconds to complete its first upload, and
 * until then no sample says anything. When half the uploads running have run,
 * size-normalised, ≥ (1 + `RISE_TOLERANCE`)² × the minimum — and more than a
 * queue of ours could add given the in-flight they began at — their age, a
 * lower bound on the new latency, becomes the minimum (the BDP grows with it;
 * `probeUp`/`probeDown` go to `cruise`), and the first measurement after it
 * sets the minimum, up or down, without the probe (`pending: false` disables
 * this).
 *
 * **Throttles** (classified `Throttled`, as the throttle classifier says; once
 * per round): `inflightHi := max(floor, min(limit, in flight) × throttleBeta)`
 * (BBRv2's `inflight_hi`), and `startup`/`probeUp` end. `probeUp` raises
 * `inflightHi` again to each level it reaches without a throttle, by +1, +2,
 * +4, … per round. `Transient` and `Fatal` failures change nothing.
 *
 * @since 0.2.0
 */
import { Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Schema } from "effect"
import type { Layer } from "effect"
import { onPending } from "../internal/deliveryrate/MinLatency.ts"
import { onTime, PROBE_SAMPLES } from "../internal/deliveryrate/ProbeRtt.ts"
import { onSample } from "../internal/deliveryrate/Rounds.ts"
import { emptyRound, init } from "../internal/deliveryrate/State.ts"
import type { DeliveryRateState } from "../internal/deliveryrate/State.ts"
import { target } from "../internal/deliveryrate/Target.ts"
import { onThrottle } from "../internal/deliveryrate/Throttles.ts"

/**
 * The delivery-rate policy's config. Defaults and valid ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initial` | 8 | floor – ceiling | starting concurrency |
 * | `floor` | 1 | ≥ 1 | never below |
 * | `ceiling` | 256 | ≥ floor | never above |
 * | `throttleBeta` | 0.7 | 0.1 – 0.99 | `inflightHi` cut per throttle round (BBRv2: 0.7) |
 * | `probe` | true |  | the probe (PROBE_RTT); false disables it (`withoutProbe`, the ablation): the minimum then never rises |
 * | `pending` | true |  | running uploads raise the minimum (`Inflight.medianUpload`, above); false: only completed requests do |
 * <!-- end config table -->
 *
 * @since 0.2.0
 */
export const DeliveryRateConfig = Schema.Struct({
  initial: Field.int(8, 1).pipe(Field.doc("starting concurrency", { range: "floor – ceiling" })),
  floor: Field.int(1, 1).pipe(Field.doc("never below")),
  ceiling: Field.int(256, 1).pipe(Field.doc("never above", { range: "≥ floor" })),
  throttleBeta: Field.number(0.7, { minimum: 0.1, maximum: 0.99 }).pipe(Field.doc("`inflightHi` cut per throttle round (BBRv2: 0.7)")),
  probe: Field.boolean(true).pipe(Field.doc("the probe (PROBE_RTT); false disables it (`withoutProbe`, the ablation): the minimum then never rises")),
  pending: Field.boolean(true).pipe(Field.doc("running uploads raise the minimum (`Inflight.medianUpload`, above); false: only completed requests do"))
}).check(
  Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]),
  Field.ordered("floor", "initial", (c) => [c.floor, c.initial]),
  Field.ordered("initial", "ceiling", (c) => [c.initial, c.ceiling])
)

/**
 * `DeliveryRateConfig` as a type: what the `DeliveryRateConfig` schema decodes to.
 *
 * @since 0.2.0
 */
export type DeliveryRateConfig = typeof DeliveryRateConfig.Type

/**
 * The modes (BBR's STARTUP, DRAIN, PROBE_BW's up / down / cruise phases, and
 * PROBE_RTT as `probing`, the name every Sluice controller gives its probe).
 *
 * @since 0.2.0
 */
export type DeliveryRateMode = "startup" | "drain" | "probeUp" | "probeDown" | "cruise" | "probing"

/**
 * The delivery-rate core.
 *
 * **When to use**
 *
 * Instead of a latency-driven controller (AIMD, Gradient2, Vegas) when the
 * store's latency can change for reasons other than our own load — a slower
 * region, a degraded backend, bigger objects — so that a latency rise must not
 * be read as congestion: while delivered bytes per second still grow with
 * in-flight, it keeps adding uploads, whatever latency says.
 *
 * **Details**
 *
 * Floor `floor`, ceiling `ceiling`; probe: a `PinnedProbe` (PROBE_RTT, pinned
 * at `PROBE_GAIN` × in-flight ≥ `floor` for `PROBE_SAMPLES` samples and one
 * upload round; `probe: false` disables it). Reads object-upload samples for
 * the rate and every sample for the latency minimum; `Throttled` failures of
 * any stage bound in-flight.
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { DeliveryRate } from "@sluice/policies"
 * import { Schema } from "effect"
 *
 * const config = Schema.decodeUnknownSync(DeliveryRate.DeliveryRateConfig)({ ceiling: 128 })
 * const { proposals } = Policy.replay(DeliveryRate.policy, config, [])
 * // proposals: [[0, { concurrency: 8 }]]
 * ```
 *
 * @since 0.2.0
 */
export const policy: Policy.Policy<DeliveryRateConfig, DeliveryRateState, Config.Input<typeof DeliveryRateConfig>> = {
  name: "deliveryrate",
  mode: (s) => s.mode,
  config: DeliveryRateConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: (c) =>
    c.probe
      ? { _tag: "PinnedProbe", level: c.floor, samples: PROBE_SAMPLES, jitter: 0, forcedAfterWindowsAtFloor: 1 }
      : { _tag: "NoProbe", reason: "probe disabled by config (probe = false): the latency minimum never rises" },
  withoutProbe: (c) => ({ ...c, probe: false }),
  init,
  initial: (s) => ({ concurrency: s.proposed }),
  step: (s, signal, now) => {
    let next = s.round.start === -Infinity ? { ...s, round: emptyRound(now) } : s
    if (signal._tag === "UploadSample") next = onSample(next, signal, now)
    else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") next = onThrottle(next, signal, now)
    else if (signal._tag === "Inflight" && signal.medianUpload !== undefined) next = onPending(next, signal.medianUpload, now)
    next = onTime(next, now)
    const value = target(next)
    return value === s.proposed ? { state: { ...next, proposed: value } } : { state: { ...next, proposed: value }, proposal: { concurrency: value } }
  }
}

/**
 * The delivery-rate policy as a layer.
 *
 * **Details**
 *
 * `config` is typed by {@link DeliveryRateConfig}'s encoded form
 * (`Config.Input<typeof DeliveryRateConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Layer } from "effect"
 * import { DeliveryRate, SharedPressure, Throttle } from "@sluice/policies"
 *
 * const policies = Layer.mergeAll(DeliveryRate.layer({ ceiling: 128 }), Throttle.layer(), SharedPressure.layer())
 * const ablated = DeliveryRate.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.2.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof DeliveryRateConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> => Policy.layer(policy, config, options)
