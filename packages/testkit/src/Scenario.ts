/**
 * Scenarios: a simulated world as a data file (JSON), validated with
 * `effect/Schema`. Durations are text like `"300 seconds"` or `"8 millis"` (or
 * milliseconds), sizes like `"64 MiB"` (or bytes), bandwidths like `"64 MiB/s"`.
 * Unknown fields and bad values are rejected with a message naming the field.
 *
 * @since 0.1.0
 */
import { Effect, JsonSchema, Result, Schema, SchemaGetter, SchemaIssue } from "effect"
import { Config, Pipeline } from "@sluice/core"
import { isAbsolute } from "node:path"

const NonNegative = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
const Probability = Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A bandwidth given as text (`"64 MiB/s"`, `"100 MB/s"`) or bytes per second.
 *
 * @since 0.1.0
 */
export const BytesPerSecond = Schema.Union([Schema.Number, Schema.String]).pipe(
  Schema.decodeTo(Schema.Finite.check(Schema.isGreaterThan(0)), {
    decode: SchemaGetter.transformEffect<number, number | string>((v, options) => {
      if (typeof v === "number") return Effect.succeed(v)
      const m = /^(.*?)\s*\/\s*s(ec(ond)?)?\s*$/.exec(v)
      const n = m === null ? undefined : Config.parseBytes(m[1] ?? "")
      return n === undefined
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: `Expected a bandwidth like "64 MiB/s", got ${JSON.stringify(v)}` }, v, options))
        : Effect.succeed(n)
    }),
    encode: SchemaGetter.transform((n: number) => n)
  })
)

const storeFields = {
  baseLatency: Config.Millis,
  bandwidthPerRequest: BytesPerSecond,
  knee: PositiveInt,
  kneeQueue: Schema.Literals(["shared", "arrival"]),
  jitter: NonNegative,
  throttleAbove: Schema.NullOr(NonNegativeInt),
  throttleProbability: Probability,
  errorRate: Probability,
  rateLimit: Schema.NullOr(Schema.Finite.check(Schema.isGreaterThan(0)))
}

/**
 * The store section (see `Store` for the model). `jitter`, `throttleAbove`,
 * `throttleProbability`, `errorRate` and `rateLimit` default to 0 / null,
 * `kneeQueue` to `"shared"`.
 *
 * @since 0.1.0
 */
export const StoreSection = Schema.Struct({
  baseLatency: storeFields.baseLatency,
  bandwidthPerRequest: storeFields.bandwidthPerRequest,
  knee: storeFields.knee,
  kneeQueue: storeFields.kneeQueue.pipe(Schema.withDecodingDefaultKey(Effect.succeed<"shared" | "arrival">("shared"))),
  jitter: storeFields.jitter.pipe(Schema.withDecodingDefaultKey(Effect.succeed(0))),
  throttleAbove: storeFields.throttleAbove.pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  throttleProbability: storeFields.throttleProbability.pipe(Schema.withDecodingDefaultKey(Effect.succeed(0))),
  errorRate: storeFields.errorRate.pipe(Schema.withDecodingDefaultKey(Effect.succeed(0))),
  rateLimit: storeFields.rateLimit.pipe(Schema.withDecodingDefaultKey(Effect.succeed(null)))
})

/**
 * A change to the store in an event: any subset of its fields.
 *
 * @since 0.1.0
 */
export const StoreChange = Schema.Struct({
  baseLatency: Schema.optionalKey(storeFields.baseLatency),
  bandwidthPerRequest: Schema.optionalKey(storeFields.bandwidthPerRequest),
  knee: Schema.optionalKey(storeFields.knee),
  kneeQueue: Schema.optionalKey(storeFields.kneeQueue),
  jitter: Schema.optionalKey(storeFields.jitter),
  throttleAbove: Schema.optionalKey(storeFields.throttleAbove),
  throttleProbability: Schema.optionalKey(storeFields.throttleProbability),
  errorRate: Schema.optionalKey(storeFields.errorRate),
  rateLimit: Schema.optionalKey(storeFields.rateLimit)
})

