/**
 * A client-side request rate that recovers CUBIC-style after a throttle: the AWS
 * SDK's adaptive retry mode (`DefaultRateLimiter` in `@smithy/util-retry`),
 * rewritten as a pure state machine with time as an argument.
 *
 * - The measured send rate is an EWMA (`smooth`) over half-second buckets.
 * - On a throttle: `lastMaxRate` = the rate in use (measured, or the fill rate if
 *   lower); the new rate is `lastMaxRate · beta`; the token bucket is enabled.
 * - On a success: `rate(t) = scale · (t − lastThrottle − K)³ + lastMaxRate` with
 *   `K = ∛(lastMaxRate · (1 − beta) / scale)`: a fast climb back towards the old
 *   maximum, a plateau around it, then cautious probing above it.
 * - The rate never exceeds twice the measured send rate, and never falls below
 *   `minRate`, so retries always go out slower than the rate that was throttled.
 * - Sluice addition: after `releaseAfterMillis` without a throttle, with the rate
 *   back at `lastMaxRate`, the limit is released (`null`: unlimited).
 *
 * @since 0.1.0
 */

/**
 * The rate limiter's parameters (AWS SDK defaults: beta 0.7, scale 0.4, smooth 0.8,
 * min rate 0.5/s).
 *
 * @since 0.1.0
 */
export interface CubicRateConfig {
  readonly beta: number
  readonly scale: number
  readonly smooth: number
  readonly minRate: number
  readonly releaseAfterMillis: number
}

/**
 * The rate limiter's state.
 *
 * @since 0.1.0
 */
export interface CubicRate {
  readonly enabled: boolean
  /** The rate in force (requests per second) while enabled. */
  readonly fillRate: number
  readonly lastMaxRate: number
  /** Seconds. */
  readonly lastThrottleTime: number
  readonly timeWindow: number
  readonly measuredTxRate: number
  readonly requestCount: number
  /** Seconds. */
  readonly lastTxRateBucket: number
}

/**
 * The initial (disabled) limiter.
 *
 * @since 0.1.0
 */
export const init = (config: CubicRateConfig): CubicRate => ({
  enabled: false,
  fillRate: config.minRate,
  lastMaxRate: 0,
  lastThrottleTime: -Infinity,
  timeWindow: 0,
  measuredTxRate: 0,
  requestCount: 0,
  lastTxRateBucket: -Infinity
})

const measure = (config: CubicRateConfig, s: CubicRate, t: number): CubicRate => {
  const bucket = Math.floor(t * 2) / 2
  if (s.lastTxRateBucket === -Infinity) return { ...s, requestCount: 1, lastTxRateBucket: bucket }
  const requestCount = s.requestCount + 1
  if (bucket > s.lastTxRateBucket) {
    const current = requestCount / (bucket - s.lastTxRateBucket)
    return {
      ...s,
      measuredTxRate: current * config.smooth + s.measuredTxRate * (1 - config.smooth),
      requestCount: 0,
      lastTxRateBucket: bucket
    }
  }
  return { ...s, requestCount }
}

/**
 * Records one request outcome at `now` (ms): a throttle or not.
 *
 * **Example**
 *
 * ```ts
 * import { CubicRate } from "@sluice/policies"
 *
 * const config = { beta: 0.7, scale: 0.4, smooth: 0.8, minRate: 0.5, releaseAfterMillis: 30_000 }
 * let r = CubicRate.init(config)
 * r = CubicRate.update(config, r, 1_000, true) // throttled: the bucket is enabled at 0.7× the measured rate
 * ```
 *
 * @since 0.1.0
 */
export const update = (config: CubicRateConfig, state: CubicRate, now: number, throttled: boolean): CubicRate => {
  const t = now / 1000
  const s = measure(config, state, t)
  let calculated: number
  let next: CubicRate
  if (throttled) {
    const rateToUse = s.enabled ? Math.min(s.measuredTxRate, s.fillRate) : s.measuredTxRate
    const timeWindow = Math.cbrt((rateToUse * (1 - config.beta)) / config.scale)
    calculated = rateToUse * config.beta
    next = { ...s, lastMaxRate: rateToUse, timeWindow, lastThrottleTime: t, enabled: true }
  } else {
    calculated = config.scale * (t - s.lastThrottleTime - s.timeWindow) ** 3 + s.lastMaxRate
    next = s
  }
  const rate = Math.max(config.minRate, Math.min(calculated, 2 * s.measuredTxRate))
  const released = !throttled && next.enabled && (now - next.lastThrottleTime * 1000) >= config.releaseAfterMillis &&
    rate >= next.lastMaxRate
  return { ...next, fillRate: rate, enabled: released ? false : next.enabled }
}

/**
 * The rate to propose: requests per second, or `null` when not limiting.
 *
 * @since 0.1.0
 */
export const rate = (state: CubicRate): number | null => (state.enabled ? state.fillRate : null)
