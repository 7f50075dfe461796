/**
 * The few `@platformatic/kafka` operations the source needs, as Effects failing
 * with a core `SourceError`.
 *
 * @internal
 */
import { Source } from "@sluice/core"
import {
  AuthenticationError,
  Connection as KafkaConnection,
  ConnectionPool,
  Consumer,
  createAPI,
  FetchIsolationLevels,
  fetchV13,
  fetchV14,
  fetchV15,
  fetchV16,
  fetchV17,
  FindCoordinatorKeyTypes,
  kGetApi,
  kGetBootstrapConnection,
  kGetConnection,
  kPerformWithRetry,
  ListOffsetTimestamps,
  ResponseError
} from "@platformatic/kafka"
import type { API, consumerGroupHeartbeatV1, ConnectionOptions, ConsumerOptions, findCoordinatorV6, offsetCommitV9, Reader } from "@platformatic/kafka"
import { Effect } from "effect"
import type { KafkaConfig } from "../KafkaConfig.ts"
import type { AbortedTransaction } from "./RecordBatch.ts"

export type KafkaConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>

/** Error shape of the client: `findBy` also searches nested errors. */
interface ClientError {
  readonly findBy?: (property: string, value: unknown) => unknown
  readonly response?: unknown
}

/** Whether the client's error (or one nested in it) has `property` equal to `value`. */
const carries = (error: unknown, property: string, value: unknown): boolean =>
  typeof error === "object" && error !== null && typeof (error as ClientError).findBy === "function" &&
  (error as ClientError).findBy?.(property, value) != null

/** The protocol error id (`"OFFSET_OUT_OF_RANGE"`, …) when the error carries `id`. */
export const hasApiError = (error: unknown, id: string): boolean => carries(error, "apiId", id)

/** A group error that a rejoin fixes (stale generation, rebalance in progress, unknown member). */
export const needsRejoin = (error: unknown): boolean => carries(error, "needsRejoin", true)

/** How deep {@link chainOf} follows `cause` and `errors` (the client nests 3–4 levels). */
const CHAIN_DEPTH = 8

/** The error, then every error it nests (`cause`, an `AggregateError`'s `errors`), depth first. */
const chainOf = (error: unknown, depth = 0): Array<unknown> => {
  if (typeof error !== "object" || error === null || depth > CHAIN_DEPTH) return [error]
  const nested: Array<unknown> = []
  const { cause } = error as { readonly cause?: unknown }
  if (cause !== undefined) nested.push(cause)
  if (error instanceof AggregateError) nested.push(...error.errors)
  return [error, ...nested.flatMap((e) => chainOf(e, depth + 1))]
}

/**
 * Whether the broker refused the SASL credentials somewhere in the error: the
 * client's `AuthenticationError`, which it wraps in a retriable
 * `NetworkError` ("Connection to … failed.") as the `cause`, a level its own
 * `canRetry` look-up (`findBy`) does not read, so it retries a wrong password.
 */
export const isAuthenticationFailure = (error: unknown): boolean =>
  chainOf(error).some((e) => typeof e === "object" && e !== null && (e as { readonly code?: unknown }).code === AuthenticationError.code)

/**
 * An error the client marks retriable (`canRetry`: a network error, a broker
 * or coordinator not available, a request timed out) that a rejoin does not
 * fix: sending the same request again may succeed. A refused login is never
 * retriable, whatever the error wrapping it says.
 */
export const isRetriable = (error: unknown): boolean =>
  !needsRejoin(error) && !isAuthenticationFailure(error) && carries(error, "canRetry", true)

/** The partial fetch response a `ResponseError` carries (other partitions' data). */
export const fetchResponseOf = (error: unknown): FetchResponse | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const response = (error as ClientError).response
  if (typeof response !== "object" || response === null || !("responses" in response)) return undefined
  return response as FetchResponse
}

/** The error's message, then its nested errors' (an `AggregateError`'s, and a `cause` the client wraps). */
export const describe = (error: unknown): string => {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return `${error.message}: ${error.errors.map(describe).join("; ")}`
  }
  if (error instanceof Error) {
    return error.cause instanceof Error ? `${error.message} (${describe(error.cause)})` : error.message
  }
  return String(error)
}

