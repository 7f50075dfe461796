/**
 * Schema field helpers shared by the policy configs: every numeric field
 * declares its default and valid range in one line.
 *
 * @internal
 */
import { Config } from "@sluice/core"
import { Effect, Schema } from "effect"

/** An integer in `[minimum, maximum]`, defaulting to `value`. */
export const int = (value: number, minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  Schema.Int.check(Schema.isBetween({ minimum, maximum })).pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** A finite number in `[minimum, maximum]` (bounds optionally exclusive), defaulting to `value`. */
export const number = (
  value: number,
  range: { readonly minimum: number; readonly maximum: number; readonly exclusiveMinimum?: boolean; readonly exclusiveMaximum?: boolean }
) => Schema.Finite.check(Schema.isBetween(range)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** A duration (`"5 seconds"`, `"500ms"` or ms; finite, ≥ 0), defaulting to `value`. */
export const millis = (value: number | string) =>
  Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/** A duration greater than 0 (a period, a window, a timeout), defaulting to `value`. */
export const positiveMillis = (value: number | string) =>
  Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/** A byte size (`"8 MiB"` or bytes; finite, ≥ 0), defaulting to `value`. */
export const bytes = (value: number | string) =>
  Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/** A byte size of at least 1 byte (a target, a divisor), defaulting to `value`. */
export const positiveBytes = (value: number | string) =>
  Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/** A boolean, defaulting to `value`. */
export const boolean = (value: boolean) => Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** A cross-field check `low ≤ high`, reported at `low`'s path. */
export const ordered = <T>(
  low: keyof T & string,
  high: keyof T & string,
  get: (t: T) => readonly [number, number]
) =>
  Schema.makeFilter<T>((t) => {
    const [a, b] = get(t)
    return a <= b ? undefined : { path: [low], issue: `${low} (${a}) must be ≤ ${high} (${b})` }
  })
