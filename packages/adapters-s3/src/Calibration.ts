/**
 * Fitting the testkit's store model to a measured sweep: from cells of
 * (in-flight, object size) → throughput, latency and throttles, the model's
 * parameters — per-request latency `a`, per-byte cost `b` (as a bandwidth per
 * request), the knee, the jitter and the throttle onset — and, per cell, what
 * the fitted model predicts beside what was measured. Pure: no I/O, no clock.
 *
 * The model (testkit `Store`): a request's latency is
 * `(a + bytes · b) × max(1, inflight / knee) × (1 + jitter · Exp(1))`, so a
 * closed loop of `n` uploads of `S` bytes moves
 * `n · S / ((a + S · b)(1 + jitter) · max(1, n / knee))` bytes per second; a
 * request with more than `throttleAbove` in flight is throttled with
 * probability `throttleProbability`.
 *
 * @since 0.3.0
 */
import { Schema } from "effect"

/**
 * One measured cell of a sweep: `inflight` uploads of `objectBytes` each, in a
 * closed loop, for `seconds`.
 *
 * @since 0.3.0
 */
export interface Cell {
  readonly inflight: number
  readonly objectBytes: number
  readonly seconds: number
  /** Uploads answered (successes and throttles). */
  readonly requests: number
  /** Uploads answered 503 SlowDown / 429. */
  readonly throttles: number
  /** Uploads that failed transiently (a closed connection, a 500), not counted in `requests`: the worker went on. */
  readonly errors: number
  /** Bytes of successful uploads per second. */
  readonly bytesPerSecond: number
  /** Mean and standard deviation of the successful uploads' latency (ms). */
  readonly latencyMeanMillis: number
  readonly latencyStdMillis: number
}

/**
 * The fitted model: the scenario `store` block's numbers.
 *
 * @since 0.3.0
 */
export interface StoreModel {
  /** `a`: the per-request latency (ms), what a zero-byte request costs. */
  readonly baseLatencyMillis: number
  /** `1 / b`: bytes per second one request transfers. */
  readonly bandwidthBytesPerSecond: number
  /** In-flight uploads above which throughput stops growing. */
  readonly knee: number
  /** Scale of the `Exp(1)` latency jitter. */
  readonly jitter: number
  /** In-flight above which throttles appear (`null`: none seen). */
  readonly throttleAbove: number | null
  /** Share of uploads throttled above `throttleAbove`. */
  readonly throttleProbability: number
}

/**
 * A cell beside what the fitted model predicts for it.
 *
 * @since 0.3.0
 */
export interface CellFit {
  readonly cell: Cell
  readonly modelBytesPerSecond: number
  /** `model / measured − 1`. */
  readonly error: number
}

/**
 * A fit: the model, and every cell with the model's prediction.
 *
 * @since 0.3.0
 */
export interface Fit {
  readonly model: StoreModel
  readonly cells: ReadonlyArray<CellFit>
  /** The largest `|error|` over the cells. */
  readonly maxError: number
  /** The mean `|error|` over the cells. */
  readonly meanError: number
}

/**
 * A throttle share below this is noise (one stray 503 in a few hundred
 * uploads), not the store's onset.
 */
const THROTTLE_ONSET_SHARE = 0.01

/** Knee candidates are whole in-flight counts (the simulator's knee is an integer), up to 4× the largest measured. */
const KNEE_STEP = 1

/**
 * Throughput the model predicts for `inflight` uploads of `objectBytes` in a
 * closed loop (bytes of successful uploads per second).
 *
 * @since 0.3.0
 */
export const predict = (model: StoreModel, inflight: number, objectBytes: number): number => {
  const single = (model.baseLatencyMillis + (objectBytes * 1000) / model.bandwidthBytesPerSecond) * (1 + model.jitter)
  const throttled = model.throttleAbove !== null && inflight > model.throttleAbove ? model.throttleProbability : 0
  return (inflight * objectBytes * 1000 * (1 - throttled)) / (single * Math.max(1, inflight / model.knee))
}

/** Ordinary least squares of y on x: intercept and slope. */
const line = (points: ReadonlyArray<readonly [number, number]>): { readonly intercept: number; readonly slope: number } => {
  const n = points.length
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0)
  const slope = sxx === 0 ? 0 : points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx
  return { intercept: my - slope * mx, slope }
}

/**
 * A fit failed: the sweep lacks what the model needs (the message says what).
 *
 * @since 0.3.0
 */
export class CalibrationError extends Schema.TaggedError<CalibrationError>()("CalibrationError", {
  message: Schema.String
}) {}

