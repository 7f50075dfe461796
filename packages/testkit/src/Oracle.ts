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
    const s = largestObjectBytes(world, c, queuedBytes, inflowBytesPerSecond)
    const records = Math.max(1, s / world.recordBytes)
    const millis = batchMillis(params, s, records, failureOf(params))
    let bytesPerSecond = Number.isFinite(millis) ? (c * s * 1000) / millis : 0
    if (params.rateLimit !== null) bytesPerSecond = Math.min(bytesPerSecond, params.rateLimit * s)
    if (bytesPerSecond > best) best = bytesPerSecond
  }
  return best
}
