/**
 * Adaptive batch: sizes the **batch target** from what the store charges per
 * request and per byte, within what memory allows.
 *
 * It separates the per-request overhead `a` from the per-byte cost `b` of
 * `latency ≈ a + b·bytes`: `a` is the mean latency of the bodiless requests
 * (manifest upload, verification) measured under the same load, `b` the mean
 * transfer time per byte of object uploads beyond `a` — so queueing, which
 * inflates both, cannot fool their ratio. Before those are sampled, an online
 * least-squares fit over `object_upload` samples (exponentially forgotten,
 * factor `FORGETTING` per sample) stands in. The **overhead of a
 * batch** is `max(0, a)` plus the mean latency of its manifest upload and
 * verification (they hold the same concurrency slot, whatever the batch size).
 * Every `WINDOW_MILLIS`:
 *
 * - **shrink** (×`1/GROWTH`) when open batches held ≥ `OPEN_SHRINK_AT` of the
 *   budget at some point of the window: the target times the number of open
 *   batches does not fit in memory, so batches would be sealed by pressure
 *   (early, small, all at once) rather than on fill;
 * - **shrink** (×`1/GROWTH`, not below `budget × (memoryBoundAt − open share) /
 *   limit`) when the window was **memory-bound** — bytes held ≥ `MEMORY_BOUND_AT`
 *   of the budget while fewer uploads ran than the concurrency limit allows —
 *   and the store does not queue (bodiless latency within 1.2× of its minimum
 *   over the last 3 windows), and no request rate is in force (a rate keeps
 *   the uploads below the limit, not memory): memory bounds the uploads, and
 *   with per-request latency `a + b·s` a memory-bound pipeline moves `M / (a +
 *   b·s)`, more with smaller objects, up to the size at which the limit fits
 *   (a store 10× slower needs ~50 uploads of 16 MiB where 1 GiB holds ~50;
 *   growing objects for per-request overhead then lengthened every upload);
 * - **go back** toward `initialBytes`, or the lean size below it (×`1/GROWTH`
 *   a window, not past it), when requests did not bind — slots free in most of
 *   the window, no throttle, no request-rate limit — and the window was not
 *   queued: per-request overhead then costs only
 *   latency, the same bytes already move in parallel, and a bigger object only
 *   takes longer to fill and to upload (on a store whose per-request bandwidth
 *   fell to 6 MB/s, objects grown to 41 MiB for a 11 ms overhead took 6.8 s each,
 *   and an 8 s slow phase committed nothing). The **lean size** (`leanBytes`)
 *   is where the per-batch overhead is `GROW_ABOVE` of the transfer; it counts
 *   while the store does not queue `GROWTH`-deep: with slots free a batch's
 *   store time is the delay its records wait, and on a store slow per byte it
 *   is mostly transfer. A 429 (the store caps requests) takes a target below
 *   `initialBytes` back there at once;
 * - **grow** (×`GROWTH`), while requests bind or the window was queued, while
 *   the per-batch cost > `GROW_ABOVE · b · target` — the cost is the overhead,
 *   or, under a request rate the store capped (it answered 429) that spaces a
 *   slot's uploads further apart than they take (`limit ÷ rate` > the batch's
 *   time), the rest of that spacing: a
 *   rate caps uploads, not bytes, so each upload's bytes are the throughput
 *   (a store allowing 15 uploads a second against 380 MB/s of inflow needs
 *   25 MB objects; the family's rate-limit stores) — or, under a request rate
 *   the store capped, while memory stayed full: the bytes wait for requests,
 *   and each request's bytes are the throughput. Bigger
 *   objects buy throughput per request slot almost for free (also when the fit
 *   is not determined because every batch had the same size: growing creates the
 *   spread the fit needs) — unless the grown target would cross `OPEN_SHRINK_AT`,
 *   or would take a concurrency limit that fits in memory (limit × target within
 *   `MEMORY_BOUND_AT − open share` of the budget) out of it, into the
 *   memory-bound regime the rule above shrinks back from;
 * - grow down to the lower line `GROW_QUEUED` (overhead > `GROW_QUEUED · b ·
 *   target`) when the window was **queued**: memory full (bytes held ≥
 *   `MEMORY_BOUND_AT` of the budget in at least half its `Inflight` signals), the
 *   mean bodiless latency ≥ `GROWTH` × its minimum over the last 3 windows,
 *   and this window's minimum < 2 × that minimum. At a store's knee more
 *   uploads only wait longer, so what one slot carries is the throughput, and
 *   bigger objects carry more (on a 20 ms + 16 MiB/s store a batch pays ~60 ms
 *   of requests: at 12 MiB a slot carries 0.93 of its transfer rate, at 18 MiB
 *   0.95). The queue must
 *   survive the growth — with memory full, objects `GROWTH`× bigger mean fewer
 *   uploads: memory must still hold, at the grown size and beside open batches
 *   grown alike, the uploads the store's knee takes even if the whole queue was
 *   ours (mean uploads in flight ÷ inflation) — and the floor must not have
 *   moved: a store that got slower raises even the fastest request (this
 *   window's minimum), a queue does not (requests still find it short between
 *   bursts). Three instances sharing a store at its knee sat at 12 MiB (8 %
 *   overhead) and lost 0.02–0.03 of goodput to the AIMD default, whose startup
 *   overshoot had grown it to 18; without the memory check, a catch-up after a
 *   throttle storm swung 18 ↔ 27 MiB (grown under the knee, shrunk back by the
 *   memory-bound rule);
 * - **shrink** when the per-batch cost < `SHRINK_BELOW · b · target` — transfer
 *   dominates so completely that smaller objects cost (almost) no throughput —
 *   unless the window saw a throttle or a request rate: then requests are what
 *   the store caps, and smaller objects carry less through each;
 * - always within `[minBytes, min(maxObjectBytes, memoryShare · budget)]`.
 *
 * Bytes held by **sealed and uploading** batches never shrink the target: they
 * mean the store is behind, and smaller batches would only add per-request
 * overhead and fall further behind (the shrinking-window trap). That pressure
 * belongs to the read gate (`SharedPressure`) and to concurrency.
 *
 * The record target is raised to `records` so batches seal on bytes (on fill);
 * the pipeline's configured `maxAge` stays the staleness bound (a `maxAgeMillis`
 * > 0 overrides it).
 *
 * **Restore probe**: the target can be pushed to its floor by a transient
 * condition; once it has sat at the floor `restoreAfterMillis`, the first
 * window without open-batch pressure restores it to the last target chosen
 * without pressure (BBR-style) instead of regrowing ×`GROWTH` per window.
 *
 * Modes: `growing`, `holding`, `shrinking`.
 *
 * @since 0.1.0
 */
import { Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Schema } from "effect"
import type { Layer } from "effect"
import type { AdaptiveBatchState } from "../internal/batch/State.ts"
import { CRUISE_GAIN } from "../internal/deliveryrate/ProbeBw.ts"
import { addSample, emptyFit, solve } from "../internal/Fit.ts"
import type { Line } from "../internal/Fit.ts"
import * as RateCap from "../internal/RateCap.ts"

/*
 * Adaptive batch's constants (issue 26: 9 fields of its config became these,
 * their defaults unchanged). None was swept on the family; where no line says
 * what a value buys, none was recorded when it was chosen.
 */
/** Factor per window by which the target grows or shrinks. */
const GROWTH = 1.5
/** Grow while the per-batch overhead > this × `b` × the target (overhead is then > 9 % of a batch's store time)… */
const GROW_ABOVE = 0.1
/** …down to this line while the window was queued (memory full, the store queueing; the module doc). */
const GROW_QUEUED = 0.05
/**
 * Shrink when overhead < this × `b` × the target. Hysteresis: a target just
 * grown down to `GROW_QUEUED` must not qualify for a shrink at once, so it is
 * ≤ `GROW_QUEUED / GROWTH` (0.033).
 */
const SHRINK_BELOW = 0.02
/** Shrink when open batches hold this share of the budget: partitions × target does not fit, batches would be sealed by pressure. */
const OPEN_SHRINK_AT = 0.5
/** A window is memory-bound when, in most of its `Inflight` signals, bytes held were ≥ this share of the budget while fewer uploads ran than the limit allows. */
const MEMORY_BOUND_AT = 0.9
/** Decision period. */
const WINDOW_MILLIS = 2_000
/** Samples in a window before deciding on the fit. */
const MIN_SAMPLES = 4
/** Weight older samples keep in the least-squares fit, per sample (a memory of ~33 samples). */
const FORGETTING = 0.97

