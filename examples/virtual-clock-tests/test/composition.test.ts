/**
 * The archiver's policy composition, proved on Sluice's virtual clock: ten
 * virtual minutes of room, a throttle storm, a store 10× slower and recovery
 * (see `engine.ts`), run through the real core `Pipeline` by the testkit's
 * `Runner`, and judged **only from the trace and the summary** — what the
 * store verified and the source's log recorded, never the policies' own
 * counters.
 *
 * | property | what must hold |
 * |---|---|
 * | BACKOFF | concurrency falls to half its pre-storm level within 5 s of the storm; once settled, the throttled share is ≤ 3 % and ≤ ⅓ of the storm's first second |
 * | FLOOR | concurrency never below the declared floor (2); goodput > 0, and ≥ 10 % of the oracle, in every 10 s window of the degradation (120–360 s) |
 * | RECOVERY | within 10 s after the store clears, goodput over 1 s ≥ 90 % of the oracle and concurrency ≥ 0.8 × its pre-storm level; from 30 s after, goodput ≥ 95 % of the oracle |
 * | FRESHNESS | lag ≤ 20 s over the run, ≤ 6 s in the storm, ≤ 3 s once recovered; worst degraded phase ≥ 0.9 of the oracle; whole run ≥ 0.97 |
 * | SAFETY | no record committed before it was verified; none lost; bytes held ≤ budget + one chunk; no pipeline failure |
 *
 * **Seeds.** The bounds were chosen on the scenario's seed 42 and on 7 and 8
 * ({@link TUNING_SEEDS}); the suite runs 42 and three **held-out** seeds,
 * {@link HELD_OUT_SEEDS}, that were never run while the bounds were chosen.
 * `SLUICE_SEEDS=1,2,3` runs other seeds instead (to look for margins). The
 * margin of every bound on every seed is printed at the end.
 *
 * When a bound fails, the testkit's `PlotOnFailure.expectWithPlot` writes the run's plot (SVG), trace
 * (CSV) and summary and names them in the failure message.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { PlotOnFailure, Runner, Summary } from "@sluice/testkit"
import type { Trace } from "@sluice/testkit"
import { Effect } from "effect"
import { CLEAR_AT, DURATION, FLOOR, MEMORY_BUDGET, run, SCENARIO_SEED, SLOWDOWN_FROM, STORM_FROM } from "./engine.ts"

/** Seeds the bounds were chosen on (42 is the scenario's own). */
export const TUNING_SEEDS = [SCENARIO_SEED, 7, 8] as const
/** Seeds never run while the bounds were chosen. */
export const HELD_OUT_SEEDS = [101, 202, 303] as const

const seeds: ReadonlyArray<number> = process.env["SLUICE_SEEDS"] !== undefined
  ? process.env["SLUICE_SEEDS"].split(",").map(Number)
  : [SCENARIO_SEED, ...HELD_OUT_SEEDS]

// ---------------------------------------------------------------------------
// Reading the trace

type Row = Trace.TraceRow

/** Rows whose sample window ends in (from, to] (ms). */
const between = (rows: ReadonlyArray<Row>, from: number, to: number): ReadonlyArray<Row> =>
  rows.filter((r) => r.t > from && r.t <= to)

const total = (rows: ReadonlyArray<Row>, f: (r: Row) => number): number => rows.reduce((acc, r) => acc + f(r), 0)

/** Throttled (503 + 429) ÷ all requests, at the store. */
const throttledShare = (rows: ReadonlyArray<Row>): number => {
  const requests = total(rows, (r) => r.requests)
  return requests === 0 ? 0 : total(rows, (r) => r.throttles) / requests
}

/** Goodput ÷ oracle over the rows (both are bytes per second per 100 ms sample, so sums compare). */
const goodputRatio = (rows: ReadonlyArray<Row>): number =>
  total(rows, (r) => r.goodputBytesPerSecond) / Math.max(1, total(rows, (r) => r.oracleBytesPerSecond))

/** Seconds after `from` until the first sample satisfying `p`; Infinity if none. */
const secondsUntil = (rows: ReadonlyArray<Row>, from: number, p: (r: Row) => boolean): number => {
  const hit = rows.find((r) => r.t > from && p(r))
  return hit === undefined ? Infinity : (hit.t - from) / 1000
}

const max = (xs: ReadonlyArray<number>): number => Math.max(-Infinity, ...xs)
const min = (xs: ReadonlyArray<number>): number => Math.min(Infinity, ...xs)

