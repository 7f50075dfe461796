/**
 * Scenario families: scenarios drawn at random from the kinds of stores and
 * degradations archivers meet, so that a policy is judged on a distribution
 * of stores instead of a list of hand-made cases (`sluice-sim generate`,
 * `sluice-sim family`). A seed fixes every draw; tune on one set of seeds and
 * judge on another that never chose anything.
 *
 * **What is drawn** (log-uniform where the range spans a factor of 4 or
 * more, uniform otherwise; every range is here, once):
 *
 * | draw | range |
 * |---|---|
 * | base latency | {@link RANGES}`.baseLatencyMillis` |
 * | per-request bandwidth | {@link RANGES}`.bandwidthMiBps` |
 * | knee | {@link RANGES}`.knee` |
 * | how requests above the knee queue (`kneeQueue` `"arrival"` with probability `.arrivalQueueShare`, else `"shared"`) | `.arrivalQueueShare` |
 * | jitter | {@link RANGES}`.jitter` |
 * | throttling above (× knee), its probability | {@link RANGES}`.throttleAboveKnees`, `.throttleProbability` |
 * | record size, partitions | `.recordBytes`, `.partitions` |
 * | memory budget | `.memoryBudgetMiB` |
 * | batch bytes | `.batchMiB` |
 * | inflow, as a share of the degraded store's oracle capacity (at most {@link MAX_INFLOW_SHARE} of the base store's, and {@link MAX_INFLOW_BYTES_PER_SECOND}) | `.degradedShare` |
 * | slowdown factor (latency × f, bandwidth ÷ f) | `.slowdown` |
 *
 * **The degradations** ({@link kinds}), from 40 s to 120 s of a 180 s run
 * unless said: `slower` (the store f× slower per request); `slower-throttle`
 * (f× slower and throttling above a low in-flight, `.lowThrottleAbove`, which
 * is then all the store serves at once: `Store.servingLimit`);
 * `knee-drop` (the knee ÷ `.kneeDrop`, and up to 3× slower); `rate-limit`
 * (a rate limit appears: `.rateLimitShare` of the uploads per second the
 * oracle needs at the base store's best, at least what carries the inflow);
 * `errors-in-slowdown` (f× slower, and `.errorRate` of requests fail);
 * `flapping` (f× slower for `.flapSeconds`, at least {@link FLAP_UPLOADS} slow
 * uploads, then normal as long, alternating; the last phase runs to the
 * degradation's end instead of a short one after it);
 * `ramp` (slower in three steps, f^⅓, f^⅔, f); `mixed` (each scenario one of
 * the others). Only scenarios where the oracle keeps up with the inflow in at
 * least one degraded phase are kept (the others judge nothing about a policy).
 *
 * @since 0.3.0
 */
import { Effect, Schema } from "effect"
import * as Oracle from "./Oracle.ts"
import * as Rng from "./Rng.ts"
import * as Runner from "./Runner.ts"
import * as Scenario from "./Scenario.ts"
import * as Store from "./Store.ts"
import type { KneeQueue, StoreParams } from "./Store.ts"
import * as Summary from "./Summary.ts"
import { quantile } from "./Trace.ts"

/**
 * A family could not be drawn: too few of its draws are judgeable (the
 * message says how many of how many).
 *
 * @since 0.3.0
 */
export class FamilyError extends Schema.TaggedError<FamilyError>()("FamilyError", {
  message: Schema.String
}) {}

/**
 * The degradation kinds a family draws from.
 *
 * @since 0.3.0
 */
export const kinds = ["slower", "slower-throttle", "knee-drop", "rate-limit", "errors-in-slowdown", "flapping", "ramp", "mixed"] as const

/**
 * A family name.
 *
 * @since 0.3.0
 */
export type Kind = typeof kinds[number]

/**
 * Every range a family draws from: `[low, high]`.
 *
 * @since 0.3.0
 */
export const RANGES = {
  /** S3 in-region answers small requests in 5–50 ms. */
  baseLatencyMillis: [5, 50],
  /** One S3 connection moves 16–128 MiB/s. */
  bandwidthMiBps: [16, 128],
  /** In-flight where a store's throughput stops growing: a small server to a prefix-partitioned bucket. */
  knee: [8, 96],
  /**
   * The share of stores that queue above their knee in arrival order (a
   * worker pool) rather than slowing every request (processor sharing): both
   * exist (MinIO's `requests_max`; a CPU-bound server), and neither is known
   * to dominate.
   */
  arrivalQueueShare: 0.5,
  jitter: [0, 0.3],
  /** Where a healthy store throttles, as a multiple of its knee (above the knee: it is already flat). */
  throttleAboveKnees: [1.5, 3],
  throttleProbability: [0.3, 0.9],
  recordBytes: [100, 2000],
  partitions: [4, 32],
  memoryBudgetMiB: [256, 2048],
  batchMiB: [4, 32],
  /** Inflow ÷ the degraded store's capacity: a degradation a policy can ride out, with this margin. */
  degradedShare: [0.3, 0.9],
  /** How much slower a degraded store is per request. */
  slowdown: [3, 20],
  /** `slower-throttle`: the in-flight above which the degraded store throttles. */
  lowThrottleAbove: [4, 16],
  /** `knee-drop`: the knee is divided by this. */
  kneeDrop: [2, 8],
  /** `rate-limit`: the limit, as a share of the uploads per second the oracle uses on the base store. */
  rateLimitShare: [0.3, 0.8],
  /** `errors-in-slowdown`: share of requests that fail. */
  errorRate: [0.02, 0.2],
  /** `flapping`: seconds degraded, then as many normal (at least {@link FLAP_UPLOADS} slow uploads). */
  flapSeconds: [5, 15]
} as const

