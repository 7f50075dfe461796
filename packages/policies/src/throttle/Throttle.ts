/**
 * The throttle policy: what to do when the store says "slow down".
 *
 * Knobs: **concurrency**, **rate** and the **retry schedule**
 * (`CurrentRetryPolicy`). It only constrains during a throttle episode and hands
 * control back (withdraws its proposals) once recovered, so it composes with
 * any concurrency controller under the min-wins combiner.
 *
 * - On a `Throttled` failure (from a request that began after the last cut):
 *   concurrency ×`beta` (from the limit the request saw) and the request rate
 *   cut CUBIC-style (`CubicRate`, the AWS SDK's adaptive mode). Retries are
 *   dispatched under the cut rate: never at the rate that was throttled. An
 *   episode's first cut may be gentler (`firstBeta`) and leave the rate
 *   (`rateOnFirstCut: false`), for use beside a controller that cuts and
 *   restores in-flight on throttles itself (not the default: see the README).
 *   A throttle at or above the lowest in-flight this episode (or, for an
 *   episode's first, the last episode; not a 429) found throttled cuts to just
 *   below that level instead (`cutTo`), never deeper than the ×`beta`
 *   (×`firstBeta`) cut.
 * - On success: concurrency +`STEP` per round (`step / limit` per sample); the rate climbs its cubic.
 * - **Restore probe** (BBR): after `restoreAfterMillis` without a throttle, the
 *   concurrency limit is restored to the value in force before the episode and
 *   withdrawn, and the rate limit is released (also after `RATE_RELEASE_AFTER_MILLIS`
 *   once back at its pre-throttle maximum, whichever comes first) — when the
 *   cut limit costs something: the pipeline's batches filled the concurrency
 *   in force at least `RESTORE_BUSY_SHARE` of that time (the `Inflight` and
 *   `Tick` signals). A limit the pipeline seldom fills is not worth the
 *   throttles a probe above it costs (RFC 7661: a window that is not used is
 *   not grown); the time is measured again, window by window, until it is.
 * - `Transient` and `Fatal` failures never cut anything. `Fatal` is never
 *   retried; Retry-After is always honoured.
 *
 * Modes: `open` (no constraint), `backoff` (cut, waiting for successes),
 * `recovering` (growing back).
 *
 * @since 0.1.0
 */
import { Config, Field, Policy, RetryPolicy } from "@sluice/core"
import type { Failure, Knob, SignalBus } from "@sluice/core"
import { Effect, Layer, Schema } from "effect"
import * as RateCap from "../internal/RateCap.ts"
import * as Rng from "../internal/Rng.ts"
import * as ThrottleEpisode from "../internal/ThrottleEpisode.ts"
import * as CubicRate from "./CubicRate.ts"
import type { ThrottleState, BusyWindow } from "../internal/throttle/State.ts"

type Proposal = Knob.Proposal

/*
 * The throttle policy's constants (issue 26: 11 fields of its config became
 * these, their defaults unchanged).
 */
/** Concurrency regained per round (`STEP / limit` per success): TCP's additive increase of one per round trip. */
const STEP = 1
/** The CUBIC rate's cut, scale, send-rate smoothing and least rate (requests/s): the AWS SDK's adaptive retry (`DefaultRateLimiter`: 0.7, 0.4, 0.8, 0.5). */
const RATE_BETA = 0.7
const RATE_SCALE = 0.4
const RATE_SMOOTH = 0.8
const MIN_RATE = 0.5
/** Quiet time before the rate limit is released. Swept to 10 s on the family train set: p10 and median ±0, every shipped scenario equal — no measured reason for 30 s. */
const RATE_RELEASE_AFTER_MILLIS = 30_000
/** Successes at the level just below the episode's throttle level before growing above it again. Swept to 36 on the family train set: p10 and median ±0; wide-throttle-storm loses 0.005 — no measured reason for 72. */
const PROBE_ABOVE_AFTER = 72
/**
 * The timed restore waits until, over `restoreAfterMillis`, batches filled the
 * concurrency in force at least this share of the time (no `Inflight`
 * signals: it restores regardless). Swept to 0 (the rule off) on the family train set: p10 and median ±0, every shipped scenario equal — the rule has not shown what it buys in the default composition.
 */
