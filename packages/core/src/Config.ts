/**
 * Config decoding: every Sluice component takes its config as plain data and
 * decodes it with an `effect/Schema`, so bad config fails at construction with a
 * message naming the field.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Option, Result, Schema, SchemaGetter, SchemaIssue } from "effect"

/**
 * Config was rejected. `message` names the offending field, e.g.
 * `aimd: at ["beta"]: Expected a value between 0 and 1, got 2`.
 *
 * @since 0.1.0
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  component: Schema.String,
  message: Schema.String
}) {}

/**
 * Decodes `input` with `schema`, rejecting unknown fields.
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Config } from "@sluice/core"
 *
 * const Cfg = Schema.Struct({ step: Schema.Number })
 * const ok = Config.decode("demo", Cfg, { step: 1 })        // Effect<{ step: number }, ConfigError>
 * const bad = Config.decode("demo", Cfg, { step: "one" })   // fails: demo: at ["step"] …
 * ```
 *
 * @since 0.1.0
 */
export const decode = <S extends Schema.Decoder<unknown>>(
  component: string,
  schema: S,
  input: unknown
): Effect.Effect<S["Type"], ConfigError> => {
  const result = decodeResult(component, schema, input)
  return Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(result.failure)
}

/**
 * Synchronous variant of {@link decode}: returns a `Result`.
 *
 * @since 0.1.0
 */
export const decodeResult = <S extends Schema.Decoder<unknown>>(
  component: string,
  schema: S,
  input: unknown
): Result.Result<S["Type"], ConfigError> => {
  const result = Schema.decodeUnknownResult(schema)(input, { onExcessProperty: "error", errors: "all" })
  return Result.isSuccess(result)
    ? Result.succeed(result.success)
    : Result.fail(new ConfigError({ component, message: `${component}: ${result.failure.message}` }))
}

/**
 * A duration given as text (`"8 millis"`, `"60 seconds"`) or a number of
 * milliseconds, decoded to milliseconds.
 *
 * @since 0.1.0
 */
export const Millis = Schema.Union([Schema.Number, Schema.String]).pipe(
  Schema.decodeTo(Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)), {
    decode: SchemaGetter.transformEffect<number, number | string>((v, options) => {
      if (typeof v === "number") return Effect.succeed(v)
      const d = Duration.fromInput(v as Duration.Input)
      return Option.isNone(d) || !Duration.isFinite(d.value)
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: `Expected a duration like "8 millis", got ${JSON.stringify(v)}` }, v, options))
        : Effect.succeed(Duration.toMillis(d.value))
    }),
    encode: SchemaGetter.transform((n: number) => n)
  })
)

/**
 * A byte size given as text (`"256 MiB"`, `"64 KiB"`, `"1 GB"`) or a number of
 * bytes, decoded to bytes.
 *
 * @since 0.1.0
 */
export const Bytes = Schema.Union([Schema.Number, Schema.String]).pipe(
  Schema.decodeTo(Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)), {
    decode: SchemaGetter.transformEffect<number, number | string>((v, options) => {
      if (typeof v === "number") return Effect.succeed(v)
      const n = parseBytes(v)
      return n === undefined
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: `Expected a byte size like "256 MiB", got ${JSON.stringify(v)}` }, v, options))
        : Effect.succeed(n)
    }),
    encode: SchemaGetter.transform((n: number) => n)
  })
)

const UNITS: Record<string, number> = {
  b: 1,
  byte: 1,
  bytes: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4
}

/**
 * Parses a byte size (`"256 MiB"`); `undefined` when the text is not one.
 *
 * @since 0.1.0
 */
export const parseBytes = (text: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(text)
  if (m === null) return undefined
  const unit = (m[2] ?? "").toLowerCase()
  const factor = unit === "" ? 1 : UNITS[unit]
  return factor === undefined ? undefined : Math.round(Number(m[1]) * factor)
}
