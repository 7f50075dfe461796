/**
 * Test helpers: signal builders and a tiny closed-loop store model that drives a
 * concurrency core on virtual time (purely, through `Policy.replay`'s contract).
 */
import type { Failure, Knob, Policy, SignalBus } from "@sluice/core"
import * as Rng from "../src/internal/Rng.ts"

export const sample = (
  at: number,
  latencyMillis: number,
  options: Partial<Omit<SignalBus.UploadSample, "_tag" | "at" | "latencyMillis">> = {}
): SignalBus.UploadSample => ({
  _tag: "UploadSample",
  at,
  stage: options.stage ?? "object_upload",
  startedAt: options.startedAt ?? at - latencyMillis,
  latencyMillis,
  bytes: options.bytes ?? 1024,
  inflightAtStart: options.inflightAtStart ?? 64,
  limitAtStart: options.limitAtStart ?? 64
})

export const failure = (
  at: number,
  failureClass: Failure.FailureClass,
  options: { startedAt?: number; limitAtStart?: number; retryAfterMillis?: number; code?: string; status?: number; stage?: Failure.Stage } = {}
): SignalBus.FailureSignal => ({
  _tag: "Failure",
  at,
  failure: {
    failureClass,
    code: options.code ?? (failureClass === "Throttled" ? "SlowDown" : "InternalError"),
    status: options.status ?? (failureClass === "Throttled" ? 503 : 500),
    stage: options.stage ?? "object_upload",
    retryAfterMillis: options.retryAfterMillis
  },
  startedAt: options.startedAt ?? at - 10,
  latencyMillis: 10,
  inflightAtStart: options.limitAtStart ?? 8,
  limitAtStart: options.limitAtStart ?? 8,
  attempt: 1
})

export const inflight = (at: number, bytes: number, budgetBytes = 1000, medianUpload?: SignalBus.RunningUpload): SignalBus.InflightSignal => ({
  _tag: "Inflight",
  at,
  batches: 1,
  bytes,
  openBytes: 0,
  budgetBytes,
  medianUpload
})

const baseKnobs: Knob.KnobValues = {
  concurrency: 8,
  batchTarget: { records: 10_000, bytes: 8 << 20, maxAgeMillis: 60_000 },
  readGate: "open",
  rate: null
}

export const tick = (at: number): SignalBus.TickSignal => ({ _tag: "Tick", at, knobs: baseKnobs })

/**
 * Drives a concurrency core in closed loop: each round starts `limit` requests
 * at once, all taking `latency(t, limit)` ms; their samples arrive at the end of
 * the round, followed by a tick. Returns the limit over time.
 */
export const closedLoop = <C, S>(
  policy: Policy.Policy<C, S>,
  config: C,
  latency: (t: number, limit: number) => number,
  untilMillis: number
): { readonly series: Array<readonly [number, number]>; readonly state: S } => {
  const run = recorder(policy, config)
  const { feed } = run
  let t = 0
  while (t < untilMillis) {
    const startedAt = t
    const inRound = run.limit()
    const lat = latency(t, inRound)
    t += lat
    for (let i = 0; i < inRound; i++) {
      feed(sample(t, lat, { startedAt, inflightAtStart: inRound, limitAtStart: inRound, bytes: 1024 }))
    }
    feed(tick(t))
  }
  return { series: run.series, state: run.state() }
}

/** The limit in force at time `t`. */
export const at = (series: ReadonlyArray<readonly [number, number]>, t: number): number => {
  let v = series[0]?.[1] ?? 0
  for (const [time, value] of series) {
    if (time > t) break
    v = value
  }
  return v
}

/** The minimum and maximum limit over `[from, to]`. */
export const range = (series: ReadonlyArray<readonly [number, number]>, from: number, to: number): readonly [number, number] => {
  let lo = at(series, from)
  let hi = lo
  for (const [time, value] of series) {
    if (time < from || time > to) continue
    lo = Math.min(lo, value)
    hi = Math.max(hi, value)
  }
  return [lo, hi]
}

/** The time-weighted mean of the limit over `[from, to]`. */
export const mean = (series: ReadonlyArray<readonly [number, number]>, from: number, to: number): number => {
  let area = 0
  let t = from
  let v = at(series, from)
  for (const [time, value] of series) {
    if (time <= from) continue
    if (time >= to) break
    area += v * (time - t)
    t = time
    v = value
  }
  area += v * (to - t)
  return area / Math.max(1, to - from)
}

/** A store with a latency knee: `base` up to `knee` concurrent requests, then proportional. */
export const knee = (base: number, kneeAt: number) => (limit: number) => base * Math.max(1, limit / kneeAt)

