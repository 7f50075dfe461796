/**
 * bench:e2e, bench:peer — what the bench drivers share: reading their
 * `--name value` options, the median they report, and how figures are written.
 */

/** The value after `--name` on the command line, if given. */
export const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** `--name` as a whole number ≥ 1 (`1_000_000` and `1,000,000` read as 1000000), else `fallback`; throws on anything else. */
export const count = (name: string, fallback: number): number => {
  const text = argValue(name)
  const value = text === undefined ? fallback : Number(text.replace(/[_,]/g, ""))
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name} needs a whole number ≥ 1, got ${text}`)
  return value
}

/** The median (the mean of the middle two for an even count; 0 for none). */
export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return 0
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

/** `x` rounded to 3 decimals (for the JSON line). */
export const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** A count in thousands or millions: `850 k`, `1.25 M`. */
export const k = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(0)} k`)
/** Bytes in MB (10⁶). */
export const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`
/** A share as a percentage; `?` when unknown. */
export const pct = (x: number | undefined): string => (x === undefined ? "?" : `${(100 * x).toFixed(0)}%`)
/** Seconds with 2 decimals; `?` when unknown. */
export const sec = (x: number | undefined): string => (x === undefined ? "?" : `${x.toFixed(2)} s`)