/**
 * The source section (see `SimSource` for the model).
 *
 * @since 0.1.0
 */
export const SourceSection = Schema.Struct({
  recordsPerSecond: NonNegative,
  recordBytes: PositiveInt,
  partitions: PositiveInt,
  retention: Schema.NullOr(Config.Millis).pipe(Schema.withDecodingDefaultKey(Effect.succeed(null))),
  backlogRecords: NonNegative.pipe(Schema.withDecodingDefaultKey(Effect.succeed(0))),
  fetchInterval: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(100))),
  fetchMaxBytes: Config.Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB")))
})

/**
 * A change to the source in an event (its production rate).
 *
 * @since 0.1.0
 */
export const SourceChange = Schema.Struct({
  recordsPerSecond: Schema.optionalKey(NonNegative)
})

/**
 * A timed change of the world.
 *
 * @since 0.1.0
 */
export const Event = Schema.Struct({
  at: Config.Millis,
  store: Schema.optionalKey(StoreChange),
  source: Schema.optionalKey(SourceChange)
})

/**
 * A bound on a summary metric.
 *
 * @since 0.1.0
 */
export const Bound = Schema.Struct({
  min: Schema.optionalKey(Schema.Finite),
  max: Schema.optionalKey(Schema.Finite)
})

/**
 * `Bound` as a type: what the `Bound` schema decodes to.
 *
 * @since 0.1.0
 */
export type Bound = typeof Bound.Type

/**
 * The summary metrics a scenario may bound: every numeric field of `Summary`
 * (see there for their definitions).
 *
 * @since 0.1.0
 */
export const metricNames = [
  "goodputRatio",
  "latencyInflation",
  "throttleRate",
  "floorViolations",
  "recoverySeconds",
  "maxInflightBytes",
  "lostRecords",
  "undetectedLostRecords",
  "committedNotVerified",
  "fairness",
  "probeSeconds",
  "probeCost",
  "maxLagSeconds",
  "meanLagSeconds",
  "worstPhaseGoodput",
  "heldBytesMax",
  "largestChunkBytes",
  "bytesVerified",
  "requests",
  "durationSeconds",
  "instances",
  "seed",
  "wallMillis"
] as const

/**
 * A summary metric name that `expect` bounds may name: one of {@link metricNames}.
 *
 * @since 0.1.0
 */
export type MetricName = (typeof metricNames)[number]

const optionalBounds = <const Names extends ReadonlyArray<string>>(
  names: Names
): { readonly [K in Names[number]]: Schema.optionalKey<typeof Bound> } =>
  Object.fromEntries(names.map((name) => [name, Schema.optionalKey(Bound)])) as {
    readonly [K in Names[number]]: Schema.optionalKey<typeof Bound>
  }

/**
 * Expected bounds: `{ "goodputRatio": { "min": 0.9 }, "maxLagSeconds": { "max": 15 } }`.
 * Any name of {@link metricNames}; unknown names are rejected.
 *
 * @since 0.1.0
 */
export const Expect = Schema.Struct(optionalBounds(metricNames))

const seconds = (millis: number): string => `${Math.round(millis) / 1000} s`

/**
 * Every event must start before the scenario ends: one at or after the end
 * would never apply (the run stops first), so it is a mistake in the file.
 */
const eventsBeforeEnd = Schema.makeFilter<{ readonly duration: number; readonly events: ReadonlyArray<{ readonly at: number }> }>(
  (scenario) =>
    scenario.events.flatMap((event, index) =>
      event.at < scenario.duration ? [] : [{
        path: ["events", index, "at"],
        issue: `Expected an event before the scenario's end (duration ${seconds(scenario.duration)}), got ${seconds(event.at)}`
      }]
    )
)

/** A field's description, shown by editors from the generated JSON Schema. */
const described = <S extends Schema.Top>(description: string) => Schema.annotateEncoded<S>({ description })

