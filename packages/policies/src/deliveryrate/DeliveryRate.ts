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
 * **Modes** (BBR's state machine):
 *
 * | mode | in flight | leaves when |
 * |---|---|---|
 * | `startup` | ×`STARTUP_GAIN` per round while the limit is used | the rate grew < `FULL_RATE_GROWTH` in `FULL_RATE_ROUNDS` rounds that used the limit → `drain` |
 * | `drain` | 1 × BDP | a round's in-flight ≤ ⌈BDP⌉ (what drain proposes), or 3 rounds → `cruise` |
 * | `probeUp` | `UP_GAIN` × BDP, ×`UP_GAIN` per round while the rate keeps growing | the rate grew less than half the in-flight increase (the **knee**), a throttle, or the limit was not used → `probeDown` |
 * | `probeDown` | `DOWN_GAIN` × BDP (drains the queue `probeUp` built) | an upload starts with ≤ BDP in flight, or one round → `cruise` |
 * | `cruise` | `CRUISE_GAIN` × BDP | `CRUISE_ROUNDS` rounds → `probeUp` |
 * | `probing` | `PROBE_GAIN` × in flight (BBR's PROBE_RTT) | `PROBE_SAMPLES` samples at that level, one upload round |
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
import * as Delivery from "../internal/Delivery.ts"
import * as Latency from "../internal/Latency.ts"
import * as ThrottleEpisode from "../internal/ThrottleEpisode.ts"

/*
 * The model's constants. Each is tcp_bbr.c's (or BBRv2's) where its line says
 * so; where it differs, or BBR has none, the line says what it is for. They are
 * not config: the default composition is read and judged with these values
 * (issue 26: 15 fields of this config became these constants, their defaults
 * unchanged).
 */
/** `startup` multiplies in-flight by this per round that used the limit (BBR's STARTUP cwnd gain, 2; its pacing gain is 2/ln 2). */
const STARTUP_GAIN = 2
/** `startup` ends when the rate grew less than this share… (BBR's full-bandwidth test: 25 %) */
const FULL_RATE_GROWTH = 0.25
/** …in this many rounds that used the limit (BBR: 3). */
const FULL_RATE_ROUNDS = 3
/** Rounds of the rate's max filter (BBR's bandwidth filter: 10 rounds). */
const RATE_WINDOW_ROUNDS = 10
/** Age of the latency minimum that starts the probe (BBR's min-RTT window: 10 s). */
const MIN_LATENCY_WINDOW_MILLIS = 10_000
/** The probe drains in-flight to this share of the elevated round's (BBRv2's PROBE_RTT at 0.5 × BDP). */
const PROBE_GAIN = 0.5
/** In-flight in `cruise`, × BDP (BBR cruises at 1 ×). Swept to BBR's 1 on the family train set (mixed, seed 2, 200): p10 ±0, median +0.001; shipped scenarios ≤ 0.002 apart — no measured reason for 1.25 over BBR's value (docs/design/generalization.md). */
const CRUISE_GAIN = 1.25
/** `probeUp`'s in-flight gain, × BDP (BBR: 1.25). Swept to BBR's 1.25 on the family train set: p10 and median ±0, every shipped scenario equal — no measured reason for 1.5 over BBR's value. */
const UP_GAIN = 1.5
/** `probeDown`'s in-flight gain, × BDP, draining the queue `probeUp` built (BBR: 0.75). Swept to BBR's 0.75 on the family train set: p10 ±0, median −0.002; wide-throttle-storm loses 0.021 — the one shipped figure for 0.9. */
const DOWN_GAIN = 0.9
/** Rounds in `cruise` between probes up (BBR: 2–8 at random, 6 in BBRv1's cycle). Swept to 6 on the family train set: p10 and median ±0, shipped scenarios ≤ 0.002 apart — no measured reason for 4. */
const CRUISE_ROUNDS = 4
/** A sample within this share above the minimum confirms it (keeps it fresh: no probe for its age). Swept to 0.2 on the family train set: p10 and median ±0, every shipped scenario equal — no measured reason for 0.1. */
const CONFIRM_TOLERANCE = 0.1
/**
 * A round whose minimum is ≥ (1 + this) × `minLatency` starts the probe: twice
 * the minimum. It must exceed `UP_GAIN − 1`, the most queue an up-probe of ours
 * adds, or the probe's own queue would read as a slower store.
 */
const RISE_TOLERANCE = 1
/** Samples measured at the drained level before the probe decides (Probe's `samples` default, 8). */
const PROBE_SAMPLES = 8
/** A probe without its samples ends after this (the minimum's own window: an upload round can last seconds). */
const PROBE_TIMEOUT_MILLIS = 10_000
/** The size normalisation until `a / b` is first measured (then learned; AIMD's `referenceBytes` default). */
const REFERENCE_BYTES = 1024 * 1024

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
 * What one round (or the probe) saw, from the samples of requests that began
 * in it.
 *
 * @since 0.2.0
 */
export interface RoundStats {
  /** When the round began (ms). */
  readonly start: number
  /** Minimum normalised latency (`Infinity`: none). */
  readonly minLatency: number
  /** Size of the sample that set `minLatency` (to re-normalise it exactly). */
  readonly minBytes: number
  readonly samples: number
  /** Highest in-flight count a request of the round began at. */
  readonly inflight: number
  /** Highest rate sample that counts (limit used, or above the filter). */
  readonly rate: number
  /** Some request found the limit full: the round measured the store, not the source. */
  readonly limited: boolean
  readonly throttled: boolean
}

/**
 * The probe in progress (PROBE_RTT).
 *
 * @since 0.2.0
 */
export interface DrainProbe {
  readonly epoch: number
  /** The drained in-flight level. */
  readonly level: number
  /** The mode to return to. */
  readonly resume: DeliveryRateMode
  /** The round that started it (the elevated one, or the last round). */
  readonly before: RoundStats
  /** Samples at the drained level (began after `epoch`, at ≤ `level` in flight). */
  readonly seen: RoundStats
}

/**
 * The delivery-rate policy's state (plain data).
 *
 * @since 0.2.0
 */
export interface DeliveryRateState {
  readonly config: DeliveryRateConfig
  readonly mode: DeliveryRateMode
  readonly proposed: number
  readonly deliveries: Delivery.Deliveries
  /** Per-round maxima of the rate filter. */
  readonly rates: Delivery.RoundMaxima
  readonly round: RoundStats
  readonly lastRound: RoundStats
  readonly rounds: number
  /** Rounds since the mode began. */
  readonly phaseRounds: number
  readonly reference: Latency.Reference
  /** Minimum normalised latency (`Infinity` before the first sample); rises only through the probe. */
  readonly minLatency: number
  readonly minLatencyBytes: number
  /** When the minimum was last set or confirmed. */
  readonly minLatencyAt: number
  /** Highest in-flight a sample began at that confirmed the minimum: no queue of ours up to there. */
  readonly confirmedInflight: number
  /** Samples in a row ≥ (1 + `RISE_TOLERANCE`) × the minimum (their minimum and highest in-flight). */
  readonly risen: RoundStats
  /**
   * `a / b` of `latency ≈ a + b·bytes` (bytes), smoothed: the learned
   * reference's own means move with the queue the gain cycle builds and
   * drains (±2× at the knee), and the slot must not. It starts at the first
   * measured `a / b` (before that, `REFERENCE_BYTES`).
   */
  readonly sizeRatio: number
  /** `a / b` has been measured (bodiless requests and objects both sampled). */
  readonly ratioMeasured: boolean
  /** Mean object size (bytes, EWMA; 0 before the first). */
  readonly objectBytes: number
  /** Bodiless requests (manifest, verify) per object upload (EWMA). */
  readonly bodilessPerObject: number
  readonly bodilessSinceObject: number
  /** `startup`'s in-flight. */
  readonly startupLimit: number
  /** `startup`'s full-rate detection: the rate to beat, rounds without beating it. */
  readonly fullRate: number
  readonly fullRounds: number
  /** `probeUp`: in-flight aimed at, the rate before it and the in-flight that gave it, the step above `inflightHi`. */
  readonly upTarget: number
  readonly upBaseRate: number
  readonly upBaseInflight: number
  readonly upStep: number
  /** In-flight of the round before the last one (what the last round's rate samples measured). */
  readonly previousInflight: number
  /** Upper bound on in-flight from throttles and the knee (`Infinity`: none known). */
  readonly inflightHi: number
  readonly lastCutAt: number
  /** The throttle episode: the lowest in-flight throttled, the last throttle, the clean successes since. */
  readonly episode: ThrottleEpisode.ThrottleEpisode
  /** The in-flight before the episode's first cut: what its end restores (BBR's `prior_cwnd`). */
  readonly priorInflight: number
  /** In-flight kept at least at this after a restore, until the rate filter has measured it (0: none). */
  readonly restoreFloor: number
  readonly probe: DrainProbe | undefined
  readonly probes: number
  /** Running uploads raised the minimum (`onPending`) and no measurement has settled it since. */
  readonly pendingRaised: boolean
  /** Minimum normalised latency of every object upload (`Infinity` before one): what an upload takes unqueued. */
  readonly objectMinLatency: number
  /** The last `RECENT_UPLOADS` (64) object uploads: normalised latency and the in-flight each began at. */
  readonly recentUploads: ReadonlyArray<readonly [number, number]>
}

const emptyRound = (start: number): RoundStats => ({
  start,
  minLatency: Infinity,
  minBytes: 0,
  samples: 0,
  inflight: 0,
  rate: 0,
  limited: false,
  throttled: false
})

const clamp = (c: DeliveryRateConfig, v: number): number => Math.min(c.ceiling, Math.max(c.floor, v))

/** `sizeRatio`: EWMA weight per object upload. */
const RATIO_WEIGHT = 0.01

/**
 * The next `sizeRatio`. The EWMA starts from the first measured `a / b`, as
 * every mean here starts from its first sample: started from `REFERENCE_BYTES`
 * (1 MiB) against a store whose `a / b` is 0.3 MiB, at 1 % per object it took
 * ~100 objects to come within a factor of e, and until then the BDP was up to
 * 2.5× too small (three instances sharing a store sat at 4–6 uploads each,
 * taking 0.66–0.72 of the oracle in the first 10 s where the AIMD default took
 * 0.77–0.81).
 */
const smoothRatio = (s: DeliveryRateState): number => {
  const measured = Latency.measuredRatio(s.reference)
  if (measured !== undefined && !s.ratioMeasured) return measured
  return s.sizeRatio + RATIO_WEIGHT * ((measured ?? s.reference.bytes) - s.sizeRatio)
}

/** The smallest latency taken as measured (ms). */
const MIN_MILLIS = 0.001
/** Mean object size: EWMA weight of a new sample. */
const SIZE_WEIGHT = 0.1
/** Bodiless requests per object: EWMA weight. */
const BODILESS_WEIGHT = 0.05

/**
 * The bandwidth-delay product, in batches: the in-flight that delivers the
 * filtered rate at the minimum latency (`undefined` until both are measured).
 *
 * @since 0.2.0
 */
export const bdp = (s: DeliveryRateState): number | undefined => {
  const rate = Delivery.maxOf(s.rates, s.round.rate)
  if (!(rate > 0) || !Number.isFinite(s.minLatency) || !(s.objectBytes > 0)) return undefined
  const slotMillis = s.minLatency * (1 + s.objectBytes / Math.max(1, s.sizeRatio) + s.bodilessPerObject)
  return (rate * slotMillis) / 1000 / s.objectBytes
}

/**
 * Whether the load the probe drained queued at the store, from the last
 * uploads begun at it (above the drained level): a store that
 * queues above its knee delays every request by the same factor, uploads
 * too, while a host that is only busy moving bodies delays its small requests
 * (manifests, verifies) and not the uploads. It queued when those uploads
 * took ≥ √(1 + `RISE_TOLERANCE`) × the fastest upload seen (halfway,
 * geometrically, between no rise and the rise that started the probe); a knee
 * is read only then (BBR's knee is where the rate stops growing, and it grows
 * while uploads do not slow). Without such uploads it is assumed, as
 * before this rule. Without it, on versitygw behind toxiproxy, 16 uploads
 * whose manifests and verifies queued on the host (10 → 22 ms) while each
 * upload took 1.36 s against 1.28 s at 8 read as a knee at 7, then 4, then 2:
 * the default held 2 uploads where 5 carried the inflow (`npm run replay`,
 * knee-drop-5x, 0.475 of the measured oracle in its healthy first phase).
 */
const queuedIn = (s: DeliveryRateState, p: DrainProbe): boolean => {
  // The uploads of the load the probe drained: begun above the level it drains to.
  const elevated = Math.min(...s.recentUploads.filter(([, inflight]) => inflight > p.level).map(([latency]) => latency))
  return !Number.isFinite(elevated) || !Number.isFinite(s.objectMinLatency) || elevated >= Math.sqrt(1 + RISE_TOLERANCE) * s.objectMinLatency
}

/** Object uploads remembered for `queuedIn`: a round of uploads at the in-flight a probe drains (the default's knees: 8–64), bounded. */
const RECENT_UPLOADS = 64

/** The in-flight the mode asks for, before the bounds. */
const wanted = (s: DeliveryRateState): number => {
  const c = s.config
  const b = bdp(s)
  switch (s.mode) {
    case "startup":
      return Math.max(s.startupLimit, b === undefined ? 0 : STARTUP_GAIN * b)
    case "drain":
      return b ?? s.startupLimit
    case "cruise":
      return (b ?? s.startupLimit) * CRUISE_GAIN
    case "probeUp":
      return Math.min(s.upTarget, s.inflightHi + s.upStep)
    case "probeDown":
      return (b ?? s.startupLimit) * DOWN_GAIN
    case "probing":
      return s.probe?.level ?? c.floor
  }
}

/**
 * The concurrency the state proposes: the mode's in-flight, ≤ `inflightHi`
 * (except the step `probeUp` probes above it), within `[floor, ceiling]`.
 *
 * @since 0.2.0
 */
export const target = (s: DeliveryRateState): number => {
  const hi = s.mode === "probeUp" ? Infinity : s.inflightHi
  const restored = s.mode === "probing" ? 0 : s.restoreFloor
  return clamp(s.config, Math.ceil(Math.min(Math.max(wanted(s), restored), hi) - 1e-9))
}

const withMode = (s: DeliveryRateState, mode: DeliveryRateMode): DeliveryRateState =>
  mode === s.mode ? s : { ...s, mode, phaseRounds: 0 }

const toProbeUp = (s: DeliveryRateState): DeliveryRateState => {
  const b = bdp(s) ?? s.proposed
  return {
    ...withMode(s, "probeUp"),
    upTarget: Math.max(b * UP_GAIN, s.proposed + 1),
    // The last round's rate, or the filter's when that round counted none (never 0: everything beats 0).
    upBaseRate: s.lastRound.rate > 0 ? s.lastRound.rate : Delivery.maxOf(s.rates, 0),
    upBaseInflight: s.previousInflight,
    upStep: 1
  }
}

/** The level reached without a throttle is known clean: `inflightHi` rises to it. */
const raiseHi = (s: DeliveryRateState, reached: number): number => {
  if (s.inflightHi === Infinity) return Infinity
  const hi = Math.max(s.inflightHi, reached)
  return hi >= s.config.ceiling ? Infinity : hi
}

const startupRound = (s: DeliveryRateState, r: RoundStats): DeliveryRateState => {
  const c = s.config
  // A round that did not use the limit measured the source, not the store (BBR skips app-limited rounds).
  if (!r.limited) return s
  const growing = r.rate >= s.fullRate * (1 + FULL_RATE_GROWTH)
  const next = growing ? { ...s, fullRate: r.rate, fullRounds: 0 } : { ...s, fullRounds: s.fullRounds + 1 }
  if (next.fullRounds >= FULL_RATE_ROUNDS) return withMode(next, "drain")
  return { ...next, startupLimit: Math.min(c.ceiling, s.startupLimit * STARTUP_GAIN) }
}

/**
 * One round of `probeUp`. A round's rate samples measure the in-flight of the
 * round before (an upload completing now began a round ago), so the rate of
 * round k is set against the in-flight of round k − 1: while it grew by at
 * least half as much as that in-flight did, the store is below its knee and
 * in-flight rises again, by a step that doubles every round (BBRv2's
 * PROBE_UP: +1, +2, +4, …) and at least ×`UP_GAIN`.
 */
const upRound = (s: DeliveryRateState, r: RoundStats, producedBy: number): DeliveryRateState => {
  if (r.throttled) return withMode(s, "probeDown")
  const inflightHi = raiseHi(s, r.inflight)
  const raised = producedBy / Math.max(1, s.upBaseInflight)
  // No verdict while the rate measured has not seen the raised in-flight yet.
  if (raised <= 1 && s.phaseRounds <= 2) return { ...s, inflightHi, upStep: s.upStep * 2, upTarget: grow(s, r.inflight) }
  const grew = raised > 1 && r.rate / Math.max(1, s.upBaseRate) - 1 >= (raised - 1) / 2
  // The knee: the rate stopped growing with in-flight (or there was no more to send).
  if (!grew) return withMode({ ...s, inflightHi }, "probeDown")
  return { ...s, inflightHi, upStep: s.upStep * 2, upBaseRate: Math.max(r.rate, s.upBaseRate), upBaseInflight: producedBy, upTarget: grow(s, r.inflight) }
}

const grow = (s: DeliveryRateState, reached: number): number =>
  Math.min(s.config.ceiling, Math.max(s.upTarget * UP_GAIN, reached + s.upStep * 2))

const beginProbe = (s: DeliveryRateState, now: number, before: RoundStats): DeliveryRateState => ({
  ...withMode(s, "probing"),
  probes: s.probes + 1,
  probe: {
    epoch: now,
    level: Math.max(s.config.floor, Math.floor(PROBE_GAIN * Math.max(before.inflight, 1))),
    resume: s.mode === "startup" ? "startup" : "cruise",
    before,
    seen: emptyRound(now)
  }
})

/**
 * Ends the probe. With the store's latency `L0 · max(1, inflight / knee)`,
 * two measurements — the elevated one at `X` in flight and the drained one at
 * `Y` — tell the cases apart:
 *
 * - drained latency back near the minimum: the elevation was our own queue;
 *   the store queues from `knee ≈ X · min / elevated`;
 * - latency fell as much as in-flight did (both queued): the knee is below
 *   `Y`, `≈ Y · min / drained`, and the minimum stands;
 * - it fell less (the drained level is below the knee): the store is slower,
 *   its minimum is the drained latency, and the knee is `≈ X · drained / elevated`
 *   (`X` if latency did not fall at all);
 *
 * `inflightHi` takes the knee (never raised here).
 */
/**
 * `inflightHi` once the store itself got slower (the minimum rose without a
 * queue of ours to explain it). A bound set by throttles stays: a store
 * throttles above a request count, whatever its latency. A knee does not: it
 * is `inflight × minLatency / latency` measured at the old minimum, and at the
 * new one the same store capacity holds more requests in flight (Little's
 * law). Kept, it capped the default at 6–9 uploads through a real 10×
 * slowdown that needed ~45 (versitygw behind toxiproxy, `npm run replay`),
 * a knee its probe had read at 7 from 16 uploads in the fast phase.
 */
const hiAfterSlowdown = (s: DeliveryRateState): number => (ThrottleEpisode.active(s.episode) ? s.inflightHi : Infinity)

const endProbe = (s: DeliveryRateState, now: number): DeliveryRateState => {
  const p = s.probe
  const c = s.config
  const resumed: DeliveryRateState = { ...withMode(s, p?.resume ?? "cruise"), probe: undefined, minLatencyAt: now, round: emptyRound(now) }
  if (p === undefined || !Number.isFinite(p.seen.minLatency)) return resumed
  const seen = p.seen
  const before = p.before
  const bounded = (knee: number) => Math.min(s.inflightHi, Math.max(c.floor, knee))
  if (seen.minLatency < (1 + RISE_TOLERANCE) * s.minLatency) {
    const elevated = before.minLatency >= (1 + RISE_TOLERANCE) * s.minLatency && queuedIn(s, p)
    // The drained level was measured unqueued: the knee is not below it. The
    // formula assumes every request slows in proportion to the load above the
    // knee; behind a queue in arrival order (a worker pool, the replay's store
    // proxy) a small request waits for an upload ahead of it to finish, and
    // its latency measures the uploads, not the load: 40 in flight over a knee
    // of 32 read 40 × 43 / 1452 = 1.2 (`npm run replay`, knee-drop-5x).
    const knee = elevated ? Math.max(seen.inflight, (before.inflight * s.minLatency) / before.minLatency) : Infinity
    return {
      ...resumed,
      minLatency: seen.minLatency,
      minLatencyBytes: seen.minBytes,
      confirmedInflight: Math.min(seen.inflight, knee),
      inflightHi: bounded(knee)
    }
  }
  const drained = seen.inflight / Math.max(1, before.inflight)
  const fell = seen.minLatency / Math.max(MIN_MILLIS, before.minLatency)
  if (drained <= 0.8 && fell <= drained * 1.15) {
    const knee = queuedIn(s, p) ? (seen.inflight * s.minLatency) / seen.minLatency : Infinity
    return { ...resumed, inflightHi: bounded(knee), confirmedInflight: Math.min(s.confirmedInflight, knee) }
  }
  // The store itself got slower: a knee found in the old regime no longer holds.
  const knee = drained <= 0.8 && fell <= 0.9 ? before.inflight * fell : Infinity
  return { ...resumed, minLatency: seen.minLatency, minLatencyBytes: seen.minBytes, confirmedInflight: seen.inflight, inflightHi: Math.min(hiAfterSlowdown(s), Math.max(c.floor, knee)) }
}

const endRound = (s: DeliveryRateState, now: number): DeliveryRateState => {
  const c = s.config
  const r = s.round
  const rates = r.rate > 0 ? Delivery.pushRound(s.rates, r.rate, RATE_WINDOW_ROUNDS) : s.rates
  const caught = s.restoreFloor > 0 && (bdp({ ...s, rates }) ?? 0) >= s.restoreFloor
  const next: DeliveryRateState = {
    ...s,
    restoreFloor: caught ? 0 : s.restoreFloor,
    rates,
    round: emptyRound(now),
    lastRound: r,
    previousInflight: s.lastRound.inflight,
    rounds: s.rounds + 1,
    phaseRounds: s.phaseRounds + 1
  }
  if (s.mode === "probing") return next
  switch (s.mode) {
    case "startup":
      return startupRound(next, r)
    case "drain":
      // Drained once a round ran at no more than the in-flight drain asks for
      // (BBR: inflight ≤ BDP; uploads are whole, so ≤ ⌈BDP⌉ — against the
      // fractional BDP itself, a round at ⌈BDP⌉ never qualified, and the rate
      // the filter forgot shrank the BDP with it: one of three instances
      // sharing a store sat in drain at 3 uploads for 70 s), or after
      // `DRAIN_ROUNDS` rounds whatever the in-flight.
      return r.inflight <= target(next) || next.phaseRounds >= DRAIN_ROUNDS ? withMode(next, "cruise") : next
    case "probeUp":
      return upRound(next, r, s.lastRound.inflight)
    case "probeDown":
      return withMode(next, "cruise")
    case "cruise":
      // Without its probe the policy never probes up: it cruises at the BDP it measured.
      if (!c.probe) return next
      // A bound left by throttles is probed as soon as two rounds pass without one.
      return next.phaseRounds >= CRUISE_ROUNDS || (next.inflightHi < Infinity && next.phaseRounds >= 2 && !r.throttled && !s.lastRound.throttled)
        ? toProbeUp(next)
        : next
  }
}

/** Re-normalises what was measured with the old reference, each exactly for its own size. */
const learn = (s: DeliveryRateState, sample: SignalBus.UploadSample): DeliveryRateState => {
  const reference = Latency.learnReference(s.reference, sample)
  const from = s.reference.bytes
  const to = reference.bytes
  if (to === from) return { ...s, reference }
  const round = (r: RoundStats): RoundStats => ({ ...r, minLatency: r.minLatency * Latency.rescaleFactor(r.minBytes, from, to) })
  return {
    ...s,
    reference,
    minLatency: s.minLatency * Latency.rescaleFactor(s.minLatencyBytes, from, to),
    round: round(s.round),
    lastRound: round(s.lastRound),
    probe: s.probe === undefined ? undefined : { ...s.probe, before: round(s.probe.before), seen: round(s.probe.seen) }
  }
}

const observe = (r: RoundStats, sample: SignalBus.UploadSample, value: number): RoundStats => ({
  ...r,
  minLatency: Math.min(r.minLatency, value),
  minBytes: value < r.minLatency ? sample.bytes : r.minBytes,
  samples: r.samples + 1,
  inflight: Math.max(r.inflight, sample.inflightAtStart),
  limited: r.limited || sample.inflightAtStart >= sample.limitAtStart
})

/**
 * The latency minimum, sample by sample. It moves down at once (a drop by
 * more than `RISE_TOLERANCE`: the store got faster, so the rate the filter
 * holds is stale — back to `startup` to find the new one); samples near it
 * keep it fresh. `PROBE_SAMPLES` samples in a row well above it mean the store
 * got slower or we queue: when they began with no more in flight than
 * samples that confirmed the minimum, it cannot be our queue and the new
 * minimum is taken at once (the drain the probe would do is already done);
 * otherwise the probe drains to find out.
 */
/** A sample that does not measure latency still tells the round's load. */
const observeLoad = (r: RoundStats, sample: SignalBus.UploadSample): RoundStats => ({
  ...r,
  inflight: Math.max(r.inflight, sample.inflightAtStart),
  limited: r.limited || sample.inflightAtStart >= sample.limitAtStart
})

const onLatency = (s0: DeliveryRateState, sample: SignalBus.UploadSample, value: number, now: number): DeliveryRateState => {
  const c = s0.config
  const s = s0.pendingRaised ? { ...s0, pendingRaised: false } : s0
  const fresh = { ...s, risen: emptyRound(now) }
  // The first measurement after running uploads raised the minimum (to a
  // lower bound: their age) measures the slower store itself, as the probe's
  // drained measurement would: above that bound it is the new minimum (below,
  // the usual rule lowers it).
  if (s0.pendingRaised && value >= s.minLatency) {
    return { ...fresh, minLatency: value, minLatencyBytes: sample.bytes, minLatencyAt: now, confirmedInflight: sample.inflightAtStart }
  }
  if (value < s.minLatency) {
    const faster = Number.isFinite(s.minLatency) && value * (1 + RISE_TOLERANCE) <= s.minLatency && s.mode !== "probing"
    const next = { ...fresh, minLatency: value, minLatencyBytes: sample.bytes, minLatencyAt: now, confirmedInflight: sample.inflightAtStart }
    return faster ? { ...withMode(next, "startup"), startupLimit: s.proposed, fullRate: 0, fullRounds: 0 } : next
  }
  if (value <= s.minLatency * (1 + CONFIRM_TOLERANCE)) {
    return { ...fresh, minLatencyAt: now, confirmedInflight: Math.max(s.confirmedInflight, sample.inflightAtStart) }
  }
  if (!c.probe || s.mode === "probing" || value < s.minLatency * (1 + RISE_TOLERANCE)) return fresh
  const risen = observe(s.risen, sample, value)
  if (risen.samples < PROBE_SAMPLES) return { ...s, risen }
  // Taken at once only when no queue could explain it: in-flight did not grow,
  // and latency is ≥ (1 + RISE_TOLERANCE)² × the minimum (an up-probe, or
  // another instance's, queues far less).
  const far = risen.minLatency >= s.minLatency * (1 + RISE_TOLERANCE) ** 2
  if (risen.inflight <= s.confirmedInflight && far) {
    return { ...fresh, minLatency: risen.minLatency, minLatencyBytes: risen.minBytes, minLatencyAt: now, confirmedInflight: risen.inflight, inflightHi: hiAfterSlowdown(s) }
  }
  // Otherwise the probe drains to tell — when the limit bound the elevated
  // requests. While it did not, the pipeline was app-limited: its in-flight is
  // the inflow × the latency (Little's law), so in-flight grows *because* the
  // store got slower, and a drain to half of it halves the uploads the slower
  // store needs for a round of that store (BBR likewise lets no app-limited
  // sample lower its bandwidth estimate; startup skips such rounds too). A
  // queue of ours that is real fills the limit, and its rise is tested then
  // (so does the minimum's age: `onTime`). What it buys (this rule with
  // `onTime`'s, against neither): on the family test set (mixed, seed 3, 200)
  // worst phase ≥ 0.8 in 0.870 → 0.890 of scenarios, p10 0.740 → 0.769,
  // median 0.972 → 0.974, max-lag p90 17.9 s both (train, seed 2: p10 0.732 →
  // 0.785); flapping stores most (a 6 s slow phase drained for 4 s: 0.28 →
  // 0.75). Shipped scenarios: trap-throttle-floor −0.017, the rest ≤ 0.001.
  return risen.limited ? beginProbe(fresh, now, risen) : fresh
}

const onSample = (s0: DeliveryRateState, sample: SignalBus.UploadSample, now: number): DeliveryRateState => {
  let s = learn(s0, sample)
  // A zero latency (an in-memory sink on a virtual clock) would make every ratio 0/0.
  const value = Math.max(MIN_MILLIS, Latency.normalised(sample, s.reference.bytes))
  const object = sample.stage === "object_upload" && sample.bytes > 0
  // The minimum is measured on bodiless requests (manifest, verify): their
  // latency is the store's per-request time, whatever the object sizes, and
  // cannot drift with the learned size normalisation (objects' normalised
  // latency moved ±25 % with it, and read as a queue). Object uploads stand
  // in while there are none.
  const measures = !object || s.bodilessPerObject < 0.25
  if (measures) s = onLatency(s, sample, value, now)
  if (sample.startedAt >= s.round.start) s = { ...s, round: measures ? observe(s.round, sample, value) : observeLoad(s.round, sample) }
  const p = s.probe
  if (measures && p !== undefined && sample.startedAt >= p.epoch && sample.inflightAtStart <= p.level) {
    const seen = observe(p.seen, sample, value)
    s = seen.samples >= PROBE_SAMPLES ? endProbe({ ...s, probe: { ...p, seen } }, now) : { ...s, probe: { ...p, seen } }
  }
  if (!object) return { ...s, bodilessSinceObject: s.bodilessSinceObject + 1 }
  s = {
    ...s,
    objectMinLatency: Math.min(s.objectMinLatency, value),
    recentUploads: [...s.recentUploads.slice(s.recentUploads.length >= RECENT_UPLOADS ? 1 : 0), [value, sample.inflightAtStart] as const]
  }
  s = clearedAbove(s, sample)
  const { deliveries, rate } = Delivery.complete(s.deliveries, sample.startedAt, now, sample.bytes)
  const limited = sample.inflightAtStart >= sample.limitAtStart
  const counts = limited || rate > Delivery.maxOf(s.rates, s.round.rate)
  s = {
    ...s,
    deliveries,
    round: counts ? { ...s.round, rate: Math.max(s.round.rate, rate) } : s.round,
    objectBytes: s.objectBytes === 0 ? sample.bytes : s.objectBytes + SIZE_WEIGHT * (sample.bytes - s.objectBytes),
    sizeRatio: smoothRatio(s),
    ratioMeasured: s.ratioMeasured || Latency.measuredRatio(s.reference) !== undefined,
    bodilessPerObject: s.bodilessPerObject + BODILESS_WEIGHT * (s.bodilessSinceObject - s.bodilessPerObject),
    bodilessSinceObject: 0
  }
  // `probeDown` has drained what `probeUp` queued once an upload starts with
  // no more than the BDP in flight (BBR leaves PROBE_DOWN at inflight ≤ BDP):
  // holding 0.75 × BDP for a whole round costs a quarter of a round at the knee.
  if (s.mode === "probeDown" && sample.startedAt >= s.round.start && sample.inflightAtStart <= (bdp(s) ?? 0)) {
    s = withMode(s, "cruise")
  }
  return sample.startedAt >= s.round.start && s.mode !== "probing" ? endRound(s, now) : s
}

const onThrottle = (s: DeliveryRateState, f: SignalBus.FailureSignal, now: number): DeliveryRateState => {
  const c = s.config
  const counted = {
    ...s,
    round: { ...s.round, throttled: true },
    episode: ThrottleEpisode.throttled(s.episode, c.floor, f.inflightAtStart, now)
  }
  // One cut per round: a request that began before the last cut, or with more
  // in flight than the cut allows, measured the old regime.
  if (f.startedAt < s.lastCutAt || (s.lastCutAt > -Infinity && f.inflightAtStart > s.proposed)) return counted
  const from = Math.min(s.proposed, Math.max(c.floor, f.inflightAtStart))
  const inflightHi = Math.max(c.floor, from * c.throttleBeta)
  const mode = s.mode === "startup" ? "drain" : s.mode === "probeUp" ? "probeDown" : s.mode
  const priorInflight = ThrottleEpisode.active(s.episode) ? s.priorInflight : Math.max(s.round.inflight, s.lastRound.inflight)
  return { ...withMode(counted, mode), inflightHi, lastCutAt: now, priorInflight, restoreFloor: 0 }
}

/**
 * The throttle episode is over — it has cleared (`ThrottleEpisode.cleared`:
 * `CLEAR_SAMPLES` requests in a row, begun after the last throttle with more
 * in flight than the lowest level throttled, succeeded), and neither this
 * round nor the last saw a throttle: the bound the episode set is lifted and in-flight goes
 * straight back to what it was before the episode (BBR restores the
 * congestion window it had before loss recovery, `prior_cwnd`), held there
 * until the rate filter has measured it (it may have forgotten it during a
 * long storm).
 */
const clearedAbove = (s: DeliveryRateState, sample: SignalBus.UploadSample): DeliveryRateState => {
  const episode = ThrottleEpisode.succeeded(s.episode, sample.startedAt, sample.inflightAtStart)
  // Only a success that counts can end the episode.
  if (episode === s.episode) return s
  // …and a whole round without a throttle: in a storm that throttles half the
  // requests above its level, three successes in a row happen by chance, and
  // a restore mid-storm bursts into it (seed 21 of the storm proof: 17 in flight).
  if (!ThrottleEpisode.cleared(episode) || s.round.throttled || s.lastRound.throttled) return { ...s, episode }
  return { ...s, episode: ThrottleEpisode.end(episode), inflightHi: Infinity, restoreFloor: s.priorInflight }
}

/** Rounds `drain` lasts at most (BBR drains in about one). */
const DRAIN_ROUNDS = 3

/**
 * A store that got slower, seen before its first slow upload completes: half
 * the object uploads running have run, size-normalised, ≥ (1 +
 * `RISE_TOLERANCE`)² × the minimum (the bar a risen minimum is taken at without
 * the probe), and ≥ (1 + `RISE_TOLERANCE`) × the in-flight they began at ÷ the
 * in-flight that confirmed the minimum (the most a queue of ours could add).
 * The median's age is a lower bound on the store's new latency and becomes the
 * minimum: the BDP grows with it, as it would once those uploads completed,
 * seconds later (a 20× slower store: 5.8 s for 18 MiB).
 */
const onPending = (s: DeliveryRateState, median: SignalBus.RunningUpload, now: number): DeliveryRateState => {
  const c = s.config
  if (!c.probe || !c.pending || s.probe !== undefined || !Number.isFinite(s.minLatency)) return s
  const value = Latency.normalised({ latencyMillis: now - median.startedAt, bytes: median.bytes }, s.reference.bytes)
  // Our own queue raises latency at most in proportion to the in-flight
  // beyond what was confirmed unqueued.
  const grown = median.inflightAtStart / Math.max(1, s.confirmedInflight)
  if (value < s.minLatency * (1 + RISE_TOLERANCE) * Math.max(1 + RISE_TOLERANCE, grown)) return s
  // The gain cycle's up and down phases aim at in-flight fixed when they began: cruise sizes from the new BDP at once.
  const mode = s.mode === "probeUp" || s.mode === "probeDown" ? "cruise" : s.mode
  return { ...withMode(s, mode), minLatency: value, minLatencyBytes: median.bytes, minLatencyAt: now, confirmedInflight: median.inflightAtStart, risen: emptyRound(now), pendingRaised: true, inflightHi: hiAfterSlowdown(s) }
}

/** The probe is due: the minimum went stale while uploads ran into the limit, or the probe ran out of time. */
const onTime = (s: DeliveryRateState, now: number): DeliveryRateState => {
  const c = s.config
  if (s.probe !== undefined) return now - s.probe.epoch >= PROBE_TIMEOUT_MILLIS ? endProbe(s, now) : s
  const stale = Number.isFinite(s.minLatency) && now - s.minLatencyAt >= MIN_LATENCY_WINDOW_MILLIS
  const active = s.lastRound.samples > 0 && now - s.lastRound.start < MIN_LATENCY_WINDOW_MILLIS
  // …and the last round found the limit full: an app-limited pipeline's
  // minimum is not what sizes its in-flight (see `onLatency`).
  return c.probe && stale && active && s.lastRound.limited ? beginProbe(s, now, s.lastRound) : s
}

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
  init: (config) => ({
    config,
    mode: "startup",
    proposed: config.initial,
    deliveries: Delivery.emptyDeliveries,
    rates: [],
    round: emptyRound(-Infinity),
    lastRound: emptyRound(-Infinity),
    rounds: 0,
    phaseRounds: 0,
    reference: Latency.initReference(REFERENCE_BYTES),
    minLatency: Infinity,
    minLatencyBytes: 0,
    minLatencyAt: -Infinity,
    confirmedInflight: 0,
    risen: emptyRound(-Infinity),
    sizeRatio: REFERENCE_BYTES,
    ratioMeasured: false,
    objectBytes: 0,
    bodilessPerObject: 2,
    bodilessSinceObject: 0,
    startupLimit: config.initial,
    fullRate: 0,
    fullRounds: 0,
    upTarget: config.initial,
    upBaseRate: 0,
    upBaseInflight: 0,
    upStep: 1,
    previousInflight: 0,
    inflightHi: Infinity,
    lastCutAt: -Infinity,
    episode: ThrottleEpisode.none,
    priorInflight: 0,
    restoreFloor: 0,
    probe: undefined,
    probes: 0,
    pendingRaised: false,
    objectMinLatency: Infinity,
    recentUploads: []
  }),
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
