/**
 * The Kafka source's config: plain data decoded with an `effect/Schema`, every
 * optional field with a documented default. Bad config fails at construction
 * with a core `ConfigError` naming the field.
 *
 * @since 0.1.0
 */
import { Config } from "@sluice/core"
import type { Config as CoreConfig } from "@sluice/core"
import { Effect, Schema } from "effect"

const Millis = Config.Millis
const Bytes = Config.Bytes
const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const PartitionIndex = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Manual assignment: read the listed partitions (all of the topic's partitions
 * when `partitions` is omitted), no group membership.
 *
 * - `startOffsets` (`{ "0": 1200 }`) wins over committed offsets;
 * - otherwise, with `groupId`, the offsets committed under that group;
 * - otherwise the log start (earliest).
 *
 * With `groupId`, `commit` stores offsets under that group (a "standalone"
 * commit, generation -1); without it, commits are kept in memory only
 * (`KafkaSource.committed`).
 *
 * @since 0.1.0
 */
export const AssignMode = Schema.Struct({
  kind: Schema.Literal("assign"),
  partitions: Schema.optionalKey(Schema.Array(PartitionIndex)),
  groupId: Schema.optionalKey(Schema.NonEmptyString),
  startOffsets: Schema.optionalKey(Schema.Record(Schema.String, Offset))
})

/**
 * Consumer-group mode: partitions are assigned by the group; start from the
 * group's committed offsets, else earliest.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `protocol` | `"classic"` | the group protocol: `"classic"` (JoinGroup / SyncGroup, the eager assignor) or `"consumer"` (KIP-848's ConsumerGroupHeartbeat: the broker assigns, incrementally) |
 * | `sessionTimeout` | 30 seconds | the broker drops a member silent for this long (classic only: under `"consumer"` the broker's `group.consumer.session.timeout.ms` holds, and this key is refused) |
 * | `heartbeatInterval` | 1 second | also how fast a member notices a rebalance (classic only: under `"consumer"` the broker's `group.consumer.heartbeat.interval.ms`, and this key is refused) |
 * | `rebalanceTimeout` | 60 seconds | how long the group waits for a member to give up revoked partitions |
 * | `instanceId` | none | static membership (`group.instance.id`, KIP-345): one id per archiver instance, stable across its restarts |
 *
 * The consumer protocol. A revoked partition is given to another member only
 * once this one reported it released (after the pipeline acknowledged the
 * revoke), and members keep the partitions a rebalance does not move (the
 * classic eager assignor revokes every partition of every member at each
 * rebalance). The group must be empty or already of this protocol (the broker
 * refuses a member of the other protocol while the group has members). A
 * static member killed and restarted waits for the broker's session timeout
 * (`UNRELEASED_INSTANCE_ID` until then): under KIP-848 a new member does not
 * replace a static member that did not leave.
 *
 * Restarts. A member that drains (SIGTERM) leaves the group when its source
 * closes, so the group rebalances at once. A member that is killed stays in
 * the group until `sessionTimeout` expires it, and its partitions are read by
 * nobody until then: with no `instanceId`, a restart after a crash waits out
 * the session timeout. With an `instanceId`, the restarted member rejoins as
 * the member it replaces and gets that member's partitions back at once, with
 * no rebalance of the others. The trade-off of `sessionTimeout`: shorter
 * expires a dead member sooner, but a member whose heartbeats stall that long
 * (a long GC pause, a saturated event loop) is expired too and its partitions
 * move (two rebalances, and the open batches of those partitions archived
 * twice). Two live instances must never share an `instanceId`: the broker
 * fences the older one (`FENCED_INSTANCE_ID`), which then fails.
 *
 * @since 0.1.0
 */
export const GroupMode = Schema.Struct({
  kind: Schema.Literal("group"),
  groupId: Schema.NonEmptyString,
  protocol: Schema.Literals(["classic", "consumer"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"classic" | "consumer">("classic"))
  ),
  instanceId: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^\S+$/, { expected: "an id without whitespace" }))),
  sessionTimeout: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30 seconds"))),
  heartbeatInterval: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("1 second"))),
  rebalanceTimeout: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("60 seconds")))
})

/**
 * TLS (and mTLS with `cert` + `key`), passed through to `node:tls`. PEM text.
 *
 * @since 0.1.0
 */
export const Tls = Schema.Struct({
  /** CA certificate(s) the broker's certificate must chain to (PEM). Default: Node's trust store. */
  ca: Schema.optionalKey(Schema.String),
  /** Client certificate for mTLS (PEM). */
  cert: Schema.optionalKey(Schema.String),
  /** Client private key for mTLS (PEM). */
  key: Schema.optionalKey(Schema.String),
  /** Passphrase of an encrypted `key`. */
  passphrase: Schema.optionalKey(Schema.String),
  /** SNI / certificate host name, when it differs from the broker host. */
  servername: Schema.optionalKey(Schema.String),
  /** Verify the broker's certificate (default true; false only for tests). */
  rejectUnauthorized: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(true)))
})

/**
 * SASL authentication (over TLS in any real deployment).
 *
 * @since 0.1.0
 */
