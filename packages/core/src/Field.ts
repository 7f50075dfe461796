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
 *   target: Field.positiveBytes("8 MiB").pipe(Field.doc("the batch size aimed at"))
 * }).check(Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]))
 *
 * // | field | default | range | meaning |, one row a field, for the README:
 * const table = Field.table(MyConfig)
 * ```
 *
 * Each helper records on its key (`Schema.annotateKey`) the field's kind and
 * range; `Field.doc` adds what it means. `Field.rows` and `Field.table` read
 * them back with the decoded default, so a config table is generated from the
 * schema and cannot drift from it.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as Config from "./Config.ts"

/** The key annotation the helpers write: how to print the field's default, and its range. */
const KIND = "sluice/kind"
const RANGE = "sluice/range"

type Kind = "int" | "number" | "millis" | "bytes" | "boolean"

const keyed = (kind: Kind, range: string) => <S extends Schema.Top>(self: S): S["Rebuild"] =>
  self.annotateKey({ [KIND]: kind, [RANGE]: range })

const bound = (n: number): string => (n === 0xffffffff ? "2³² − 1" : String(n))

/** `1 – 100`, `≥ 1`, `(0, 1]`: a range as the config tables print it. */
const rangeText = (r: {
  readonly minimum: number
  readonly maximum: number
  readonly exclusiveMinimum?: boolean | undefined
  readonly exclusiveMaximum?: boolean | undefined
}): string => {
  const open = r.maximum >= Number.MAX_SAFE_INTEGER
  if (open) return `${r.exclusiveMinimum === true ? ">" : "≥"} ${bound(r.minimum)}`
  if (r.exclusiveMinimum !== true && r.exclusiveMaximum !== true) return `${bound(r.minimum)} – ${bound(r.maximum)}`
  return `${r.exclusiveMinimum === true ? "(" : "["}${bound(r.minimum)}, ${bound(r.maximum)}${r.exclusiveMaximum === true ? ")" : "]"}`
}

/**
 * An integer in `[minimum, maximum]`, defaulting to `value` when the key is absent.
 *
 * @since 0.1.0
 */
export const int = (value: number, minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  Schema.Int.check(Schema.isBetween({ minimum, maximum })).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(value)),
    keyed("int", rangeText({ minimum, maximum }))
  )

/**
 * A finite number in `[minimum, maximum]` (either bound optionally exclusive),
 * defaulting to `value`.
 *
 * @since 0.1.0
 */
export const number = (
  value: number,
  range: { readonly minimum: number; readonly maximum: number; readonly exclusiveMinimum?: boolean; readonly exclusiveMaximum?: boolean }
) =>
  Schema.Finite.check(Schema.isBetween(range)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)), keyed("number", rangeText(range)))

/**
 * A duration (`"5 seconds"`, `"500ms"` or milliseconds; finite, ≥ 0), decoded to
 * milliseconds, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const millis = (value: number | string) =>
  Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)), keyed("millis", "≥ 0"))

/**
 * A duration greater than 0 (a period, a window, a timeout), defaulting to `value`.
 *
 * @since 0.1.0
 */
export const positiveMillis = (value: number | string) =>
  Config.PositiveMillis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)), keyed("millis", "> 0"))

/**
 * A byte size (`"8 MiB"` or bytes; finite, ≥ 0), decoded to bytes, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const bytes = (value: number | string) =>
  Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)), keyed("bytes", "≥ 0"))

/**
 * A byte size of at least 1 byte (a target, a divisor), defaulting to `value`.
 *
 * @since 0.1.0
 */
export const positiveBytes = (value: number | string) =>
  Config.PositiveBytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(value)), keyed("bytes", "≥ 1 B"))

/**
 * A boolean, defaulting to `value`.
 *
 * @since 0.1.0
 */
export const boolean = (value: boolean) =>
  Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)), keyed("boolean", ""))

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

const DEFAULT = "sluice/default"

/**
 * What a field means, for its config table: `Field.int(8, 1).pipe(Field.doc("starting concurrency"))`.
 * `range` replaces the range the helper derived when the field's bound is
 * another field (`"floor – ceiling"`); `default` replaces the printed default
 * of a field that is not a scalar (a nested config).
 *
 * @since 0.3.0
 */
export const doc = (meaning: string, options: { readonly range?: string; readonly default?: string } = {}) =>
<S extends Schema.Top>(self: S): S["Rebuild"] =>
  self.annotateKey({
    description: meaning,
    ...(options.range === undefined ? {} : { [RANGE]: options.range }),
    ...(options.default === undefined ? {} : { [DEFAULT]: options.default })
  })

/**
 * One row of a config table: the field, its decoded default as the docs print
 * it (`10 s`, `1 MiB`), its range and what it means (empty when the field has
 * no `Field.doc`).
 *
 * @since 0.3.0
 */
export interface Row {
  readonly field: string
  readonly default: string
  readonly range: string
  readonly meaning: string
}

const UNIT_MILLIS: ReadonlyArray<readonly [number, string]> = [[3_600_000, "h"], [60_000, "min"], [1_000, "s"]]
const UNIT_BYTES: ReadonlyArray<readonly [number, string]> = [[1024 ** 3, "GiB"], [1024 ** 2, "MiB"], [1024, "KiB"]]

/** `n` in the largest unit that divides it (`60 s` is `1 min`, `1500` ms is `1.5 s`), else in `base`. */
const scaled = (n: number, units: ReadonlyArray<readonly [number, string]>, base: string): string => {
  if (n === 0 || !Number.isFinite(n)) return String(n)
  for (const [size, name] of units) if (n % size === 0) return `${n / size} ${name}`
  for (const [size, name] of units) if (n > size && (n * 10) % size === 0) return `${n / size} ${name}`
  return `${n} ${base}`
}

const printed = (kind: unknown, value: unknown): string => {
  if (typeof value === "number") {
    if (kind === "millis") return scaled(value, UNIT_MILLIS, "ms")
    if (kind === "bytes") return scaled(value, UNIT_BYTES, "B")
  }
  return String(value)
}

/**
 * The rows of a struct schema's config table, in the struct's field order: each
 * field's default is what decoding `{}` gives, so a table printed from them is
 * the schema's own.
 *
 * @since 0.3.0
 */
export const rows = (schema: Schema.Top & { readonly fields: Schema.Struct.Fields }): ReadonlyArray<Row> => {
  const defaults = Schema.decodeUnknownSync(schema as unknown as Schema.Codec<Record<string, unknown>, unknown>)({})
  return Object.entries(schema.fields).map(([field, fieldSchema]) => {
    const key = Schema.resolveAnnotationsKey(fieldSchema)
    const meaning = key?.description
    const range = key?.[RANGE]
    const given = key?.[DEFAULT]
    return {
      field,
      default: typeof given === "string" ? given : printed(key?.[KIND], defaults[field]),
      range: typeof range === "string" ? range : "",
      meaning: typeof meaning === "string" ? meaning : ""
    }
  })
}

/**
 * A struct schema's config table in Markdown (`| field | default | range |
 * meaning |`, one row a field), from `rows`.
 *
 * @since 0.3.0
 */
export const table = (schema: Schema.Top & { readonly fields: Schema.Struct.Fields }): string => {
  const cell = (text: string) => text.replace(/\|/g, "\\|")
  return [
    "| field | default | range | meaning |",
    "|---|---|---|---|",
    ...rows(schema).map((r) => `| \`${r.field}\` | ${cell(r.default)} | ${cell(r.range)} | ${cell(r.meaning)} |`)
  ].join("\n")
}
