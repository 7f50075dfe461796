/**
 * The summary of a run: the metrics scenarios bound, computed purely from the
 * trace and the simulator's ground truth.
 *
 * | metric | definition |
 * |---|---|
 * | `goodputRatio` | payload bytes verified (counted at the store) ÷ bytes the oracle got verified: an ideal pipeline, a fluid queue fed by the inflow and served at the best capacity any object size and in-flight allow, each byte counted one batch's store time after it is served (see `Oracle`); an upper bound, so above ~1 is a bug in the oracle |
 * | `phases` | one entry per window between consecutive events: `{ from, to, degraded, oracleKeepsUp, goodputRatio, maxLagSeconds }` |
 * | `worstPhaseGoodput` | lowest phase `goodputRatio` over degraded phases where the oracle keeps up with the inflow; `null` if none |
 * | `maxLagSeconds`, `meanLagSeconds` | freshness: age of the oldest record not yet committed (read or not), its maximum and time-weighted mean, from the simulated log's production times |
 * | `heldBytesMax` | highest payload bytes one instance held, counted outside the pipeline (source deliveries − store verifications, at every delivery); must be ≤ memory budget + `largestChunkBytes` |
 * | `latencyInflation` | time-weighted mean over samples of (object-upload p95 ÷ unloaded latency for the sample's mean object size); a sample without completions holds the previous value |
 * | `throttleRate` | throttled requests (503 SlowDown + 429) ÷ all requests, at the store |
 * | `floorViolations` | samples where some instance's concurrency or batch target bytes was below the declared floor |
 * | `recoverySeconds` | after the last event that ends a degradation (store worse than at start), seconds until goodput over a 1-second window is ≥ 90 % of the oracle over that window; `null` if it never is, or nothing was degraded |
 * | `maxInflightBytes` | highest bytes held by one instance (open + sealed + uploading) |
 * | `lostRecords` | records deleted by retention before being read (found or not yet found) |
 * | `undetectedLostRecords` | records the source lost to retention and found, minus those the pipeline reported lost: must be exactly 0 (positive: a gap went unreported; negative: over-counted) |
 * | `committedNotVerified` | records committed while neither verified in the store nor reported lost, checked at every commit by `CommitGuard` and summed (must be 0) |
 * | `fairness` | Jain's index over instances' verified bytes: (Σx)² ÷ (n·Σx²); 1 for one instance |
 * | `wallMillis` | wall time of the run |
 *
 * @since 0.1.0
 */
import type { Bound, MetricName } from "./Scenario.ts"
import * as Oracle from "./Oracle.ts"
import type { StoreParams } from "./Store.ts"
import type { TraceRow } from "./Trace.ts"

/**
 * A run's summary.
 *
 * @since 0.1.0
 */
export interface Summary {
  readonly scenario: string
  readonly policy: string
  readonly seed: number
  readonly durationSeconds: number
  readonly instances: number
  readonly goodputRatio: number
  readonly latencyInflation: number
  readonly throttleRate: number
  readonly floorViolations: number
  readonly recoverySeconds: number | null
  readonly maxInflightBytes: number
  readonly lostRecords: number
  readonly undetectedLostRecords: number
  readonly committedNotVerified: number
  readonly fairness: number
  /** Virtual seconds during which some policy of some instance was in mode `probing`. */
  readonly probeSeconds: number
  /**
   * What probing cost: the goodput shortfall against the oracle inside probe
   * windows, as a fraction of the run's oracle bytes (0 when no policy probed
   * or declares its mode).
   */
  readonly probeCost: number
  readonly bytesVerified: number
  readonly requests: number
  /** Highest age (s) of the oldest record not yet committed (see `TraceRow.lagSeconds`). */
  readonly maxLagSeconds: number
  /** Time-weighted mean of that age over the run (s). */
  readonly meanLagSeconds: number
  /** One entry per window between consecutive events (store or source changes). */
  readonly phases: ReadonlyArray<PhaseSummary>
  /**
   * The lowest `goodputRatio` over degraded phases in which the oracle keeps up
   * with the inflow; `null` when there is no such phase.
   */
  readonly worstPhaseGoodput: number | null
  /**
   * Highest bytes held by one instance, counted outside the pipeline (source
   * deliveries minus store verifications, exactly at every change); must stay
   * ≤ the memory budget + the largest chunk.
   */
  readonly heldBytesMax: number
  /** The largest chunk (payload bytes) the source delivered: the slack `heldBytesMax` is allowed. */
  readonly largestChunkBytes: number
  /** A pipeline failure (e.g. `BatchFailed`), if one stopped an instance. */
  readonly failure: string | null
  readonly wallMillis: number
}