/** A deterministic uniform PRNG for test models (the policies' own mulberry32). */
export const prng = (seed: number) => {
  let s = seed >>> 0
  return (): number => {
    const [u, next] = Rng.next(s)
    s = next
    return u
  }
}

/**
 * Steps `policy` signal by signal, recording the concurrency it proposes over
 * time (shared by the closed-loop drivers below).
 */
const recorder = <C, S>(policy: Policy.Policy<C, S>, config: C) => {
  let state = policy.init(config)
  let limit = policy.initial(state).concurrency ?? 1
  const series: Array<readonly [number, number]> = [[0, limit]]
  return {
    series,
    limit: () => limit,
    state: () => state,
    feed: (signal: SignalBus.Signal) => {
      const next = policy.step(state, signal, signal.at)
      state = next.state
      if (next.proposal?.concurrency !== undefined) {
        limit = next.proposal.concurrency
        series.push([signal.at, limit])
      }
    }
  }
}

/**
 * Drives a concurrency core against an object store shaped like the testkit's,
 * event by event: `limit` upload slots each run batches back to back — an object
 * upload of `size(t)` bytes, then a bodiless manifest upload and verification —
 * every request taking `(baseMillis + bytes / bytesPerMilli) × max(1, inflight /
 * knee) × (1 + 0.1·Exp(1))` (seeded jitter), where `inflight` counts requests of
 * every stage. A tick every 100 ms. Returns the limit over time.
 */
export const objectStoreLoop = <C, S>(
  policy: Policy.Policy<C, S>,
  config: C,
  options: {
    readonly baseMillis: number
    readonly bytesPerMilli: number
    readonly knee: number
    readonly size: (t: number) => number
    readonly untilMillis: number
    readonly seed?: number
    /** The store's slowness over time: every request started at `t` takes `factor(t)` × longer (default 1). */
    readonly factor?: (t: number) => number
    /** The knee over time (default `knee`). */
    readonly kneeAt?: (t: number) => number
    /** Requests started above this many in flight are throttled (503) instead (default never). */
    readonly throttleAbove?: (t: number) => number
  }
): { readonly series: Array<readonly [number, number]>; readonly state: S; readonly delivered: Array<readonly [number, number]> } => {
  const rand = prng(options.seed ?? 1)
  const run = recorder(policy, config)
  const { feed } = run
  type Stage = "object_upload" | "manifest_upload" | "verify"
  interface Request {
    readonly end: number
    readonly start: number
    readonly stage: Stage
    readonly bytes: number
    readonly slotsAtStart: number
    readonly throttled: boolean
  }
  const pending: Array<Request> = []
  const delivered: Array<readonly [number, number]> = []
  let slots = 0
  let nextTick = 100
  const start = (t: number, stage: Stage, bytes: number, slotsAtStart: number) => {
    const throttled = pending.length + 1 > (options.throttleAbove?.(t) ?? Infinity)
    const service = (throttled ? options.baseMillis : options.baseMillis + bytes / options.bytesPerMilli) *
      (options.factor?.(t) ?? 1) *
      Math.max(1, (pending.length + 1) / (options.kneeAt?.(t) ?? options.knee)) * (1 - 0.1 * Math.log(1 - rand()))
    pending.push({ end: t + service, start: t, stage, bytes, slotsAtStart, throttled })
  }
  const fill = (t: number) => {
    while (slots < run.limit()) {
      slots++
      start(t, "object_upload", options.size(t), slots)
    }
  }
  fill(0)
  while (true) {
    pending.sort((x, y) => x.end - y.end)
    const first = pending[0]
    const t = Math.min(first?.end ?? Infinity, nextTick)
    if (t >= options.untilMillis) break
    if (first === undefined || nextTick <= first.end) {
      feed(tick(nextTick))
      nextTick += 100
      fill(t)
      continue
    }
    pending.shift()
    if (first.throttled) {
      // A 503 SlowDown: the batch gives its slot back and is uploaded again
      // when a slot is free (as the pipeline re-queues it).
      feed({ ...failure(t, "Throttled", { startedAt: first.start, limitAtStart: run.limit(), stage: first.stage }), inflightAtStart: first.slotsAtStart })
      slots--
      fill(t)
      continue
    }
    const common = { startedAt: first.start, bytes: first.bytes, stage: first.stage, inflightAtStart: first.slotsAtStart, limitAtStart: run.limit() }
    feed(sample(t, t - first.start, common))
    if (first.stage === "object_upload") delivered.push([t, first.bytes])
    // Later stages begin with the slots busy now (the pipeline's in-flight count at their start).
    if (first.stage === "object_upload") start(t, "manifest_upload", 0, slots)
    else if (first.stage === "manifest_upload") start(t, "verify", 0, slots)
    else {
      slots--
      fill(t)
    }
  }
  return { series: run.series, state: run.state(), delivered }
}