/**
 * Adaptive batch's config. Defaults and ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initialBytes` | 8 MiB | min – max | starting target |
 * | `minBytes` | 1 MiB | ≥ 1 B | floor (keeps per-request overhead small on any S3-like store) |
 * | `maxObjectBytes` | 64 MiB | ≥ minBytes | ceiling (largest object) |
 * | `memoryShare` | 0.0625 | (0, 1] | one open batch may hold this share of the budget |
 * | `records` | 1000000 | ≥ 1 | record target it proposes (high: batches seal on bytes; lower it to cap the records per object) |
 * | `maxAgeMillis` | 0 | ≥ 0 | staleness bound; 0 = the pipeline's `batch.maxAge` |
 * | `restoreAfterMillis` | 10 s | ≥ 0 | at the floor without pressure this long: restore |
 * | `restore` | true |  | the restore probe; false disables it (`withoutProbe`, the ablation) |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const AdaptiveBatchConfig = Schema.Struct({
  initialBytes: Field.positiveBytes("8 MiB").pipe(Field.doc("starting target", { range: "min – max" })),
  minBytes: Field.positiveBytes("1 MiB").pipe(Field.doc("floor (keeps per-request overhead small on any S3-like store)")),
  maxObjectBytes: Field.positiveBytes("64 MiB").pipe(Field.doc("ceiling (largest object)", { range: "≥ minBytes" })),
  memoryShare: Field.number(0.0625, { minimum: 0, maximum: 1, exclusiveMinimum: true }).pipe(Field.doc("one open batch may hold this share of the budget")),
  records: Field.int(1_000_000, 1).pipe(Field.doc("record target it proposes (high: batches seal on bytes; lower it to cap the records per object)")),
  maxAgeMillis: Field.millis(0).pipe(Field.doc("staleness bound; 0 = the pipeline's `batch.maxAge`")),
  restoreAfterMillis: Field.millis("10 seconds").pipe(Field.doc("at the floor without pressure this long: restore")),
  restore: Field.boolean(true).pipe(Field.doc("the restore probe; false disables it (`withoutProbe`, the ablation)"))
}).check(
  Field.ordered("minBytes", "maxObjectBytes", (c) => [c.minBytes, c.maxObjectBytes]),
  Field.ordered("minBytes", "initialBytes", (c) => [c.minBytes, c.initialBytes]),
  Field.ordered("initialBytes", "maxObjectBytes", (c) => [c.initialBytes, c.maxObjectBytes])
)

/**
 * `AdaptiveBatchConfig` as a type: what the `AdaptiveBatchConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type AdaptiveBatchConfig = typeof AdaptiveBatchConfig.Type

/**
 * Adaptive batch's modes.
 *
 * @since 0.1.0
 */
export type BatchMode = "growing" | "holding" | "shrinking"

const ceilingOf = (s: AdaptiveBatchState): number => {
  const c = s.config
  const budget = s.budgetBytes
  const share = budget > 0 ? Math.floor(budget * c.memoryShare) : c.maxObjectBytes
  return Math.max(c.minBytes, Math.min(c.maxObjectBytes, share))
}

/**
 * Per-batch overhead (ms): the fitted per-request cost of the object upload plus
 * the mean manifest upload and verification.
 *
 * @since 0.1.0
 */
export const overheadMillis = (s: AdaptiveBatchState, a: number): number => Math.max(0, a) + s.manifestMillis + s.verifyMillis

/**
 * What a batch costs beyond its transfer time (ms, per concurrency slot): the
 * store's per-batch overhead, or, when the store capped requests (it answered
 * 429, and the rate in force follows it) and that rate spaces the uploads
 * further apart than the store takes, the rest of the spacing. A rate cut
 * after 503 SlowDown alone is a backoff from overload, where bigger objects
 * only slow the climb back (`wide-throttle-storm`: 0.923 → 0.897 on its seed
 * when they counted too). At
 * `rate` uploads a second, `limit` slots start one upload each every
 * `limit ÷ rate` seconds at most; a batch whose transfer takes `b · target`
 * leaves its slot idle for the rest, which only a bigger object fills (under
 * a rate, each upload carries the throughput: rate × object size).
 */
