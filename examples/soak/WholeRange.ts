/**
 * The range check the soak's commands (`chaos`, `scaleout`) make of a whole
 * number after `effect/cli` has read it, with the message each has always
 * given: `chaos: --runs: expected a whole number in [1, 1000], got 0`.
 */

/**
 * `undefined` when `n` is a whole number in [min, max]; else the message,
 * naming the command and the flag.
 *
 * **Example**
 *
 * ```ts
 * WholeRange.outside("chaos", "--runs", 0, 1, 1000) // "chaos: --runs: expected a whole number in [1, 1000], got 0"
 * ```
 */
export const outside = (command: string, flag: string, n: number, min: number, max: number): string | undefined =>
  Number.isInteger(n) && n >= min && n <= max ? undefined : `${command}: ${flag}: expected a whole number in [${min}, ${max}], got ${n}`