/**
 * A scenario file.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `$schema` | — | ignored: lets a file name its JSON Schema (`"../scenario.schema.json"`) for editors |
 * | `name` | — | identifier (shown in tables) |
 * | `description` | `""` | what the scenario shows |
 * | `seed` | — | RNG seed: same seed, same trace |
 * | `duration` | — | virtual time simulated |
 * | `instances` | 1 | pipelines sharing the store (partitions assigned round-robin) |
 * | `source` | — | see {@link SourceSection} |
 * | `store` | — | see {@link StoreSection} |
 * | `pipeline` | `{}` | the core `Pipeline` config (batch, concurrency, memoryBudget, …) |
 * | `events` | `[]` | timed changes of `store` / `source`, each before the scenario's end |
 * | `expect` | `{}` | bounds on summary metrics; `sluice-sim run` exits non-zero when one fails |
 *
 * @since 0.1.0
 */
export const Scenario = Schema.Struct({
  $schema: Schema.optionalKey(Schema.String).pipe(described("The JSON Schema of this file, for editors (ignored by Sluice)")),
  name: Schema.String.pipe(described("Identifier, shown in tables")),
  description: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed("")), described("What the scenario shows")),
  seed: Schema.Int.pipe(described("RNG seed: same seed, same trace")),
  duration: Config.PositiveMillis.pipe(described("Virtual time simulated, e.g. \"300 seconds\" (a number is milliseconds)")),
  instances: PositiveInt.pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(1)),
    described("Pipelines sharing the store (partitions assigned round-robin); default 1")
  ),
  source: SourceSection.pipe(described("The simulated log: recordsPerSecond, recordBytes, partitions, …")),
  store: StoreSection.pipe(described("The simulated object store: baseLatency, bandwidthPerRequest, knee, …")),
  pipeline: Pipeline.PipelineConfig.pipe(
    Schema.withDecodingDefaultKey(Effect.succeed({})),
    described("The core Pipeline config (batch, concurrency, memoryBudget, …); default {}")
  ),
  events: Schema.Array(Event).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed([])),
    described("Timed changes of store / source, each before the scenario's end; default []")
  ),
  expect: Expect.pipe(
    Schema.withDecodingDefaultKey(Effect.succeed({})),
    described("Bounds ({ min?, max? }) on summary metrics; sluice-sim exits 1 when one fails")
  )
}).check(eventsBeforeEnd)

/**
 * A decoded scenario (durations in ms, sizes in bytes).
 *
 * @since 0.1.0
 */
export type Scenario = typeof Scenario.Type

/** A field path as written in JavaScript: `events[2].store.knee`. */
const showPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) =>
    typeof key === "number"
      ? `[${key}]`
      : typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)
      ? `${i === 0 ? "" : "."}${key}`
      : `[${JSON.stringify(String(key))}]`
  ).join("")

const infinityHint = " (a JSON number too large for a double, like 1e999, reads as Infinity)"

/**
 * One line per problem, each naming the field path and the value as read:
 * `store.knee: Expected a value greater than or equal to 1, got -1`.
 */
const describeIssue = (issue: SchemaIssue.Issue): ReadonlyArray<string> =>
  SchemaIssue.makeFormatterStandardSchemaV1()(issue).issues.map(({ message, path }) => {
    const keys = (path ?? []).map((p) => (typeof p === "object" && p !== null ? p.key : p))
    const hinted = /got -?Infinity$/.test(message) ? `${message}${infinityHint}` : message
    return keys.length === 0 ? hinted : `${showPath(keys)}: ${hinted}`
  })

const decodeAs = (component: string, input: unknown): Effect.Effect<Scenario, Config.ConfigError> => {
  const result = Schema.decodeUnknownResult(Scenario)(input, { onExcessProperty: "error", errors: "all", reportInput: true })
  if (Result.isSuccess(result)) return Effect.succeed(result.success)
  const lines = describeIssue(result.failure.issue)
  const message = lines.length === 1
    ? `${component}: ${lines[0]}`
    : `${component}: ${lines.length} problems:\n${lines.map((l) => `  ${l}`).join("\n")}`
  return Effect.fail(new Config.ConfigError({ component, message }))
}

