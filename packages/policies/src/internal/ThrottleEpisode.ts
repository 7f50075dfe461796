/**
 * A throttle episode: what a concurrency controller remembers between the
 * first `Throttled` answer of a storm and the moment it is over. AIMD, the
 * delivery-rate policy and the throttle policy each answer a throttle in their
 * own way (a cut ×β, `inflightHi`, a cut and a rate), but they tell the storm
 * is over the same way, with this one mechanism:
 *
 * - each throttle lowers `throttledAt` to the in-flight its request began at
 *   (never below the floor): the lowest level the store refused this episode;
 * - a success counts toward `clear` only when its request began after the last
 *   throttle *and* with more in flight than `throttledAt` — growth inside the
 *   region never throttled is no evidence, clean requests above the refused
 *   level are (a throttle resets the count) — or, when the store refused a
 *   request at the floor, with any in flight: a refusal at the floor marks no
 *   level (the store shed all load, as in a SlowDown outage), and the policy
 *   holds the floor, so successes there are the only evidence it ends;
 * - {@link CLEAR_SAMPLES} such successes in a row: the storm has cleared, and
 *   the policy lifts what the episode imposed (each says how).
 *
 * Pure data: three numbers and a flag, and the level the last episode found
 * (`lastLevel`, which the throttle policy reads: `Throttle.cutTo`).
 *
 * @internal
 */

/**
 * Successes in a row, begun after the last throttle from above the episode's
 * lowest throttled in-flight, that end the episode. Three, as TCP's fast
 * retransmit waits for three duplicate acks before it believes a loss: one or
 * two clean answers happen by chance inside a storm that refuses half the
 * requests above its level. Swept to 1 in the throttle policy on the family
 * train set (mixed, seed 2, 200): p10 and median ±0, every shipped scenario
 * equal — no measured reason for 3 over 1 there; 3 is kept as the
 * conservative value the three policies shared before this module.
 */
export const CLEAR_SAMPLES = 3

/** An episode (or none: `throttledAt` is `Infinity`). */
export interface ThrottleEpisode {
  /** Lowest in-flight a throttled request of this episode began at (`Infinity`: no episode). */
  readonly throttledAt: number
  /** When the last throttle was seen (`-Infinity`: never). */
  readonly lastThrottleAt: number
  /** Successes in a row, begun after the last throttle, from above `throttledAt` (or from anywhere when `atFloor`). */
  readonly clear: number
  /** A request was refused at the floor this episode (`throttledAt` is the floor). */
  readonly atFloor: boolean
  /** The last ended episode's `throttledAt` (`Infinity`: none ended yet): the level the store refused last time. */
  readonly lastLevel: number
}

/** No episode, no throttle ever seen. */
export const none: ThrottleEpisode = { throttledAt: Infinity, lastThrottleAt: -Infinity, clear: 0, atFloor: false, lastLevel: Infinity }

/** An episode is in progress. */
export const active = (e: ThrottleEpisode): boolean => e.throttledAt !== Infinity

/** A throttle of a request that began with `inflightAtStart` in flight (counted at no less than `floor`). */
export const throttled = (e: ThrottleEpisode, floor: number, inflightAtStart: number, now: number): ThrottleEpisode => {
  const throttledAt = Math.min(e.throttledAt, Math.max(floor, inflightAtStart))
  return { ...e, throttledAt, lastThrottleAt: now, clear: 0, atFloor: throttledAt <= floor }
}

/** A success: counts toward `clear` when it began after the last throttle from above the refused level (from anywhere when `atFloor`). */
export const succeeded = (e: ThrottleEpisode, startedAt: number, inflightAtStart: number): ThrottleEpisode =>
  active(e) && startedAt >= e.lastThrottleAt && (inflightAtStart > e.throttledAt || e.atFloor) ? { ...e, clear: e.clear + 1 } : e

/**
 * Any other request the store accepted (a manifest, a verify): evidence only in
 * an episode refused at the floor, where the policy holds the floor and cuts
 * the rate, so object uploads alone come too seldom to end an outage soon (a
 * 60 s SlowDown outage on `throttle-storm`'s store: uploads every 2 s at the
 * rate's least, the end seen 6.4 s after it, 3.5 s counting these;
 * `docs/design/generalization.md`).
 */
export const answered = (e: ThrottleEpisode, startedAt: number): ThrottleEpisode =>
  active(e) && e.atFloor && startedAt >= e.lastThrottleAt ? { ...e, clear: e.clear + 1 } : e

/** The storm has cleared: {@link CLEAR_SAMPLES} successes in a row from above the refused level. */
export const cleared = (e: ThrottleEpisode): boolean => e.clear >= CLEAR_SAMPLES

/** The episode is over (the last throttle's time is kept: one-cut-per-round rules read it). */
export const end = (e: ThrottleEpisode): ThrottleEpisode => ({ ...e, throttledAt: Infinity, clear: 0, atFloor: false, lastLevel: e.throttledAt })
