/**
 * The archiver's knobs, read from one JSON file (`archiver.json` beside this
 * module): the pipeline's config, the config of each default policy, and the
 * S3 sink's config but what the command line and environment give (bucket,
 * endpoint, region, credentials).
 *
 * ```json
 * { "pipeline": { "memoryBudget": "256 MiB", "batch": { "maxAge": "5 seconds" } },
 *   "policies": { "deliveryRate": { "floor": 1, "ceiling": 256 }, "batch": { "maxObjectBytes": "64 MiB" } },
 *   "s3": { "requestTimeout": "30 seconds", "multipartThreshold": "16 MiB" } }
 * ```
 *
 * Every part is decoded with the schema its component decodes it with
 * (`Pipeline.PipelineConfig`, `DeliveryRate.DeliveryRateConfig`, …), so a bad
 * value or a misspelled key fails at start with a `ConfigError` naming the
 * field, before anything connects. The delivery-rate policy's and Throttle's
 * parts are decoded over `Composition.defaultsBase`, as `Composition.defaults`
 * composes them: the values decoded are the values run.
 */
import { readFileSync } from "node:fs"
import { Config, Pipeline } from "@sluice/core"
import { S3Config } from "@sluice/adapter-s3"
import { KafkaConfig } from "@sluice/adapter-kafka"
import { AdaptiveBatch, Composition, DeliveryRate, Throttle } from "@sluice/policies"
import { Effect } from "effect"
import type { SinkSettings } from "../src/KafkaToS3.ts"

/** The knobs, decoded (defaults filled in). */
export interface Settings {
  readonly pipeline: Pipeline.PipelineConfig
  readonly policies: {
    readonly deliveryRate: DeliveryRate.DeliveryRateConfig
    readonly throttle: Throttle.ThrottleConfig
    readonly batch: AdaptiveBatch.AdaptiveBatchConfig
  }
  /**
   * The consumer group's settings but its id and the instance id, as written
   * (`KafkaConfig.GroupMode`: `protocol`, `sessionTimeout`,
   * `heartbeatInterval`, `rebalanceTimeout`; checked at load). The instance id is per instance:
   * the command line's `--instance-id`.
   */
  readonly group: Omit<KafkaConfig.GroupModeInput, "kind" | "groupId" | "instanceId">
  /** The S3 sink's settings as written (checked against `S3Config` at load; the sink decodes them again with its bucket). */
  readonly s3: SinkSettings
  /**
   * The lowest upload concurrency the policies may set: the combiner takes
   * the minimum of the proposals, each at or above its policy's floor.
   */
  readonly concurrencyFloor: number
}

const KEYS = ["pipeline", "policies", "group", "s3"]
/** The group's keys a settings file may set (the id comes from the command line, the instance id too). */
const GROUP_KEYS = ["protocol", "sessionTimeout", "heartbeatInterval", "rebalanceTimeout"]
/** A group id that passes `GroupMode`'s check, to decode the file's `group` part before the real id is known. */
const PLACEHOLDER_GROUP = "settings-check"
/** The sink's keys the command line and environment set, not the settings file. */
const S3_FIXED = ["bucket", "endpoint", "region", "credentials", "forcePathStyle", "checksumAlgorithm"]
/** A bucket name that passes `S3Config`'s check, to decode the file's `s3` part before the real bucket is known. */
const PLACEHOLDER_BUCKET = "settings-check"
/** The default composition's members: `Composition.DefaultsConfig`'s keys, each once (`tsc` fails when the two part). */
const POLICY_KEYS = Object.keys({ deliveryRate: true, throttle: true, batch: true } satisfies Record<keyof Composition.DefaultsConfig, true>)

const record = (component: string, value: unknown, keys: ReadonlyArray<string>): Effect.Effect<Record<string, unknown>, Config.ConfigError> => {
  if (value === undefined) return Effect.succeed({})
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Effect.fail(new Config.ConfigError({ component, message: `${component}: expected an object` }))
  }
  const unknown = Object.keys(value).filter((k) => !keys.includes(k))
  if (unknown.length > 0) {
    return Effect.fail(new Config.ConfigError({ component, message: `${component}: unknown key(s) ${unknown.join(", ")} (expected ${keys.join(", ")})` }))
  }
  return Effect.succeed(value as Record<string, unknown>)
}

/** Decodes settings data (a parsed `archiver.json`); `{}` gives every default. */
export const decode = (data: unknown): Effect.Effect<Settings, Config.ConfigError> =>
  Effect.gen(function*() {
    const top = yield* record("settings", data, KEYS)
    const policies = yield* record("settings.policies", top["policies"], POLICY_KEYS)
    const pipeline: unknown = top["pipeline"] ?? {}
    const deliveryRate = yield* record("settings.policies.deliveryRate", policies["deliveryRate"], Object.keys(DeliveryRate.DeliveryRateConfig.fields))
    const throttle = yield* record("settings.policies.throttle", policies["throttle"], Object.keys(Throttle.ThrottleConfig.fields))
    const batch: unknown = policies["batch"] ?? {}
    const group = yield* record("settings.group", top["group"], GROUP_KEYS)
    yield* Config.decode("group", KafkaConfig.GroupMode, { ...group, kind: "group", groupId: PLACEHOLDER_GROUP })
    const s3 = yield* record("settings.s3", top["s3"], Object.keys(S3Config.S3Config.fields).filter((k) => !S3_FIXED.includes(k)))
    yield* S3Config.decode({ ...s3, bucket: PLACEHOLDER_BUCKET })
    const decoded = {
      pipeline: yield* Config.decode("pipeline", Pipeline.PipelineConfig, pipeline),
      policies: {
        // Over defaultsBase, as Composition.defaults composes them (the file's keys win).
        deliveryRate: yield* Config.decode("deliveryRate", DeliveryRate.DeliveryRateConfig, { ...Composition.defaultsBase.deliveryRate, ...deliveryRate }),
        throttle: yield* Config.decode("throttle", Throttle.ThrottleConfig, { ...Composition.defaultsBase.throttle, ...throttle }),
        batch: yield* Config.decode("batch", AdaptiveBatch.AdaptiveBatchConfig, batch)
      }
    }
    return { ...decoded, group: group as Settings["group"], s3: s3 as SinkSettings, concurrencyFloor: Math.min(decoded.policies.deliveryRate.floor, decoded.policies.throttle.floor) }
  })

/** Reads and decodes a settings file. */
export const load = (file: string): Effect.Effect<Settings, Config.ConfigError> =>
  Effect.try({
    try: (): unknown => JSON.parse(readFileSync(file, "utf8")),
    catch: (cause) => new Config.ConfigError({ component: "settings", message: `settings: cannot read ${file}: ${cause instanceof Error ? cause.message : String(cause)}` })
  }).pipe(Effect.flatMap(decode))

/**
 * The decoded settings as the archiver takes them (`KafkaToS3.start`'s
 * `config` and `policies`): numbers are valid encodings of sizes (bytes) and
 * durations (milliseconds), so the decoded values pass as they are.
 */
export const asArchiveOptions = (settings: Settings): { readonly config: Pipeline.PipelineConfigInput; readonly policies: Composition.DefaultsConfig } => ({
  config: settings.pipeline,
  policies: settings.policies
})
