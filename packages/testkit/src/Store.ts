/**
 * The simulated object store: a core `Sink` whose latency, throttling and errors
 * follow a small, documented model driven by a seeded RNG and the Effect `Clock`
 * (so it runs on `TestClock`'s virtual time).
 *
 * **The model** (per request, its outcome decided when the request starts):
 *
 * - service latency `(baseLatency + bytes / bandwidthPerRequest) × max(1, served / knee)
 *   × (1 + jitter · Exp(1))`, where `served` counts the requests the store is
 *   serving (every stage, every instance) including this one when it started —
 *   not those it refused, which answer after the base latency and take no
 *   share of it (as the replay's store proxy answers them itself, before the
 *   server): above the knee the store's throughput is flat and latency grows. A request
 *   progresses at 1 ÷ its service latency under the parameters in force: an
 *   {@link SimStore.update} reaches the requests in flight, whose remaining
 *   share is served at the new latency (a real store, and a network shaper
 *   changed mid-run, slow the uploads already running: `npm run replay`);
 * - with `kneeQueue: "arrival"` instead, at most `knee` successful requests
 *   are served at once and the others wait in arrival order (a worker pool:
 *   MinIO's `requests_max`, the replay's store proxy); a request's latency is
 *   its wait plus `(baseLatency + bytes / bandwidthPerRequest) × (1 + jitter ·
 *   Exp(1))`. Throughput above the knee is as flat, but a small request
 *   behind long uploads waits for one of them to finish: it reads far above
 *   `inflight / knee` (40 in flight over a knee of 32, 7 s uploads: 1.45 s for
 *   a manifest that takes 45 ms unloaded);
 * - if `inflight > throttleAbove`, a `503 SlowDown` with probability
 *   `throttleProbability`. A store throttles because it is at capacity, so
 *   `throttleAbove` also bounds what it serves: the knee in the two rules above
 *   is {@link servingLimit}, `min(knee, throttleAbove)`. The requests it lets
 *   through above that point queue like requests above a knee and add no
 *   throughput — as MinIO queues requests beyond `requests_max` and answers
 *   SlowDown once they wait too long, and as S3's per-prefix request rate caps
 *   what a client gets however many requests it sends: keeping requests in
 *   flight above it, most of them refused, gains nothing. `throttleAbove: 0`
 *   refuses every request with that probability, however few are in flight:
 *   a store shedding all load (with probability 1, a SlowDown outage, as
 *   `npm run bench:peer -- --trouble slowdown` applies to the real server);
 * - independently, a `500 InternalError` with probability `errorRate`;
 * - with `rateLimit` (object uploads per second, a token bucket holding one
 *   second of tokens), an object upload finding the bucket empty gets a
 *   `429 TooManyRequests` with `Retry-After` (whole seconds, as HTTP sends it).
 *
 * Failed requests answer after `baseLatency × (1 + jitter · Exp(1))` (no body
 * transfer). A 503 on `verify` (a HEAD) is reported as S3 SDKs report it: code
 * `Unknown`, class `Transient` (there is no body to carry `SlowDown`). Every RNG
 * draw happens in a fixed order per request, so a seed fixes the whole run.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Effect } from "effect"
import { Batch, Failure } from "@sluice/core"
import type { Sink } from "@sluice/core"
import * as Rng from "./Rng.ts"

/**
 * The store's parameters (all changeable at any time with {@link SimStore.update}).
 *
 * @since 0.1.0
 */
export interface StoreParams {
  readonly baseLatencyMillis: number
  /** Bytes per second one request transfers. */
  readonly bandwidthBytesPerSecond: number
  /** In-flight requests above which latency grows linearly. */
  readonly knee: number
  /**
   * How requests above the knee queue: `"shared"`, every request slows by
   * `inflight / knee` (processor sharing); `"arrival"`, `knee` are served and
   * the others wait in arrival order.
   */
  readonly kneeQueue: KneeQueue
  /** Scale of the `Exp(1)` jitter factor. */
  readonly jitter: number
  /** In-flight requests above which 503 SlowDown may be returned, and above which the store serves no more (see {@link servingLimit}); `null` never. */
  readonly throttleAbove: number | null
  readonly throttleProbability: number
  /** Probability of a 500 on any request. */
  readonly errorRate: number
  /** Object uploads per second before 429; `null` unlimited. */
  readonly rateLimit: number | null
}

/**
 * How a store queues the requests above its knee (see {@link StoreParams}).
 *
 * @since 0.3.0
 */
export type KneeQueue = "shared" | "arrival"

/**
 * Defaults: an S3-like store (8 ms, 64 MiB/s per request, knee 24, no faults).
 *
 * @since 0.1.0
 */
