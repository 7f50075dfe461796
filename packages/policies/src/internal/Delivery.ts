/**
 * Delivery-rate measurement for the delivery-rate policy (Linux BBR's rate
 * sample and windowed max filter, for object uploads). Pure, bounded state.
 *
 * **Rate sample.** BBR measures, per ack, the data delivered between a
 * packet's send and its ack divided by that interval. Here: when an object
 * upload completes at `at` after starting at `startedAt`, the rate is the body
 * bytes of every object upload that completed in `(startedAt, at]` divided by
 * `at − startedAt`. With `c` uploads of `s` bytes each taking `T`, `c` complete
 * per `T`: the sample is `c · s / T`, what the store delivers at that in-flight.
 * A ring of the last {@link RING} completions (time, cumulative bytes) gives
 * the bytes delivered since any recent instant.
 *
 * **Max filter.** The bottleneck rate is the maximum of the per-round maxima
 * over the last `window` rounds (BBR: 10 rounds), so it follows the store down
 * only after that many rounds and up at once.
 *
 * @internal
 */

/** Completions kept: more than any concurrency the policy proposes (ceiling ≤ 1000 would truncate only the oldest). */
export const RING = 512

/**
 * Completions: `times[i]` and `cumulative[i]` (bytes delivered up to and
 * including completion i), oldest first, at most {@link RING}.
 */
export interface Deliveries {
  readonly times: ReadonlyArray<number>
  readonly cumulative: ReadonlyArray<number>
  readonly delivered: number
  /** The last completion dropped from the ring: its time and count (`-Infinity`, 0 before any). */
  readonly droppedAt: number
  readonly droppedCount: number
}

export const emptyDeliveries: Deliveries = { times: [], cumulative: [], delivered: 0, droppedAt: -Infinity, droppedCount: 0 }

/**
 * Bytes delivered by completions at or before `t`, and the instant the window
 * starts: `t`, or — when `t` is older than the ring — the last completion
 * dropped from it (a shorter window, counted exactly).
 */
const deliveredBy = (d: Deliveries, t: number): readonly [number, number] => {
  // Newest first: the window is short (one upload's latency), so few steps.
  for (let i = d.times.length - 1; i >= 0; i--) {
    const at = d.times[i] ?? -Infinity
    if (at <= t) return [d.cumulative[i] ?? 0, t]
  }
  return [d.droppedCount, Math.max(t, d.droppedAt)]
}

/**
 * Records a completed object upload of `bytes` at `at` that started at
 * `startedAt`; returns the new ring and the rate sample (bytes per second).
 */
export const complete = (
  d: Deliveries,
  startedAt: number,
  at: number,
  bytes: number
): { readonly deliveries: Deliveries; readonly rate: number } => {
  const [before, from] = deliveredBy(d, startedAt)
  const delivered = d.delivered + bytes
  const full = d.times.length >= RING
  const deliveries: Deliveries = {
    times: [...d.times.slice(full ? 1 : 0), at],
    cumulative: [...d.cumulative.slice(full ? 1 : 0), delivered],
    delivered,
    droppedAt: full ? (d.times[0] ?? d.droppedAt) : d.droppedAt,
    droppedCount: full ? (d.cumulative[0] ?? d.droppedCount) : d.droppedCount
  }
  const millis = Math.max(1, at - from)
  return { deliveries, rate: ((delivered - before) * 1000) / millis }
}

/**
 * A windowed max over rounds: the maxima of the last rounds (at most
 * `window`), newest last.
 */
export type RoundMaxima = ReadonlyArray<number>

/** Adds the maximum of a round that ended, keeping the last `window`. */
export const pushRound = (maxima: RoundMaxima, value: number, window: number): RoundMaxima => {
  const next = [...maxima, value]
  return next.length > window ? next.slice(next.length - window) : next
}

/** The filter's value: the largest round maximum (and `current`, the round in progress). */
export const maxOf = (maxima: RoundMaxima, current: number): number => Math.max(current, ...maxima)
