/**
 * `startup` and `drain` (BBR's STARTUP and DRAIN): in-flight doubles every
 * round that used the limit until the delivery rate stops growing, then
 * drains the queue startup built down to one BDP.
 *
 * | mode | in flight | leaves when |
 * |---|---|---|
 * | `startup` | ×`STARTUP_GAIN` per round that used the limit (≥ `STARTUP_GAIN` × BDP) | the rate grew < `FULL_RATE_GROWTH` in `FULL_RATE_ROUNDS` rounds that used the limit, or a throttle → `drain` |
 * | `drain` | 1 × BDP | a round ran at ≤ the in-flight drain proposes, or `DRAIN_ROUNDS` rounds → `cruise` |
 */
import { bdp } from "./Bdp.ts"
import { withMode } from "./State.ts"
import type { DeliveryRateState, RoundStats } from "./State.ts"

/** `startup` multiplies in-flight by this per round that used the limit (BBR's STARTUP cwnd gain, 2; its pacing gain is 2/ln 2). */
export const STARTUP_GAIN = 2
/** `startup` ends when the rate grew less than this share… (BBR's full-bandwidth test: 25 %) */
const FULL_RATE_GROWTH = 0.25
/** …in this many rounds that used the limit (BBR: 3). */
const FULL_RATE_ROUNDS = 3
/** Rounds `drain` lasts at most (BBR drains in about one). */
const DRAIN_ROUNDS = 3

/** `startup`'s in-flight: its doubling limit, or `STARTUP_GAIN` × BDP once that is more. */
export const startupInflight = (s: DeliveryRateState): number => {
  const b = bdp(s)
  return Math.max(s.startupLimit, b === undefined ? 0 : STARTUP_GAIN * b)
}

/** `drain`'s in-flight: one BDP (startup's limit until the BDP is measured). */
export const drainInflight = (s: DeliveryRateState): number => bdp(s) ?? s.startupLimit

/** Back to `startup` from the in-flight proposed now: the store got faster and the rate the filter holds is stale. */
export const restart = (s: DeliveryRateState): DeliveryRateState => ({ ...withMode(s, "startup"), startupLimit: s.proposed, fullRate: 0, fullRounds: 0 })

/** One round of `startup`. */
export const startupRound = (s: DeliveryRateState, r: RoundStats): DeliveryRateState => {
  const c = s.config
  // A round that did not use the limit measured the source, not the store (BBR skips app-limited rounds).
  if (!r.limited) return s
  const growing = r.rate >= s.fullRate * (1 + FULL_RATE_GROWTH)
  const next = growing ? { ...s, fullRate: r.rate, fullRounds: 0 } : { ...s, fullRounds: s.fullRounds + 1 }
  if (next.fullRounds >= FULL_RATE_ROUNDS) return withMode(next, "drain")
  return { ...next, startupLimit: Math.min(c.ceiling, s.startupLimit * STARTUP_GAIN) }
}

/**
 * One round of `drain`, given what drain proposes now (`proposed`, after the
 * bounds). Drained once a round ran at no more than that (BBR: inflight ≤ BDP;
 * uploads are whole, so ≤ ⌈BDP⌉ — against the fractional BDP itself, a round
 * at ⌈BDP⌉ never qualified, and the rate the filter forgot shrank the BDP with
 * it: one of three instances sharing a store sat in drain at 3 uploads for
 * 70 s), or after `DRAIN_ROUNDS` rounds whatever the in-flight.
 */
export const drainRound = (s: DeliveryRateState, r: RoundStats, proposed: number): DeliveryRateState =>
  r.inflight <= proposed || s.phaseRounds >= DRAIN_ROUNDS ? withMode(s, "cruise") : s