const RESTORE_BUSY_SHARE = 0.25
/** First retry delay of a transient failure: the AWS SDK's `DEFAULT_RETRY_DELAY_BASE` (a throttle's is `throttleRetryBaseMillis`, config: the delay a throttling store asks for varies by store). */
const RETRY_BASE_MILLIS = 100
/** Seed of the retry jitter when the pipeline gives no batch key (any fixed value: runs repeat). */
const SEED = 7

/**
 * The throttle policy's config. Defaults and ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `floor` | 1 | ≥ 1 | concurrency never cut below |
 * | `ceiling` | 1024 | ≥ floor | concurrency never restored above |
 * | `beta` | 0.5 | 0.1 – 0.95 | concurrency cut per throttle round |
 * | `firstBeta` | 0.5 | 0.1 – 0.95 | concurrency cut of an episode's first round (setting `beta` alone leaves it at 0.5) |
 * | `rateOnFirstCut` | true |  | an episode's first cut also cuts the rate; false: only a round throttled under the cut limit does |
 * | `restoreAfterMillis` | 10 s | ≥ 0 | quiet time before restoring the pre-throttle limit |
 * | `throttleRetryBaseMillis` | 500 ms | ≥ 0 | first retry delay of a throttle (the AWS SDK's `THROTTLING_RETRY_DELAY_BASE`) |
 * | `retryMaxMillis` | 20 s | ≥ 0 | longest backoff (Retry-After may be longer; the AWS SDK's `MAXIMUM_RETRY_DELAY`) |
 * | `maxAttempts` | 100 | ≥ 1 | give up after this many attempts of one batch (the core's default budget) |
 * | `maxElapsedMillis` | 15 min | > 0 | give up once one batch has been failing this long (the core's default budget) |
 * | `restore` | true |  | the restore probe (timed, storm-cleared, and the rate release); false disables it (`withoutProbe`, the ablation): concurrency then only regrows `+STEP` per round above the throttled level and the rate limit is never released |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const ThrottleConfig = Schema.Struct({
  floor: Field.int(1, 1).pipe(Field.doc("concurrency never cut below")),
  ceiling: Field.int(1024, 1).pipe(Field.doc("concurrency never restored above", { range: "≥ floor" })),
  beta: Field.number(0.5, { minimum: 0.1, maximum: 0.95 }).pipe(Field.doc("concurrency cut per throttle round")),
  firstBeta: Field.number(0.5, { minimum: 0.1, maximum: 0.95 }).pipe(Field.doc("concurrency cut of an episode's first round (setting `beta` alone leaves it at 0.5)")),
  rateOnFirstCut: Field.boolean(true).pipe(Field.doc("an episode's first cut also cuts the rate; false: only a round throttled under the cut limit does")),
  restoreAfterMillis: Field.millis("10 seconds").pipe(Field.doc("quiet time before restoring the pre-throttle limit")),
  throttleRetryBaseMillis: Field.millis(500).pipe(Field.doc("first retry delay of a throttle (the AWS SDK's `THROTTLING_RETRY_DELAY_BASE`)")),
  retryMaxMillis: Field.millis("20 seconds").pipe(Field.doc("longest backoff (Retry-After may be longer; the AWS SDK's `MAXIMUM_RETRY_DELAY`)")),
  maxAttempts: Field.int(RetryPolicy.defaultBudget.maxAttempts, 1).pipe(Field.doc("give up after this many attempts of one batch (the core's default budget)")),
  maxElapsedMillis: Field.positiveMillis(RetryPolicy.defaultBudget.maxElapsedMillis).pipe(Field.doc("give up once one batch has been failing this long (the core's default budget)")),
  restore: Field.boolean(true).pipe(Field.doc("the restore probe (timed, storm-cleared, and the rate release); false disables it (`withoutProbe`, the ablation): concurrency then only regrows `+STEP` per round above the throttled level and the rate limit is never released"))
}).check(Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]))

/**
 * `ThrottleConfig` as a type: what the `ThrottleConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type ThrottleConfig = typeof ThrottleConfig.Type

/**
 * The throttle policy's modes.
 *
 * @since 0.1.0
 */
