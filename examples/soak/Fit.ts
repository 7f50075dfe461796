/**
 * soak — least-squares line through a series: the slope says how fast a
 * quantity grows, r² how much of its movement that straight line explains
 * (near 1: steady growth; near 0: noise around a level). A quantity "grows"
 * only when both are large: a steep slope with a low r² is a sawtooth (GC,
 * batches filling and emptying), not a trend.
 */

/** A fitted line `y = intercept + slope × x`. */
export interface Fit {
  /** Units of y per unit of x (per second, for the soak's series). */
  readonly slope: number
  readonly intercept: number
  /** Share of the variance of y the line explains, 0..1 (1 for a constant series). */
  readonly r2: number
  readonly n: number
}

/**
 * Fits `ys` against `xs` (equal lengths; pairs with a `null` y are left out).
 *
 * **Example**
 *
 * ```ts
 * Fit.linear([0, 1, 2, 3], [10, 12, 14, 16]) // { slope: 2, intercept: 10, r2: 1, n: 4 }
 * ```
 */
export const linear = (xs: ReadonlyArray<number>, ys: ReadonlyArray<number | null>): Fit => {
  const points: Array<[number, number]> = []
  xs.forEach((x, i) => {
    const y = ys[i]
    if (y !== null && y !== undefined && Number.isFinite(y)) points.push([x, y])
  })
  const n = points.length
  if (n < 2) return { slope: 0, intercept: points[0]?.[1] ?? 0, r2: 0, n }
  let sx = 0
  let sy = 0
  for (const [x, y] of points) {
    sx += x
    sy += y
  }
  const mx = sx / n
  const my = sy / n
  let sxx = 0
  let sxy = 0
  let syy = 0
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2
    sxy += (x - mx) * (y - my)
    syy += (y - my) ** 2
  }
  if (sxx === 0) return { slope: 0, intercept: my, r2: 0, n }
  const slope = sxy / sxx
  return { slope, intercept: my - slope * mx, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy), n }
}

/**
 * Whether a fitted series grows over the `seconds` it spans by more than
 * `material` (in its own units) with r² ≥ `minR2` (default 0.6).
 *
 * **Example**
 *
 * ```ts
 * Fit.grows(Fit.linear([0, 1, 2], [0, 5, 10]), 2, 1) // true: +10 over 2 s, r² 1
 * ```
 */
export const grows = (fit: Fit, seconds: number, material: number, minR2 = 0.6): boolean =>
  fit.slope > 0 && fit.r2 >= minR2 && fit.slope * seconds > material
