/**
 * Scenarios: a simulated world as a data file (JSON), validated with
 * `effect/Schema`. Durations are text like `"300 seconds"` or `"8 millis"` (or
 * milliseconds), sizes like `"64 MiB"` (or bytes), bandwidths like `"64 MiB/s"`.
 * Unknown fields and bad values are rejected with a message naming the field.
 *
 * @since 0.1.0
 */
import { Effect, Schema, SchemaGetter, SchemaIssue } from "effect"
import { Config, Pipeline } from "@sluice/core"
import type { Config as CoreConfig } from "@sluice/core"

const NonNegative = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
const Probability = Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

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
  jitter: NonNegative,
  throttleAbove: Schema.NullOr(PositiveInt),
  throttleProbability: Probability,
  errorRate: Probability,
  rateLimit: Schema.NullOr(Schema.Finite.check(Schema.isGreaterThan(0)))
}

/**
 * The store section (see `Store` for the model). `jitter`, `throttleAbove`,
 * `throttleProbability`, `errorRate` and `rateLimit` default to 0 / null.
 *
 * @since 0.1.0
 */
export const StoreSection = Schema.Struct({
  baseLatency: storeFields.baseLatency,
  bandwidthPerRequest: storeFields.bandwidthPerRequest,
  knee: storeFields.knee,
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
  min: Schema.optionalKey(Schema.Number),
  max: Schema.optionalKey(Schema.Number)
})

/**
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

/**
 * A scenario file.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `name` | — | identifier (shown in tables) |
 * | `description` | `""` | what the scenario shows |
 * | `seed` | — | RNG seed: same seed, same trace |
 * | `duration` | — | virtual time simulated |
 * | `instances` | 1 | pipelines sharing the store (partitions assigned round-robin) |
 * | `source` | — | see {@link SourceSection} |
 * | `store` | — | see {@link StoreSection} |
 * | `pipeline` | `{}` | the core `Pipeline` config (batch, concurrency, memoryBudget, …) |
 * | `events` | `[]` | timed changes of `store` / `source` |
 * | `expect` | `{}` | bounds on summary metrics; `sluice-sim run` exits non-zero when one fails |
 *
 * @since 0.1.0
 */
export const Scenario = Schema.Struct({
  name: Schema.String,
  description: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed(""))),
  seed: Schema.Int,
  duration: Config.PositiveMillis,
  instances: PositiveInt.pipe(Schema.withDecodingDefaultKey(Effect.succeed(1))),
  source: SourceSection,
  store: StoreSection,
  pipeline: Pipeline.PipelineConfig.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  events: Schema.Array(Event).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
  expect: Expect.pipe(Schema.withDecodingDefaultKey(Effect.succeed({})))
})

/**
 * A decoded scenario (durations in ms, sizes in bytes).
 *
 * @since 0.1.0
 */
export type Scenario = typeof Scenario.Type

/**
 * Decodes scenario data, rejecting unknown fields.
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
export const decode = (input: unknown): Effect.Effect<Scenario, CoreConfig.ConfigError> =>
  Config.decode("scenario", Scenario, input)

/**
 * Reads and decodes a scenario JSON file.
 *
 * @since 0.1.0
 */
export const load = (path: string): Effect.Effect<Scenario, CoreConfig.ConfigError | ScenarioFileError> =>
  Effect.tryPromise({
    try: async () => {
      const { readFile } = await import("node:fs/promises")
      return JSON.parse(await readFile(path, "utf8")) as unknown
    },
    catch: (cause) => new ScenarioFileError({ path, message: cause instanceof Error ? cause.message : String(cause) })
  }).pipe(Effect.flatMap((data) => Config.decode(`scenario ${path}`, Scenario, data)))

/**
 * A scenario file could not be read or parsed as JSON.
 *
 * @since 0.1.0
 */
export class ScenarioFileError extends Schema.TaggedError<ScenarioFileError>()("ScenarioFileError", {
  path: Schema.String,
  message: Schema.String
}) {}