/** Wraps a client promise; failures become `SourceError`s. */
export const attempt = <A>(source: string, operation: string, f: () => Promise<A>): Effect.Effect<A, Source.SourceError> =>
  Effect.tryPromise({
    try: f,
    catch: (cause) => new Source.SourceError({ source, operation, message: `${operation}: ${describe(cause)}`, cause })
  })

/** Connection options from config (TLS / SASL passed through). */
export const connectionOptions = (config: KafkaConfig): ConnectionOptions => ({
  connectTimeout: config.connectTimeout,
  requestTimeout: config.requestTimeout,
  ...(config.tls !== undefined ? { tls: { ...config.tls } } : {}),
  ...(config.sasl !== undefined ? { sasl: { ...config.sasl } } : {})
})

/**
 * One connection to `broker` (`"host:port"`) with the source's TLS and SASL
 * options, closed at once: `undefined` when it connected, else what it failed
 * with. The client's pools retry a failed login; this is a single attempt.
 */
export const probeConnection = (config: KafkaConfig, broker: string): Promise<unknown> => {
  const at = broker.lastIndexOf(":")
  const connection = new KafkaConnection(`${config.clientId}-auth-check`, connectionOptions(config))
  // The failure also goes out as an 'error' event; the callback below is its only reader.
  connection.on("error", () => undefined)
  return new Promise<unknown>((resolve) =>
    connection.connect(broker.slice(0, at), Number(broker.slice(at + 1)), (error) => resolve(error ?? undefined))
  ).then((outcome) => connection.close().then(() => outcome, () => outcome))
}

/**
 * A connection pool for fetches only. A broker answers the requests of one
 * connection in order, so a long-polling fetch would hold back commits,
 * heartbeats and offset look-ups queued behind it on the client's own pool
 * (the Java client keeps a separate coordinator connection for the same
 * reason).
 */
export const makeFetchPool = (config: KafkaConfig): ConnectionPool =>
  new ConnectionPool(`${config.clientId}-fetch`, connectionOptions(config))

/** Builds the client from config (TLS / SASL passed through). */
export const makeConsumer = (config: KafkaConfig): KafkaConsumer => {
  const groupId = config.mode.kind === "group" ? config.mode.groupId : (config.mode.groupId ?? `${config.clientId}-assign`)
  const options: ConsumerOptions<Buffer, Buffer, Buffer, Buffer> = {
    clientId: config.clientId,
    bootstrapBrokers: [...config.brokers],
    groupId,
    ...connectionOptions(config),
    timeout: config.requestTimeout,
    maxWaitTime: config.fetch.maxWait,
    minBytes: config.fetch.minBytes,
    maxBytes: config.fetch.maxBytes,
    isolationLevel: config.isolation === "read_committed"
      ? FetchIsolationLevels.READ_COMMITTED
      : FetchIsolationLevels.READ_UNCOMMITTED,
    autocommit: false,
    // Under the consumer protocol the source runs the membership itself (`ConsumerProtocol.ts`): the client's group timings are not used.
    ...(config.mode.kind === "group" && config.mode.protocol === "classic"
      ? {
        sessionTimeout: config.mode.sessionTimeout,
        heartbeatInterval: config.mode.heartbeatInterval,
        rebalanceTimeout: config.mode.rebalanceTimeout,
        ...(config.mode.instanceId !== undefined ? { groupInstanceId: config.mode.instanceId } : {})
      }
      : {})
  }
  return new Consumer(options)
}

/** Log start (EARLIEST) or end (LATEST) offsets of `partitions`, by partition. */
export const listOffsets = (
  consumer: KafkaConsumer,
  source: string,
  topic: string,
  partitions: ReadonlyArray<number>,
  which: "earliest" | "latest"
): Effect.Effect<Map<number, number>, Source.SourceError> =>
  attempt(source, `listOffsets(${which})`, () =>
    consumer.listOffsets({
      topics: [topic],
      partitions: { [topic]: [...partitions] },
      timestamp: which === "earliest" ? ListOffsetTimestamps.EARLIEST : ListOffsetTimestamps.LATEST
    })).pipe(Effect.map((offsets) => {
      const byPartition = offsets.get(topic) ?? []
      const out = new Map<number, number>()
      for (const p of partitions) {
        const o = byPartition[p]
        if (o !== undefined) out.set(p, Number(o))
      }
      return out
    }))

