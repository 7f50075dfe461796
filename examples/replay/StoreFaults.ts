/**
 * StoreFaults — the simulator's fault model (`@sluice/testkit` `Store`) as a
 * decision per real request, for the replay's store proxy
 * (`store-proxy.ts`): the pure core. What it decides, in the simulator's
 * order and with its draws:
 *
 * - an object upload (a `PUT` but a manifest's) finding the token bucket (`rateLimit`
 *   uploads per second, one second of tokens) empty: `429 TooManyRequests`
 *   with `Retry-After` in whole seconds;
 * - with more than `throttleAbove` requests in flight (this one included),
 *   `503 SlowDown` with probability `throttleProbability` (a bare 503 on HEAD,
 *   as S3 sends it: no body);
 * - independently, `500 InternalError` with probability `errorRate`;
 * - otherwise forwarded, at most `knee` at a time (the others wait in
 *   arrival order, their bodies not read): above the knee throughput is flat
 *   and latency grows: the simulator's `kneeQueue: "arrival"`.
 */

/** The store fields the proxy imposes (the scenario's names). */
export interface FaultParams {
  /** Requests forwarded at once; `null` no cap (the host's own knee binds). */
  readonly knee: number | null
  readonly throttleAbove: number | null
  readonly throttleProbability: number
  readonly errorRate: number
  /** Object uploads per second; `null` unlimited. */
  readonly rateLimit: number | null
  /**
   * How long the proxy's own answers (503, 500, 429) wait before they are sent,
   * ms: the store's base latency. The shaper behind the proxy delays the
   * server's answers; the simulator answers a failed request after it too.
   */
  readonly answerLatencyMillis: number
}

/**
 * Requests forwarded at once: the knee, or the in-flight the store throttles
 * above when that is lower (`null`: no cap). A store throttles because it is at
 * capacity, so the requests it lets through above that point wait for a slot
 * instead of adding throughput: the simulator's `Store.servingLimit` (at least
 * one: a store throttling above 0 in flight still serves a request at a time).
 */
export const servingLimit = (params: FaultParams): number | null =>
  params.throttleAbove === null
    ? params.knee
    : Math.max(1, params.knee === null ? params.throttleAbove : Math.min(params.knee, params.throttleAbove))

/** No faults, no cap. */
export const none: FaultParams = { knee: null, throttleAbove: null, throttleProbability: 0, errorRate: 0, rateLimit: null, answerLatencyMillis: 0 }

/** What the proxy does with one request. */
export type Verdict =
  | { readonly _tag: "Forward" }
  | { readonly _tag: "SlowDown" }
  | { readonly _tag: "InternalError" }
  | { readonly _tag: "TooManyRequests"; readonly retryAfterSeconds: number }

/** The token bucket of `rateLimit` (tokens, and when they were counted, ms). */
export interface Bucket {
  readonly tokens: number
  readonly at: number
}

/** A full bucket for `params` at `now`. */
export const fullBucket = (params: FaultParams, now: number): Bucket => ({ tokens: params.rateLimit ?? 0, at: now })

/** One request as the proxy sees it. */
export interface Request {
  /** A `PUT` of an object (not a manifest): what `rateLimit` counts. */
  readonly objectUpload: boolean
  /** Requests in flight at the proxy, this one included. */
  readonly inflight: number
  readonly now: number
}

/**
 * The verdict for `request`, given two uniform draws taken in this order for
 * every request (throttle, error), and the bucket after it.
 */
export const decide = (
  params: FaultParams,
  bucket: Bucket,
  request: Request,
  uThrottle: number,
  uError: number
): { readonly verdict: Verdict; readonly bucket: Bucket } => {
  let next = bucket
  if (request.objectUpload && params.rateLimit !== null) {
    const limit = params.rateLimit
    const tokens = Math.min(limit, bucket.tokens + ((request.now - bucket.at) * limit) / 1000)
    if (tokens >= 1) next = { tokens: tokens - 1, at: request.now }
    else {
      // Whole seconds until a token is back, at least one (HTTP Retry-After).
      const retryAfterSeconds = Math.max(1, Math.ceil((1 - tokens) / limit))
      return { verdict: { _tag: "TooManyRequests", retryAfterSeconds }, bucket: { tokens, at: request.now } }
    }
  }
  if (params.throttleAbove !== null && request.inflight > params.throttleAbove && uThrottle < params.throttleProbability) {
    return { verdict: { _tag: "SlowDown" }, bucket: next }
  }
  if (uError < params.errorRate) return { verdict: { _tag: "InternalError" }, bucket: next }
  return { verdict: { _tag: "Forward" }, bucket: next }
}

/** A change of `rateLimit` keeps the tokens already there, at most the new limit (the simulator's `update`). */
export const rebucket = (bucket: Bucket, change: Partial<FaultParams>): Bucket =>
  change.rateLimit !== undefined && change.rateLimit !== null ? { ...bucket, tokens: Math.min(bucket.tokens, change.rateLimit) } : bucket