const batchCostMillis = (s: AdaptiveBatchState, a: number, b: number): number => {
  const spacing = s.rateCapped && s.rate !== null && s.rate > 0 && s.limit > 0 ? (s.limit * 1000) / s.rate : 0
  return Math.max(overheadMillis(s, a), spacing - b * s.target)
}

const EWMA = 0.1

/** Share of the cruise queue above which the store reads as queueing (`QUEUEING`). */
const QUEUE_MARGIN = 0.8
/** Windows over which the bodiless minimum is taken (the no-load per-request latency, recent enough to follow a store that got slower). */
const QUEUE_WINDOWS = 3
/**
 * Mean bodiless latency above this multiple of the recent minimum: the store
 * queues our requests. The default's concurrency controller cruises at
 * `CRUISE_GAIN` (1.25) × the BDP: past a knee that standing queue inflates
 * latency up to `CRUISE_GAIN` ×, and it must read as queueing (shrinking there
 * only added per-request overhead: wide-knee 0.926 → 0.938 on seed 1 with the
 * bar under it, at 1.5 before). The bar sits `QUEUE_MARGIN` of the way to it
 * (1.2), below the gain by the noise of a mean of bodiless requests; no
 * measurement chose the margin.
 */
const QUEUEING = 1 + (CRUISE_GAIN - 1) * QUEUE_MARGIN

/**
 * The store queues: the mean bodiless latency is well above the recent
 * minimum. More uploads would then only wait longer — memory is not what
 * bounds them, the store is — so a memory-bound window does not shrink.
 */
const queueing = (s: AdaptiveBatchState): boolean => inflation(s) > QUEUEING

/** Mean bodiless latency ÷ its minimum over the last windows (0 until both are known). */
const inflation = (s: AdaptiveBatchState): number => {
  const min = Math.min(...s.bodilessMins)
  const mean = s.manifestMillis > 0 && s.verifyMillis > 0 ? (s.manifestMillis + s.verifyMillis) / 2 : 0
  return Number.isFinite(min) && min > 0 ? mean / min : 0
}

/** `count` of the window's `Inflight` signals are at least half of them (and there was one). */
const mostOfWindow = (s: AdaptiveBatchState, count: number): boolean => s.inflightSignals > 0 && count * 2 >= s.inflightSignals

/** This window's bodiless minimum at this multiple of the last windows' or more: the store got slower, not queued. */
const FLOOR_RISE = 2

/**
 * The window was queued: memory full in at least half of it, the store
 * queueing at least `GROWTH`-deep, and its floor where it was (the rule's
 * reasons are in the module's doc).
 */
const queued = (s: AdaptiveBatchState): boolean => {
  if (!mostOfWindow(s, s.fullSignals)) return false
  const depth = inflation(s)
  return depth >= GROWTH &&
    (s.bodilessMins.at(-1) ?? Infinity) < FLOOR_RISE * Math.min(...s.bodilessMins) &&
    uploadsAfterGrowth(s) >= s.batchesSum / s.inflightSignals / depth
}

/**
 * How many uploads memory holds at the grown target: what `MEMORY_BOUND_AT` of
 * the budget leaves beside open batches (which grow with the target too).
 */
const uploadsAfterGrowth = (s: AdaptiveBatchState): number =>
  (s.budgetBytes * Math.max(0, MEMORY_BOUND_AT - s.openPeak * GROWTH)) / (s.target * GROWTH)

/**
 * Requests bound the uploads: every concurrency slot was taken in at least
 * half of the window's `Inflight` signals, or the store throttled, or a
 * request-rate limit is in force (or the limit is not known: no `Tick` yet).
 * Only then does a bigger object buy anything — more bytes per request; with
 * slots free and requests unthrottled, the same bytes already move in
 * parallel and a bigger object only takes longer to fill and to upload.
 */
const requestsBind = (s: AdaptiveBatchState): boolean =>
  s.limit === 0 || s.requestBound || mostOfWindow(s, s.slotSignals)

/**
 * `{ a, b }` for the decision. When manifests and verifications were sampled,
 * `a` is their mean latency — a bodiless request measured under the same load
 * as the objects, so queueing inflates `a` and `b` alike and cannot fool the
 * ratio — and `b` the mean per-byte transfer time of objects beyond `a`.
 * Otherwise the least-squares fit.
 */