export type ThrottleMode = "open" | "backoff" | "recovering"

/**
 * A restore window beginning at `since`, nothing observed yet: at a cut, no
 * evidence (`carried: true`); after a window measured idle, that window's
 * verdict (`carried: false`) until this one observes something.
 */
const emptyWindow = (since: number, carried = true): BusyWindow => ({ since, observed: 0, full: 0, carried })

const rateConfig = (c: ThrottleConfig): CubicRate.CubicRateConfig => ({
  beta: RATE_BETA,
  scale: RATE_SCALE,
  smooth: RATE_SMOOTH,
  minRate: MIN_RATE,
  // The rate release is part of the restore probe.
  releaseAfterMillis: c.restore ? RATE_RELEASE_AFTER_MILLIS : Infinity
})

const proposalOf = (s: ThrottleState): Proposal => ({
  concurrency: s.mode === "open" ? undefined : Math.floor(s.limit),
  rate: CubicRate.rate(s.rate) ?? undefined
})

const emit = (prev: ThrottleState, next: ThrottleState): Policy.Step<ThrottleState> => {
  const p = proposalOf(next)
  const rateOf = (q: Proposal) => (q.rate === undefined || q.rate === null ? undefined : Math.round(q.rate * 1000) / 1000)
  if (p.concurrency === prev.proposed.concurrency && rateOf(p) === rateOf(prev.proposed)) return { state: next }
  return { state: { ...next, proposed: p }, proposal: p }
}

const onThrottle = (s: ThrottleState, f: SignalBus.FailureSignal, now: number): ThrottleState => {
  const c = s.config
  const counted = {
    ...s,
    throttles: s.throttles + 1,
    episode: ThrottleEpisode.throttled(s.episode, c.floor, f.inflightAtStart, now)
  }
  // One cut per round: a request that began before the last cut, or while more
  // were in flight than the cut limit allows (a later stage of an upload admitted
  // before the cut), measured the old regime. But the cut is taken from the
  // round's lowest throttled in-flight, whichever of its throttles answers
  // first: one from below the count the cut was taken from scales the cut down
  // to it. (A restore probe's 16 requests on a store that serves one at a time
  // answer their throttles at once in random order: the first, from 16 in
  // flight, cut to 8, and the throttle from 2 in flight was dropped, so the
  // pipeline kept 8 in flight until the queue drained, 8 s; the storm test.
  // In the default composition: wide-throttle-storm 0.836 → 0.914 and
  // trap-throttle-floor 0.829 → 0.868 whole-run goodput; the family sets ±0.)
  if (f.startedAt < s.lastCutAt || (s.mode !== "open" && f.inflightAtStart > s.limit)) {
    const at = Math.max(c.floor, f.inflightAtStart)
    if (s.mode === "open" || at >= s.cutFrom) return counted
    return { ...counted, limit: Math.max(c.floor, (s.limit * at) / s.cutFrom), cutFrom: at }
  }
  // Cut from what was in flight, not from an unused limit (RFC 5681: ssthresh =
  // FlightSize / 2): a limit of 34 with 12 in flight, cut to 17, still let the
  // pipeline climb back over the store's 12 and be throttled again.
  const limitSeen = s.mode === "open" ? f.limitAtStart : Math.min(s.limit, f.limitAtStart)
  const from = Math.min(limitSeen, Math.max(c.floor, f.inflightAtStart))
  return {
    ...counted,
    mode: "backoff",
    saved: s.mode === "open" ? Math.max(c.floor, Math.min(c.ceiling, f.limitAtStart)) : s.saved,
    limit: cutTo(s, f, from),
    lastCutAt: now,
    cutFrom: from,
    plateau: 0,
    busy: emptyWindow(now),
    // With `rateOnFirstCut: false` an episode's first cut is concurrency only:
    // one round of throttles is a probe crossing the store's level, and the
    // concurrency cut answers it; a round throttled under the cut limit says
    // concurrency is not enough, and then the rate is cut. (The rate cut,
    // 0.7 × a completion rate measured in 0.5 s buckets and capped at 2× it,
    // fell with the completions the cut itself delayed: on a store 10× slower
    // it held the ~55 uploads needed to 8–26 requests/s for ~10 s.)
    // A throttle after a quiet `restoreAfterMillis` is a first round too: the
    // restore that window would have brought was only withheld because the
    // cut limit cost nothing (`RESTORE_BUSY_SHARE`), and the throttle is the
    // plateau's probe crossing the known level, not a sign that concurrency
    // is not enough (seed 11 of throttle-storm: cut to 1.5 requests/s for 10 s).
    rate: CubicRate.update(rateConfig(c), s.rate, now, c.rateOnFirstCut || (s.mode !== "open" && !quietBefore(s, now)))
  }
}

