/**
 * Config decoding: every Sluice component takes its config as plain data and
 * decodes it with an `effect/Schema`, so bad config fails at construction with a
 * message naming the field.
 *
 * Config is checked twice. At compile time, a component's input is typed
 * {@link Input} of its schema (the schema's encoded side: plain data, keys with
 * a default optional), so a misspelled key or a value of the wrong kind fails
 * `tsc`. At run time, {@link decode} rejects what types cannot see: unknown keys
 * in data read from a file, numbers out of range, `NaN`, `Infinity`, and text
 * that is not a duration or a size.
 *
 * **How a component uses it**
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * // 1. The schema, with defaults and ranges, and its two types.
 * export const UploaderConfig = Schema.Struct({
 *   partSize: Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))),
 *   timeout: Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30s")))
 * })
 * export type UploaderConfig = typeof UploaderConfig.Type                 // what the code reads
 * export type UploaderInput = Config.Input<typeof UploaderConfig>          // what callers write
 *
 * // 2. The entry point takes the input type, not `unknown`.
 * export const make = (input: UploaderInput = {}) =>
 *   Config.decode("uploader", UploaderConfig, input)
 *
 * make({ partSize: "16 MiB", timeout: "1m" })      // ok
 * // make({ partsize: "16 MiB" })                 // tsc: 'partsize' does not exist in type …
 * ```
 *
 * @since 0.1.0
 */
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"

/**
 * Config was rejected. `message` starts with the component and names the
 * offending field, e.g.
 * `pipeline: Expected at least 1 byte, got 0\n  at ["memoryBudget"]`.
 *
 * @since 0.1.0
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  component: Schema.String,
  message: Schema.String
}) {}

/**
 * What a caller may write for a config decoded with `S`: the schema's encoded
 * type. Keys with a decoding default are optional; durations and sizes are
 * `number | string`.
 *
 * **When to use**
 *
 * Type every public parameter that takes config data with it (instead of
 * `unknown`), so a misspelled key or a value of the wrong kind fails `tsc`.
 *
 * **Details**
 *
 * `Input<S>` is `S["Encoded"]`. For a schema that only declares what it decodes
 * to (`Schema.Decoder<C>`) it is `unknown`: nothing is checked at compile time.
 * Type such a field `Schema.Codec<C, I>` to keep `I`. A decoded config is
 * itself a valid input (a number is a valid duration and size), so a config can
 * be decoded again, e.g. a scenario's pipeline section passed to
 * `Pipeline.start`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({
 *   step: Schema.Finite,
 *   every: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("1s")))
 * })
 * type CfgInput = Config.Input<typeof Cfg>   // { readonly step: number; readonly every?: number | string }
 * const ok: CfgInput = { step: 1 }
 * ```
 *
 * @since 0.1.0
 */
export type Input<S extends Schema.Top> = S["Encoded"]

/**
 * `unknown` when `I` is `unknown` (or `any`), `never` otherwise: lets data of
 * unknown shape through the first overload of {@link decode} while a typed
 * value of the wrong shape still fails.
 *
 * **When to use**
 *
 * In a component's own overloads, to accept both its {@link Input} and data
 * whose static type is `unknown` (JSON read from a file), the way
 * {@link decode} does.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ step: Schema.Finite.pipe(Schema.withDecodingDefaultKey(Effect.succeed(1))) })
 *
 * export const make: {
 *   <I>(input: I & Config.OnlyUnknown<I>): Effect.Effect<typeof Cfg.Type, Config.ConfigError>
 *   (input?: Config.Input<typeof Cfg>): Effect.Effect<typeof Cfg.Type, Config.ConfigError>
 * } = (input: unknown = {}) => Config.decode("demo", Cfg, input)
 *
 * make({ step: 2 })                    // ok
 * make(JSON.parse('{"step":2}'))      // ok: checked at run time
 * // make({ stpe: 2 })                // tsc: 'stpe' does not exist …
 * ```
 *
 * @since 0.2.0
 */
