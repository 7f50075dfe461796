/**
 * A small seeded pseudo-random generator (mulberry32) for the simulator: same
 * seed, same sequence, on every machine. Not for cryptography.
 *
 * The pure core is {@link next} (state in, `[value, state]` out); {@link make}
 * wraps it in a mutable generator for hot loops.
 *
 * @since 0.1.0
 */

/**
 * The generator state: one unsigned 32-bit integer.
 *
 * @since 0.1.0
 */
export type RngState = number

/**
 * Derives the initial state from a seed (any finite number; the integer part is
 * mixed so that seeds 1, 2, 3 give unrelated sequences).
 *
 * @since 0.1.0
 */
export const seedState = (seed: number): RngState => {
  let h = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * One step of mulberry32: a uniform value in `[0, 1)` and the next state.
 *
 * **Example**
 *
 * ```ts
 * import { Rng } from "@sluice/testkit"
 *
 * const [u, s1] = Rng.next(Rng.seedState(7))
 * const [v] = Rng.next(s1)
 * ```
 *
 * @since 0.1.0
 */
export const next = (state: RngState): readonly [number, RngState] => {
  const s = (state + 0x6d2b79f5) >>> 0
  let t = s
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return [((t ^ (t >>> 14)) >>> 0) / 4294967296, s]
}

/**
 * A mutable seeded generator.
 *
 * @since 0.1.0
 */
export interface Rng {
  /** Uniform in `[0, 1)`. */
  readonly uniform: () => number
  /** Exponential with mean 1 (`Exp(1)`). */
  readonly exponential: () => number
  /** An independent generator derived from this one (for a separate stream). */
  readonly fork: () => Rng
}

/**
 * Builds a mutable generator from a seed.
 *
 * **Example**
 *
 * ```ts
 * import { Rng } from "@sluice/testkit"
 *
 * const rng = Rng.make(42)
 * const jitter = 1 + 0.1 * rng.exponential()
 * ```
 *
 * @since 0.1.0
 */
export const make = (seed: number): Rng => fromState(seedState(seed))

const fromState = (initial: RngState): Rng => {
  let state = initial
  const uniform = () => {
    const [u, s] = next(state)
    state = s
    return u
  }
  return {
    uniform,
    // 1 - u is in (0, 1], so the log is finite.
    exponential: () => -Math.log(1 - uniform()),
    fork: () => fromState(seedState(Math.floor(uniform() * 4294967296)))
  }
}