/**
 * One window of a run between consecutive events.
 *
 * @since 0.2.0
 */
export interface PhaseSummary {
  /** Start and end of the window, virtual seconds. */
  readonly from: number
  readonly to: number
  /** The store is worse than at the start (lower capacity, errors, throttling, rate limit). */
  readonly degraded: boolean
  /** The oracle's capacity in this window is at least the inflow (it never falls behind). */
  readonly oracleKeepsUp: boolean
  /** Payload bytes verified in the window ÷ bytes the oracle served in it. */
  readonly goodputRatio: number
  /** Highest freshness lag in the window (s). */
  readonly maxLagSeconds: number
}

/**
 * A world phase: store parameters in force from `at` (ms).
 *
 * @since 0.1.0
 */
export interface Phase {
  readonly at: number
  readonly params: StoreParams
}

/**
 * Whether `params` are worse than `base` for an uploader (lower oracle capacity,
 * more errors or throttling, a lower rate limit).
 *
 * @since 0.1.0
 */
export const isDegraded = (params: StoreParams, base: StoreParams, world: Oracle.OracleWorld): boolean =>
  Oracle.capacity(params, world, Infinity, 0) < Oracle.capacity(base, world, Infinity, 0) * 0.999 ||
  params.errorRate > base.errorRate ||
  (params.throttleAbove ?? Infinity) < (base.throttleAbove ?? Infinity) ||
  (params.throttleAbove !== null && params.throttleProbability > base.throttleProbability) ||
  (params.rateLimit ?? Infinity) < (base.rateLimit ?? Infinity)

/**
 * The time (ms) of the last event that ends a degradation, if any.
 *
 * @since 0.1.0
 */
export const lastRevert = (phases: ReadonlyArray<Phase>, world: Oracle.OracleWorld): number | null => {
  const base = phases[0]
  if (base === undefined) return null
  let revert: number | null = null
  for (let i = 1; i < phases.length; i++) {
    const before = phases[i - 1] as Phase
    const now = phases[i] as Phase
    if (
      isDegraded(before.params, base.params, world) &&
      !isDegraded(now.params, base.params, world)
    ) revert = now.at
  }
  return revert
}

/** The oracle's verified bytes per second in `row` (its served bytes where the trace does not model them). */
const oracleVerified = (row: TraceRow): number => row.oracleVerifiedBytesPerSecond ?? row.oracleBytesPerSecond

/**
 * Per-phase figures: one {@link PhaseSummary} per window between consecutive
 * `boundaries` (ms, starting at 0 and ending at the run's duration). `world[i]`
 * is the store and inflow in force during `rows[i]`; a window's degradation and
 * whether the oracle keeps up are judged from its first row.
 *
 * @since 0.2.0
 */
export const phases = (
  rows: ReadonlyArray<TraceRow>,
  world: ReadonlyArray<{ readonly params: StoreParams; readonly inflow: number }>,
  boundaries: ReadonlyArray<number>,
  oracleWorld: Oracle.OracleWorld
): Array<PhaseSummary> => {
  const base = world[0]?.params
  const out: Array<PhaseSummary> = []
  const edges = [...new Set(boundaries)].sort((a, b) => a - b)
  for (let k = 0; k + 1 < edges.length; k++) {
    const from = edges[k] as number
    const to = edges[k + 1] as number
    let good = 0
    let oracle = 0
    let maxLag = 0
    let first: { readonly params: StoreParams; readonly inflow: number } | undefined
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as TraceRow
      if (row.t <= from || row.t > to) continue
      first ??= world[i]
      good += row.goodputBytesPerSecond
      oracle += oracleVerified(row)
      if (row.lagSeconds > maxLag) maxLag = row.lagSeconds
    }
    if (first === undefined || base === undefined) continue
    out.push({
      from: from / 1000,
      to: to / 1000,
      degraded: isDegraded(first.params, base, oracleWorld),
      oracleKeepsUp: Oracle.capacity(first.params, oracleWorld, Infinity, first.inflow) >= first.inflow,
      goodputRatio: round(oracle === 0 ? 1 : good / oracle),
      maxLagSeconds: round(maxLag)
    })
  }
  return out
}

/**
 * The lowest `goodputRatio` over degraded phases where the oracle keeps up with
 * the inflow; `null` when there is none.
 *
 * @since 0.2.0
 */
export const worstPhaseGoodput = (phases: ReadonlyArray<PhaseSummary>): number | null => {
  let worst: number | null = null
  for (const p of phases) {
    if (p.degraded && p.oracleKeepsUp && (worst === null || p.goodputRatio < worst)) worst = p.goodputRatio
  }
  return worst
}