/**
 * Decodes scenario data, rejecting unknown fields.
 *
 * **Details**: fails with a core `ConfigError` whose message names every bad
 * field by its path and the value found, one per line, e.g.
 * `scenario: store.knee: Expected a value greater than or equal to 1, got -1`
 * or `scenario: events[2].at: Expected an event before the scenario's end (duration 300 s), got 400 s`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Scenario } from "@sluice/testkit"
 *
 * const scenario = Effect.runSync(Scenario.decode({
 *   name: "tiny", seed: 1, duration: "10 seconds",
 *   source: { recordsPerSecond: 10000, recordBytes: 100, partitions: 2 },
 *   store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24 }
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const decode = (input: unknown): Effect.Effect<Scenario, Config.ConfigError> => decodeAs("scenario", input)

/**
 * Reads and decodes a scenario JSON file.
 *
 * **Details**: each way a file can be bad is its own error, and each message
 * names the file: {@link ScenarioNotFound} (`scenario file not found: x.json`),
 * {@link ScenarioSyntaxError} (`x.json:2:13: scenario is not valid JSON: …`,
 * line and column 1-based), {@link ScenarioFileError} (could not be read, e.g.
 * a directory) and the core `ConfigError` of {@link decode}, its message
 * starting `scenario x.json: ` and naming the field path and the value.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Scenario } from "@sluice/testkit"
 *
 * const knee24 = Effect.runPromise(Scenario.load("packages/testkit/scenarios/knee-24.json"))
 * ```
 *
 * @since 0.1.0
 */
export const load = (
  path: string
): Effect.Effect<Scenario, Config.ConfigError | ScenarioFileError | ScenarioNotFound | ScenarioSyntaxError> =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: async () => {
        const { readFile } = await import("node:fs/promises")
        return await readFile(path, "utf8")
      },
      catch: (cause) => readError(path, cause)
    })
    const data = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: (cause) => syntaxError(path, text, cause) })
    return yield* decodeAs(`scenario ${path}`, data)
  })

const errorCode = (cause: unknown): unknown => (typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined)

const readError = (path: string, cause: unknown): ScenarioFileError | ScenarioNotFound => {
  const code = errorCode(cause)
  if (code === "ENOENT") {
    const where = isAbsolute(path) ? "" : ` (looked in ${process.cwd()})`
    return new ScenarioNotFound({ path, message: `scenario file not found: ${path}${where}` })
  }
  const reason = code === "EISDIR"
    ? "it is a directory, not a file"
    : code === "EACCES"
    ? "permission denied"
    : cause instanceof Error
    ? cause.message
    : String(cause)
  return new ScenarioFileError({ path, message: `cannot read scenario file ${path}: ${reason}` })
}

const syntaxError = (path: string, text: string, cause: unknown): ScenarioSyntaxError => {
  const found = JsonSyntax.firstError(text)
  // JSON.parse failed, so the scanner finds the error; V8's message is the fallback.
  const offset = found?.offset ?? text.length
  const reason = found?.reason ?? (cause instanceof Error ? cause.message : String(cause))
  const { line, column } = JsonSyntax.lineColumn(text, offset)
  return new ScenarioSyntaxError({ path, line, column, message: `${path}:${line}:${column}: scenario is not valid JSON: ${reason}` })
}

/**
 * Where a text that `JSON.parse` refused goes wrong, and why. V8's own message
 * has no position for some errors (`Unexpected token ']', "[1,]" is not valid
 * JSON`), so the text is scanned again, only when it failed to parse.
 */