/**
 * The level a throttle confirms (`Infinity`: none), and the cut it gets.
 *
 * A throttle at or above the level this episode already found throttled
 * confirms that level rather than finding a new one: the limit goes to just
 * below it (the level below is known clean), not ×`beta`. A throttle below it
 * means the level moved: the usual multiplicative cut.
 *
 * The level outlives its episode (`ThrottleEpisode.lastLevel`, CUBIC's
 * `W_max`): the restore probe ends an episode by going back above the level,
 * and the throttle that answers it, at or above the level the last episode
 * found, confirms that level again — so the new episode's first cut goes to
 * just below it too, where it cut ×`firstBeta` from what was in flight, under
 * a level it had already measured. A 429 confirms no level: a request rate,
 * not in-flight, is what the store caps (`rate`). On the family train set
 * (mixed, seed 2, 200) this buys max-lag p90 14.9 → 14.1 s and p10 0.904 →
 * 0.906, the slower-throttle stores whose level sits at a few requests
 * (`mixed-2-2`: 0.923 → 0.989, lag 16.5 → 9.4 s; a cut from 6 in flight to 4
 * cost a fifth of a store that serves 5); applied to 429s too, `mixed-2-120`
 * (a rate limit that appears) fell 0.996 → 0.931. Judged on the test set
 * (seed 3): p10 0.873 → 0.890, lag p90 15.4 → 14.5 s; on a fresh one (seed 5)
 * lag p90 15.2 → 14.7 s, p10 equal; `slow-store-10x-throttle` 0.960 → 0.997
 * (docs/design/generalization.md, 2026-12-06, a level remembered).
 */
const cutTo = (s: ThrottleState, f: SignalBus.FailureSignal, from: number): number => {
  const c = s.config
  const beta = s.mode === "open" ? c.firstBeta : c.beta
  const level = s.mode !== "open"
    ? s.episode.throttledAt
    : RateCap.capsRequestRate(f.failure) ? Infinity : s.episode.lastLevel
  return f.inflightAtStart >= level
    ? Math.max(c.floor, from * beta, Math.min(from - 1, level - 1))
    : Math.max(c.floor, from * beta)
}

/** No throttle for a whole `restoreAfterMillis` (with the restore probe on: the ablation keeps the old rule). */
const quietBefore = (s: ThrottleState, now: number): boolean =>
  s.config.restore && now - s.episode.lastThrottleAt >= s.config.restoreAfterMillis