/**
 * Seconds from `revertAt` until goodput over a 1-second window reaches 90 % of the
 * oracle over that window; `null` if never.
 *
 * @since 0.1.0
 */
export const recoverySeconds = (rows: ReadonlyArray<TraceRow>, sampleMillis: number, revertAt: number | null): number | null => {
  if (revertAt === null) return null
  const window = Math.max(1, Math.round(1000 / sampleMillis))
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as TraceRow
    if (row.t < revertAt + window * sampleMillis) continue
    let good = 0
    let oracle = 0
    for (let j = i - window + 1; j <= i; j++) {
      const r = rows[j] as TraceRow
      good += r.goodputBytesPerSecond
      oracle += r.oracleBytesPerSecond
    }
    if (good >= 0.9 * oracle) return (row.t - revertAt) / 1000
  }
  return null
}

/**
 * Jain's fairness index of `xs`: 1 when all equal, 1/n when one takes all.
 *
 * **Example**
 *
 * ```ts
 * import { Summary } from "@sluice/testkit"
 *
 * Summary.jain([1, 1, 1]) // 1
 * Summary.jain([3, 0, 0]) // 0.333…
 * ```
 *
 * @since 0.1.0
 */
export const jain = (xs: ReadonlyArray<number>): number => {
  let sum = 0
  let squares = 0
  for (const x of xs) {
    sum += x
    squares += x * x
  }
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares)
}

/**
 * Time-weighted latency inflation over the trace (holding the last value over
 * samples without completions).
 *
 * @since 0.1.0
 */
export const latencyInflation = (rows: ReadonlyArray<TraceRow>): number => {
  let last: number | null = null
  let sum = 0
  let n = 0
  for (const row of rows) {
    if (row.latencyInflation !== null) last = row.latencyInflation
    if (last !== null) {
      sum += last
      n++
    }
  }
  return n === 0 ? 1 : sum / n
}

/**
 * Seconds of probing and their cost (see `Summary.probeSeconds` / `probeCost`).
 *
 * @since 0.1.0
 */
export const probeCost = (
  rows: ReadonlyArray<TraceRow>,
  sampleMillis: number
): { readonly probeSeconds: number; readonly probeCost: number } => {
  let oracle = 0
  let shortfall = 0
  let probing = 0
  for (const row of rows) {
    oracle += row.oracleBytesPerSecond
    if (row.probing > 0) {
      probing++
      shortfall += Math.max(0, row.oracleBytesPerSecond - row.goodputBytesPerSecond)
    }
  }
  return { probeSeconds: (probing * sampleMillis) / 1000, probeCost: oracle === 0 ? 0 : shortfall / oracle }
}

/**
 * Goodput ratio: bytes verified ÷ Σ oracle × sample period.
 *
 * @since 0.1.0
 */
export const goodputRatio = (rows: ReadonlyArray<TraceRow>, sampleMillis: number, bytesVerified: number): number => {
  let oracleBytes = 0
  for (const row of rows) oracleBytes += (oracleVerified(row) * sampleMillis) / 1000
  return oracleBytes === 0 ? 1 : bytesVerified / oracleBytes
}

/**
 * A failed bound.
 *
 * @since 0.1.0
 */
export interface BoundFailure {
  readonly metric: MetricName
  readonly bound: Bound
  readonly actual: number | null
}

/**
 * Checks a summary against a scenario's `expect` bounds; returns the failures.
 *
 * @since 0.1.0
 */
export const check = (
  summary: Summary,
  expect: { readonly [K in MetricName]?: Bound }
): Array<BoundFailure> => {
  const failures: Array<BoundFailure> = []
  for (const [metric, bound] of Object.entries(expect) as Array<[MetricName, Bound | undefined]>) {
    if (bound === undefined) continue
    const actual = summary[metric]
    const ok = actual !== null && Number.isFinite(actual) &&
      (bound.min === undefined || actual >= bound.min) &&
      (bound.max === undefined || actual <= bound.max)
    if (!ok) failures.push({ metric, bound, actual })
  }
  return failures
}

/**
 * Renders a failed bound: `goodputRatio = 0.41, expected ≥ 0.9`.
 *
 * @since 0.1.0
 */
export const describeFailure = (f: BoundFailure): string => {
  const parts: Array<string> = []
  if (f.bound.min !== undefined) parts.push(`>= ${f.bound.min}`)
  if (f.bound.max !== undefined) parts.push(`<= ${f.bound.max}`)
  return `${f.metric} = ${f.actual === null ? "null" : round(f.actual)}, expected ${parts.join(" and ")}`
}

const round = (x: number): number => Math.round(x * 1000) / 1000
