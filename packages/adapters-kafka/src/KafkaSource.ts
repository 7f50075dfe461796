/**
 * A core `Source` over one Kafka topic, on `@platformatic/kafka`: every owned
 * partition fetched in one request per leader broker (one chunk per partition
 * per response), auto-commit off, offsets committed only through `commit`,
 * retention gaps detected and surfaced, group rebalances made safe.
 *
 * @since 0.1.0
 */
import { Source } from "@sluice/core"
import type { Config, Record } from "@sluice/core"
import type { Cause, Scope } from "effect"
import { Clock, Deferred, Effect, Exit, Latch, Option, Queue, Stream } from "effect"
import {
  attempt,
  committedOffsets,
  fetchResponseOf,
  listOffsets,
  makeConsumer,
  makeFetchPool,
  needsRejoin,
  offsetCommit
} from "./internal/client.ts"
import type { FetchResponse, KafkaConsumer } from "./internal/client.ts"
import { decodePartition } from "./internal/decode.ts"
import * as KafkaConfig from "./KafkaConfig.ts"
import * as RetentionGap from "./RetentionGap.ts"

/**
 * Counters and logs of a source, for inspection (tests, dashboards).
 *
 * @since 0.1.0
 */
export interface KafkaSourceStats {
  /** Fetch requests answered. */
  fetches: number
  records: number
  /** Payload bytes delivered (envelope bytes with `recordFormat: "envelope"`). */
  bytes: number
  /** Whether fetching is paused now, and how often it was paused. */
  readonly pauses: { paused: boolean; count: number }
  /** Every retention gap found, in order. */
  readonly gaps: Array<Source.RetentionGap>
  /** Every commit that reached Kafka (or memory, without a group), in order. */
  readonly commits: Array<{ readonly partition: number; readonly nextOffset: number }>
  /** Commits refused because the partition was no longer owned. */
  readonly commitsSkipped: Array<{ readonly partition: number; readonly nextOffset: number }>
  /** Rebalances noticed (group mode). */
  rebalances: number
  /** Partitions assigned, per assignment. */
  readonly assigned: Array<ReadonlyArray<number>>
  /** Partitions revoked, per revoke. */
  readonly revoked: Array<ReadonlyArray<number>>
}

/**
 * A Kafka source: a core `Source` plus what it knows about its partitions.
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
}

interface PartitionState {
  readonly partition: number
  /** Next offset to read; -1 before the position is known (start at the log start). */
  next: number
  highWatermark: number
  hwAt: number
  /** Compare `next` with the log start before the next fetch (start, resume, out of range). */
  checkStart: boolean
  /** `until: "caught-up"`: the end offset seen at assignment; -1 until known. */
  endAt: number
}

/** Partition error codes fixed by refreshing metadata and fetching again. */
const STALE_METADATA = new Set([3, 5, 6, 74, 75])
const OFFSET_OUT_OF_RANGE = 1

