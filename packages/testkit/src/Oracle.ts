/**
 * The oracle: an upper bound on the payload bytes per second any pipeline can
 * get verified by the simulated store, per phase, so that a policy's
 * `goodputRatio` (verified ÷ oracle) can never honestly exceed 1.
 *
 * **The bound.** An ideal pipeline chooses, at every moment, the store
 * concurrency `c` (requests in flight, 1 … `knee`) and the object size `s` that
 * maximise throughput, subject only to what the world allows:
 *
 * - **memory**: the `c` objects in flight fit in the memory budget of all
 *   instances together, `c · s ≤ instances × memoryBudget`;
 * - **filling**: an object holds one partition's records, so it is at most what
 *   that partition produces in `maxAge` (`inflow / partitions × maxAge`) — or,
 *   when the ideal pipeline carries a queue, what is queued for it
 *   (`queued / min(partitions, c)`), since a backlog fills an object at once;
 * - **store**: each batch costs an object upload (`payload + 4 B/record`), a
 *   manifest upload and a verify, each at the store's mean service time (jitter
 *   included: `× (1 + jitter)`, no pipeline beats the store's own average);
 *   every request fails with `errorRate`, each failure costing a base-latency
 *   round trip and a retry (`svc + f/(1−f) × base` expected per request);
 *   above the store's serving limit (`Store.servingLimit`: its knee, or
 *   `throttleAbove` when lower) the store is flat and nothing is gained, so
 *   `c` runs to that limit and never meets a throttle — but a store with
 *   `throttleAbove: 0` refuses every request with `throttleProbability`
 *   whatever `c`, so those refusals count as failures too (all of them: no
 *   capacity);
 * - **rate**: at most `rateLimit` object uploads per second (`rateLimit × s`).
 *
 * Capacity is the maximum over `c` of `c · s(c) / T(s(c))` (bytes/s), with
 * `s(c)` the largest size the constraints allow at `c` (throughput grows with
 * `s` at fixed `c`). The runner feeds this capacity into a fluid queue (inflow
 * and initial backlog in, capacity out): bytes the oracle cannot serve in a
 * degraded phase carry over, so catching up later earns no credit beyond what
 * the ideal pipeline could have done, and the queue it carries lets it fill
 * larger objects, as a real pipeline that fell behind could.
 *
 * **When the oracle's bytes count.** A pipeline's goodput is counted when the
 * store verifies its bytes, one object upload, manifest and verify after they
 * are sent; the oracle's is counted the same way ({@link sent}, {@link advance}):
 * bytes it serves at `t` count when a batch of the smallest object that
 * sustains the rate it serves at `t` ({@link fastestObjectBytes}) would be
 * verified, its store time re-timed when the store changes, as the simulated
 * store re-times the requests in flight. It is still spared the time to fill an
 * object. Without this, a phase of a store whose batches take longer than the
 * phase's first seconds credited the oracle with bytes no pipeline could have
 * verified inside it (their commits land in the next phase).
 *
 * @since 0.2.0
 */
import type { StoreParams } from "./Store.ts"
import { MANIFEST_BYTES, servingLimit, unloadedMillis } from "./Store.ts"

/**
 * What the world lets an ideal pipeline choose from (everything but the store).
 *
 * @since 0.2.0
 */
export interface OracleWorld {
  /** Payload bytes of one record. */
  readonly recordBytes: number
  /** Memory budget of all instances together (bytes). */
  readonly budgetBytes: number
  /** Partitions of the source (an object holds one partition's records). */
  readonly partitions: number
  /** Longest a batch may stay open (ms). */
  readonly maxAgeMillis: number
}

/**
 * Expected store time (ms) of one batch of `payloadBytes` in `records` records
 * at `inflight` requests in flight: object upload, manifest upload and verify,
 * each at its mean service time, each retried after a failure with probability
 * `failure` that costs one base-latency round trip.
 *
 * @since 0.2.0
 */