/** A success counts toward the episode's end only while one is open (`ThrottleEpisode.succeeded`). */
const clearedAbove = (s: ThrottleState, startedAt: number, inflightAtStart: number): ThrottleState =>
  s.mode === "open" ? s : { ...s, episode: ThrottleEpisode.succeeded(s.episode, startedAt, inflightAtStart) }

const onSuccess = (s: ThrottleState, startedAt: number, now: number, inflightAtStart: number = 0): ThrottleState => {
  const c = s.config
  const rate = CubicRate.update(rateConfig(c), s.rate, now, false)
  if (s.mode === "open" || startedAt < s.lastCutAt) return { ...s, rate }
  // Regrowth toward the level known to throttle (CUBIC's W_max): the level
  // just below the lowest throttled in-flight count is known to be clean, so it
  // is regained at once (+`STEP` per success: ×2 per round); there the limit
  // plateaus for `PROBE_ABOVE_AFTER` successes before probing above it again
  // (+`STEP` per round), so probing the known-bad level costs at most a
  // throttle or two per plateau instead of one per round.
  const known = Math.max(c.floor, s.episode.throttledAt - 1)
  const below = s.limit < known
  const plateau = below ? 0 : s.plateau + 1
  const limit = Math.min(
    c.ceiling,
    below
      ? Math.min(known, s.limit + STEP)
      : plateau >= PROBE_ABOVE_AFTER && filled(s)
      ? s.limit + STEP / Math.max(1, s.limit)
      : s.limit
  )
  const next = clearedAbove({ ...s, plateau }, startedAt, inflightAtStart)
  return limit >= s.saved
    ? { ...next, rate, mode: "open", limit, episode: ThrottleEpisode.end(next.episode), plateau: 0 }
    : { ...next, rate, mode: "recovering", limit }
}

const restore = (s: ThrottleState, now: number): ThrottleState => {
  if (!s.config.restore) return s
  // Restore after `restoreAfterMillis` without a throttle, or as soon as the
  // storm has cleared (`ThrottleEpisode.cleared`).
  const cleared = s.mode !== "open" && ThrottleEpisode.cleared(s.episode)
  // Cleared from above the refused level: the store took more than it refused,
  // so the cut goes whatever it costs. Cleared at the floor (an outage that
  // ended): the store takes requests again, which says nothing of a level, so
  // the cut goes only when it costs something, as at the timed restore — but on
  // the window so far, not a whole one: a backlog held behind the floor fills it
  // at once, and a trickle that never fills it keeps it. Only the first window
  // after the last cut is judged so far; once one has been measured idle, the
  // windows after it are judged whole, as at the timed restore. (Judged so far
  // at every signal, a trickle's cut went at the first short burst early in a
  // later window: two batches the cut rate had held back, released together,
  // filled 3 of the new window's first 10 observations; adapters-s3
  // PolicyReaction, 2 runs in 8 on a loaded machine.)
  const clearedAbove = cleared && !s.episode.atFloor
  const costs = cleared && s.busy.carried ? filled(s) : worthProbing(s, now)
  if (!cleared && now - s.episode.lastThrottleAt < s.config.restoreAfterMillis) return s
  // BBR-style restore of both knobs: a rate cut during an episode that ended
  // must not keep the pipeline slow (a cubic from a tiny measured rate takes
  // far longer than the episode did).
  // The measured send rate is kept: the next episode cuts from it (a reset
  // measurement made the next throttle cut the rate to `MIN_RATE`).
  const rate = CubicRate.rate(s.rate) === null ? s.rate : { ...s.rate, enabled: false }
  if (!clearedAbove && s.mode !== "open" && !costs) {
    // The concurrency cut cost nothing over a full window: it stays (a probe
    // above it would cost throttles for nothing) and the next window is
    // measured. The rate is released all the same: under the cut concurrency
    // it only delays the bursts the pipeline sends.
    // A new window starts from this one's verdict (idle), not from "no
    // evidence": a signal between the reset and the next `Inflight` (a sample
    // just after the Tick that ended the window) restored a trickle's cut on
    // a loaded machine (adapters-s3 PolicyReaction).
    const window = now - s.busy.since >= s.config.restoreAfterMillis ? emptyWindow(now, false) : s.busy
    return window === s.busy && rate === s.rate ? s : { ...s, rate, busy: window }
  }
  if (s.mode !== "open") return { ...s, mode: "open", limit: s.saved, rate, episode: ThrottleEpisode.end(s.episode) }
  return rate === s.rate ? s : { ...s, rate }
}

