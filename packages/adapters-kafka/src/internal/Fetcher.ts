/**
 * One fetch round: every active partition in one request per leader broker
 * (the order rotated every round, so a full response starves no partition),
 * each request asking for at most the buffer's room; each partition's answer
 * decoded into one chunk (`decode.ts`); partition errors handled (out of range:
 * re-check the position; stale metadata: refresh; anything else fails).
 *
 * @internal
 */
import { Record, Source } from "@sluice/core"
import { FetchIsolationLevels } from "@platformatic/kafka"
import { Clock, Effect } from "effect"
import { attempt, fetchRecords, fetchResponseOf } from "./client.ts"
import type { FetchResponse, KafkaConsumer } from "./client.ts"
import type { Context, PartitionState } from "./Context.ts"
import { decodePartition } from "./decode.ts"

/** Partition error codes fixed by refreshing metadata and fetching again. */
const STALE_METADATA = new Set([3, 5, 6, 74, 75])
const OFFSET_OUT_OF_RANGE = 1
/** Pause after a stale-metadata answer before the next round. */
const METADATA_BACKOFF_MILLIS = 100

/** The topic's metadata (partitions, leaders). */
export const topicMetadata = (consumer: KafkaConsumer, name: string, topic: string) =>
  attempt(name, "metadata", () => consumer.metadata({ topics: [topic] })).pipe(
    Effect.flatMap((metadata) => {
      const meta = metadata.topics.get(topic)
      return meta === undefined
        ? Effect.fail(new Source.SourceError({ source: name, operation: "metadata", message: `unknown topic ${topic}` }))
        : Effect.succeed(meta)
    })
  )

/**
 * The sizes of one request when `leaders` brokers share `room` bytes: the
 * configured `fetch.maxBytes` / `partitionMaxBytes`, cut to the room (at least
 * 1: the broker still returns the first record batch, so the stream always
 * makes progress).
 */
export const requestSizes = (
  fetch: { readonly maxBytes: number; readonly partitionMaxBytes: number },
  room: number,
  leaders: number
): { readonly maxBytes: number; readonly partitionMaxBytes: number } => {
  const share = Math.max(1, Math.floor(room / Math.max(1, leaders)))
  const maxBytes = Math.min(fetch.maxBytes, share)
  return { maxBytes, partitionMaxBytes: Math.min(fetch.partitionMaxBytes, maxBytes) }
}