export const defaultParams: StoreParams = {
  baseLatencyMillis: 8,
  bandwidthBytesPerSecond: 64 * 1024 * 1024,
  knee: 24,
  kneeQueue: "shared",
  jitter: 0.1,
  throttleAbove: null,
  throttleProbability: 0,
  errorRate: 0,
  rateLimit: null
}

/**
 * The operation a request performs.
 *
 * @since 0.1.0
 */
export type Operation = "putObject" | "putManifest" | "verify"

/**
 * How a request ended.
 *
 * @since 0.1.0
 */
export type Outcome = "ok" | "SlowDown" | "InternalError" | "TooManyRequests"

/**
 * One recorded request.
 *
 * @since 0.1.0
 */
export interface RequestRecord {
  readonly instance: number
  readonly operation: Operation
  readonly startedAt: number
  readonly endedAt: number
  readonly bytes: number
  readonly inflightAtStart: number
  readonly outcome: Outcome
}

/**
 * Bytes a manifest upload transfers in the model (a small JSON document).
 *
 * @since 0.1.0
 */
export const MANIFEST_BYTES = 512

/**
 * Unloaded service latency of one request of `bytes` (no queueing, no jitter).
 *
 * **Example**
 *
 * ```ts
 * import { Store } from "@sluice/testkit"
 *
 * Store.unloadedMillis(Store.defaultParams, 8 * 1024 * 1024) // 8 + 125 = 133 ms
 * ```
 *
 * @since 0.1.0
 */
export const unloadedMillis = (params: StoreParams, bytes: number): number =>
  params.baseLatencyMillis + (bytes / params.bandwidthBytesPerSecond) * 1000

/**
 * In-flight requests the store serves at full speed: its knee, or the in-flight
 * it throttles above when that is lower (see the model above).
 *
 * @since 0.3.0
 */
export const servingLimit = (params: StoreParams): number =>
  params.throttleAbove === null ? params.knee : Math.max(1, Math.min(params.knee, params.throttleAbove))

/**
 * Service latency under load: the pure core of the latency model.
 *
 * @since 0.1.0
 */
export const serviceMillis = (params: StoreParams, bytes: number, served: number, exp1: number): number =>
  unloadedMillis(params, bytes) * (params.kneeQueue === "shared" ? Math.max(1, served / servingLimit(params)) : 1) * (1 + params.jitter * exp1)

/**
 * Counters of a store since it was made.
 *
 * @since 0.1.0
 */
export interface StoreCounters {
  requests: number
  throttled: number
  errors: number
  rateLimited: number
  inflight: number
  maxInflight: number
}

/**
 * A simulated store shared by one or more pipelines.
 *
 * @since 0.1.0
 */
export interface SimStore {
  /** The store's parameters now (after every `update` so far). */
  readonly params: () => StoreParams
  /** Changes parameters from now on, for the requests in flight too (their remaining share runs at the new latency). */
  readonly update: (change: Partial<StoreParams>) => void
  /** The `Sink` of pipeline instance `instance`. */
  readonly sink: (instance: number) => Sink.Sink
  /** Every request, in start order. */
  readonly requests: ReadonlyArray<RequestRecord>
  readonly counters: Readonly<StoreCounters>
  /** Successful object uploads completed since the last call: latency (ms) and bytes. */
  readonly drainLatencies: () => Array<{ readonly millis: number; readonly bytes: number }>
  /** Verified offset ranges per `source/partition`: `[first, last]` pairs. */
  readonly verified: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>
}

/** A request in flight: the share of its service still to run, timed under the parameters in force. */
interface Serving {
  /** Share of the service still to run (1 at the start). */
  remaining: number
  /** When `remaining` was last counted (ms). */
  at: number
  /** Its whole service latency under the parameters in force (ms). */
  millis: number
  readonly service: (params: StoreParams) => number
  /** `update` changed the parameters since `millis` was computed. */
  changed: boolean
  wake: Deferred.Deferred<void> | undefined
}

/** A successful request waiting for, or holding, one of the knee's slots (`kneeQueue: "arrival"`). */
interface Admission {
  readonly admitted: Deferred.Deferred<void>
  holding: boolean
}

interface StoredObject {
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly lastOffset: number
  readonly objectBytes: number
}

/**
 * Builds a store with `params`, drawing jitter and faults from `seed`.
 *
 * **Example**
 *
 * ```ts
 * import { Store } from "@sluice/testkit"
 *
 * const store = Store.make({ ...Store.defaultParams, knee: 16, throttleAbove: 32, throttleProbability: 0.5 }, 7)
 * const sink = store.sink(0) // pass to Pipeline.start({ sink, ... })
 * store.update({ baseLatencyMillis: 80 }) // a 10x slowdown from now on
 * ```
 *
 * @since 0.1.0
 */