type EventQueue = Queue.Queue<Source.SourceEvent, Source.SourceError | Cause.Done>

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
 *   with `"value"` its value alone (zero-copy; a null value is empty).
 * - Start position: `startOffsets` (assign mode), else the group's committed
 *   offset, else the log start. Before fetching, at start, after every resume
 *   and on OFFSET_OUT_OF_RANGE, the position is compared with the log start:
 *   below it, a core `RetentionGap` event is emitted with the exact count, then
 *   the `retentionGap` policy applies (`fail`: the stream fails with a
 *   `SourceError` carrying {@link RetentionGap.RetentionGapDetected};
 *   `record-and-continue`: reading goes on from the log start).
 * - `commit` sends one OffsetCommit. In group mode it carries the generation
 *   the partition is owned in, and is refused (no-op, logged in
 *   `stats.commitsSkipped`) for a partition that is no longer owned; a commit
 *   the broker rejects for a stale generation waits for the rejoin and is sent
 *   again only if the partition is still owned.
 * - On a rebalance, partitions lost are announced with a core
 *   `PartitionsRevoked` event; fetching resumes (and new partitions start)
 *   only after the pipeline acknowledged it.
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
  input: unknown
): Effect.Effect<KafkaSource, Config.ConfigError | Source.SourceError, Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* KafkaConfig.decode(input)
    const topic = config.topic
    const name = config.name ?? topic
    const mode = config.mode
    const caughtUp = config.until === "caught-up"
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
    const topicMeta = yield* topicMetadata(consumer, name, topic)

    const stats: KafkaSourceStats = {
      fetches: 0,
      records: 0,
      bytes: 0,
      pauses: { paused: false, count: 0 },
      gaps: [],
      commits: [],
      commitsSkipped: [],
      rebalances: 0,
      assigned: [],
      revoked: []
    }
    const committed = new Map<number, number>()
    const parts = new Map<number, PartitionState>()
    const running = yield* Latch.make(true)
    let started = false

    // --- group membership (written by the client's event listeners) ---------
    /** Partitions this member may commit, and the generation it owns them in. */
    const owned = new Set<number>()
    let ownedGeneration = -1
    /** The latest assignment not yet applied by the fetch loop. */
    let pending: ReadonlyArray<number> | undefined
    /** Partitions lost since the fetch loop last looked (a revoke may be followed by a re-assign). */
    const lostSince = new Set<number>()
    /** Completed (and replaced) at every join: commits waiting for a rejoin await it. */
    let joined = Deferred.makeUnsafe<void>()
    let clientError: unknown = undefined

    if (mode.kind === "group") {
      consumer.on("consumer:group:join", (payload) => {
        const mine = new Set(payload.assignments?.find((a) => a.topic === topic)?.partitions ?? [])
        for (const p of owned) {
          if (!mine.has(p)) {
            owned.delete(p)
            lostSince.add(p)
          }
        }
        ownedGeneration = payload.generationId ?? consumer.generationId
        pending = [...mine].sort((a, b) => a - b)
        const previous = joined
        joined = Deferred.makeUnsafe<void>()
        Deferred.doneUnsafe(previous, Exit.void)
      })
      consumer.on("consumer:group:rebalance", () => {
        stats.rebalances++
      })
      consumer.on("error", (error: unknown) => {
        clientError = error
      })
    }

    // --- positions ------------------------------------------------------------
    const assign = (partitions: ReadonlyArray<number>, startOffsets: ReadonlyMap<number, number>) =>
      Effect.gen(function*() {
        if (partitions.length === 0) return
        const groupId = mode.kind === "group" ? mode.groupId : mode.groupId
        const fromGroup = groupId !== undefined
          ? yield* committedOffsets(consumer, name, topic, partitions)
          : new Map<number, number>()
        for (const p of partitions) {
          parts.set(p, {
            partition: p,
            next: startOffsets.get(p) ?? fromGroup.get(p) ?? -1,
            highWatermark: -1,
            hwAt: 0,
            checkStart: true,
            endAt: -1
          })
          owned.add(p)
        }
        stats.assigned.push([...partitions])
      })

    /** Applies the latest group assignment: revoke (and wait for the ack), then assign. */
    const applyAssignment = (queue: EventQueue) =>
      Effect.gen(function*() {
        const mine = pending
        if (mine === undefined) return
        pending = undefined
        const keep = new Set(mine)
        const revoked: Array<number> = []
        for (const p of parts.keys()) {
          if (!keep.has(p) || lostSince.has(p)) revoked.push(p)
        }
        lostSince.clear()
        if (revoked.length > 0) {
          for (const p of revoked) parts.delete(p)
          stats.revoked.push(revoked)
          const ack = yield* Deferred.make<void>()
          yield* Queue.offer(queue, {
            _tag: "PartitionsRevoked",
            partitions: revoked,
            acknowledge: Effect.asVoid(Deferred.succeed(ack, undefined))
          })
          const rebalanceTimeout = mode.kind === "group" ? mode.rebalanceTimeout : 60_000
          yield* Effect.timeoutOption(Deferred.await(ack), rebalanceTimeout)
        }
        // New partitions, and those re-assigned right after a revoke (dropped
        // above): start from their committed offsets.
        yield* assign(mine.filter((p) => !parts.has(p)), new Map())
      })

    /** Compares positions with the log bounds where asked; emits gaps; applies the policy. */
    const checkPositions = (queue: EventQueue) =>
      Effect.gen(function*() {
        const toCheck = [...parts.values()].filter((s) => s.checkStart)
        if (toCheck.length === 0) return
        const ps = toCheck.map((s) => s.partition)
        const [starts, ends] = yield* Effect.all([
          listOffsets(consumer, name, topic, ps, "earliest"),
          listOffsets(consumer, name, topic, ps, "latest")
        ], { concurrency: 2 })
        const now = yield* Clock.currentTimeMillis
        for (const s of toCheck) {
          if (parts.get(s.partition) !== s) continue
          const logStart = starts.get(s.partition)
          const logEnd = ends.get(s.partition)
          if (logStart === undefined || logEnd === undefined) {
            return yield* new Source.SourceError({
              source: name,
              operation: "listOffsets",
              message: `no log offsets for ${topic}/${s.partition}`
            })
          }
          s.highWatermark = logEnd
          s.hwAt = now
          const position = RetentionGap.classify(s.next, logStart, logEnd)
          switch (position._tag) {
            case "Start":
            case "InRange":
              s.next = position.next
              break
            case "Gap": {
              const gap: Source.RetentionGap = {
                _tag: "RetentionGap",
                source: name,
                partition: s.partition,
                expected: position.expected,
                logStart: position.logStart,
                lostRecords: position.lostRecords
              }
              stats.gaps.push(gap)
              yield* Queue.offer(queue, gap)
              if (config.retentionGap === "fail") {
                return yield* new Source.SourceError({
                  source: name,
                  operation: "fetch",
                  message:
                    `retention gap on ${topic}/${s.partition}: next offset ${position.expected} is below the log start ${position.logStart} (${position.lostRecords} records deleted unread)`,
                  cause: new RetentionGap.RetentionGapDetected({
                    source: name,
                    topic,
                    partition: s.partition,
                    expected: position.expected,
                    logStart: position.logStart,
                    lostRecords: position.lostRecords
                  })
                })
              }
              s.next = position.logStart
              break
            }
            case "BeyondEnd":
              return yield* new Source.SourceError({
                source: name,
                operation: "fetch",
                message:
                  `${topic}/${s.partition}: next offset ${position.expected} is past the log end ${position.logEnd} (log truncated or topic recreated); not resetting`
              })
          }
          if (caughtUp && s.endAt < 0) s.endAt = logEnd
          s.checkStart = false
        }
      })

    // --- fetching -------------------------------------------------------------
    const fetchFrom = (node: number, topicId: string, states: ReadonlyArray<PartitionState>) =>
      Effect.tryPromise({
        try: () =>
          consumer.fetch({
            node,
            connectionPool: fetchPool,
            maxWaitTime: config.fetch.maxWait,
            minBytes: config.fetch.minBytes,
            maxBytes: config.fetch.maxBytes,
            topics: [{
              topicId,
              partitions: states.map((s) => ({
                partition: s.partition,
                fetchOffset: BigInt(s.next),
                partitionMaxBytes: config.fetch.partitionMaxBytes,
                currentLeaderEpoch: -1,
                lastFetchedEpoch: -1
              }))
            }]
          }),
        catch: (cause) => cause
      }).pipe(
        // A partition error fails the whole response, which still carries the
        // other partitions' data.
        Effect.catch((cause) => {
          const partial = fetchResponseOf(cause)
          return partial !== undefined
            ? Effect.succeed(partial)
            : Effect.fail(
              new Source.SourceError({
                source: name,
                operation: "fetch",
                message: `fetch from broker ${node}: ${cause instanceof Error ? cause.message : String(cause)}`,
                cause
              })
            )
        })
      )

    const absorb = (response: FetchResponse, requested: ReadonlyMap<number, number>, now: number) =>
      Effect.gen(function*() {
        const chunks: Array<Record.RecordChunk> = []
        let stale = false
        for (const topicResponse of response.responses) {
          for (const pr of topicResponse.partitions) {
            const s = parts.get(pr.partitionIndex)
            // Revoked meanwhile, or re-positioned (a gap check): drop the answer.
            if (s === undefined || requested.get(pr.partitionIndex) !== s.next) continue
            if (pr.highWatermark >= 0n) {
              s.highWatermark = Number(pr.highWatermark)
              s.hwAt = now
            }
            if (pr.errorCode === 0) {
              if (pr.records === undefined) continue
              const decoded = decodePartition(name, s.partition, s.next, pr.records, now, config.recordFormat)
              s.next = decoded.next
              if (decoded.chunk !== undefined) {
                chunks.push(decoded.chunk)
                stats.records += decoded.chunk.count
                stats.bytes += decoded.chunk.bytes
              }
            } else if (pr.errorCode === OFFSET_OUT_OF_RANGE) {
              s.checkStart = true
            } else if (STALE_METADATA.has(pr.errorCode)) {
              stale = true
            } else {
              return yield* new Source.SourceError({
                source: name,
                operation: "fetch",
                message: `fetch ${topic}/${s.partition}: broker error code ${pr.errorCode}`
              })
            }
          }
        }
        if (stale) {
          consumer.clearMetadata()
          yield* Effect.sleep(100)
        }
        return chunks
      })

    let round = 0
    const fetchRound = (active: ReadonlyArray<PartitionState>) =>
      Effect.gen(function*() {
        const meta = yield* topicMetadata(consumer, name, topic)
        // Rotate the order so that no partition starves when a response fills up.
        const shift = round++ % active.length
        const ordered = [...active.slice(shift), ...active.slice(0, shift)]
        const byLeader = new Map<number, Array<PartitionState>>()
        for (const s of ordered) {
          const leader = meta.partitions[s.partition]?.leader ?? -1
          const list = byLeader.get(leader)
          if (list === undefined) byLeader.set(leader, [s])
          else list.push(s)
        }
        const requested = new Map<number, number>()
        for (const s of ordered) requested.set(s.partition, s.next)
        const responses = yield* Effect.forEach(
          byLeader,
          ([node, states]) => fetchFrom(node, meta.id, states),
          { concurrency: "unbounded" }
        )
        stats.fetches += responses.length
        const now = yield* Clock.currentTimeMillis
        const chunks: Array<Record.RecordChunk> = []
        for (const response of responses) {
          for (const chunk of yield* absorb(response, requested, now)) chunks.push(chunk)
        }
        return chunks
      })

    const loop = (queue: EventQueue) =>
      Effect.gen(function*() {
        if (mode.kind === "group") {
          consumer.topics.track(topic)
          yield* attempt(name, "joinGroup", () =>
            consumer.joinGroup({
              sessionTimeout: mode.sessionTimeout,
              heartbeatInterval: mode.heartbeatInterval,
              rebalanceTimeout: mode.rebalanceTimeout
            }))
        } else {
          const partitions = mode.partitions ?? Array.from({ length: topicMeta.partitionsCount }, (_, i) => i)
          const invalid = partitions.filter((p) => p >= topicMeta.partitionsCount)
          if (invalid.length > 0) {
            return yield* new Source.SourceError({
              source: name,
              operation: "assign",
              message: `${topic} has ${topicMeta.partitionsCount} partitions; no partition ${invalid.join(", ")}`
            })
          }
          const starts = new Map<number, number>()
          for (const [p, o] of Object.entries(mode.startOffsets ?? {})) starts.set(Number(p), o)
          yield* assign(partitions, starts)
        }
        while (true) {
          yield* running.await
          if (clientError !== undefined) {
            return yield* new Source.SourceError({
              source: name,
              operation: "group",
              message: `group membership failed: ${clientError instanceof Error ? clientError.message : String(clientError)}`,
              cause: clientError
            })
          }
          yield* applyAssignment(queue)
          yield* checkPositions(queue)
          const active = [...parts.values()].filter((s) => !(caughtUp && s.endAt >= 0 && s.next >= s.endAt))
          if (active.length === 0) {
            if (caughtUp && mode.kind === "assign") return
            yield* Effect.sleep(Math.max(10, config.fetch.maxWait))
            continue
          }
          const chunks = yield* fetchRound(active)
          if (chunks.length > 0) yield* Queue.offerAll(queue, chunks)
        }
      })

    const events: Stream.Stream<Source.SourceEvent, Source.SourceError> = Stream.unwrap(
      Effect.gen(function*() {
        if (started) {
          return yield* new Source.SourceError({ source: name, operation: "events", message: "events may run only once" })
        }
        started = true
        const queue: EventQueue = yield* Queue.bounded<Source.SourceEvent, Source.SourceError | Cause.Done>(config.prefetch)
        yield* loop(queue).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? Queue.end(queue) : Exit.hasInterrupts(exit) ? Effect.void : Queue.failCause(queue, exit.cause)
          ),
          Effect.forkScoped
        )
        return Stream.fromQueue(queue)
      })
    )

    // --- commit ---------------------------------------------------------------
    const record = (partition: number, nextOffset: number) => {
      committed.set(partition, nextOffset)
      stats.commits.push({ partition, nextOffset })
    }

    const commitAssigned = (groupId: string | undefined, partition: number, nextOffset: number) =>
      groupId === undefined
        ? Effect.sync(() => record(partition, nextOffset))
        : attempt(name, "commit", () =>
          offsetCommit(consumer, { groupId, generation: -1, memberId: "", topic, partition, offset: nextOffset })).pipe(
            Effect.map(() => record(partition, nextOffset))
          )

    const commitInGroup = (groupId: string, rebalanceTimeout: number, partition: number, nextOffset: number) =>
      Effect.gen(function*() {
        const deadline = (yield* Clock.currentTimeMillis) + rebalanceTimeout
        const awaitJoin = (wait: Deferred.Deferred<void>) =>
          Effect.gen(function*() {
            const left = deadline - (yield* Clock.currentTimeMillis)
            const done = left > 0 ? yield* Effect.timeoutOption(Deferred.await(wait), left) : Option.none()
            if (Option.isNone(done)) {
              return yield* new Source.SourceError({
                source: name,
                operation: "commit",
                message: `commit ${topic}/${partition}@${nextOffset}: the group did not finish rebalancing within ${rebalanceTimeout} ms`
              })
            }
          })
        while (true) {
          if (!owned.has(partition)) {
            stats.commitsSkipped.push({ partition, nextOffset })
            return
          }
          const wait = joined
          const generation = ownedGeneration
          const memberId = consumer.memberId
          if (memberId === null || consumer.generationId !== generation) {
            // Mid-rebalance: the join event will say whether we still own it.
            yield* awaitJoin(wait)
            continue
          }
          const exit = yield* Effect.exit(Effect.tryPromise({
            try: () => offsetCommit(consumer, { groupId, generation, memberId, topic, partition, offset: nextOffset }),
            catch: (cause) => cause
          }))
          if (Exit.isSuccess(exit)) {
            record(partition, nextOffset)
            return
          }
          const error = exit.cause.reasons.find((r) => r._tag === "Fail")
          const cause = error !== undefined && error._tag === "Fail" ? error.error : undefined
          if (cause !== undefined && needsRejoin(cause)) {
            yield* awaitJoin(wait)
            continue
          }
          return yield* new Source.SourceError({
            source: name,
            operation: "commit",
            message: `commit ${topic}/${partition}@${nextOffset}: ${cause instanceof Error ? cause.message : String(cause)}`,
            cause
          })
        }
      })

    const commit = (partition: number, nextOffset: number): Effect.Effect<void, Source.SourceError> =>
      mode.kind === "group"
        ? commitInGroup(mode.groupId, mode.rebalanceTimeout, partition, nextOffset)
        : commitAssigned(mode.groupId, partition, nextOffset)

    // --- pause, resume, lag -----------------------------------------------------
    const pause = Effect.suspend(() => {
      if (!stats.pauses.paused) stats.pauses.count++
      stats.pauses.paused = true
      return Effect.asVoid(running.close)
    })

    const resume = Effect.suspend(() => {
      if (stats.pauses.paused) {
        stats.pauses.paused = false
        // Retention may have moved the log start while we were not reading.
        for (const s of parts.values()) s.checkStart = true
      }
      return Effect.asVoid(running.open)
    })

    let refreshing = false
    const lag = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const stale = [...parts.values()].filter((s) => now - s.hwAt >= config.lagRefresh).map((s) => s.partition)
      if (stale.length > 0 && !refreshing) {
        refreshing = true
        const ends = yield* listOffsets(consumer, name, topic, stale, "latest").pipe(
          Effect.ensuring(Effect.sync(() => {
            refreshing = false
          })),
          Effect.orElseSucceed(() => new Map<number, number>())
        )
        for (const [p, end] of ends) {
          const s = parts.get(p)
          if (s !== undefined) {
            s.highWatermark = end
            s.hwAt = now
          }
        }
      }
      const out = new Map<number, number>()
      for (const s of parts.values()) {
        if (s.next >= 0 && s.highWatermark >= 0) out.set(s.partition, Math.max(0, s.highWatermark - s.next))
      }
      return out as ReadonlyMap<number, number>
    })

    return {
      name,
      topic,
      config,
      events,
      commit,
      pause,
      resume,
      lag,
      stats,
      committed,
      owned: () => [...owned].sort((a, b) => a - b)
    }
  })

const topicMetadata = (consumer: KafkaConsumer, name: string, topic: string) =>
  attempt(name, "metadata", () => consumer.metadata({ topics: [topic] })).pipe(
    Effect.flatMap((metadata) => {
      const meta = metadata.topics.get(topic)
      return meta === undefined
        ? Effect.fail(new Source.SourceError({ source: name, operation: "metadata", message: `unknown topic ${topic}` }))
        : Effect.succeed(meta)
    })
  )
