/**
 * Throttles (classified `Throttled`, as the throttle classifier says), once
 * per round: `inflightHi := max(floor, min(limit, in flight) × throttleBeta)`
 * (BBRv2's `inflight_hi`), and `startup` → `drain`, `probeUp` → `probeDown`.
 * `probeUp` raises `inflightHi` again to each level it reaches without a
 * throttle (`ProbeBw.ts`); the episode's end lifts it (below).
 */
import type { SignalBus } from "@sluice/core"
import * as ThrottleEpisode from "../ThrottleEpisode.ts"
import { withMode } from "./State.ts"
import type { DeliveryRateState } from "./State.ts"

/** A throttled request. */
export const onThrottle = (s: DeliveryRateState, f: SignalBus.FailureSignal, now: number): DeliveryRateState => {
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
  return { ...withMode(counted, mode), inflightHi, throttleHi: inflightHi, lastCutAt: now, priorInflight, restoreFloor: 0 }
}

/**
 * An object upload succeeded. The throttle episode is over when it has
 * cleared (`ThrottleEpisode.cleared`: `CLEAR_SAMPLES` requests in a row, begun
 * after the last throttle with more in flight than the lowest level
 * throttled, succeeded) and neither this round nor the last saw a throttle:
 * the bound the episode set is lifted and in-flight goes straight back to
 * what it was before the episode (BBR restores the congestion window it had
 * before loss recovery, `prior_cwnd`), held there until the rate filter has
 * measured it (it may have forgotten it during a long storm).
 */
export const clearedAbove = (s: DeliveryRateState, sample: SignalBus.UploadSample): DeliveryRateState => {
  const episode = ThrottleEpisode.succeeded(s.episode, sample.startedAt, sample.inflightAtStart)
  // Only a success that counts can end the episode.
  if (episode === s.episode) return s
  // …and a whole round without a throttle: in a storm that throttles half the
  // requests above its level, three successes in a row happen by chance, and
  // a restore mid-storm bursts into it (seed 21 of the storm proof: 17 in flight).
  if (!ThrottleEpisode.cleared(episode) || s.round.throttled || s.lastRound.throttled) return { ...s, episode }
  return { ...s, episode: ThrottleEpisode.end(episode), inflightHi: Infinity, throttleHi: Infinity, restoreFloor: s.priorInflight }
}