/**
 * The timed restore probes above a level the store throttled: worth its
 * throttles only when the cut limit costs something. Over a whole window
 * (`restoreAfterMillis`, begun at the cut: `restore` has already waited that
 * long since the last throttle), batches filled the concurrency in force at
 * least `RESTORE_BUSY_SHARE` of the time (no observations: no evidence, probe).
 */
const worthProbing = (s: ThrottleState, now: number): boolean =>
  now - s.busy.since >= s.config.restoreAfterMillis && filled(s)

/** Batches have filled the concurrency in force at least `RESTORE_BUSY_SHARE` of the window so far (no observations yet: the verdict it carried). */
const filled = (s: ThrottleState): boolean =>
  s.busy.observed === 0 ? s.busy.carried : s.busy.full >= RESTORE_BUSY_SHARE * s.busy.observed

const observeInflight = (s: ThrottleState, batches: number): ThrottleState =>
  s.mode === "open"
    ? s
    : { ...s, busy: { ...s.busy, observed: s.busy.observed + 1, full: s.busy.full + (batches >= s.knob ? 1 : 0) } }

/**
 * The throttle policy core.
 *
 * **When to use**
 *
 * Always, with any concurrency controller: it is what turns 503 SlowDown into
 * fewer, slower requests instead of a retry storm.
 *
 * **Details**
 *
 * Floor `floor`; ceiling `ceiling`; probe `RestoreProbe` after
 * `restoreAfterMillis` without a throttle, once the pipeline's batches fill the
 * cut limit `RESTORE_BUSY_SHARE` of a window (at the floor they do; `restore:
 * false` disables it).
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { Throttle } from "@sluice/policies"
 * import { Schema } from "effect"
 *
 * const config = Schema.decodeUnknownSync(Throttle.ThrottleConfig)({})
 * const { proposals } = Policy.replay(Throttle.policy, config, [])
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<ThrottleConfig, ThrottleState, Config.Input<typeof ThrottleConfig>> = {
  name: "throttle",
  mode: (s) => s.mode,
  config: ThrottleConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling }, rate: { floor: MIN_RATE, ceiling: Infinity } }),
  probe: (c) =>
    c.restore
      ? { _tag: "RestoreProbe", afterMillis: c.restoreAfterMillis }
      : { _tag: "NoProbe", reason: "restore probe disabled by config (restore = false)" },
  withoutProbe: (c) => ({ ...c, restore: false }),
  init: (config) => ({
    config,
    mode: "open",
    limit: config.ceiling,
    saved: config.ceiling,
    lastCutAt: -Infinity,
    cutFrom: Infinity,
    rate: CubicRate.init(rateConfig(config)),
    proposed: {},
    throttles: 0,
    episode: ThrottleEpisode.none,
    plateau: 0,
    knob: Infinity,
    busy: emptyWindow(-Infinity)
  }),
  initial: () => ({}),
  step: (s, signal, now) => {
    let next = s
    if (signal._tag === "Failure") {
      if (signal.failure.failureClass === "Throttled") next = onThrottle(s, signal, now)
      else if (signal.failure.stage === "object_upload") next = onSuccess(s, -Infinity, now)
    } else if (signal._tag === "UploadSample" && signal.stage === "object_upload") {
      next = onSuccess(s, signal.startedAt, now, signal.inflightAtStart)
    } else if (signal._tag === "UploadSample") {
      next = s.mode === "open" ? s : { ...s, episode: ThrottleEpisode.answered(s.episode, signal.startedAt) }
    } else if (signal._tag === "Tick") {
      next = signal.knobs.concurrency === s.knob ? s : { ...s, knob: signal.knobs.concurrency }
    } else if (signal._tag === "Inflight") {
      next = observeInflight(s, signal.batches)
    }
    return emit(s, restore(next, now))
  }
}

/**
 * The retry schedule of the throttle policy.
 *
 * **Details**
 *
 * - `Fatal`: never retried (`undefined`).
 * - `Throttled`: exponential from `throttleRetryBaseMillis`; `Transient`: from
 *   `RETRY_BASE_MILLIS`; both capped at `retryMaxMillis`, with deterministic
 *   "equal jitter" — half the backoff fixed, half drawn from the **batch key**
 *   and the attempt (`RetryPolicy.jitter`), so batches throttled on the same
 *   attempt do not retry at the same instant — and never shorter than
 *   Retry-After. Without a context from the pipeline the draw comes from
 *   `SEED`, the code and the attempt.
 * - A stated **budget**, the shape of the core's (`RetryPolicy.bounded`):
 *   `maxAttempts` attempts of one batch, `maxElapsedMillis` since its first
 *   failure, or 30 s of "unreachable" codes in a row (connection refused, DNS);
 *   then `undefined` (the pipeline fails with `BatchFailed`).
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Throttle } from "@sluice/policies"
 *
 * const retry = Throttle.retryPolicy(Schema.decodeUnknownSync(Throttle.ThrottleConfig)({ maxElapsedMillis: "5 minutes" }))
 * const throttled = { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined } as const
 * retry.delayMillis(throttled, 1, { key: "t/p=00000/0-99.rec", firstFailureAt: 0, now: 0, sameCode: 1 }) // 250–500 ms
 * ```
 *
 * @since 0.1.0
 */