export type OnlyUnknown<I> = unknown extends I ? unknown : never

/**
 * Decodes `input` with `schema`, rejecting unknown fields; reports every bad
 * field at once.
 *
 * **When to use**
 *
 * In a component's constructor or layer, on the config it was given.
 *
 * **Details**
 *
 * Two overloads:
 * - `input` of static type `unknown` (data read from a file, the environment,
 *   a CLI): accepted by `tsc` and checked only here, at run time.
 * - `input` typed {@link Input}`<S>`: a literal with a misspelled key or a
 *   wrong kind of value fails `tsc`.
 *
 * A value with a static type other than `unknown` that is not an `Input<S>`
 * fails to compile; cast it to `unknown` to have it checked at run time only.
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ step: Schema.Finite })
 * const ok = Config.decode("demo", Cfg, { step: 1 })   // Effect<{ readonly step: number }, ConfigError>
 * // Config.decode("demo", Cfg, { stpe: 1 })          // tsc: 'stpe' does not exist in type { readonly step: number }
 * const data: unknown = JSON.parse('{"step":"one"}')
 * const bad = Config.decode("demo", Cfg, data)         // fails: demo: Expected number\n  at ["step"]
 * ```
 *
 * @since 0.1.0
 */
export const decode: {
  <S extends Schema.Decoder<unknown>, I>(component: string, schema: S, input: I & OnlyUnknown<I>): Effect.Effect<S["Type"], ConfigError>
  <S extends Schema.Decoder<unknown>>(component: string, schema: S, input: Input<S>): Effect.Effect<S["Type"], ConfigError>
} = <S extends Schema.Decoder<unknown>>(component: string, schema: S, input: unknown): Effect.Effect<S["Type"], ConfigError> => {
  const result = decodeResult(component, schema, input)
  return Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(result.failure)
}

/**
 * Synchronous variant of {@link decode}: returns a `Result`. Typed the same
 * way: an {@link Input}`<S>`, or a value of static type `unknown` (cast a
 * typed value of the wrong shape `as unknown` to have it checked at run time
 * only).
 *
 * **Example**
 *
 * ```ts
 * import { Result, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ memoryBudget: Config.PositiveBytes })
 * const result = Config.decodeResult("demo", Cfg, { memoryBudget: 0 })
 * Result.isFailure(result) // true: demo: Expected at least 1 byte, got 0\n  at ["memoryBudget"]
 * ```
 *
 * @since 0.1.0
 */
export const decodeResult: {
  <S extends Schema.Decoder<unknown>, I>(component: string, schema: S, input: I & OnlyUnknown<I>): Result.Result<S["Type"], ConfigError>
  <S extends Schema.Decoder<unknown>>(component: string, schema: S, input: Input<S>): Result.Result<S["Type"], ConfigError>
} = <S extends Schema.Decoder<unknown>>(component: string, schema: S, input: unknown): Result.Result<S["Type"], ConfigError> => {
  const result = Schema.decodeUnknownResult(schema)(input, { onExcessProperty: "error", errors: "all" })
  return Result.isSuccess(result)
    ? Result.succeed(result.success)
    : Result.fail(new ConfigError({ component, message: `${component}: ${result.failure.message}` }))
}

/** How a quantity given as a number or as text is read and described in errors. */
interface Quantity {
  /** The unit of a bare number, as written in errors ("milliseconds"). */
  readonly unit: string
  /** Examples of accepted text, as written in errors. */
  readonly examples: string
  readonly parse: (text: string) => number | undefined
}

const show = (v: unknown): string => (typeof v === "number" ? String(v) : JSON.stringify(v))

/**
 * A finite, non-negative number given as a number or as text. The checks live
 * in the getter so that each message names the input as written.
 */
