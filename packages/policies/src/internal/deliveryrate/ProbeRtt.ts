/**
 * `probing` (BBR's PROBE_RTT): drain in-flight to `PROBE_GAIN` of the round
 * that started the probe and measure the latency again, to tell our own queue
 * from a store that got slower.
 *
 * | mode | in flight | leaves when |
 * |---|---|---|
 * | `probing` | `PROBE_GAIN` × the in-flight of the round that started it (≥ floor) | `PROBE_SAMPLES` samples begun at that level after it began, or `PROBE_TIMEOUT_MILLIS` → the mode it left (`startup` stays `startup`, the rest `cruise`) |
 *
 * It starts when the minimum is older than `MIN_LATENCY_WINDOW_MILLIS` or a
 * run of samples rose to (1 + `RISE_TOLERANCE`) × it (`MinLatency.ts`), and in
 * both cases only once a request found the limit full.
 */
import { withMode, emptyRound, observe, MIN_MILLIS } from "./State.ts"
import type { DeliveryRateState, DrainProbe, RoundStats } from "./State.ts"
import type { SignalBus } from "@sluice/core"
import * as ThrottleEpisode from "../ThrottleEpisode.ts"

/** Age of the latency minimum that starts the probe (BBR's min-RTT window: 10 s). */
const MIN_LATENCY_WINDOW_MILLIS = 10_000
/** The probe drains in-flight to this share of the elevated round's (BBRv2's PROBE_RTT at 0.5 × BDP). */
const PROBE_GAIN = 0.5
/**
 * A round whose minimum is ≥ (1 + this) × `minLatency` starts the probe: twice
 * the minimum. It must exceed `UP_GAIN − 1` (`ProbeBw.ts`: 0.5), the most queue
 * an up-probe of ours adds, or the probe's own queue would read as a slower store.
 */
export const RISE_TOLERANCE = 1
/** Samples measured at the drained level before the probe decides (Probe's `samples` default, 8). */
export const PROBE_SAMPLES = 8
/** A probe without its samples ends after this (the minimum's own window: an upload round can last seconds). */
const PROBE_TIMEOUT_MILLIS = 10_000
/** Object uploads remembered for `queuedIn`: a round of uploads at the in-flight a probe drains (the default's knees: 8–64), bounded. */
export const RECENT_UPLOADS = 64
/*
 * The probe's verdicts (`endProbe`). No measurement chose these three values
 * and none is recorded; the ablation of the probe as a whole is what the probe
 * is judged by (docs/design/generalization.md).
 */
/** A probe tells a knee only when it drained in-flight to at most this share of the elevated round's… */
const DRAINED_SHARE = 0.8
/** …and latency fell as much as in-flight did, within this slack (both queued: the knee is below the drained level)… */
const FELL_WITH_SLACK = 1.15
/** …or latency fell to at most this share of the elevated round's without falling as much (the store is slower and queued too: a knee from the elevated round). */
const FELL_SOME = 0.9

/** `probing`'s in-flight: the drained level. */
export const probeInflight = (s: DeliveryRateState): number => s.probe?.level ?? s.config.floor

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

/**
 * `inflightHi` once the store itself got slower (the minimum rose without a
 * queue of ours to explain it). A bound set by throttles stays: a store
 * throttles above a request count, whatever its latency. A knee does not: it
 * is `inflight × minLatency / latency` measured at the old minimum, and at the
 * new one the same store capacity holds more requests in flight (Little's
 * law). Kept, it capped the default at 6–9 uploads through a real 10×
 * slowdown that needed ~45 (versitygw behind toxiproxy, `npm run replay`),
 * a knee its probe had read at 7 from 16 uploads in the fast phase.
 *
 * During a throttle episode the bound that stays is the throttles' own
 * (`throttleHi`), not `inflightHi`, which a knee read since may have lowered.
 * Kept whole, a knee read at 4.6 in the old regime (a slowdown just at the
 * probe's 2× bar, drained latency 1.99× the minimum) held 5 uploads for 20 s
 * where the slower store needed 9 (family train `mixed-2-17`: worst phase
 * 0.653 → 0.791). What it buys: family train (mixed, seed 2) p10 0.906 →
 * 0.910; test (seed 3) 0.890 → 0.891, share ≥ 0.8 equal (0.960); the second
 * test set (seed 5) 0.887 → 0.896, share 0.960 → 0.970; shipped scenarios equal.
 */
export const hiAfterSlowdown = (s: DeliveryRateState): number => (ThrottleEpisode.active(s.episode) ? s.throttleHi : Infinity)

/** Starts the probe, `before` being the round (or the run of risen samples) it tests. */
export const beginProbe = (s: DeliveryRateState, now: number, before: RoundStats): DeliveryRateState => ({
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
export const endProbe = (s: DeliveryRateState, now: number): DeliveryRateState => {
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
  if (drained <= DRAINED_SHARE && fell <= drained * FELL_WITH_SLACK) {
    const knee = queuedIn(s, p) ? (seen.inflight * s.minLatency) / seen.minLatency : Infinity
    return { ...resumed, inflightHi: bounded(knee), confirmedInflight: Math.min(s.confirmedInflight, knee) }
  }
  // The store itself got slower: a knee found in the old regime no longer holds.
  const knee = drained <= DRAINED_SHARE && fell <= FELL_SOME ? before.inflight * fell : Infinity
  return { ...resumed, minLatency: seen.minLatency, minLatencyBytes: seen.minBytes, confirmedInflight: seen.inflight, inflightHi: Math.min(hiAfterSlowdown(s), Math.max(c.floor, knee)) }
}

/** A latency sample (`value`, normalised) counted by the probe when it began at the drained level after the probe began; the probe ends at `PROBE_SAMPLES`. */
export const probeSample = (s: DeliveryRateState, sample: SignalBus.UploadSample, value: number, now: number): DeliveryRateState => {
  const p = s.probe
  if (p === undefined || sample.startedAt < p.epoch || sample.inflightAtStart > p.level) return s
  const seen = observe(p.seen, sample, value)
  return seen.samples >= PROBE_SAMPLES ? endProbe({ ...s, probe: { ...p, seen } }, now) : { ...s, probe: { ...p, seen } }
}

/** The probe is due: the minimum went stale while uploads ran into the limit, or the probe ran out of time. */
export const onTime = (s: DeliveryRateState, now: number): DeliveryRateState => {
  const c = s.config
  if (s.probe !== undefined) return now - s.probe.epoch >= PROBE_TIMEOUT_MILLIS ? endProbe(s, now) : s
  const stale = Number.isFinite(s.minLatency) && now - s.minLatencyAt >= MIN_LATENCY_WINDOW_MILLIS
  const active = s.lastRound.samples > 0 && now - s.lastRound.start < MIN_LATENCY_WINDOW_MILLIS
  // …and the last round found the limit full: an app-limited pipeline's
  // minimum is not what sizes its in-flight (see `MinLatency.onLatency`).
  return c.probe && stale && active && s.lastRound.limited ? beginProbe(s, now, s.lastRound) : s
}
