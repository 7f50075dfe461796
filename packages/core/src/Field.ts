/**
 * Config field helpers for policy authors: every numeric field of a policy's
 * config declares its default and its valid range in one line, and decodes with
 * the same typed errors (`Config.ConfigError`) as the built-in policies.
 *
 * @example
 * ```ts
 * import { Field } from "@sluice/core"
 * import { Schema } from "effect"
 *
 * const MyConfig = Schema.Struct({
 *   floor: Field.int(1, 1),                       // ≥ 1, default 1
 *   ceiling: Field.int(64, 1),                    // ≥ 1, default 64
 *   backoff: Field.number(0.5, { minimum: 0, maximum: 1, exclusiveMinimum: true }),
 *   window: Field.positiveMillis("5 seconds"),    // "5 seconds", "500ms" or ms
 *   target: Field.positiveBytes("8 MiB")          // "8 MiB" or bytes
 * }).check(Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]))
 * ```
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as Config from "./Config.ts"

/**
 * An integer in `[minimum, maximum]`, defaulting to `value` when the key is absent.
 *
 * @since 0.1.0
 */
export const int = (value: number, minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  Schema.Int.check(Schema.isBetween({ minimum, maximum })).pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/**
 * A finite number in `[minimum, maximum]` (either bound optionally exclusive),
 * defaulting to `value`.
 *
 * @since 0.1.0
 */
export const number = (
  value: number,
  range: { readonly minimum: number; readonly maximum: number; readonly exclusiveMinimum?: boolean; readonly exclusiveMaximum?: boolean }
) => Schema.Finite.check(Schema.isBetween(range)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/**
 * A duration (`"5 seconds"`, `"500ms"` or milliseconds; finite, ≥ 0), decoded to
 * milliseconds, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const millis = (value: number | string) =>
  Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/**
 * A duration greater than 0 (a period, a window, a timeout), defaulting to `value`.
 *
 * @since 0.1.0
 */
export const positiveMillis = (value: number | string) =>
  Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/**
 * A byte size (`"8 MiB"` or bytes; finite, ≥ 0), decoded to bytes, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const bytes = (value: number | string) =>
  Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/**
 * A byte size of at least 1 byte (a target, a divisor), defaulting to `value`.
 *
 * @since 0.1.0
 */
export const positiveBytes = (value: number | string) =>
  Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)))

/**
 * A boolean, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const boolean = (value: boolean) => Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/**
 * A cross-field check `low ≤ high` for a struct's `.check(...)`, reported at
 * `low`'s path (`floor (9) must be ≤ ceiling (4)`).
 *
 * @since 0.1.0
 */
export const ordered = <T>(
  low: keyof T & string,
  high: keyof T & string,
  get: (t: T) => readonly [number, number]
) =>
  Schema.makeFilter<T>((t) => {
    const [a, b] = get(t)
    return a <= b ? undefined : { path: [low], issue: `${low} (${a}) must be ≤ ${high} (${b})` }
  })