/** Offsets committed under the consumer's group, by partition (absent: none). */
export const committedOffsets = (
  consumer: KafkaConsumer,
  source: string,
  topic: string,
  partitions: ReadonlyArray<number>
): Effect.Effect<Map<number, number>, Source.SourceError> =>
  attempt(source, "listCommittedOffsets", () => consumer.listCommittedOffsets({ topics: [{ topic, partitions: [...partitions] }] }))
    .pipe(Effect.map((offsets) => {
      const byPartition = offsets.get(topic) ?? []
      const out = new Map<number, number>()
      for (const p of partitions) {
        const o = byPartition[p]
        if (o !== undefined && o >= 0n) out.set(p, Number(o))
      }
      return out
    }))

type OffsetCommitArgs = Parameters<typeof offsetCommitV9.api.async> extends [unknown, ...infer Rest] ? Rest : never
type OffsetCommitResponse = offsetCommitV9.OffsetCommitResponse

const callback = <A>(f: (cb: (error: Error | null, value?: A) => void) => void): Promise<A> =>
  new Promise<A>((resolve, reject) =>
    f((error, value) => {
      if (error) reject(error)
      else resolve(value as A)
    })
  )

type Broker = Parameters<ConnectionPool["get"]>[0]
type Connection = Parameters<Parameters<KafkaConsumer[typeof kGetConnection]>[1]>[1]

/**
 * A connection to broker `node` (looked up in `topic`'s metadata) through
 * `connect` (the client's pool, or the fetch pool), and the client's API
 * `api` in the version it and the broker share.
 */
const brokerApi = async <Args extends Array<unknown>, Response>(
  consumer: KafkaConsumer,
  target: {
    readonly topic: string
    readonly node: number
    /** What the broker is to us, for messages ("group coordinator", "fetch leader"). */
    readonly role: string
    readonly connect: (broker: Broker, cb: (error: Error | null, connection?: Connection) => void) => void
    readonly api: string
  }
): Promise<{ readonly api: API<Args, Response>; readonly connection: NonNullable<Connection> }> => {
  const metadata = await consumer.metadata({ topics: [target.topic] })
  const broker = metadata.brokers.get(target.node)
  if (broker === undefined) throw new Error(`${target.role} ${target.node} is not in the cluster metadata`)
  const connection = await callback<Connection>((cb) => target.connect(broker, cb))
  if (connection === undefined) throw new Error(`no connection to the ${target.role} (${target.node})`)
  const api = await callback<API<Args, Response>>((cb) => consumer[kGetApi]<Args, Response>(target.api, cb))
  return { api, connection }
}

/** The group coordinator `node` on the client's own connections, and its API `api` (`brokerApi`). */
const coordinatorApi = <Args extends Array<unknown>, Response>(consumer: KafkaConsumer, topic: string, node: number, api: string) =>
  brokerApi<Args, Response>(consumer, {
    topic,
    node,
    role: "group coordinator",
    connect: (broker, cb) => consumer[kGetConnection](broker, cb),
    api
  })

/**
 * One OffsetCommit request with an explicit generation and member id.
 *
 * **Details**
 *
 * The client's own `commit` rejoins the group and retries with the *new*
 * generation when the broker answers ILLEGAL_GENERATION / REBALANCE_IN_PROGRESS,
 * which could commit a partition this member lost in the rebalance. This call
 * never rejoins: a stale generation fails, and the caller decides (after the
 * rejoin, and only if it still owns the partition).
 */