/**
 * Fits the model to a sweep.
 *
 * **Details**
 *
 * - `jitter` from the in-flight-1 cells: with `L = L₀ (1 + j · Exp(1))`,
 *   mean − std = `L₀`, so `j = std / (mean − std)` (their mean over sizes).
 * - `a` and `b`: a least-squares line of `mean / (1 + j)` on the object size
 *   over the in-flight-1 cells (at least two sizes). An intercept below 0
 *   (a store whose per-request cost is lost in the noise) is taken as 0.
 * - `knee`: the whole number minimising the squared
 *   relative error of the throughput over every cell without throttles.
 * - `throttleAbove`: the largest in-flight measured clean below the smallest
 *   whose throttle share reaches 1 % (the sweep brackets the onset between
 *   them; one below it when no smaller cell was measured);
 *   `throttleProbability`: the mean share above it.
 *
 * @since 0.3.0
 */
export const fit = (cells: ReadonlyArray<Cell>): Fit => {
  const single = cells.filter((c) => c.inflight === 1 && c.requests > c.throttles && c.latencyMeanMillis > 0)
  const sizes = new Set(single.map((c) => c.objectBytes))
  if (sizes.size < 2) {
    throw new CalibrationError({ message: `the sweep needs in-flight 1 at two object sizes or more (has ${sizes.size})` })
  }
  const jitters = single.map((c) => (c.latencyMeanMillis > c.latencyStdMillis ? c.latencyStdMillis / (c.latencyMeanMillis - c.latencyStdMillis) : 0))
  const jitter = jitters.reduce((s, j) => s + j, 0) / jitters.length
  const { intercept, slope } = line(single.map((c) => [c.objectBytes, c.latencyMeanMillis / (1 + jitter)] as const))
  if (!(slope > 0)) throw new CalibrationError({ message: `latency does not grow with the object size (slope ${slope} ms/byte): use larger sizes` })
  const baseLatencyMillis = Math.max(0, intercept)
  const bandwidthBytesPerSecond = 1000 / slope

  const throttling = (c: Cell) => c.requests > 0 && c.throttles / c.requests >= THROTTLE_ONSET_SHARE
  const onset = [...cells].filter(throttling).sort((x, y) => x.inflight - y.inflight)[0]
  // The sweep brackets the onset between the last clean in-flight and the first throttled one: the clean one is what it saw.
  const lastClean = onset === undefined ? undefined : Math.max(0, ...cells.filter((c) => c.inflight < onset.inflight && !throttling(c)).map((c) => c.inflight))
  const throttleAbove = onset === undefined ? null : (lastClean !== undefined && lastClean > 0 ? lastClean : onset.inflight - 1)
  const throttledCells = throttleAbove === null ? [] : cells.filter((c) => c.inflight > throttleAbove && c.requests > 0)
  const throttleProbability = throttledCells.length === 0 ? 0 : throttledCells.reduce((s, c) => s + c.throttles / c.requests, 0) / throttledCells.length

  const base = { baseLatencyMillis, bandwidthBytesPerSecond, jitter, throttleAbove, throttleProbability }
  const clean = cells.filter((c) => c.throttles === 0 && c.bytesPerSecond > 0)
  const most = Math.max(1, ...cells.map((c) => c.inflight))
  let knee = most
  let best = Number.POSITIVE_INFINITY
  for (let k = 1; k <= 4 * most; k += KNEE_STEP) {
    const e = clean.reduce((s, c) => s + (predict({ ...base, knee: k }, c.inflight, c.objectBytes) / c.bytesPerSecond - 1) ** 2, 0)
    if (e < best) {
      best = e
      knee = k
    }
  }
  const model: StoreModel = { ...base, knee }
  const fitted = cells.map((cell): CellFit => {
    const modelBytesPerSecond = predict(model, cell.inflight, cell.objectBytes)
    return { cell, modelBytesPerSecond, error: cell.bytesPerSecond > 0 ? modelBytesPerSecond / cell.bytesPerSecond - 1 : Number.POSITIVE_INFINITY }
  })
  const errors = fitted.map((f) => Math.abs(f.error))
  return { model, cells: fitted, maxError: Math.max(...errors), meanError: errors.reduce((s, e) => s + e, 0) / errors.length }
}

/**
 * The scenario `store` block of a model (testkit `Scenario.StoreSection`), as
 * JSON data: paste it into a scenario file to prove a composition against
 * your store. `errorRate` and `rateLimit` are not measured by a sweep.
 *
 * @since 0.3.0
 */
export const storeBlock = (model: StoreModel) => ({
  baseLatency: Math.round(model.baseLatencyMillis * 100) / 100,
  bandwidthPerRequest: Math.round(model.bandwidthBytesPerSecond),
  knee: model.knee,
  jitter: Math.round(model.jitter * 1000) / 1000,
  throttleAbove: model.throttleAbove,
  throttleProbability: Math.round(model.throttleProbability * 1000) / 1000,
  errorRate: 0,
  rateLimit: null
})
