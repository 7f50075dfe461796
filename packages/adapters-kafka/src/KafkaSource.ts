/**
 * A core `Source` over one Kafka topic, on `@platformatic/kafka`: every owned
 * partition fetched in one request per leader broker (one chunk per partition
 * per response), auto-commit off, offsets committed only through `commit`,
 * retention gaps detected and surfaced, group rebalances made safe, read-ahead
 * and stats bounded.
 *
 * This module wires the source from its parts (each its own module under
 * `internal/`): group membership (`Membership.ts`), assignment and revokes
 * (`Assignment.ts`), retention-gap detection (`Positions.ts`, deciding with
 * `RetentionGap.classify`), fetch rounds (`Fetcher.ts`) and fetch → chunk
 * decoding (`decode.ts`), the bounded read-ahead with revokes first
 * (`EventBuffer.ts`), the fetch loop (`Loop.ts`), the commit path
 * (`Committer.ts`), pause / resume / lag (`ReadGate.ts`) and the stats
 * (`KafkaStats`).
 *
 * @since 0.1.0
 */
import { Source } from "@sluice/core"
import type { Config } from "@sluice/core"
import type { Scope } from "effect"
import { Effect, Exit, Stream } from "effect"
import * as Committer from "./internal/Committer.ts"
import { describe, isAuthenticationFailure, makeConsumer, makeFetchPool, probeConnection } from "./internal/client.ts"
import * as ConsumerProtocol from "./internal/ConsumerProtocol.ts"
import { Wakeup } from "./internal/Context.ts"
import type { Context } from "./internal/Context.ts"
import { EventBuffer } from "./internal/EventBuffer.ts"
import { topicMetadata } from "./internal/Fetcher.ts"
import * as Loop from "./internal/Loop.ts"
import { Membership } from "./internal/Membership.ts"
import * as ReadGate from "./internal/ReadGate.ts"
import * as KafkaConfig from "./KafkaConfig.ts"
import * as KafkaStats from "./KafkaStats.ts"
import { SaslAuthenticationFailed } from "./SaslAuthentication.ts"

/**
 * Counters and recent events of a source (see `KafkaStats`): bounded, whatever
 * the run's length.
 *
 * **Example**
 *
 * ```ts
 * import type { KafkaSource } from "@sluice/adapter-kafka"
 *
 * declare const source: KafkaSource.KafkaSource
 * const stats: KafkaSource.KafkaSourceStats = source.stats
 * console.log(`${stats.commits} commits, ${stats.gaps} gaps (${stats.gapRecords} records lost)`)
 * ```
 *
 * @since 0.1.0
 */
export type KafkaSourceStats = KafkaStats.KafkaSourceStats

/**
 * One of the recent events of a source (see `KafkaStats`).
 *
 * **Example**
 *
 * ```ts
 * import type { KafkaSource } from "@sluice/adapter-kafka"
 *
 * declare const source: KafkaSource.KafkaSource
 * const revokes: Array<KafkaSource.KafkaSourceEvent> = source.stats.recent().filter((e) => e._tag === "Revoked")
 * ```
 *
 * @since 0.1.0
 */
export type KafkaSourceEvent = KafkaStats.KafkaSourceEvent

/**
 * A Kafka source: a core `Source` plus what it knows about its partitions.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { KafkaSource } from "@sluice/adapter-kafka"
 *
 * const owned = Effect.map(
 *   KafkaSource.make({ brokers: ["127.0.0.1:19092"], topic: "orders", mode: { kind: "assign" } }),
 *   (source) => source.owned()
 * )
 * ```
 *
 * @since 0.1.0
 */
export interface KafkaSource extends Source.Source {
  readonly config: KafkaConfig.KafkaConfig
  readonly topic: string
  readonly stats: KafkaSourceStats
  /** Next offset committed per partition, by this source. */
  readonly committed: ReadonlyMap<number, number>
  /** Partitions owned now (assigned and not revoked). */
  readonly owned: () => ReadonlyArray<number>
  /**
   * The topic's partition count when the source started (a group's members
   * together own this many once the group has settled).
   *
   * @since 0.4.0
   */
  readonly partitionsCount: number
}

