/**
 * The latency minimum, sample by sample, and from the uploads still running.
 * It moves down at once (a drop by more than `RISE_TOLERANCE`: the store got
 * faster, so the rate the filter holds is stale — back to `startup` to find
 * the new one); samples near it keep it fresh. `PROBE_SAMPLES` samples in a
 * row well above it mean the store got slower or we queue: when they began
 * with no more in flight than samples that confirmed the minimum, it cannot be
 * our queue and the new minimum is taken at once (the drain the probe would do
 * is already done); otherwise the probe drains to find out (`ProbeRtt.ts`).
 */
import type { SignalBus } from "@sluice/core"
import * as Latency from "../Latency.ts"
import { beginProbe, hiAfterSlowdown, PROBE_SAMPLES, RISE_TOLERANCE } from "./ProbeRtt.ts"
import { restart } from "./Startup.ts"
import { emptyRound, observe, withMode } from "./State.ts"
import type { DeliveryRateState } from "./State.ts"

/** A sample within this share above the minimum confirms it (keeps it fresh: no probe for its age). Swept to 0.2 on the family train set: p10 and median ±0, every shipped scenario equal — no measured reason for 0.1. */
const CONFIRM_TOLERANCE = 0.1

/** One latency sample (`value`, size-normalised). */
export const onLatency = (s0: DeliveryRateState, sample: SignalBus.UploadSample, value: number, now: number): DeliveryRateState => {
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
    return faster ? restart(next) : next
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
  // (so does the minimum's age: `ProbeRtt.onTime`). What it buys (this rule with
  // `onTime`'s, against neither): on the family test set (mixed, seed 3, 200)
  // worst phase ≥ 0.8 in 0.870 → 0.890 of scenarios, p10 0.740 → 0.769,
  // median 0.972 → 0.974, max-lag p90 17.9 s both (train, seed 2: p10 0.732 →
  // 0.785); flapping stores most (a 6 s slow phase drained for 4 s: 0.28 →
  // 0.75). Shipped scenarios: trap-throttle-floor −0.017, the rest ≤ 0.001.
  return risen.limited ? beginProbe(fresh, now, risen) : fresh
}

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
export const onPending = (s: DeliveryRateState, median: SignalBus.RunningUpload, now: number): DeliveryRateState => {
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