export const retryPolicy = (c: ThrottleConfig): RetryPolicy.RetryPolicy =>
  RetryPolicy.bounded(
    {
      delayMillis: (failure: Failure.ClassifiedFailure, attempt: number, context?: RetryPolicy.RetryContext) => {
        if (failure.failureClass === "Fatal") return undefined
        const base = failure.failureClass === "Throttled" ? c.throttleRetryBaseMillis : RETRY_BASE_MILLIS
        const backoff = Math.min(c.retryMaxMillis, base * 2 ** Math.max(0, attempt - 1))
        const u = context === undefined
          ? Rng.next((SEED ^ hash(failure.code) ^ Math.imul(attempt, 0x9e3779b1)) >>> 0)[0]
          : RetryPolicy.jitter(context.key, attempt)
        return Math.max(Math.round(backoff / 2 + (backoff / 2) * u), failure.retryAfterMillis ?? 0)
      }
    },
    { ...RetryPolicy.defaultBudget, maxAttempts: c.maxAttempts, maxElapsedMillis: c.maxElapsedMillis }
  )

const hash = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/**
 * The throttle policy as a layer: the core on the bus, plus its
 * `CurrentRetryPolicy`.
 *
 * **Details**
 *
 * `config` is typed by {@link ThrottleConfig}'s encoded form
 * (`Config.Input<typeof ThrottleConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Throttle } from "@sluice/policies"
 *
 * const throttle = Throttle.layer({ beta: 0.5, restoreAfterMillis: "10 seconds" })
 * const ablated = Throttle.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof ThrottleConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> =>
  Layer.merge(
    Policy.layer(policy, config, options),
    Layer.effect(
      RetryPolicy.CurrentRetryPolicy,
      Effect.map(Config.decode(policy.name, ThrottleConfig, config), retryPolicy)
    )
  )
