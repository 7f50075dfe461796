/**
 * The gain cycle (BBR's PROBE_BW): `cruise` at a little above the BDP,
 * `probeUp` raises in-flight while the delivery rate grows with it, and
 * `probeDown` drains the queue the probe up built.
 *
 * | mode | in flight | leaves when |
 * |---|---|---|
 * | `cruise` | `CRUISE_GAIN` × BDP | `CRUISE_ROUNDS` rounds, or 2 rounds without a throttle while a throttle's bound holds → `probeUp` |
 * | `probeUp` | from `UP_GAIN` × BDP, ×`UP_GAIN` per round while the rate keeps growing (steps of +1, +2, +4, … above `inflightHi`) | the rate grew less than half the in-flight increase (the **knee**), a throttle, or the limit was not used → `probeDown` |
 * | `probeDown` | `DOWN_GAIN` × BDP | an upload starts with ≤ BDP in flight, or one round → `cruise` |
 */
import { bdp } from "./Bdp.ts"
import * as Delivery from "../Delivery.ts"
import type { SignalBus } from "@sluice/core"
import { withMode } from "./State.ts"
import type { DeliveryRateState, RoundStats } from "./State.ts"

/** In-flight in `cruise`, × BDP (BBR cruises at 1 ×). Swept to BBR's 1 on the family train set (mixed, seed 2, 200): p10 ±0, median +0.001; shipped scenarios ≤ 0.002 apart — no measured reason for 1.25 over BBR's value (docs/design/generalization.md). AdaptiveBatch's `QUEUEING` bar is defined from it. */
export const CRUISE_GAIN = 1.25
/** `probeUp`'s in-flight gain, × BDP (BBR: 1.25). Swept to BBR's 1.25 on the family train set: p10 and median ±0, every shipped scenario equal — no measured reason for 1.5 over BBR's value. */
export const UP_GAIN = 1.5
/** `probeDown`'s in-flight gain, × BDP, draining the queue `probeUp` built (BBR: 0.75). Swept to BBR's 0.75 on the family train set: p10 ±0, median −0.002; wide-throttle-storm loses 0.021 — the one shipped figure for 0.9. */
const DOWN_GAIN = 0.9
/** Rounds in `cruise` between probes up (BBR: 2–8 at random, 6 in BBRv1's cycle). Swept to 6 on the family train set: p10 and median ±0, shipped scenarios ≤ 0.002 apart — no measured reason for 4. */
const CRUISE_ROUNDS = 4
/** Rounds without a throttle after which `cruise` probes a bound throttles left (the round of the throttle and the one after it measured the old regime). */
const THROTTLE_FREE_ROUNDS = 2

/** `cruise`'s in-flight. */
export const cruiseInflight = (s: DeliveryRateState): number => (bdp(s) ?? s.startupLimit) * CRUISE_GAIN

/** `probeUp`'s in-flight: its target, at most one step above `inflightHi`. */
export const upInflight = (s: DeliveryRateState): number => Math.min(s.upTarget, s.inflightHi + s.upStep)

/** `probeDown`'s in-flight. */
export const downInflight = (s: DeliveryRateState): number => (bdp(s) ?? s.startupLimit) * DOWN_GAIN

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

/** The level reached without a throttle is known clean: a bound (`inflightHi`, `throttleHi`) rises to it. */
const raise = (s: DeliveryRateState, bound: number, reached: number): number => {
  if (bound === Infinity) return Infinity
  const hi = Math.max(bound, reached)
  return hi >= s.config.ceiling ? Infinity : hi
}

const grow = (s: DeliveryRateState, reached: number): number =>
  Math.min(s.config.ceiling, Math.max(s.upTarget * UP_GAIN, reached + s.upStep * 2))

/**
 * One round of `probeUp`. A round's rate samples measure the in-flight of the
 * round before (an upload completing now began a round ago), so the rate of
 * round k is set against the in-flight of round k − 1 (`producedBy`): while
 * it grew by at least half as much as that in-flight did, the store is below
 * its knee and in-flight rises again, by a step that doubles every round
 * (BBRv2's PROBE_UP: +1, +2, +4, …) and at least ×`UP_GAIN`.
 */
export const upRound = (s: DeliveryRateState, r: RoundStats, producedBy: number): DeliveryRateState => {
  if (r.throttled) return withMode(s, "probeDown")
  const inflightHi = raise(s, s.inflightHi, r.inflight)
  const throttleHi = raise(s, s.throttleHi, r.inflight)
  const raised = producedBy / Math.max(1, s.upBaseInflight)
  // No verdict while the rate measured has not seen the raised in-flight yet.
  if (raised <= 1 && s.phaseRounds <= 2) return { ...s, inflightHi, throttleHi, upStep: s.upStep * 2, upTarget: grow(s, r.inflight) }
  const grew = raised > 1 && r.rate / Math.max(1, s.upBaseRate) - 1 >= (raised - 1) / 2
  // The knee: the rate stopped growing with in-flight (or there was no more to send).
  if (!grew) return withMode({ ...s, inflightHi, throttleHi }, "probeDown")
  return { ...s, inflightHi, throttleHi, upStep: s.upStep * 2, upBaseRate: Math.max(r.rate, s.upBaseRate), upBaseInflight: producedBy, upTarget: grow(s, r.inflight) }
}

/** One round of `probeDown`: one round drains it. */
export const downRound = (s: DeliveryRateState): DeliveryRateState => withMode(s, "cruise")

/**
 * `probeDown` has drained what `probeUp` queued once an upload starts with no
 * more than the BDP in flight (BBR leaves PROBE_DOWN at inflight ≤ BDP):
 * holding `DOWN_GAIN` × BDP for a whole round costs a share of a round at the knee.
 */
export const downSample = (s: DeliveryRateState, sample: SignalBus.UploadSample): DeliveryRateState =>
  s.mode === "probeDown" && sample.startedAt >= s.round.start && sample.inflightAtStart <= (bdp(s) ?? 0) ? withMode(s, "cruise") : s

/**
 * One round of `cruise` (`r`: the round that ended; `before`: the one before
 * it). Without its probe the policy never probes up: it cruises at the BDP it
 * measured. A bound left by throttles is probed as soon as
 * `THROTTLE_FREE_ROUNDS` rounds pass without one.
 */
export const cruiseRound = (s: DeliveryRateState, r: RoundStats, before: RoundStats): DeliveryRateState => {
  if (!s.config.probe) return s
  return s.phaseRounds >= CRUISE_ROUNDS || (s.inflightHi < Infinity && s.phaseRounds >= THROTTLE_FREE_ROUNDS && !r.throttled && !before.throttled)
    ? toProbeUp(s)
    : s
}
