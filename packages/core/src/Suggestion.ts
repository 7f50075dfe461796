/**
 * "Did you mean …?" for command lines and specs: the edit distance between two
 * short words, one implementation for every package's messages.
 *
 * @since 0.3.0
 */

/**
 * Levenshtein distance: the fewest insertions, deletions and substitutions
 * that turn `a` into `b`.
 *
 * **When to use**
 *
 * To suggest the name a typo meant (`thrttle` → `throttle`, distance 1).
 *
 * **Example**
 *
 * ```ts
 * import { Suggestion } from "@sluice/core"
 *
 * Suggestion.distance("thrttle", "throttle") // 1
 * ```
 *
 * @since 0.3.0
 */
export const distance = (a: string, b: string): number => {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    row = next
  }
  return row[b.length] ?? 0
}