export const make = (initial: StoreParams, seed: number): SimStore => {
  let params = initial
  const rng = Rng.make(seed)
  const requests: Array<RequestRecord> = []
  const counters: StoreCounters = { requests: 0, throttled: 0, errors: 0, rateLimited: 0, inflight: 0, maxInflight: 0 }
  let latencies: Array<{ readonly millis: number; readonly bytes: number }> = []
  const objects = new Map<string, StoredObject>()
  const verified = new Map<string, Array<readonly [number, number]>>()
  let tokens = initial.rateLimit ?? 0
  let tokensAt = 0

  const takeToken = (now: number): number | undefined => {
    const limit = params.rateLimit
    if (limit === null) return undefined
    tokens = Math.min(limit, tokens + ((now - tokensAt) * limit) / 1000)
    tokensAt = now
    if (tokens >= 1) {
      tokens -= 1
      return undefined
    }
    // Whole seconds until a token is back, at least one (HTTP Retry-After).
    return Math.max(1000, Math.ceil(((1 - tokens) * 1000) / limit / 1000) * 1000)
  }

  // The requests in flight (bounded by the pipelines' concurrency), and how
  // many of them the store serves (not refused: `served` in the model).
  const running = new Set<Serving>()
  let servedNow = 0
  // `kneeQueue: "arrival"`: requests holding a slot, and those waiting for one
  // in arrival order (both bounded by the requests in flight).
  let holding = 0
  const waiting: Array<Admission> = []
  const admitWaiting = (): void => {
    while (waiting.length > 0 && holding < servingLimit(params)) {
      const next = waiting.shift() as Admission
      holding++
      next.holding = true
      Deferred.doneUnsafe(next.admitted, Effect.void)
    }
  }
  /** Enters the knee's queue: admitted at once when a slot is free and no one waits. */
  const enter = (): Admission => {
    const a: Admission = { admitted: Deferred.makeUnsafe<void>(), holding: false }
    waiting.push(a)
    admitWaiting()
    return a
  }
  /** Leaves it, served or interrupted while waiting: the slot goes to the next in line. */
  const leave = (a: Admission): void => {
    if (a.holding) {
      holding--
      a.holding = false
    } else {
      const at = waiting.indexOf(a)
      if (at >= 0) waiting.splice(at, 1)
    }
    admitWaiting()
  }

  /** Serves the remaining share of a request, re-timed when `update` changes the parameters; succeeds with when it ended. */
  const serve = (r: Serving): Effect.Effect<number> =>
    Effect.flatMap(r.changed ? Clock.currentTimeMillis : Effect.succeed(r.at), (now) => {
      r.remaining = Math.max(0, r.remaining - (now - r.at) / r.millis)
      r.at = now
      if (r.changed) {
        r.millis = r.service(params)
        r.changed = false
      }
      // Whole microseconds keep virtual timestamps exact enough to compare.
      const left = Math.round(r.remaining * r.millis * 1000) / 1000
      if (left <= 0) return Effect.succeed(now)
      const wake = Deferred.makeUnsafe<void>()
      r.wake = wake
      return Effect.raceFirst(Effect.sleep(left), Deferred.await(wake)).pipe(Effect.andThen(Effect.suspend(() => {
        // Slept its whole remaining share: it ends `left` after it was last timed (exact, not the clock's reading).
        if (!r.changed) return Effect.succeed(now + left)
        return serve(r)
      })))
    })

  const request = <A>(
    instance: number,
    operation: Operation,
    bytes: number,
    onSuccess: () => A
  ): Effect.Effect<A, Failure.SinkFailure> =>
    Effect.flatMap(Clock.currentTimeMillis, (startedAt) => {
      counters.requests++
      counters.inflight++
      if (counters.inflight > counters.maxInflight) counters.maxInflight = counters.inflight
      const inflight = counters.inflight
      // Fixed draw order per request: throttle, error, jitter.
      const uThrottle = rng.uniform()
      const uError = rng.uniform()
      const exp1 = rng.exponential()
      let outcome: Outcome = "ok"
      let retryAfterMillis: number | undefined
      if (operation === "putObject") {
        retryAfterMillis = takeToken(startedAt)
        if (retryAfterMillis !== undefined) outcome = "TooManyRequests"
      }
      if (outcome === "ok" && params.throttleAbove !== null && inflight > params.throttleAbove && uThrottle < params.throttleProbability) {
        outcome = "SlowDown"
      }
      if (outcome === "ok" && uError < params.errorRate) outcome = "InternalError"
      if (outcome === "ok") servedNow++
      const servedAtStart = servedNow
      const service = (p: StoreParams): number =>
        outcome === "ok" ? serviceMillis(p, bytes, servedAtStart, exp1) : p.baseLatencyMillis * (1 + p.jitter * exp1)
      const admission = outcome === "ok" && params.kneeQueue === "arrival" ? enter() : undefined
      const serving: Serving = { remaining: 1, at: startedAt, millis: service(params), service, changed: false, wake: undefined }
      const served = admission === undefined
        ? Effect.suspend(() => {
          running.add(serving)
          return serve(serving)
        })
        // Served from when it was admitted, under the parameters then.
        : Deferred.await(admission.admitted).pipe(
          Effect.andThen(Clock.currentTimeMillis),
          Effect.flatMap((admittedAt) => {
            serving.at = admittedAt
            serving.millis = service(params)
            running.add(serving)
            return serve(serving)
          })
        )
      return served.pipe(
        Effect.onExit(() =>
          Effect.sync(() => {
            counters.inflight--
            if (outcome === "ok") servedNow--
            running.delete(serving)
            if (admission !== undefined) leave(admission)
          })
        ),
        Effect.flatMap((endedAt) => Effect.suspend(() => {
          const millis = endedAt - startedAt
          requests.push({ instance, operation, startedAt, endedAt, bytes, inflightAtStart: inflight, outcome })
          if (outcome === "ok") {
            if (operation === "putObject") latencies.push({ millis, bytes })
            return Effect.succeed(onSuccess())
          }
          if (outcome === "TooManyRequests") counters.rateLimited++
          else if (outcome === "SlowDown") counters.throttled++
          else counters.errors++
          return Effect.fail(failureOf(operation, outcome, retryAfterMillis))
        }))
      )
    })

  const sink = (instance: number): Sink.Sink => ({
    name: `sim-store#${instance}`,
    putObject: (batch) => {
      const objectBytes = Batch.bodyBytes(batch)
      return request(instance, "putObject", objectBytes, () => {
        objects.set(batch.key, {
          source: batch.source,
          partition: batch.partition,
          firstOffset: batch.firstOffset,
          lastOffset: batch.lastOffset,
          objectBytes
        })
        return { key: batch.key, objectBytes, checksum: { algorithm: "SIM", value: `${batch.key}:${objectBytes}` } }
      })
    },
    putManifest: () => Effect.asVoid(request(instance, "putManifest", MANIFEST_BYTES, () => undefined)),
    verify: (receipt) =>
      Effect.flatMap(request(instance, "verify", 0, () => objects.get(receipt.key)), (stored) => {
        if (stored === undefined) {
          return Effect.fail(
            new Failure.VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" })
          )
        }
        const id = `${stored.source}/${stored.partition}`
        let ranges = verified.get(id)
        if (ranges === undefined) {
          ranges = []
          verified.set(id, ranges)
        }
        ranges.push([stored.firstOffset, stored.lastOffset])
        return Effect.succeed({ key: receipt.key, objectBytes: stored.objectBytes, checksum: receipt.checksum })
      })
  })

  return {
    params: () => params,
    update: (change) => {
      params = { ...params, ...change }
      // A raised knee admits those waiting now.
      admitWaiting()
      for (const r of running) {
        r.changed = true
        if (r.wake !== undefined) Deferred.doneUnsafe(r.wake, Effect.void)
      }
      if (change.rateLimit !== undefined && change.rateLimit !== null) tokens = Math.min(tokens, change.rateLimit)
    },
    sink,
    requests,
    counters,
    drainLatencies: () => {
      const out = latencies
      latencies = []
      return out
    },
    verified
  }
}

const stageOf = (operation: Operation): Failure.Stage =>
  operation === "putObject" ? "object_upload" : operation === "putManifest" ? "manifest_upload" : "verify"

const failureOf = (operation: Operation, outcome: Outcome, retryAfterMillis: number | undefined): Failure.SinkFailure => {
  const stage = stageOf(operation)
  switch (outcome) {
    case "TooManyRequests":
      return new Failure.SinkFailure({
        failureClass: "Throttled",
        code: "TooManyRequests",
        status: 429,
        stage,
        retryAfterMillis,
        message: "Too Many Requests"
      })
    case "SlowDown":
      return operation === "verify"
        ? new Failure.SinkFailure({ failureClass: "Transient", code: "Unknown", status: 503, stage, retryAfterMillis: undefined, message: "503 on HEAD (no body)" })
        : new Failure.SinkFailure({
          failureClass: "Throttled",
          code: "SlowDown",
          status: 503,
          stage,
          retryAfterMillis: undefined,
          message: "Please reduce your request rate."
        })
    default:
      return new Failure.SinkFailure({
        failureClass: "Transient",
        code: "InternalError",
        status: 500,
        stage,
        retryAfterMillis: undefined,
        message: "We encountered an internal error. Please try again."
      })
  }
}