const quantity = (q: Quantity) =>
  Schema.Union([Schema.Number, Schema.String]).pipe(
    Schema.decodeTo(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)), {
      decode: SchemaGetter.transformEffect<number, number | string>((v, options) => {
        const fail = (message: string) => Effect.fail(new SchemaIssue.InvalidValue({ message }, v, options))
        const n = typeof v === "number" ? v : q.parse(v)
        if (n === undefined) return fail(`Expected ${q.examples}, got ${show(v)}`)
        if (!Number.isFinite(n)) return fail(`Expected a finite number of ${q.unit}, got ${show(v)}`)
        if (n < 0) return fail(`Expected a non-negative number of ${q.unit}, got ${show(v)}`)
        return Effect.succeed(n)
      }),
      encode: SchemaGetter.transform((n: number) => n)
    })
  )

/** A check on a decoded quantity, with a message in its words. */
const refine = (ok: (n: number) => boolean, describe: (n: number) => string) =>
  Schema.makeFilter<number>((n) => ok(n) || describe(n))

const MILLIS_PER: ReadonlyMap<string, number> = new Map([
  ["ns", 1e-6],
  ["nano", 1e-6],
  ["nanos", 1e-6],
  ["nanosecond", 1e-6],
  ["nanoseconds", 1e-6],
  ["us", 1e-3],
  ["µs", 1e-3], // U+00B5 micro sign
  ["μs", 1e-3], // U+03BC Greek mu
  ["micro", 1e-3],
  ["micros", 1e-3],
  ["microsecond", 1e-3],
  ["microseconds", 1e-3],
  ["ms", 1],
  ["milli", 1],
  ["millis", 1],
  ["millisecond", 1],
  ["milliseconds", 1],
  ["s", 1_000],
  ["sec", 1_000],
  ["secs", 1_000],
  ["second", 1_000],
  ["seconds", 1_000],
  ["m", 60_000],
  ["min", 60_000],
  ["mins", 60_000],
  ["minute", 60_000],
  ["minutes", 60_000],
  ["h", 3_600_000],
  ["hr", 3_600_000],
  ["hrs", 3_600_000],
  ["hour", 3_600_000],
  ["hours", 3_600_000],
  ["d", 86_400_000],
  ["day", 86_400_000],
  ["days", 86_400_000],
  ["w", 604_800_000],
  ["week", 604_800_000],
  ["weeks", 604_800_000]
])

/**
 * Parses a duration to milliseconds; `undefined` when the text is not one.
 *
 * **Details**
 *
 * A number and a unit, with or without a space: `"500ms"`, `"30s"`, `"1.5s"`,
 * `"30 s"`, `"2m"`, `"1h"`, `"30 seconds"`, `"500 millis"`. Units: `ns`, `us`,
 * `ms`, `s`, `m` (minutes), `h`, `d`, `w` and their words (`nanos`, `micros`,
 * `millis`, `sec`, `seconds`, `min`, `minutes`, `hr`, `hours`, `days`, `weeks`,
 * singular or plural), lower case. Negative durations and text without a unit
 * do not parse (is `"30"` seconds or milliseconds?).
 *
 * **Example**
 *
 * ```ts
 * import { Config } from "@sluice/core"
 *
 * Config.parseMillis("1.5s")        // 1500
 * Config.parseMillis("2 minutes")   // 120000
 * Config.parseMillis("30")          // undefined
 * ```
 *
 * @since 0.1.0
 */
export const parseMillis = (text: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zµμ]+)\s*$/.exec(text)
  if (m === null) return undefined
  const factor = MILLIS_PER.get(m[2] ?? "")
  return factor === undefined ? undefined : Number(m[1]) * factor
}

/**
 * A duration given as text (`"500ms"`, `"30s"`, `"1.5s"`, `"2m"`, `"1h"`,
 * `"30 seconds"`) or a number of milliseconds, decoded to milliseconds: finite
 * and ≥ 0.
 *
 * **When to use**
 *
 * Any config field that is a duration. Use {@link PositiveMillis} where 0 makes
 * no sense (a period, a timeout).
 *
 * **Details**
 *
 * Text is read by {@link parseMillis}. `NaN`, `±Infinity` and negative values
 * are refused with a message naming the input, e.g.
 * `Expected a finite number of milliseconds, got NaN`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ timeout: Config.Millis })
 * Effect.runSync(Config.decode("demo", Cfg, { timeout: "1.5s" }))   // { timeout: 1500 }
 * ```
 *
 * @since 0.1.0
 */