/**
 * A flapping store's phases last at least this many of its slow phase's object
 * uploads: one to see the change, one to act, two to measure what the action
 * bought. The oracle serves a phase's capacity from its first second, and no
 * pipeline delivers anything of a new regime before one upload of it
 * completes: at 5–14 s, phases of stores 20× slower were shorter than two
 * uploads, and every policy, the default included, was judged 0 in them (the
 * worst cases of the first family test set, seed 2).
 */
export const FLAP_UPLOADS = 4

/** Inflow at most this share of the base store's capacity: an archiver provisioned with headroom. */
export const MAX_INFLOW_SHARE = 0.7

/** Inflow at most (bytes/s): one archiver instance's share of a topic, and a simulation of 180 s that runs in seconds. */
export const MAX_INFLOW_BYTES_PER_SECOND = 500e6

/** The run's shape (seconds): degraded from `DEGRADED_FROM` to `DEGRADED_TO` of `DURATION`. */
const DURATION = 180
const DEGRADED_FROM = 40
const DEGRADED_TO = 120

/** Draws per kept scenario at most: a family whose draws the oracle never keeps up with fails instead of looping. */
const MAX_DRAWS_PER_SCENARIO = 50

const uniform = (rng: Rng.Rng, [lo, hi]: readonly [number, number]): number => lo + (hi - lo) * rng.uniform()
const logUniform = (rng: Rng.Rng, [lo, hi]: readonly [number, number]): number => lo * (hi / lo) ** rng.uniform()
const draw = (rng: Rng.Rng, range: readonly [number, number]): number => (range[1] / range[0] >= 4 ? logUniform(rng, range) : uniform(rng, range))
const int = (rng: Rng.Rng, range: readonly [number, number]): number => Math.round(draw(rng, range))
const r3 = (x: number): number => Math.round(x * 1000) / 1000

/** A store change, in a scenario file's terms. */
type StoreChange = Record<string, number | string | null>

const storeJson = (p: Omit<StoreParams, "jitter"> & { readonly jitter?: number }): StoreChange => ({
  baseLatency: `${r3(p.baseLatencyMillis)} millis`,
  bandwidthPerRequest: Math.round(p.bandwidthBytesPerSecond),
  knee: p.knee,
  kneeQueue: p.kneeQueue,
  ...(p.jitter === undefined ? {} : { jitter: r3(p.jitter) }),
  throttleAbove: p.throttleAbove,
  throttleProbability: r3(p.throttleProbability),
  errorRate: r3(p.errorRate),
  rateLimit: p.rateLimit === null ? null : r3(p.rateLimit)
})

const slower = (p: StoreParams, f: number): StoreParams => ({ ...p, baseLatencyMillis: p.baseLatencyMillis * f, bandwidthBytesPerSecond: p.bandwidthBytesPerSecond / f })