const JsonSyntax = {
  lineColumn: (text: string, offset: number): { readonly line: number; readonly column: number } => {
    const before = text.slice(0, offset)
    const lineStart = before.lastIndexOf("\n") + 1
    return { line: before.split("\n").length, column: offset - lineStart + 1 }
  },
  firstError: (text: string): { readonly offset: number; readonly reason: string } | undefined => {
    let i = 0
    const fail = (expected: string): never => {
      const c = text[i]
      const got = c === undefined
        ? "the end of the file"
        : c < " " || c === "\uFEFF"
        ? `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`
        : JSON.stringify(c)
      throw { offset: i, reason: `expected ${expected}, got ${got}` }
    }
    const space = () => {
      while (i < text.length && " \t\n\r".includes(text[i] as string)) i++
    }
    const token = (re: RegExp, expected: string) => {
      re.lastIndex = i
      const m = re.exec(text)
      if (m === null) fail(expected)
      else i += m[0].length
    }
    const string = () => {
      i++ // the opening quote
      for (;;) {
        const c = text[i]
        if (c === undefined) return fail("a closing '\"'")
        if (c === "\"") return void i++
        if (c < " ") return fail("a character (control characters must be escaped)")
        if (c === "\\") {
          i++
          if (text[i] === "u") token(/u[0-9a-fA-F]{4}/y, "four hex digits after \\u")
          else if (text[i] !== undefined && "\"\\/bfnrt".includes(text[i] as string)) i++
          else fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
        } else i++
      }
    }
    const value = (): void => {
      space()
      const c = text[i]
      if (c === "{") {
        i++
        space()
        if (text[i] === "}") return void i++
        for (;;) {
          space()
          if (text[i] !== "\"") fail("a property name in double quotes")
          string()
          space()
          if (text[i] !== ":") fail("':' after the property name")
          i++
          value()
          space()
          if (text[i] === ",") i++
          else if (text[i] === "}") return void i++
          else fail("',' or '}'")
        }
      }
      if (c === "[") {
        i++
        space()
        if (text[i] === "]") return void i++
        for (;;) {
          value()
          space()
          if (text[i] === ",") i++
          else if (text[i] === "]") return void i++
          else fail("',' or ']'")
        }
      }
      if (c === "\"") return string()
      if (c === "t" || c === "f" || c === "n") return token(/true|false|null/y, "a value")
      return token(/-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y, "a value")
    }
    try {
      value()
      space()
      if (i < text.length) fail("the end of the file after the value")
      return undefined
    } catch (e) {
      if (typeof e === "object" && e !== null && "offset" in e && "reason" in e) {
        return { offset: Number(e.offset), reason: String(e.reason) }
      }
      throw e
    }
  }
}

/**
 * A scenario file could not be read (it is a directory, say), or, from before
 * 0.2.0, could not be parsed as JSON.
 *
 * @since 0.1.0
 */
export class ScenarioFileError extends Schema.TaggedError<ScenarioFileError>()("ScenarioFileError", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * No file at the scenario's path. The message names it:
 * `scenario file not found: scenarios/nope.json`.
 *
 * @since 0.2.0
 */
export class ScenarioNotFound extends Schema.TaggedError<ScenarioNotFound>()("ScenarioNotFound", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * A scenario file is not valid JSON. `line` and `column` (1-based) locate the
 * first error, and the message starts with them, as editors and terminals link:
 * `x.json:2:13: scenario is not valid JSON: expected a property name in double quotes, got ","`.
 *
 * @since 0.2.0
 */
export class ScenarioSyntaxError extends Schema.TaggedError<ScenarioSyntaxError>()("ScenarioSyntaxError", {
  path: Schema.String,
  line: Schema.Number,
  column: Schema.Number,
  message: Schema.String
}) {}

/**
 * The JSON Schema (draft 2020-12) of scenario files, generated from
 * {@link Scenario}: what `scenario.schema.json` in this package holds (a test
 * keeps the two equal) and `sluice-sim schema` prints. Point a scenario file at
 * it with `"$schema": "../scenario.schema.json"` for completion and checks in
 * editors.
 *
 * **Details**: it describes the file as written (durations and sizes as text
 * or numbers) and rejects unknown keys. It is a first check: the
 * `effect/Schema` decoder stays the authority (durations parse, events fall
 * before the end, …).
 *
 * @since 0.2.0
 */
export const jsonSchema = (): JsonSchema.JsonSchema => {
  const document = Schema.toJsonSchemaDocument(Scenario, { onExcessProperty: "error" })
  return {
    $schema: JsonSchema.META_SCHEMA_URI_DRAFT_2020_12,
    title: "Sluice scenario",
    description: "A simulated world for sluice-sim and @sluice/testkit: a source, a store, the pipeline config, timed events and expected bounds.",
    ...document.schema,
    ...(Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {})
  }
}