const fetchFrom = (
  ctx: Context,
  node: number,
  topicId: string,
  states: ReadonlyArray<PartitionState>,
  sizes: { readonly maxBytes: number; readonly partitionMaxBytes: number }
) =>
  Effect.tryPromise({
    try: () =>
      fetchRecords(ctx.consumer, ctx.fetchPool, {
        topic: ctx.topic,
        node,
        maxWait: ctx.config.fetch.maxWait,
        minBytes: ctx.config.fetch.minBytes,
        maxBytes: sizes.maxBytes,
        isolationLevel: ctx.config.isolation === "read_committed"
          ? FetchIsolationLevels.READ_COMMITTED
          : FetchIsolationLevels.READ_UNCOMMITTED,
        topics: [{
          topicId,
          partitions: states.map((s) => ({
            partition: s.partition,
            fetchOffset: BigInt(s.next),
            partitionMaxBytes: sizes.partitionMaxBytes,
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
            source: ctx.name,
            operation: "fetch",
            message: `fetch from broker ${node}: ${cause instanceof Error ? cause.message : String(cause)}`,
            cause
          })
        )
    })
  )

/** The chunks of one response; positions advanced; partition errors applied. */
const absorb = (ctx: Context, response: FetchResponse, requested: ReadonlyMap<number, number>, now: number) =>
  Effect.gen(function*() {
    const chunks: Array<Record.RecordChunk> = []
    let stale = false
    for (const topicResponse of response.responses) {
      for (const pr of topicResponse.partitions) {
        const s = ctx.parts.get(pr.partitionIndex)
        // Revoked meanwhile, or re-positioned (a gap check): drop the answer.
        if (s === undefined || requested.get(pr.partitionIndex) !== s.next) continue
        if (pr.highWatermark >= 0n) {
          s.highWatermark = Number(pr.highWatermark)
          s.hwAt = now
        }
        if (pr.errorCode === 0) {
          if (pr.records === undefined) continue
          const records = pr.records
          const decoded = yield* Effect.try({
            try: () => decodePartition(ctx.name, s.partition, s.next, records, now, ctx.config.recordFormat, pr.abortedTransactions),
            catch: (cause) =>
              new Source.SourceError({
                source: ctx.name,
                operation: "fetch",
                message: `fetch ${ctx.topic}/${s.partition} at offset ${s.next}: ${cause instanceof Error ? cause.message : String(cause)}`,
                cause
              })
          })
          s.next = decoded.next
          if (decoded.chunk !== undefined) {
            chunks.push(decoded.chunk)
            ctx.stats.counters.records += decoded.chunk.count
            ctx.stats.counters.bytes += decoded.chunk.bytes
          }
        } else if (pr.errorCode === OFFSET_OUT_OF_RANGE) {
          s.checkStart = true
        } else if (STALE_METADATA.has(pr.errorCode)) {
          stale = true
        } else {
          return yield* new Source.SourceError({
            source: ctx.name,
            operation: "fetch",
            message: `fetch ${ctx.topic}/${s.partition}: broker error code ${pr.errorCode}`
          })
        }
      }
    }
    if (stale) {
      ctx.consumer.clearMetadata()
      yield* Effect.sleep(METADATA_BACKOFF_MILLIS)
    }
    return chunks
  })

/**
 * Memory per byte on the wire assumed before the first fetch has shown it:
 * about the most a framed chunk takes, small records' (a tombstone's
 * envelope and frame take 25 B against ~8–10 B on the wire; a 100 B value
 * ~1.2×). A first fetch of records that expand more overshoots the room by
 * what this under-estimates; larger records make it ask for less than it
 * could, until the next fetch uses the ratio measured.
 */
const INITIAL_EXPANSION = 3

/**
 * The chunks, each partition's `Source.CaughtUp` after its last one once the
 * reader has reached the log end seen at its assignment (`backlogEnd`;
 * announced once). A backlog that ends in records the fetch skips (aborted
 * transactions, control records) is announced without a chunk.
 */
const withCaughtUp = (ctx: Context, chunks: ReadonlyArray<Record.RecordChunk>): Array<Source.SourceEvent> => {
  const events: Array<Source.SourceEvent> = [...chunks]
  for (const s of ctx.parts.values()) {
    if (s.backlogEnd < 0 || s.next < s.backlogEnd) continue
    events.push({ _tag: "CaughtUp", partition: s.partition, nextOffset: s.backlogEnd, pausedAt: s.backlogPausedAt })
    s.backlogEnd = -1
    s.backlogPausedAt = undefined
  }
  return events
}

/** Bytes on the wire a record takes besides its payload, at least (Kafka's record framing). */
const MIN_FRAMING_BYTES = 8

/**
 * Memory the chunks hold per byte they took on the wire, estimated (payload
 * plus {@link MIN_FRAMING_BYTES} per record as the wire size, an upper bound
 * on the ratio): at least 1.
 */
export const expansionOf = (chunks: ReadonlyArray<Record.RecordChunk>): number | undefined => {
  let heap = 0
  let wire = 0
  for (const chunk of chunks) {
    heap += Record.heapBytes(chunk)
    wire += chunk.bytes + chunk.count * MIN_FRAMING_BYTES
  }
  return wire === 0 ? undefined : Math.max(1, heap / wire)
}

/**
 * Fetches `active` partitions once so that what it reads fits `room` bytes of
 * memory (counted as `Record.heapBytes`): the request asks for `room` divided
 * by the memory per wire byte the last fetch showed (see
 * {@link INITIAL_EXPANSION}); the chunks read.
 */
export const makeRound = (ctx: Context) => {
  let round = 0
  let expansion = INITIAL_EXPANSION
  return (active: ReadonlyArray<PartitionState>, room: number): Effect.Effect<Array<Source.SourceEvent>, Source.SourceError> =>
    Effect.gen(function*() {
      const meta = yield* topicMetadata(ctx.consumer, ctx.name, ctx.topic)
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
      const sizes = requestSizes(ctx.config.fetch, Math.floor(room / expansion), byLeader.size)
      const responses = yield* Effect.forEach(
        byLeader,
        ([node, states]) => fetchFrom(ctx, node, meta.id, states, sizes),
        { concurrency: "unbounded" }
      )
      ctx.stats.counters.fetches += responses.length
      const now = yield* Clock.currentTimeMillis
      const chunks: Array<Record.RecordChunk> = []
      for (const response of responses) {
        for (const chunk of yield* absorb(ctx, response, requested, now)) chunks.push(chunk)
      }
      expansion = expansionOf(chunks) ?? expansion
      return withCaughtUp(ctx, chunks)
    })
}