/** The events of one degradation kind, on `base` (times in seconds). */
const degrade = (
  kind: Exclude<Kind, "mixed">,
  rng: Rng.Rng,
  base: StoreParams,
  bestUploadsPerSecond: number,
  objectBytes: number
): Array<{ readonly at: number; readonly params: StoreParams }> => {
  const f = draw(rng, RANGES.slowdown)
  const back = { at: DEGRADED_TO, params: base }
  switch (kind) {
    case "slower":
      return [{ at: DEGRADED_FROM, params: slower(base, f) }, back]
    case "slower-throttle":
      return [{ at: DEGRADED_FROM, params: { ...slower(base, f), throttleAbove: int(rng, RANGES.lowThrottleAbove), throttleProbability: r3(uniform(rng, RANGES.throttleProbability)) } }, back]
    case "knee-drop": {
      const knee = Math.max(1, Math.round(base.knee / draw(rng, RANGES.kneeDrop)))
      return [{ at: DEGRADED_FROM, params: { ...slower(base, uniform(rng, [1, 3])), knee, throttleAbove: base.throttleAbove === null ? null : Math.max(knee + 1, Math.round(base.throttleAbove / 2)) } }, back]
    }
    case "rate-limit": {
      const limit = Math.max(1, bestUploadsPerSecond * uniform(rng, RANGES.rateLimitShare))
      return [{ at: DEGRADED_FROM, params: { ...base, rateLimit: r3(limit) } }, { at: DEGRADED_TO, params: { ...base, rateLimit: null } }]
    }
    case "errors-in-slowdown":
      return [{ at: DEGRADED_FROM, params: { ...slower(base, Math.min(f, 10)), errorRate: r3(uniform(rng, RANGES.errorRate)) } }, back]
    case "flapping": {
      const slowUploadSeconds = Store.unloadedMillis(slower(base, f), objectBytes) / 1000
      const period = Math.max(Math.round(uniform(rng, RANGES.flapSeconds)), Math.ceil(FLAP_UPLOADS * slowUploadSeconds))
      const out: Array<{ readonly at: number; readonly params: StoreParams }> = []
      // Whole phases only: one cut short by the degradation's end would be too short to judge (the last is longer instead).
      for (let at = DEGRADED_FROM, on = true; at + period <= DEGRADED_TO; at += period, on = !on) out.push({ at, params: on ? slower(base, f) : base })
      out.push(back)
      return out
    }
    case "ramp":
      return [
        { at: DEGRADED_FROM, params: slower(base, f ** (1 / 3)) },
        { at: DEGRADED_FROM + (DEGRADED_TO - DEGRADED_FROM) / 3, params: slower(base, f ** (2 / 3)) },
        { at: DEGRADED_FROM + (2 * (DEGRADED_TO - DEGRADED_FROM)) / 3, params: slower(base, f) },
        back
      ]
  }
}

/**
 * One scenario of `kind` drawn from `rng` (a scenario file's JSON), named
 * `name`; the oracle may not keep up in any degraded phase (see
 * {@link generate}, which keeps only those where it does).
 *
 * @since 0.3.0
 */
export const drawScenario = (kind: Exclude<Kind, "mixed">, rng: Rng.Rng, name: string): Record<string, unknown> => {
  const knee = int(rng, RANGES.knee)
  const base: StoreParams = {
    baseLatencyMillis: r3(draw(rng, RANGES.baseLatencyMillis)),
    bandwidthBytesPerSecond: Math.round(draw(rng, RANGES.bandwidthMiBps) * 1048576),
    knee,
    kneeQueue: "shared",
    jitter: r3(uniform(rng, RANGES.jitter)),
    throttleAbove: Math.round(knee * uniform(rng, RANGES.throttleAboveKnees)),
    throttleProbability: r3(uniform(rng, RANGES.throttleProbability)),
    errorRate: 0,
    rateLimit: null
  }
  const recordBytes = int(rng, RANGES.recordBytes)
  const partitions = int(rng, RANGES.partitions)
  const memoryBudget = Math.round(draw(rng, RANGES.memoryBudgetMiB)) * 1048576
  const batchBytes = Math.round(draw(rng, RANGES.batchMiB)) * 1048576
  const world: Oracle.OracleWorld = { recordBytes, budgetBytes: memoryBudget, partitions, maxAgeMillis: 5000 }
  const capacity = Oracle.capacity(base, world, Infinity, Infinity)
  const objectBytes = Math.min(batchBytes, Oracle.largestObjectBytes(world, base.knee, Infinity, Infinity))
  const events = degrade(kind, rng, base, capacity / Math.max(1, objectBytes), objectBytes)
  // The inflow: a share of what the degraded store can carry (so the oracle keeps up there), within the base store's headroom and an archiver's size.
  const degraded = Math.min(...events.filter((e) => e.at < DEGRADED_TO).map((e) => Oracle.capacity(e.params, world, Infinity, Infinity)))
  const inflow = Math.min(MAX_INFLOW_BYTES_PER_SECOND, capacity * MAX_INFLOW_SHARE, degraded * uniform(rng, RANGES.degradedShare))
  const seed = Math.floor(rng.uniform() * 2 ** 31)
  // Drawn last: every other parameter is what it was for the same draws before stores queued in arrival order too.
  const kneeQueue: KneeQueue = rng.uniform() < RANGES.arrivalQueueShare ? "arrival" : "shared"
  return {
    name,
    description: `family ${kind}: drawn by Family.drawScenario (@sluice/testkit)`,
    seed,
    duration: `${DURATION} seconds`,
    source: { recordsPerSecond: Math.round(inflow / recordBytes), recordBytes, partitions },
    store: { ...storeJson(base), kneeQueue },
    pipeline: { memoryBudget, batch: { records: Math.max(50_000, Math.ceil(batchBytes / recordBytes)), bytes: batchBytes, maxAge: "5 seconds" } },
    // The store queues as it was drawn in every phase (the events were drawn before it, from the base's default).
    events: events.map((e) => ({ at: `${e.at} seconds`, store: storeJson({ ...e.params, kneeQueue, jitter: undefined }) }))
  }
}