export const offsetCommit = (
  consumer: KafkaConsumer,
  args: {
    readonly groupId: string
    /** The classic protocol's generation, or the consumer protocol's member epoch. */
    readonly generation: number
    readonly memberId: string
    readonly topic: string
    readonly partition: number
    readonly offset: number
    /** The group coordinator's node, when the caller tracks it (the consumer protocol); else the client's. */
    readonly coordinator?: number | undefined
  }
): Promise<OffsetCommitResponse> =>
  (async () => {
    const coordinatorId = args.coordinator ?? await consumer.findGroupCoordinator()
    const { api, connection } = await coordinatorApi<OffsetCommitArgs, OffsetCommitResponse>(consumer, args.topic, coordinatorId, "OffsetCommit")
    return api.async(
      connection,
      args.groupId,
      args.generation,
      args.memberId,
      null,
      [{
        name: args.topic,
        partitions: [{ partitionIndex: args.partition, committedOffset: BigInt(args.offset), committedLeaderEpoch: -1 }]
      }]
    )
  })()

type FindCoordinatorArgs = Parameters<typeof findCoordinatorV6.api.async> extends [unknown, ...infer Rest] ? Rest : never
type FindCoordinatorResponse = findCoordinatorV6.FindCoordinatorResponse

/**
 * The group coordinator of `groupId`, asked afresh of a bootstrap broker (the
 * client's `findGroupCoordinator` caches its answer, and only the client's own
 * group requests clear it when the coordinator moves).
 */
export const findCoordinator = (consumer: KafkaConsumer, groupId: string): Promise<number> =>
  (async () => {
    const connection = await callback<Connection>((cb) => consumer[kGetBootstrapConnection](cb))
    if (connection === undefined) throw new Error("no connection to a bootstrap broker")
    const api = await callback<API<FindCoordinatorArgs, FindCoordinatorResponse>>((cb) =>
      consumer[kGetApi]<FindCoordinatorArgs, FindCoordinatorResponse>("FindCoordinator", cb)
    )
    const response = await api.async(connection, FindCoordinatorKeyTypes.GROUP, [groupId])
    const found = response.coordinators.find((c) => c.key === groupId) ?? response.coordinators[0]
    if (found === undefined) throw new Error(`no coordinator for group ${groupId}`)
    return found.nodeId
  })()

type HeartbeatArgs = Parameters<typeof consumerGroupHeartbeatV1.api.async> extends [unknown, ...infer Rest] ? Rest : never
/** A ConsumerGroupHeartbeat response (KIP-848). */
export type HeartbeatResponse = consumerGroupHeartbeatV1.ConsumerGroupHeartbeatResponse

/** What one ConsumerGroupHeartbeat request sends (KIP-848); `memberEpoch` -1 leaves the group. */
export interface HeartbeatRequest {
  readonly groupId: string
  readonly memberId: string
  readonly memberEpoch: number
  readonly instanceId: string | null
  readonly rebalanceTimeout: number
  readonly topic: string
  /** The subscribed topic's id, to name the partitions held. */
  readonly topicId: string
  /** The partitions this member holds now (its revokes finished). */
  readonly owned: ReadonlyArray<number>
}

/**
 * One ConsumerGroupHeartbeat request to the coordinator `coordinator` (the
 * consumer group protocol, KIP-848), every field sent in full. A response
 * with an error code is thrown as the client's `ResponseError`.
 */
export const consumerGroupHeartbeat = (
  consumer: KafkaConsumer,
  coordinator: number,
  request: HeartbeatRequest
): Promise<HeartbeatResponse> =>
  (async () => {
    const { api, connection } = await coordinatorApi<HeartbeatArgs, HeartbeatResponse>(consumer, request.topic, coordinator, "ConsumerGroupHeartbeat")
    const leaving = request.memberEpoch < 0
    return api.async(
      connection,
      request.groupId,
      request.memberId,
      request.memberEpoch,
      request.instanceId,
      null,
      leaving ? 0 : request.rebalanceTimeout,
      leaving ? [] : [request.topic],
      null,
      null,
      // The broker wants an empty list, not a topic without partitions, when nothing is held (and when joining).
      leaving || request.owned.length === 0 ? [] : [{ topicId: request.topicId, partitions: [...request.owned] }]
    )
  })()

/** One partition of a fetch response, its records left as bytes (`RecordBatch.ts` reads them). */
export interface FetchPartition {
  readonly partitionIndex: number
  readonly errorCode: number
  readonly highWatermark: bigint
  readonly abortedTransactions: ReadonlyArray<AbortedTransaction>
  /** The record batches as the broker sent them (a view into the response); absent when empty. */
  readonly records: Uint8Array | undefined
}