export const Sasl = Schema.Struct({
  mechanism: Schema.Literals(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
  username: Schema.String,
  password: Schema.String
})

/**
 * The source's config.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `brokers` | (required) | bootstrap brokers, `"host:port"` |
 * | `topic` | (required) | the topic to archive |
 * | `name` | the topic | source name (first part of object keys) |
 * | `clientId` | `"sluice"` | Kafka client id |
 * | `mode` | (required) | `{ kind: "assign", ... }` or `{ kind: "group", groupId, ... }` |
 * | `fetch.minBytes` | 1 | broker answers once this much data is ready … |
 * | `fetch.maxWait` | 500 millis | … or after this long |
 * | `fetch.maxBytes` | 16 MiB | per fetch response |
 * | `fetch.partitionMaxBytes` | 1 MiB | per partition per fetch response |
 * | `prefetch` | 256 | events (chunks, gaps) read ahead of the pipeline, at most |
 * | `prefetchBytes` | 16 MiB | memory read ahead of the pipeline, counted as the pipeline's budget counts it (a framed chunk: payload + 4 B per record): no fetch starts while this much is buffered, and a fetch asks for at most the room left (held ≤ `prefetchBytes` + what one fetch decodes to). Reserved from the pipeline's `memoryBudget` (`Source.readAheadBytes`) |
 * | `isolation` | `"read_uncommitted"` | or `"read_committed"` (skip aborted transactions) |
 * | `retentionGap` | `"fail"` | or `"record-and-continue"` |
 * | `until` | `"forever"` | or `"caught-up"`: end the stream at the high watermark seen at assignment |
 * | `recordFormat` | `"envelope"` | what each archived payload holds: the whole record as a `RecordEnvelope` (timestamp, key, headers, value), or `"value"` (the value alone; keys, headers and timestamps are dropped) |
 * | `lagRefresh` | 1 second | max age of the high watermark behind `lag` |
 * | `statsHistory` | 64 | recent events kept by `stats.recent()` (counters are kept regardless) |
 * | `connectTimeout` | 10 seconds | |
 * | `requestTimeout` | 30 seconds | |
 * | `tls` | none | see {@link Tls} |
 * | `sasl` | none | see {@link Sasl} |
 *
 * @since 0.1.0
 */
export const KafkaConfig = Schema.Struct({
  brokers: Schema.NonEmptyArray(Schema.String.check(Schema.isPattern(/^[^\s:]+:\d{1,5}$/, { expected: "\"host:port\"" }))),
  topic: Schema.NonEmptyString,
  name: Schema.optionalKey(Schema.NonEmptyString),
  clientId: Schema.NonEmptyString.pipe(Schema.withDecodingDefaultKey(Effect.succeed("sluice"))),
  mode: Schema.Union([AssignMode, GroupMode]),
  fetch: Schema.Struct({
    minBytes: Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(1))),
    maxWait: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>(500))),
    maxBytes: Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("16 MiB"))),
    partitionMaxBytes: Bytes.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("1 MiB")))
  }).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  prefetch: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(256))),
  prefetchBytes: Bytes.check(Schema.isGreaterThanOrEqualTo(1)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<number | string>("16 MiB"))
  ),
  isolation: Schema.Literals(["read_uncommitted", "read_committed"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"read_uncommitted" | "read_committed">("read_uncommitted"))
  ),
  retentionGap: Schema.Literals(["fail", "record-and-continue"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"fail" | "record-and-continue">("fail"))
  ),
  until: Schema.Literals(["forever", "caught-up"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"forever" | "caught-up">("forever"))
  ),
  recordFormat: Schema.Literals(["envelope", "value"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"envelope" | "value">("envelope"))
  ),
  lagRefresh: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("1 second"))),
  statsHistory: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(64))),
  connectTimeout: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("10 seconds"))),
  requestTimeout: Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30 seconds"))),
  tls: Schema.optionalKey(Tls),
  sasl: Schema.optionalKey(Sasl)
})

/**
 * `KafkaConfig` as a type: what the `KafkaConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type KafkaConfig = typeof KafkaConfig.Type

/**
 * What a caller writes: the config's encoded form (defaulted keys optional,
 * sizes and durations as text or numbers), so a misspelled key fails `tsc`.
 *
 * @since 0.2.0
 */
export type KafkaConfigInput = CoreConfig.Input<typeof KafkaConfig>

/**
 * The group mode as a caller writes it (`KafkaConfigInput["mode"]`'s group
 * member).
 *
 * @since 0.4.0
 */
export type GroupModeInput = CoreConfig.Input<typeof GroupMode>

/**
 * Decodes plain config data; fails with a core `ConfigError` naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { KafkaConfig } from "@sluice/adapter-kafka"
 *
 * const config = Effect.runSync(KafkaConfig.decode({
 *   brokers: ["127.0.0.1:19092"],
 *   topic: "orders",
 *   mode: { kind: "group", groupId: "archiver" }
 * }))
 * config.retentionGap // "fail"
 * ```
 *
 * @since 0.1.0
 */
export const decode = (input: unknown): Effect.Effect<KafkaConfig, CoreConfig.ConfigError> =>
  Effect.andThen(brokerSetKeys(input), Config.decode("kafka", KafkaConfig, input))

/**
 * The group keys the broker sets under the consumer protocol (KIP-848), and
 * the broker setting that does (Kafka's Java client refuses them too).
 */
const BROKER_SET: ReadonlyArray<readonly [key: string, setting: string]> = [
  ["sessionTimeout", "group.consumer.session.timeout.ms"],
  ["heartbeatInterval", "group.consumer.heartbeat.interval.ms"]
]

/** Fails naming the first key written in a consumer-protocol group mode that the broker sets instead. */
const brokerSetKeys = (input: unknown): Effect.Effect<void, CoreConfig.ConfigError> => {
  const mode = typeof input === "object" && input !== null ? (input as { readonly mode?: unknown }).mode : undefined
  if (typeof mode !== "object" || mode === null || (mode as { readonly protocol?: unknown }).protocol !== "consumer") return Effect.void
  const found = BROKER_SET.find(([key]) => key in mode)
  if (found === undefined) return Effect.void
  const [key, setting] = found
  return Effect.fail(
    new Config.ConfigError({
      component: "kafka",
      message: `kafka: mode.${key} is not used under protocol "consumer": the broker sets it (${setting})\n  at ["mode"]["${key}"]`
    })
  )
}
