/**
 * bench:e2e, bench:peer, bench/stages — what the bench drivers share: their command lines
 * (read with `effect/cli` through `CommandLine.script`, counts checked here),
 * the median they report, and how figures are written.
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Option, Result } from "effect"
import { Flag } from "effect/cli"

/** A count option as read: whether it was given, and its value (the default when not given) or what is wrong with it. */
export interface Count {
  readonly given: boolean
  readonly value: Result.Result<number, string>
}

/** `--name`'s text as a whole number ≥ 1 (`1_000_000` and `1,000,000` read as 1000000), `fallback` when absent; else what is wrong. */
const count = (name: string, text: Option.Option<string>, fallback: number): Result.Result<number, string> => {
  const value = Option.isNone(text) ? fallback : Number(text.value.replace(/[_,]/g, ""))
  return Number.isSafeInteger(value) && value >= 1
    ? Result.succeed(value)
    : Result.fail(`--${name} needs a whole number ≥ 1, got ${Option.getOrUndefined(text)}`)
}

/**
 * A whole-number option ≥ 1, `fallback` when absent. Read as text so that
 * `1_000_000` and `1,000,000` read too (`effect/cli`'s integers refuse both),
 * then checked here: a wrong value is the command's to report, in its words
 * (`--records needs a whole number ≥ 1, got …`). Its help says the default.
 */
export const countFlag = (name: string, fallback: number, description: string): Flag.Flag<Count> =>
  Flag.String(name).pipe(
    Flag.withMetavar("n"),
    Flag.withDescription(`${description} (a whole number ≥ 1, default ${fallback.toLocaleString("en-US")}; _ and , may separate digits)`),
    Flag.optional,
    Flag.map((text) => ({ given: Option.isSome(text), value: count(name, text, fallback) }))
  )

/**
 * An argument list read by `script`, then checked by the command's own code
 * (`check`: what `effect/cli` cannot check, its message as the command gives
 * it): the options to run with, or the help, a completion script, or what is
 * wrong.
 */
export const readLine = <F, A>(
  script: CommandLine.Script<F>,
  argv: ReadonlyArray<string>,
  check: (flags: F) => Result.Result<A, string>
): CommandLine.ScriptLine<A> => {
  const line = script.read(argv)
  if (line._tag !== "Run") return line
  const checked = check(line.flags)
  return Result.isSuccess(checked) ? { _tag: "Run", flags: checked.success } : { _tag: "Invalid", message: checked.failure }
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
