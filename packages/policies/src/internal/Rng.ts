/**
 * A tiny seeded PRNG (mulberry32) whose whole state is one uint32, so a pure
 * policy core can carry it in its state and stay deterministic.
 *
 * @internal
 */

/** Next `[value in [0, 1), nextState]` from `state`. */
export const next = (state: number): readonly [number, number] => {
  const s = (state + 0x6d2b79f5) >>> 0
  let t = s
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return [((t ^ (t >>> 14)) >>> 0) / 4294967296, s]
}

/** A jitter factor in `[1 - jitter, 1 + jitter]` and the next state. */
export const jitterFactor = (state: number, jitter: number): readonly [number, number] => {
  const [u, s] = next(state)
  return [1 + jitter * (2 * u - 1), s]
}