/** The 10 s windows of [from, to). */
const windows = (rows: ReadonlyArray<Row>, from: number, to: number): Array<ReadonlyArray<Row>> => {
  const out: Array<ReadonlyArray<Row>> = []
  for (let t = from; t < to; t += 10_000) out.push(between(rows, t, Math.min(to, t + 10_000)))
  return out
}

/** Everything the bounds are about, read off one run. */
const measure = ({ summary, trace }: Runner.RunResult) => {
  const rows = trace.rows
  const preStorm = between(rows, 0, STORM_FROM).at(-1)?.concurrency ?? 0
  const degraded = windows(rows, STORM_FROM, CLEAR_AT)
  const onset = throttledShare(between(rows, STORM_FROM, STORM_FROM + 1_000))
  const settled = throttledShare(between(rows, STORM_FROM + 30_000, SLOWDOWN_FROM))
  const stormPhase = summary.phases.find((p) => p.from * 1000 === STORM_FROM)
  return {
    // BACKOFF
    preStormConcurrency: preStorm,
    backoffSeconds: secondsUntil(rows, STORM_FROM, (r) => r.concurrency <= Math.floor(preStorm / 2)),
    onsetThrottledShare: onset,
    settledThrottledShare: settled,
    settledOverOnset: onset === 0 ? Infinity : settled / onset,
    // FLOOR
    minConcurrency: min(rows.map((r) => r.concurrency)),
    floorViolations: summary.floorViolations,
    minDegradedWindowGoodput: min(degraded.map((w) => total(w, (r) => r.goodputBytesPerSecond) / Math.max(1, w.length))),
    minDegradedWindowRatio: min(degraded.map(goodputRatio)),
    // RECOVERY
    recoverySeconds: Summary.recoverySeconds(rows, trace.sampleMillis, CLEAR_AT) ?? Infinity,
    concurrencyBackSeconds: secondsUntil(rows, CLEAR_AT, (r) => r.concurrency >= 0.8 * preStorm),
    recoveredGoodputRatio: goodputRatio(between(rows, CLEAR_AT + 30_000, DURATION)),
    // FRESHNESS
    maxLagSeconds: summary.maxLagSeconds,
    stormMaxLagSeconds: stormPhase?.maxLagSeconds ?? Infinity,
    recoveredMaxLagSeconds: max(between(rows, CLEAR_AT + 30_000, DURATION).map((r) => r.lagSeconds)),
    worstPhaseGoodput: summary.worstPhaseGoodput ?? 0,
    goodputRatio: summary.goodputRatio,
    // SAFETY
    committedNotVerified: summary.committedNotVerified,
    lostRecords: summary.lostRecords,
    undetectedLostRecords: summary.undetectedLostRecords,
    heldBytesOverBudget: summary.heldBytesMax - (MEMORY_BUDGET + summary.largestChunkBytes)
  }
}

type Metric = keyof ReturnType<typeof measure>

// ---------------------------------------------------------------------------
// The bounds. "measured" = the range over the tuning seeds 42, 7 and 8.

interface Bound {
  readonly property: "BACKOFF" | "FLOOR" | "RECOVERY" | "FRESHNESS" | "SAFETY"
  readonly metric: Metric
  readonly min?: number
  readonly max?: number
}