/** A fetch response (Fetch v13–v17: topics by id), records as bytes. */
export interface FetchResponse {
  readonly responses: ReadonlyArray<{ readonly topicId: string; readonly partitions: ReadonlyArray<FetchPartition> }>
}

/**
 * The client's Fetch response parser (`fetch-v17.js`, the same for v13–v17)
 * with one change: a partition's records stay bytes instead of a record object
 * per record. Errors are thrown as the client's `ResponseError`, carrying the
 * response (see {@link fetchResponseOf}).
 */
const parseFetchResponse = (_correlationId: number, apiKey: number, apiVersion: number, reader: Reader): FetchResponse => {
  const errors: Array<[string, [number, null]]> = []
  reader.readInt32() // throttle time
  const errorCode = reader.readInt16()
  if (errorCode !== 0) errors.push(["", [errorCode, null]])
  reader.readInt32() // session id
  const responses = reader.readArray((r, i) => ({
    topicId: r.readUUID(),
    partitions: r.readArray((r, j): FetchPartition => {
      const partitionIndex = r.readInt32()
      const partitionError = r.readInt16()
      const highWatermark = r.readInt64()
      r.readInt64() // last stable offset
      r.readInt64() // log start offset
      const abortedTransactions = r.readArray((r) => ({ producerId: r.readInt64(), firstOffset: r.readInt64() }))
      r.readInt32() // preferred read replica
      if (partitionError !== 0) errors.push([`/responses/${i}/partitions/${j}`, [partitionError, null]])
      // COMPACT_RECORDS: the size is sent plus one.
      const size = r.readUnsignedVarInt() - 1
      let records: Uint8Array | undefined
      if (size > 0) {
        records = r.buffer.slice(r.position, r.position + size)
        r.skip(size)
      }
      return { partitionIndex, errorCode: partitionError, highWatermark, abortedTransactions, records }
    })
  }))
  const response: FetchResponse = { responses }
  if (errors.length > 0) throw new ResponseError(apiKey, apiVersion, Object.fromEntries(errors), response)
  return response
}

type FetchArgs = Parameters<typeof fetchV17.createRequest>

/** Our Fetch API per version the client speaks with topic ids. */
const fetchApis: ReadonlyMap<number, API<FetchArgs, FetchResponse>> = new Map(
  [fetchV13, fetchV14, fetchV15, fetchV16, fetchV17].map((v) => [
    v.api.version,
    createAPI<FetchArgs, FetchResponse>(v.api.key, v.api.version, v.createRequest, parseFetchResponse)
  ])
)

/** What one fetch asks a broker for. */
export interface FetchRequest {
  readonly topic: string
  /** The leader to ask. */
  readonly node: number
  readonly maxWait: number
  readonly minBytes: number
  readonly maxBytes: number
  readonly isolationLevel: number
  readonly topics: FetchArgs[6]
}

/**
 * One Fetch request on `pool` (the fetch connections), as the client's own
 * `fetch` sends it (the Fetch version the broker and the client share, the
 * client's retries on retriable errors), answered by {@link parseFetchResponse}.
 */
export const fetchRecords = (consumer: KafkaConsumer, pool: ConnectionPool, request: FetchRequest): Promise<FetchResponse> =>
  new Promise<FetchResponse>((resolve, reject) => {
    consumer[kPerformWithRetry]<FetchResponse>("fetch", (done) => {
      brokerApi<FetchArgs, unknown>(consumer, {
        topic: request.topic,
        node: request.node,
        role: "fetch leader",
        connect: (broker, cb) => pool.get(broker, cb),
        api: "Fetch"
      }).then(({ api: clientApi, connection }) => {
        const api = fetchApis.get(clientApi.version)
        if (api === undefined) throw new Error(`Fetch v${clientApi.version} is not supported (v13–v17 are)`)
        return api.async(connection, request.maxWait, request.minBytes, request.maxBytes, request.isolationLevel, 0, 0, request.topics, [], "")
      }).then((response) => done(null, response), (error: unknown) => done(error instanceof Error ? error : new Error(String(error))))
    }, (error, response) => {
      if (error !== null || response === undefined) reject(error)
      else resolve(response)
    }, 0)
  })