export const batchMillis = (params: StoreParams, payloadBytes: number, records: number, failure: number): number => {
  const jitter = 1 + params.jitter
  const retryCost = failure >= 1 ? Infinity : (failure / (1 - failure)) * params.baseLatencyMillis * jitter
  return (
    unloadedMillis(params, payloadBytes + 4 * records) * jitter +
    unloadedMillis(params, MANIFEST_BYTES) * jitter +
    unloadedMillis(params, 0) * jitter +
    3 * retryCost
  )
}

/**
 * The largest object (payload bytes) an ideal pipeline can make at store
 * concurrency `c` with `queuedBytes` waiting and `inflowBytesPerSecond` arriving.
 *
 * @since 0.2.0
 */
export const largestObjectBytes = (
  world: OracleWorld,
  c: number,
  queuedBytes: number,
  inflowBytesPerSecond: number
): number => {
  const byMemory = world.budgetBytes / c
  const byAge = (inflowBytesPerSecond / Math.max(1, world.partitions)) * (world.maxAgeMillis / 1000)
  const byQueue = queuedBytes / Math.max(1, Math.min(world.partitions, c))
  return Math.max(world.recordBytes, Math.min(byMemory, Math.max(byAge, byQueue)))
}

/**
 * The chance that a request of the ideal pipeline fails: `errorRate`, and for a
 * store that refuses every request (`throttleAbove: 0`) its throttles too (a
 * throttle above a positive `throttleAbove` the ideal pipeline never meets).
 */
const failureOf = (params: StoreParams): number =>
  params.throttleAbove === 0 ? 1 - (1 - params.errorRate) * (1 - params.throttleProbability) : params.errorRate

/**
 * The oracle's capacity (payload bytes per second) for a store in state
 * `params`, with `queuedBytes` waiting (use `Infinity` for the store's own
 * limit whatever the backlog) and `inflowBytesPerSecond` arriving.
 *
 * **Example**
 *
 * ```ts
 * import { Oracle, Store } from "@sluice/testkit"
 *
 * const world = { recordBytes: 150, budgetBytes: 256 * 1024 * 1024, partitions: 8, maxAgeMillis: 5_000 }
 * Oracle.capacity(Store.defaultParams, world, 0, 50e6) // bytes/s at knee 24 with ~31 MB objects
 * ```
 *
 * @since 0.2.0
 */
export const capacity = (
  params: StoreParams,
  world: OracleWorld,
  queuedBytes: number,
  inflowBytesPerSecond: number
): number => {
  let best = 0
  const limit = servingLimit(params)
  for (let c = 1; c <= limit; c++) {
    const bytesPerSecond = throughputAt(params, world, c, largestObjectBytes(world, c, queuedBytes, inflowBytesPerSecond))
    if (bytesPerSecond > best) best = bytesPerSecond
  }
  return best
}

/**
 * Payload bytes per second of `c` uploads at once of `s`-byte objects, each
 * request failing as {@link failureOf} says: the store's batch time, within
 * the rate limit.
 */
const throughputAt = (params: StoreParams, world: OracleWorld, c: number, s: number): number => {
  const millis = batchMillis(params, s, Math.max(1, s / world.recordBytes), failureOf(params))
  const byStore = Number.isFinite(millis) ? (c * s * 1000) / millis : 0
  return params.rateLimit === null ? byStore : Math.min(byStore, params.rateLimit * s)
}

/**
 * The smallest object (payload bytes) with which an ideal pipeline serves
 * `bytesPerSecond` (at any concurrency up to the store's serving limit, within
 * the memory budget and the filling bound of {@link largestObjectBytes}): the
 * object whose batch the store verifies soonest at that rate. `null` when no
 * choice serves that rate (it is above {@link capacity}).
 *
 * **Details**
 *
 * At fixed concurrency throughput grows with the object size, so the smallest
 * size is found by bisection; more concurrency needs smaller objects, so the
 * highest concurrency that can serve the rate is taken.
 *
 * @since 0.5.0
 */