const BOUNDS: ReadonlyArray<Bound> = [
  // The storm must bite: the pipeline ran above the storm's throttle level (2
  // in flight) before it. Measured 9.
  { property: "BACKOFF", metric: "preStormConcurrency", min: 4 },
  // Measured 0.3 s: the first throttles (14 % of the storm's first second)
  // cut it to the floor at once. 5 s is what the archiver tolerates (a storm
  // costs retries, not data); it fails a composition that waits for a timer
  // or needs many rounds of ×0.9 to get there.
  { property: "BACKOFF", metric: "backoffSeconds", max: 5 },
  // Measured 1.3–1.5 % (the throttle classifier's restore probe re-tests a
  // level above the storm now and then and is throttled again). A pipeline
  // that stayed at its pre-storm level would see most requests above 2 in
  // flight throttled (90 %). 3 % is 2× the measured share; ⅓ of the onset
  // share (measured 14–15 %, ratio 0.09–0.10) leaves 3× margin even if the
  // onset had one throttle fewer.
  { property: "BACKOFF", metric: "settledThrottledShare", max: 0.03 },
  { property: "BACKOFF", metric: "settledOverOnset", max: 1 / 3 },
  // The declared floor is hit (measured min 2) and must hold exactly.
  { property: "FLOOR", metric: "minConcurrency", min: FLOOR },
  { property: "FLOOR", metric: "floorViolations", max: 0 },
  // Never starved: every 10 s window of the degradation delivers something
  // (> 0 bytes/s) and, more strictly, ≥ 10 % of what the oracle could.
  // Measured minimum 0.18–0.20: the first 10 s of the slowdown, when the
  // storm has left concurrency at the floor and the policies need ~8–11 s to
  // ramp it to the ~12 uploads a 10× slower store needs (the plot shows it).
  { property: "FLOOR", metric: "minDegradedWindowGoodput", min: 1 },
  { property: "FLOOR", metric: "minDegradedWindowRatio", min: 0.1 },
  // Measured 1 s (the metric's resolution) and 0.1 s; the margin is wide on
  // purpose: a recovery that needs a probe timer (10 s and more) fails it.
  { property: "RECOVERY", metric: "recoverySeconds", max: 10 },
  { property: "RECOVERY", metric: "concurrencyBackSeconds", max: 10 },
  // Measured 1.000–1.001 from 30 s after the clear: a steady run at room.
  { property: "RECOVERY", metric: "recoveredGoodputRatio", min: 0.95 },
  // Measured 12.3–13.8 s (the ramp at the slowdown's start, see FLOOR): 20 s
  // is ~45 % above. The storm: measured 2.5–3.3 s (bound 6 s, ~2×). Once
  // recovered the lag is the time to fill a batch (measured 1.37–1.41 s;
  // bound 3 s, ~2×).
  { property: "FRESHNESS", metric: "maxLagSeconds", max: 20 },
  { property: "FRESHNESS", metric: "stormMaxLagSeconds", max: 6 },
  { property: "FRESHNESS", metric: "recoveredMaxLagSeconds", max: 3 },
  // Measured 0.977–0.994 inside the worst degraded phase, 0.999 over the run.
  { property: "FRESHNESS", metric: "worstPhaseGoodput", min: 0.9 },
  { property: "FRESHNESS", metric: "goodputRatio", min: 0.97 },
  // Exact: these are invariants, not performance.
  { property: "SAFETY", metric: "committedNotVerified", max: 0 },
  { property: "SAFETY", metric: "lostRecords", max: 0 },
  { property: "SAFETY", metric: "undetectedLostRecords", min: 0, max: 0 },
  { property: "SAFETY", metric: "heldBytesOverBudget", max: 0 }
]

// ---------------------------------------------------------------------------

const round = (x: number): number => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : x)
const report: Array<string> = []

describe("archiver composition: storm, then a store 10x slower, then clear (10 virtual minutes)", () => {
  afterAll(() => {
    if (report.length > 0) console.log(`margins (value, bound, margin; held-out seeds ${HELD_OUT_SEEDS.join(", ")}):\n${report.join("\n")}`)
  })

  for (const seed of seeds) {
    const kind = seed === SCENARIO_SEED
      ? "the scenario's seed"
      : (HELD_OUT_SEEDS as ReadonlyArray<number>).includes(seed)
      ? "held out"
      : (TUNING_SEEDS as ReadonlyArray<number>).includes(seed)
      ? "tuning"
      : "extra"
    it.effect(`seed ${seed} (${kind}): backs off, keeps its floor, recovers, stays fresh, commits only what is verified`, () =>
      Effect.gen(function*() {
        const result = yield* run(seed)
        const measured = measure(result)
        for (const b of BOUNDS) {
          const v = measured[b.metric]
          const margins = [b.min === undefined ? undefined : v - b.min, b.max === undefined ? undefined : b.max - v]
            .filter((m) => m !== undefined)
          report.push(
            `  seed ${seed} ${b.property.padEnd(9)} ${b.metric.padEnd(24)} ${String(round(v)).padStart(8)}  ` +
              `${b.min === undefined ? "" : `min ${round(b.min)} `}${b.max === undefined ? "" : `max ${round(b.max)}`}  margin ${round(Math.min(...margins))}`
          )
        }
        yield* PlotOnFailure.expectWithPlot(result, `archiver-seed-${seed}`, (summary) => {
          expect(summary.failure, "SAFETY: the pipeline failed").toBeNull()
          for (const b of BOUNDS) {
            const v = measured[b.metric]
            if (b.min !== undefined) expect(v, `${b.property}: ${b.metric}`).toBeGreaterThanOrEqual(b.min)
            if (b.max !== undefined) expect(v, `${b.property}: ${b.metric}`).toBeLessThanOrEqual(b.max)
          }
        })
      }), 120_000)
  }
})