/**
 * Connects to the brokers and returns the source; closing the scope closes the
 * client (leaving the group in group mode).
 *
 * **When to use**
 *
 * To archive a Kafka topic with the core `Pipeline`.
 *
 * **Details**
 *
 * - `events` may run once. It starts fetching when run: in group mode it joins
 *   the group then; in assign mode it reads the configured partitions.
 * - Each record becomes one payload: with `recordFormat: "envelope"` (the
 *   default) a `RecordEnvelope` holding its timestamp, key, headers and value;
 *   with `"value"` its value alone (a null value is empty). A chunk's payloads
 *   are framed in one buffer (`Record.RecordChunk.framed`; read them with
 *   `Record.payloadsOf`).
 * - Start position: `startOffsets` (assign mode), else the group's committed
 *   offset, else the log start. Before fetching, at start, after every resume
 *   and on OFFSET_OUT_OF_RANGE, the position is compared with the log start:
 *   below it, a core `RetentionGap` event is emitted with the exact count, then
 *   the `retentionGap` policy applies (`fail`: the stream fails with a
 *   `SourceError` carrying {@link RetentionGap.RetentionGapDetected};
 *   `record-and-continue`: reading goes on from the log start).
 * - `commit` sends one OffsetCommit. In group mode it carries the generation
 *   the partition is owned in, and is refused (not sent, counted in
 *   `stats.commitsSkipped`, answered with a core `CommitRefused` so the
 *   pipeline does not count it) for a partition that is no longer owned; a commit
 *   the broker rejects for a stale generation waits for the rejoin and is sent
 *   again only if the partition is still owned.
 * - On a rebalance, partitions lost are announced with a core
 *   `PartitionsRevoked` event, delivered ahead of any chunk still read ahead
 *   (those of the lost partitions are dropped: the new owner reads them
 *   again), even while paused; fetching resumes (and new partitions start)
 *   only after the pipeline acknowledged it.
 * - Read-ahead is bounded: at most `prefetch` events and `prefetchBytes`
 *   bytes of memory (counted as the pipeline's budget counts them, payload
 *   plus the per-record overhead) wait for the pipeline; no fetch starts
 *   while either is reached, and a fetch asks for the room left divided by
 *   the memory per wire byte the last fetch showed (split over the leader
 *   brokers; a broker still returns one record batch when the room is
 *   smaller). The buffer exceeds `prefetchBytes` by what one fetch
 *   under-estimated (the first assumes ~100 B records) plus one record batch
 *   per leader. `readAheadBytes` is `prefetchBytes`, so
 *   the pipeline reserves it from its memory budget.
 * - `stats` holds counters and the last `statsHistory` events: bounded.
 * - `pause` stops fetching (a fetch in flight still delivers); `resume`
 *   restarts it after checking the log start.
 * - `lag`: records between the read position and the high watermark, per
 *   owned partition (refreshed every `lagRefresh` while paused or idle).
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Fixed, Memory, Pipeline } from "@sluice/core"
 * import { KafkaSource } from "@sluice/adapter-kafka"
 *
 * const program = Effect.gen(function*() {
 *   const source = yield* KafkaSource.make({
 *     brokers: ["127.0.0.1:19092"],
 *     topic: "orders",
 *     mode: { kind: "group", groupId: "orders-archiver" },
 *     retentionGap: "record-and-continue"
 *   })
 *   return yield* Pipeline.run({ source, sink: Memory.sink(), policies: Fixed.layer({ concurrency: 8 }) })
 * })
 * Effect.runFork(Effect.scoped(program))
 * ```
 *
 * @since 0.1.0
 */