const estimate = (s: AdaptiveBatchState): Line | undefined =>
  s.manifestMillis > 0 && s.verifyMillis > 0 && s.perByteMillis > 0
    ? { a: (s.manifestMillis + s.verifyMillis) / 2, b: s.perByteMillis }
    : solve(s.fit)

/**
 * The store capped our requests (it answered 429, and the rate in force
 * follows it) while memory stayed full (≥ `MEMORY_BOUND_AT` of the budget in
 * at least half the window's `Inflight` signals): the bytes are waiting, and
 * under a rate each upload's bytes are the throughput, whatever a slot's
 * spacing (the concurrency controller sizes the limit to the rate × the
 * latency, so the spacing rule in {@link batchCostMillis} rarely fires).
 * Grow. Without it, a rate limit that appeared while the target sat at 8 MiB
 * held it there (380 MB/s of inflow against 15 uploads a second needs 25 MB
 * objects); the family figures are in docs/design/generalization.md,
 * 2026-12-06.
 */
const rateBehind = (s: AdaptiveBatchState): boolean =>
  s.rateCapped && mostOfWindow(s, s.fullSignals)

/**
 * The lean size: the smallest object whose per-batch overhead is at most
 * `GROW_ABOVE` of its transfer time (`overhead ÷ (GROW_ABOVE · b)`) — the line
 * the grow rule grows to, met from below. With slots free, a batch's store time
 * is the delay every record in it waits, and it is mostly transfer: a smaller
 * object is stored sooner, and the uploads needed for the same bytes rise by
 * at most `GROW_ABOVE` over the transfer's own (in-flight ≈ rate · b · (1 +
 * overhead ÷ (b · size))). `Infinity` until the fit is known. What it buys
 * (with the 429 reset in `step`): 0.019 of p10 over the 600 held-out family
 * scenarios of seeds 3, 5 and 6, the test set's share ≥ 0.8 0.960 → 0.970
 * (a store flapping to 2.9 MB/s per request: its slow phases 0.72 → 0.92), for
 * 4–7 % more requests; docs/design/generalization.md, 2026-12-06.
 */
const leanBytes = (s: AdaptiveBatchState, fit: Line | undefined): number =>
  fit === undefined || fit.b <= 0 ? Infinity : overheadMillis(s, fit.a) / (GROW_ABOVE * fit.b)

const decide = (s: AdaptiveBatchState, now: number): AdaptiveBatchState => {
  const c = s.config
  const ceiling = ceilingOf(s)
  const clamp = (v: number) => Math.round(Math.min(ceiling, Math.max(c.minBytes, v)))
  const next = {
    ...s,
    windowStart: now,
    windowSamples: 0,
    openPeak: 0,
    inflightSignals: 0,
    boundSignals: 0,
    fullSignals: 0,
    batchesSum: 0,
    slotSignals: 0,
    requestBound: false,
    bodilessMins: [...s.bodilessMins.slice(-(QUEUE_WINDOWS - 1)), Infinity]
  }
  // Open batches do not fit in memory: they would be sealed by pressure.
  if (s.openPeak >= OPEN_SHRINK_AT) return { ...next, mode: "shrinking", target: clamp(s.target / GROWTH) }
  // Memory, not the store, bounds the uploads: smaller objects let more of
  // them run — down to what lets the concurrency limit fit in memory.
  if (mostOfWindow(s, s.boundSignals) && !queueing(s)) {
    const fits = (s.budgetBytes * Math.max(0, MEMORY_BOUND_AT - s.openPeak)) / Math.max(1, s.limit)
    const target = clamp(Math.max(s.target / GROWTH, fits))
    return { ...next, mode: target < s.target ? "shrinking" : "holding", target: Math.min(s.target, target) }
  }
  // Restore probe: at the floor for `restoreAfterMillis`, and a whole window
  // without open-batch pressure (decided per window: a window's peak, not one
  // signal, says the pressure is gone — checked on every signal, it fired
  // right after each window reset the peak, in the middle of the pressure).
  if (c.restore && s.target <= c.minBytes && now - s.atFloorSince >= c.restoreAfterMillis) {
    return { ...next, mode: "growing", target: clamp(Math.max(s.lastGood, c.minBytes)), atFloorSince: Infinity }
  }
  if (s.windowSamples < MIN_SAMPLES) return { ...next, mode: "holding", target: clamp(s.target) }
  const fit = estimate(s)
  // Nor grow objects out of the regime where the concurrency limit fits in
  // memory into the one where memory bounds the uploads (the rule above would
  // shrink them back): on a store 10× slower the target swung 12 ↔ 22 MiB
  // every few windows, and each swing capped the uploads that ran below the
  // ~55 needed. (When memory bounds already, this does not hold growth back.)
  const room = s.budgetBytes * Math.max(0, MEMORY_BOUND_AT - s.openPeak)
  const leavesFit = s.limit > 0 && !queueing(s) &&
    s.limit * s.target <= room && s.limit * s.target * GROWTH > room
  const mayGrow = s.openPeak * GROWTH < OPEN_SHRINK_AT && !leavesFit
  let target: number
  let mode: BatchMode
  const isQueued = queued(s)
  const growAbove = isQueued ? GROW_QUEUED : GROW_ABOVE
  if (!requestsBind(s) && !isQueued) {
    // Slots were free: per-request overhead cost nothing but latency, so a
    // target grown for it goes back toward where it started — and, where the
    // store does not queue, below it to the lean size while transfer dominates.
    const goal = Math.min(c.initialBytes, inflation(s) < GROWTH ? leanBytes(s, fit) : Infinity)
    target = clamp(Math.max(Math.min(s.target, goal), s.target / GROWTH))
    mode = target < s.target ? "shrinking" : "holding"
  } else if (fit === undefined || fit.b <= 0 || rateBehind(s) || batchCostMillis(s, fit.a, fit.b) > growAbove * fit.b * s.target) {
    target = mayGrow ? clamp(s.target * GROWTH) : clamp(s.target)
    mode = target > s.target ? "growing" : "holding"
  } else if (!s.requestBound && batchCostMillis(s, fit.a, fit.b) < SHRINK_BELOW * fit.b * s.target) {
    target = clamp(s.target / GROWTH)
    mode = "shrinking"
  } else {
    target = clamp(s.target)
    mode = "holding"
  }
  return { ...next, mode, target, lastGood: target }
}