/**
 * Whether the oracle keeps up with the inflow in at least one degraded phase
 * of `scenario` (the phases `Summary` judges for `worstPhaseGoodput`).
 *
 * @since 0.3.0
 */
export const judgeable = (scenario: Scenario.Scenario): boolean => {
  const world = Runner.oracleWorld(scenario)
  const base = Runner.storeParams(scenario.store)
  const inflow = scenario.source.recordsPerSecond * scenario.source.recordBytes
  let params = base
  for (const e of [...scenario.events].sort((a, b) => a.at - b.at)) {
    if (e.store !== undefined) params = { ...params, ...Runner.storeChange(e.store) }
    if (Summary.isDegraded(params, base, world) && Oracle.capacity(params, world, Infinity, inflow) >= inflow) return true
  }
  return false
}

/**
 * `count` scenarios of `kind` from `seed`, each decoded (so each is a valid
 * scenario file) and judgeable; names `KIND-SEED-I`. Fails if the family
 * cannot find `count` judgeable scenarios in 50 draws per scenario
 * (`MAX_DRAWS_PER_SCENARIO`).
 *
 * @since 0.3.0
 */
export const generate = (kind: Kind, count: number, seed: number) =>
  Effect.gen(function*() {
    const rng = Rng.make(seed)
    const out: Array<Record<string, unknown>> = []
    for (let draws = 0; out.length < count; draws++) {
      if (draws >= count * MAX_DRAWS_PER_SCENARIO) {
        return yield* new FamilyError({ message: `family ${kind}: ${out.length} of ${count} judgeable scenarios in ${draws} draws` })
      }
      const k = kind === "mixed" ? (kinds[Math.floor(rng.uniform() * (kinds.length - 1))] ?? "slower") : kind
      const raw = drawScenario(k as Exclude<Kind, "mixed">, rng, `${kind}-${seed}-${out.length}`)
      const scenario = yield* Scenario.decode(raw)
      if (judgeable(scenario)) out.push(raw)
    }
    return out
  })

/**
 * What one policy did on a family: the distribution of its per-scenario
 * results over the scenarios with a degraded phase the oracle keeps up with.
 *
 * @since 0.3.0
 */
export interface Distribution {
  readonly policy: string
  /** Scenarios run. */
  readonly scenarios: number
  /** Of them, with a judged phase (`worstPhaseGoodput` not null). */
  readonly judged: number
  /** Share of the judged whose worst degraded phase is ≥ {@link GOOD_PHASE}. */
  readonly goodShare: number
  readonly worstPhaseP10: number | null
  readonly worstPhaseMedian: number | null
  readonly maxLagP90: number | null
  readonly maxLagMax: number | null
  readonly throttleRateP90: number | null
  /** The lowest worst phases: `[name, worstPhaseGoodput, maxLagSeconds]`, at most {@link WORST_SHOWN}. */
  readonly worst: ReadonlyArray<readonly [string, number, number]>
}

/** A degraded phase kept at this share of the oracle is a good one (the bar). */
export const GOOD_PHASE = 0.8

/** Worst cases named in a distribution. */
export const WORST_SHOWN = 5


/**
 * The distribution of `summaries` (one policy's runs of a family).
 *
 * @since 0.3.0
 */
export const distribution = (
  policy: string,
  summaries: ReadonlyArray<Pick<Summary.Summary, "scenario" | "worstPhaseGoodput" | "maxLagSeconds" | "throttleRate">>
): Distribution => {
  const judged = summaries.filter((s): s is typeof s & { readonly worstPhaseGoodput: number } => s.worstPhaseGoodput !== null)
  const worst = judged.map((s) => s.worstPhaseGoodput)
  const lags = summaries.map((s) => s.maxLagSeconds)
  return {
    policy,
    scenarios: summaries.length,
    judged: judged.length,
    goodShare: judged.length === 0 ? 0 : r3(worst.filter((w) => w >= GOOD_PHASE).length / judged.length),
    worstPhaseP10: quantile(worst, 0.1),
    worstPhaseMedian: quantile(worst, 0.5),
    maxLagP90: quantile(lags, 0.9),
    maxLagMax: lags.length === 0 ? null : Math.max(...lags),
    throttleRateP90: quantile(summaries.map((s) => s.throttleRate), 0.9),
    worst: [...judged].sort((a, b) => a.worstPhaseGoodput - b.worstPhaseGoodput).slice(0, WORST_SHOWN).map((s) => [s.scenario, s.worstPhaseGoodput, s.maxLagSeconds] as const)
  }
}