export const Millis = quantity({
  unit: "milliseconds",
  examples: `a duration like "500ms", "30s", "2m", "1h" or "30 seconds" (a number is milliseconds)`,
  parse: parseMillis
})

/**
 * A duration (as {@link Millis}) greater than 0.
 *
 * **When to use**
 *
 * Periods and timeouts, where 0 would spin or time out at once.
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ tick: Config.PositiveMillis })
 * Config.decodeResult("demo", Cfg, { tick: 0 })   // fails: demo: Expected a duration greater than 0, got 0\n  at ["tick"]
 * ```
 *
 * @since 0.1.0
 */
export const PositiveMillis = Millis.check(refine((n) => n > 0, (n) => `Expected a duration greater than 0, got ${n}`))

const UNITS: ReadonlyMap<string, number> = new Map([
  ["b", 1],
  ["byte", 1],
  ["bytes", 1],
  ["kb", 1e3],
  ["mb", 1e6],
  ["gb", 1e9],
  ["tb", 1e12],
  ["kib", 1024],
  ["mib", 1024 ** 2],
  ["gib", 1024 ** 3],
  ["tib", 1024 ** 4]
])

/**
 * Parses a byte size (`"256 MiB"`, `"8MiB"`, `"8 MB"`, `"512"`); `undefined`
 * when the text is not one. Units are case-insensitive: `B`, `KB`/`MB`/`GB`/`TB`
 * (powers of 1000) and `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024); text without
 * a unit is bytes. The result is rounded to a whole byte.
 *
 * **Example**
 *
 * ```ts
 * import { Config } from "@sluice/core"
 *
 * Config.parseBytes("8MiB")    // 8388608
 * Config.parseBytes("eight")   // undefined
 * ```
 *
 * @since 0.1.0
 */
export const parseBytes = (text: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(text)
  if (m === null) return undefined
  const unit = (m[2] ?? "").toLowerCase()
  const factor = unit === "" ? 1 : UNITS.get(unit)
  return factor === undefined ? undefined : Math.round(Number(m[1]) * factor)
}

/**
 * A byte size given as text (`"256 MiB"`, `"8MiB"`, `"8 MB"`, `"64 KiB"`) or a
 * number of bytes, decoded to bytes: finite and ≥ 0.
 *
 * **When to use**
 *
 * Any config field that is a size and may be 0 (a threshold, a minimum). Use
 * {@link PositiveBytes} for budgets and targets.
 *
 * **Details**
 *
 * Text is read by {@link parseBytes}. `NaN`, `±Infinity` and negative values
 * are refused with a message naming the input, e.g.
 * `Expected a finite number of bytes, got Infinity`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ minBytes: Config.Bytes })
 * Effect.runSync(Config.decode("demo", Cfg, { minBytes: "64 KiB" }))   // { minBytes: 65536 }
 * ```
 *
 * @since 0.1.0
 */
export const Bytes = quantity({
  unit: "bytes",
  examples: `a byte size like "256 MiB", "8MiB" or "8 MB" (a number is bytes)`,
  parse: parseBytes
})

/**
 * A byte size (as {@link Bytes}) of at least 1 byte.
 *
 * **When to use**
 *
 * Memory budgets, batch and part sizes: a budget of 0 admits nothing and a
 * batch target of 0 seals every record alone.
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ memoryBudget: Config.PositiveBytes })
 * Config.decodeResult("demo", Cfg, { memoryBudget: "0 MiB" })   // fails: demo: Expected at least 1 byte, got 0\n  at ["memoryBudget"]
 * ```
 *
 * @since 0.1.0
 */
export const PositiveBytes = Bytes.check(refine((n) => n >= 1, (n) => `Expected at least 1 byte, got ${n}`))