export const fastestObjectBytes = (
  params: StoreParams,
  world: OracleWorld,
  queuedBytes: number,
  inflowBytesPerSecond: number,
  bytesPerSecond: number
): number | null => {
  const throughput = (c: number, s: number): number => throughputAt(params, world, c, s)
  const wanted = bytesPerSecond * (1 - 1e-9)
  for (let c = servingLimit(params); c >= 1; c--) {
    const largest = largestObjectBytes(world, c, queuedBytes, inflowBytesPerSecond)
    if (throughput(c, largest) < wanted) continue
    let low = Math.min(world.recordBytes, largest)
    if (throughput(c, low) >= wanted) return low
    let high = largest
    for (let i = 0; i < 48 && high - low > 1; i++) {
      const mid = (low + high) / 2
      if (throughput(c, mid) >= wanted) high = mid
      else low = mid
    }
    return high
  }
  return null
}

/**
 * Bytes the oracle has sent to the store and not yet had verified: objects of
 * `objectBytes`, `done` of their batch's store time (0 … 1) behind them.
 *
 * @since 0.5.0
 */
export interface InFlight {
  readonly bytes: number
  readonly objectBytes: number
  readonly done: number
}

/**
 * The oracle's bytes sent in one step: `bytes` served at `bytesPerSecond`
 * carried by the smallest objects that sustain that rate (see
 * {@link fastestObjectBytes}).
 *
 * @since 0.5.0
 */
export const sent = (
  params: StoreParams,
  world: OracleWorld,
  queuedBytes: number,
  inflowBytesPerSecond: number,
  bytes: number,
  bytesPerSecond: number
): InFlight => ({
  bytes,
  objectBytes: fastestObjectBytes(params, world, queuedBytes, inflowBytesPerSecond, bytesPerSecond) ?? largestObjectBytes(world, 1, queuedBytes, inflowBytesPerSecond),
  done: 0
})

/**
 * Advances the oracle's bytes in flight by `millis` of a store in state
 * `params`: each batch gains `millis ÷ batchMillis` of its store time (so a
 * batch already under way when the store changes finishes its remaining share
 * at the new speed; on a store refusing every request, a SlowDown outage, it
 * waits). Failures count as in {@link capacity}. Returns the bytes verified in that time and those still
 * in flight.
 *
 * **Example**
 *
 * ```ts
 * import { Oracle, Store } from "@sluice/testkit"
 *
 * const world = { recordBytes: 1000, budgetBytes: 256e6, partitions: 8, maxAgeMillis: 5_000 }
 * const slow = { ...Store.defaultParams, baseLatencyMillis: 1_000 }
 * const batch = Oracle.sent(slow, world, 0, 1e6, 100_000, 1e6)
 * Oracle.advance(slow, world, [batch], 100).verifiedBytes // 0: a batch takes > 3 s
 * ```
 *
 * @since 0.5.0
 */
export const advance = (
  params: StoreParams,
  world: OracleWorld,
  inFlight: ReadonlyArray<InFlight>,
  millis: number
): { readonly verifiedBytes: number; readonly inFlight: ReadonlyArray<InFlight> } =>
  advanceBy(inFlight, millis, (batch) => batchMillis(params, batch.objectBytes, Math.max(1, batch.objectBytes / world.recordBytes), failureOf(params)))

/**
 * {@link advance} with the store time of a batch given by `storeMillis` (a
 * model's, or one measured on a real store, as the replay's oracle does): each
 * batch gains `millis ÷ storeMillis(batch)` of its store time; a batch whose
 * store time is not finite (a store that answers nothing) waits.
 *
 * @since 0.5.0
 */
export const advanceBy = <A extends InFlight>(
  inFlight: ReadonlyArray<A>,
  millis: number,
  storeMillis: (batch: A) => number
): { readonly verifiedBytes: number; readonly inFlight: ReadonlyArray<A> } => {
  let verifiedBytes = 0
  const still: Array<A> = []
  for (const batch of inFlight) {
    const total = storeMillis(batch)
    const done = Number.isFinite(total) && total > 0 ? batch.done + millis / total : Number.isFinite(total) ? 1 : batch.done
    if (done >= 1) verifiedBytes += batch.bytes
    else still.push({ ...batch, done })
  }
  return { verifiedBytes, inFlight: still }
}