/**
 * The adaptive batch core.
 *
 * **When to use**
 *
 * When per-request overhead is significant (object stores: tens of ms per PUT)
 * and records arrive fast enough that the byte target, not the age timer,
 * seals batches.
 *
 * **Details**
 *
 * Knob `batchTarget` (`bytes`, `records`, `maxAgeMillis`). Bounds on bytes:
 * floor `minBytes`, ceiling `maxObjectBytes`. Probe: `RestoreProbe`.
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { AdaptiveBatch } from "@sluice/policies"
 * import { Schema } from "effect"
 *
 * const config = Schema.decodeUnknownSync(AdaptiveBatch.AdaptiveBatchConfig)({ maxObjectBytes: "32 MiB" })
 * const { proposals } = Policy.replay(AdaptiveBatch.policy, config, [])
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<AdaptiveBatchConfig, AdaptiveBatchState, Config.Input<typeof AdaptiveBatchConfig>> = {
  name: "batch",
  mode: (s) => s.mode,
  config: AdaptiveBatchConfig,
  bounds: (c) => ({ batchTarget: { floor: c.minBytes, ceiling: c.maxObjectBytes } }),
  probe: (c) =>
    c.restore
      ? { _tag: "RestoreProbe", afterMillis: c.restoreAfterMillis }
      : { _tag: "NoProbe", reason: "restore probe disabled by config (restore = false)" },
  withoutProbe: (c) => ({ ...c, restore: false }),
  init: (config) => ({
    config,
    mode: "holding",
    target: config.initialBytes,
    lastGood: config.initialBytes,
    fit: emptyFit,
    manifestMillis: 0,
    verifyMillis: 0,
    perByteMillis: 0,
    windowStart: -Infinity,
    windowSamples: 0,
    budgetBytes: 0,
    fill: 0,
    openPeak: 0,
    limit: 0,
    bodilessMins: [Infinity],
    inflightSignals: 0,
    boundSignals: 0,
    fullSignals: 0,
    batchesSum: 0,
    slotSignals: 0,
    requestBound: false,
    rate: null,
    rateCapped: false,
    atFloorSince: Infinity,
    proposed: config.initialBytes
  }),
  initial: (s) => ({
    batchTarget: {
      bytes: s.target,
      records: s.config.records,
      ...(s.config.maxAgeMillis > 0 ? { maxAgeMillis: s.config.maxAgeMillis } : {})
    }
  }),
  step: (s, signal, now) => {
    let next = s
    if (signal._tag === "UploadSample") {
      if (signal.stage === "object_upload" && signal.bytes > 0) {
        const bodiless = s.manifestMillis > 0 && s.verifyMillis > 0 ? (s.manifestMillis + s.verifyMillis) / 2 : 0
        next = {
          ...s,
          fit: addSample(s.fit, signal.bytes, signal.latencyMillis, FORGETTING),
          perByteMillis: ewma(s.perByteMillis, Math.max(1e-12, signal.latencyMillis - bodiless) / signal.bytes),
          windowSamples: s.windowSamples + 1
        }
      } else if (signal.stage === "manifest_upload") {
        next = { ...s, manifestMillis: ewma(s.manifestMillis, signal.latencyMillis), bodilessMins: lowest(s.bodilessMins, signal.latencyMillis) }
      } else if (signal.stage === "verify") {
        next = { ...s, verifyMillis: ewma(s.verifyMillis, signal.latencyMillis), bodilessMins: lowest(s.bodilessMins, signal.latencyMillis) }
      }
    } else if (signal._tag === "Inflight") {
      const budget = signal.budgetBytes
      const fill = budget > 0 ? signal.bytes / budget : 0
      // Memory-bound: memory full while fewer uploads ran than the limit
      // allows — unless a request rate paces them (then the rate, not memory,
      // keeps them below the limit, and smaller objects carry less).
      const bound = fill >= MEMORY_BOUND_AT && s.limit > 0 && signal.batches < s.limit && s.rate === null
      next = {
        ...s,
        budgetBytes: signal.budgetBytes,
        fill,
        openPeak: Math.max(s.openPeak, budget > 0 ? signal.openBytes / budget : 0),
        inflightSignals: s.inflightSignals + 1,
        boundSignals: s.boundSignals + (bound ? 1 : 0),
        fullSignals: s.fullSignals + (fill >= MEMORY_BOUND_AT ? 1 : 0),
        batchesSum: s.batchesSum + signal.batches,
        slotSignals: s.slotSignals + (s.limit > 0 && signal.batches >= s.limit ? 1 : 0)
      }
    } else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") {
      const caps = RateCap.capsRequestRate(signal.failure)
      // A cap on requests ends the lean size's premise (more requests cost
      // only latency): a target below where it started goes back there at once.
      const target = caps && s.target < s.config.initialBytes ? s.config.initialBytes : s.target
      next = { ...s, requestBound: true, rateCapped: s.rateCapped || caps, target, mode: target > s.target ? "growing" : s.mode }
    } else if (signal._tag === "Tick") {
      next = {
        ...s,
        limit: signal.knobs.concurrency,
        rate: signal.knobs.rate,
        rateCapped: s.rateCapped && signal.knobs.rate !== null,
        requestBound: s.requestBound || signal.knobs.rate !== null
      }
    }
    if (next.windowStart === -Infinity) next = { ...next, windowStart: now }
    else if (now - next.windowStart >= WINDOW_MILLIS) next = decide(next, now)
    next = { ...next, atFloorSince: next.target <= next.config.minBytes ? Math.min(next.atFloorSince, now) : Infinity }
    return next.target === s.proposed
      ? { state: next }
      : { state: { ...next, proposed: next.target }, proposal: { batchTarget: { bytes: next.target } } }
  }
}

const lowest = (mins: ReadonlyArray<number>, value: number): ReadonlyArray<number> =>
  [...mins.slice(0, -1), Math.min(mins.at(-1) ?? Infinity, value)]

const ewma = (previous: number, sample: number): number => (previous === 0 ? sample : previous + EWMA * (sample - previous))

/**
 * Adaptive batch as a layer.
 *
 * **Details**
 *
 * `config` is typed by {@link AdaptiveBatchConfig}'s encoded form
 * (`Config.Input<typeof AdaptiveBatchConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { AdaptiveBatch } from "@sluice/policies"
 *
 * const batch = AdaptiveBatch.layer({ maxObjectBytes: "32 MiB", memoryShare: 0.1 })
 * const ablated = AdaptiveBatch.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof AdaptiveBatchConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> => Policy.layer(policy, config, options)