export const make = (
  input: KafkaConfig.KafkaConfigInput
): Effect.Effect<KafkaSource, Config.ConfigError | Source.SourceError, Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* KafkaConfig.decode(input)
    const ctx = yield* connect(config)
    const typed = typedAuthenticationFailure(config)
    const topicMeta = yield* topicMetadata(ctx.consumer, ctx.name, ctx.topic).pipe(Effect.mapError(typed))
    const membership = new Membership()
    const consumerProtocol = config.mode.kind === "group" && config.mode.protocol === "consumer"
      ? ConsumerProtocol.make(ctx, membership, topicMeta.id, yield* Effect.scope)
      : undefined
    // Runs before the client closes (added after it): the last commits of a drain were made as a member.
    if (consumerProtocol !== undefined) yield* Effect.addFinalizer(() => consumerProtocol.leave)
    else if (config.mode.kind === "group") membership.listen(ctx.consumer, ctx.topic, ctx.stats, ctx.wakeup)
    const gate = ReadGate.make(ctx)
    const committer = Committer.make(ctx, membership)
    const buffer = new EventBuffer({ maxEvents: config.prefetch, maxBytes: config.prefetchBytes, stats: ctx.stats, wakeup: ctx.wakeup })
    let started = false
    const events: Stream.Stream<Source.SourceEvent, Source.SourceError> = Stream.unwrap(
      Effect.gen(function*() {
        if (started) {
          return yield* new Source.SourceError({ source: ctx.name, operation: "events", message: "events may run only once" })
        }
        started = true
        yield* Loop.run({ ctx, membership, buffer, gate, partitionsCount: topicMeta.partitionsCount, join: consumerProtocol?.start }).pipe(
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) buffer.end(Exit.void)
              else if (!Exit.hasInterrupts(exit)) buffer.end(Exit.failCause(exit.cause))
            })
          ),
          Effect.forkScoped
        )
        return buffer.stream
      })
    ).pipe(Stream.mapError(typed))
    return {
      name: ctx.name,
      topic: ctx.topic,
      config,
      events,
      commit: (partition, nextOffset) => Effect.mapError(committer.commit(partition, nextOffset), typed),
      pause: gate.pause,
      resume: gate.resume,
      lag: gate.lag,
      readAheadBytes: config.prefetchBytes,
      stats: ctx.stats.view,
      committed: committer.committed,
      owned: () => [...membership.owned].sort((a, b) => a - b),
      partitionsCount: topicMeta.partitionsCount
    }
  })

/**
 * The `SourceError` of a refused login: operation `"authenticate"`, its cause
 * a {@link SaslAuthenticationFailed} naming the mechanism and the user.
 */
const authenticationFailed = (
  name: string,
  sasl: NonNullable<KafkaConfig.KafkaConfig["sasl"]>,
  broker: string,
  error: unknown
): Source.SourceError => {
  const failed = new SaslAuthenticationFailed({ source: name, mechanism: sasl.mechanism, username: sasl.username, broker, reason: describe(error) })
  return new Source.SourceError({ source: name, operation: "authenticate", message: `${failed.message} (not retried)`, cause: failed })
}

/**
 * With SASL configured: one connection to the bootstrap brokers in turn,
 * until one answers. A refused login fails at once, typed, after that single
 * attempt (the client's pools retry it); a broker that cannot be reached is
 * left to the client, which retries and reports it.
 */
const checkLogin = (config: KafkaConfig.KafkaConfig, name: string): Effect.Effect<void, Source.SourceError> => {
  const sasl = config.sasl
  if (sasl === undefined) return Effect.void
  return Effect.gen(function*() {
    for (const broker of config.brokers) {
      const outcome = yield* Effect.promise(() => probeConnection(config, broker))
      if (outcome === undefined) return
      if (isAuthenticationFailure(outcome)) return yield* authenticationFailed(name, sasl, broker, outcome)
    }
  })
}

/**
 * A source error whose cause is a refused login, made the typed
 * `"authenticate"` error (a login refused later than {@link checkLogin}: the
 * password rotated while running). Any other error is returned as it is.
 */
const typedAuthenticationFailure = (config: KafkaConfig.KafkaConfig) => (error: Source.SourceError): Source.SourceError =>
  config.sasl !== undefined && !(error.cause instanceof SaslAuthenticationFailed) && isAuthenticationFailure(error.cause)
    ? authenticationFailed(error.source, config.sasl, config.brokers.join(","), error.cause)
    : error

/** Builds the client and the fetch pool (both closed with the scope) and the shared state. */
const connect = (config: KafkaConfig.KafkaConfig): Effect.Effect<Context, Source.SourceError, Scope.Scope> =>
  Effect.gen(function*() {
    const name = config.name ?? config.topic
    yield* checkLogin(config, name)
    const consumer = yield* Effect.acquireRelease(
      Effect.try({
        try: () => makeConsumer(config),
        catch: (cause) =>
          new Source.SourceError({
            source: name,
            operation: "connect",
            message: `invalid client options: ${cause instanceof Error ? cause.message : String(cause)}`,
            cause
          })
      }),
      (client) => Effect.callback<void>((resume) => client.close(true, () => resume(Effect.void)))
    )
    const fetchPool = yield* Effect.acquireRelease(
      Effect.sync(() => makeFetchPool(config)),
      (pool) => Effect.callback<void>((resume) => pool.close(() => resume(Effect.void)))
    )
    return {
      config,
      name,
      topic: config.topic,
      consumer,
      fetchPool,
      parts: new Map(),
      stats: new KafkaStats.Recorder(config.statsHistory),
      wakeup: new Wakeup()
    }
  })
