/**
 * The running weighted least-squares fit of `latency ≈ a + b·bytes`: the
 * per-request cost `a` and the per-byte cost `b` of a store, from samples of
 * mixed sizes (AdaptiveBatch sizes objects with it; `Latency` normalises by
 * `a / b`).
 */

/** The running least-squares sums. */
export interface Fit {
  readonly n: number
  readonly sx: number
  readonly sy: number
  readonly sxx: number
  readonly sxy: number
}

/**
 * An empty fit.
 */
export const emptyFit: Fit = { n: 0, sx: 0, sy: 0, sxx: 0, sxy: 0 }

/**
 * Adds a sample, forgetting older ones by `lambda`.
 */
export const addSample = (f: Fit, bytes: number, latency: number, lambda: number): Fit => ({
  n: f.n * lambda + 1,
  sx: f.sx * lambda + bytes,
  sy: f.sy * lambda + latency,
  sxx: f.sxx * lambda + bytes * bytes,
  sxy: f.sxy * lambda + bytes * latency
})

/** A latency line `a + b·bytes`: `a` in ms, `b` in ms per byte. */
export interface Line {
  readonly a: number
  readonly b: number
}

/**
 * The fitted line, or `undefined` while the sizes have no spread (the fit is
 * not determined).
 */
export const solve = (f: Fit): Line | undefined => {
  if (f.n < 2) return undefined
  const det = f.n * f.sxx - f.sx * f.sx
  const meanX = f.sx / f.n
  // Relative spread below 1 %: not determined.
  if (det <= 0 || det / (f.n * f.n) < (0.01 * meanX) ** 2) return undefined
  const b = (f.n * f.sxy - f.sx * f.sy) / det
  return { a: (f.sy - b * f.sx) / f.n, b }
}
