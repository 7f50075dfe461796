/**
 * A sink that writes every batch to several replicas and calls it durable when
 * a quorum of them verified it.
 *
 * It is generic over any `Sink` (also reachable as `Sink.replicated`). A slow or failing replica
 * neither stalls the pipeline nor loses data: once a quorum verified a batch,
 * the others keep going in the background for at most `lagTimeout`; a replica
 * that fails or times out is recorded as a **deficit** for that key, and
 * {@link ReplicatedSink.repair} re-copies missing objects from a replica that
 * holds them.
 *
 * @since 0.1.0
 */
import * as Batch from "./Batch.ts"
import * as Config from "./Config.ts"
import * as Failure from "./Failure.ts"
import * as Record from "./Record.ts"
import type * as Sink from "./Sink.ts"
import { Clock, Deferred, Effect, Schema, Scope } from "effect"

/**
 * What a replica must offer to be the source of a repair: reading an object
 * body and its manifest back (`S3Sink` does).
 *
 * @since 0.1.0
 */
export interface Readable {
  readonly readObject: (key: string) => Effect.Effect<Uint8Array, Failure.SinkFailure>
  readonly readManifest: (key: string) => Effect.Effect<Batch.Manifest, Failure.SinkFailure>
}

/**
 * A replica: any core sink, optionally readable (needed to repair others from it).
 *
 * @since 0.1.0
 */
export type Replica = Sink.Sink & Partial<Readable>

/**
 * Options of {@link make}.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `quorum` | (required) | replicas that must verify a batch before it is durable (1 .. replicas) |
 * | `lagTimeout` | 30 seconds | how long one replica's put → manifest → verify may take; past it, the replica gets a deficit |
 * | `maxBehind` | 16 | replications per replica still running after their batch reached quorum; beyond it new batches skip that replica (recorded as deficit `Behind`), bounding the memory a slow replica holds |
 *
 * @since 0.1.0
 */
export const ReplicatedOptions = Schema.Struct({
  quorum: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  lagTimeout: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30 seconds"))),
  maxBehind: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(16)))
})

/**
 * @since 0.1.0
 */
export type ReplicatedOptions = typeof ReplicatedOptions.Type

/**
 * A durable key missing on some replicas.
 *
 * @since 0.1.0
 */
export interface Deficit {
  readonly key: string
  /** Replicas that verified the object. */
  readonly have: ReadonlyArray<string>
  /** Replicas missing it, with the reason (`ReplicaTimeout`, `SlowDown`, `Behind`, …). */
  readonly missing: ReadonlyMap<string, string>
  /** When the first replica was found missing (ms, Effect clock). */
  readonly since: number
}

/**
 * What one {@link ReplicatedSink.repair} run did.
 *
 * @since 0.1.0
 */
export interface RepairReport {
  readonly repaired: ReadonlyArray<{ readonly key: string; readonly replica: string }>
  readonly failed: ReadonlyArray<{ readonly key: string; readonly replica: string; readonly reason: string }>
}

/**
 * A quorum-replicated sink.
 *
 * @since 0.1.0
 */
export interface ReplicatedSink extends Sink.Sink {
  readonly replicas: ReadonlyArray<Replica>
  readonly options: ReplicatedOptions
  /** Durable keys missing on some replica, now. */
  readonly deficits: () => ReadonlyArray<Deficit>
  /** Replications still running after their batch reached quorum. */
  readonly lagging: () => number
  /** Waits until no replication runs in the background (then every shortfall is a deficit). */
  readonly settled: Effect.Effect<void>
  /** Re-copies every deficit from a readable replica that has the object. */
  readonly repair: Effect.Effect<RepairReport>
}

interface Entry {
  readonly have: Set<string>
  readonly missing: Map<string, string>
  /** Replicas whose replication of this key is still running. */
  readonly running: Set<string>
  since: number | undefined
  durable: boolean
  verified: boolean
}

const failureOf = (error: Failure.SinkFailure | Failure.VerificationFailed): Failure.SinkFailure =>
  error._tag === "SinkFailure"
    ? error
    : new Failure.SinkFailure({
      failureClass: "Fatal",
      code: error.reason,
      status: undefined,
      stage: "verify",
      retryAfterMillis: undefined,
      message: `verification failed on a replica: ${error.reason} (expected ${error.expected}, got ${error.actual})`
    })

const RANK: Record<Failure.FailureClass, number> = { Throttled: 0, Transient: 1, Fatal: 2 }

/** The failure to report when the quorum is lost: a throttle first (so policies back off), then transient, then fatal. */
const worst = (errors: ReadonlyArray<Failure.SinkFailure>): Failure.SinkFailure => {
  const sorted = [...errors].sort((a, b) => RANK[a.failureClass] - RANK[b.failureClass])
  const first = sorted[0]
  if (first === undefined) {
    return new Failure.SinkFailure({
      failureClass: "Transient",
      code: "NoReplica",
      status: undefined,
      stage: "object_upload",
      retryAfterMillis: undefined,
      message: "no replica could take the batch"
    })
  }
  return new Failure.SinkFailure({ ...first, message: `quorum lost: ${errors.map((e) => `${e.code}: ${e.message}`).join("; ")}` })
}

/**
 * Rebuilds the batch an object holds from its manifest and body, so it can be
 * written to another replica through the ordinary `Sink` contract.
 *
 * @since 0.1.0
 */
export const batchFromObject = (manifest: Batch.Manifest, body: Uint8Array): Batch.SealedBatch => {
  const payloads = Batch.decodeBody(body)
  return {
    key: manifest.key,
    source: manifest.source,
    partition: manifest.partition,
    sequence: 0,
    firstOffset: manifest.firstOffset,
    lastOffset: manifest.lastOffset,
    records: payloads.length,
    bytes: manifest.payloadBytes,
    sealReason: manifest.sealReason,
    openedAt: manifest.openedAt,
    sealedAt: manifest.sealedAt,
    chunks: [Record.chunkOf(manifest.source, manifest.partition, manifest.firstOffset, payloads)],
    ...(manifest.gap !== undefined ? { gap: manifest.gap } : {})
  }
}

/**
 * Builds a quorum-replicated sink over `replicas`. Background replications run
 * in the current scope (closing it interrupts them).
 *
 * **Details**
 *
 * - `putObject` runs put → manifest → verify on every replica at once and
 *   returns when `quorum` of them verified; each replica's manifest carries its
 *   own checksum. If the quorum can no longer be reached it fails with the most
 *   pressure-relevant failure (a throttle first), so the pipeline retries the
 *   whole batch and nothing is committed.
 * - `putManifest` is a no-op and `verify` confirms the quorum recorded by
 *   `putObject` (the replicas were verified there).
 * - A replica still running after the quorum holds a reference to the batch for
 *   at most `lagTimeout`; at most `maxBehind` of them per replica.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Sink, Replicated } from "@sluice/adapter-s3"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const a = yield* S3Sink.make({ bucket: "archive-a", region: "eu-west-1" })
 *   const b = yield* S3Sink.make({ bucket: "archive-b", region: "eu-central-1" })
 *   const c = yield* S3Sink.make({ bucket: "archive-c", region: "eu-north-1" })
 *   const sink = yield* Replicated.make([a, b, c], { quorum: 2, lagTimeout: "20 seconds" })
 *   // ... run a pipeline with `sink`, then later:
 *   const report = yield* sink.repair
 *   return report.repaired.length
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const make = (
  replicas: ReadonlyArray<Replica>,
  options: unknown
): Effect.Effect<ReplicatedSink, Config.ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const opts = yield* Config.decode("replicated", ReplicatedOptions, options)
    if (replicas.length === 0 || opts.quorum > replicas.length) {
      return yield* new Config.ConfigError({
        component: "replicated",
        message: `replicated: at ["quorum"]: Expected a quorum between 1 and ${replicas.length} (the number of replicas), got ${opts.quorum}`
      })
    }
    const names = new Set(replicas.map((r) => r.name))
    if (names.size !== replicas.length) {
      return yield* new Config.ConfigError({ component: "replicated", message: "replicated: replica names must be distinct" })
    }
    const scope = yield* Scope.Scope
    const entries = new Map<string, Entry>()
    /** Per replica: replications still running although their batch is already durable. */
    const behind = new Map<string, number>(replicas.map((r) => [r.name, 0]))
    let inflight = 0
    const idle: Array<() => void> = []

    const replicate = (replica: Replica, batch: Batch.SealedBatch): Effect.Effect<Sink.PutReceipt, Failure.SinkFailure> =>
      Effect.gen(function*() {
        const receipt = yield* replica.putObject(batch)
        yield* replica.putManifest(Batch.manifestOf(batch, receipt.checksum))
        yield* replica.verify(receipt)
        return receipt
      }).pipe(
        Effect.mapError(failureOf),
        Effect.timeout(opts.lagTimeout),
        Effect.catchTag("TimeoutError", () =>
          Effect.fail(
            new Failure.SinkFailure({
              failureClass: "Transient",
              code: "ReplicaTimeout",
              status: undefined,
              stage: "object_upload",
              retryAfterMillis: undefined,
              message: `${replica.name} did not verify ${batch.key} within ${opts.lagTimeout} ms`
            })
          ))
      )

    const markMissing = (entry: Entry, replica: string, reason: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        entry.missing.set(replica, reason)
        if (entry.since === undefined) entry.since = now
      })

    const putObject = (batch: Batch.SealedBatch): Effect.Effect<Sink.PutReceipt, Failure.SinkFailure> =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<Sink.PutReceipt, Failure.SinkFailure>()
        const entry: Entry = {
          have: new Set(),
          missing: new Map(),
          running: new Set(),
          since: undefined,
          durable: false,
          verified: false
        }
        entries.set(batch.key, entry)
        const errors: Array<Failure.SinkFailure> = []
        let failed = 0
        const lost = () => replicas.length - failed < opts.quorum
        const onFailure = (replica: string, error: Failure.SinkFailure) =>
          Effect.gen(function*() {
            failed++
            errors.push(error)
            yield* markMissing(entry, replica, error.code)
            if (!entry.durable && lost()) {
              if (entries.get(batch.key) === entry) entries.delete(batch.key)
              yield* Deferred.fail(done, worst(errors))
            }
          })
        /** A replica finished: if the batch was durable already, it no longer lags. */
        const finished = (replica: string) => {
          if (entry.running.delete(replica) && entry.durable) behind.set(replica, (behind.get(replica) ?? 1) - 1)
        }
        const becameDurable = (receipt: Sink.PutReceipt) => {
          entry.durable = true
          for (const r of entry.running) behind.set(r, (behind.get(r) ?? 0) + 1)
          return Deferred.succeed(done, receipt)
        }
        for (const replica of replicas) {
          const n = behind.get(replica.name) ?? 0
          if (n >= opts.maxBehind) {
            yield* onFailure(
              replica.name,
              new Failure.SinkFailure({
                failureClass: "Transient",
                code: "Behind",
                status: undefined,
                stage: "object_upload",
                retryAfterMillis: undefined,
                message: `${replica.name} has ${n} replications in flight`
              })
            )
            continue
          }
          entry.running.add(replica.name)
          const run = replicate(replica, batch).pipe(
            Effect.matchEffect({
              onSuccess: (receipt) =>
                Effect.gen(function*() {
                  finished(replica.name)
                  entry.have.add(replica.name)
                  entry.missing.delete(replica.name)
                  if (!entry.durable && entry.have.size >= opts.quorum) yield* becameDurable(receipt)
                  forgetIfComplete(batch.key, entry)
                }),
              onFailure: (error) =>
                Effect.suspend(() => {
                  finished(replica.name)
                  return onFailure(replica.name, error)
                })
            }),
            // Interrupted (scope closed): no longer running, and not in storage for sure.
            Effect.onInterrupt(() => Effect.sync(() => finished(replica.name)))
          )
          yield* track(run)
        }
        return yield* Deferred.await(done)
      })

    /**
     * Forks a replication, counted from the moment it is forked (not when its
     * fiber first runs) so `settled` never sees a gap.
     */
    const track = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.suspend(() => {
        inflight++
        return Effect.forkIn(
          effect.pipe(Effect.ensuring(Effect.sync(() => {
            inflight--
            if (inflight === 0) for (const wake of idle.splice(0)) wake()
          }))),
          scope
        )
      })

    /** Drops the bookkeeping of a key every replica holds once the pipeline verified it. */
    const forgetIfComplete = (key: string, entry: Entry) => {
      if (entry.verified && entry.have.size === replicas.length && entries.get(key) === entry) entries.delete(key)
    }

    const verify = (receipt: Sink.PutReceipt): Effect.Effect<Sink.VerifiedReceipt, Failure.VerificationFailed> =>
      Effect.suspend(() => {
        const entry = entries.get(receipt.key)
        if (entry === undefined || !entry.durable) {
          return Effect.fail(
            new Failure.VerificationFailed({
              key: receipt.key,
              reason: "Missing",
              expected: `quorum ${opts.quorum}`,
              actual: `${entry?.have.size ?? 0} replicas`
            })
          )
        }
        entry.verified = true
        // Forget fully replicated keys; keep deficits (and lagging replicas) until they settle.
        forgetIfComplete(receipt.key, entry)
        return Effect.succeed({ key: receipt.key, objectBytes: receipt.objectBytes, checksum: receipt.checksum })
      })

    const deficits = (): ReadonlyArray<Deficit> => {
      const out: Array<Deficit> = []
      for (const [key, e] of entries) {
        if (!e.durable || e.missing.size === 0) continue
        out.push({ key, have: [...e.have], missing: new Map(e.missing), since: e.since ?? 0 })
      }
      return out
    }

    const settled: Effect.Effect<void> = Effect.callback<void>((resume) => {
      if (inflight === 0) resume(Effect.void)
      else idle.push(() => resume(Effect.void))
    })

    const repairOne = (deficit: Deficit) =>
      Effect.gen(function*() {
        const repaired: Array<{ key: string; replica: string }> = []
        const failed: Array<{ key: string; replica: string; reason: string }> = []
        const from = replicas.find((r) => deficit.have.includes(r.name) && r.readObject !== undefined && r.readManifest !== undefined)
        if (from === undefined || from.readObject === undefined || from.readManifest === undefined) {
          for (const replica of deficit.missing.keys()) {
            failed.push({ key: deficit.key, replica, reason: "no readable replica holds the object" })
          }
          return { repaired, failed }
        }
        const read = yield* Effect.result(
          Effect.all([from.readManifest(deficit.key), from.readObject(deficit.key)])
        )
        if (read._tag === "Failure") {
          for (const replica of deficit.missing.keys()) {
            failed.push({ key: deficit.key, replica, reason: `read from ${from.name}: ${read.failure.code}` })
          }
          return { repaired, failed }
        }
        const [manifest, body] = read.success
        const batch = batchFromObject(manifest, body)
        if (Batch.bodyBytes(batch) !== manifest.objectBytes || batch.records !== manifest.records) {
          for (const replica of deficit.missing.keys()) {
            failed.push({ key: deficit.key, replica, reason: `${from.name} holds a body that does not match its manifest` })
          }
          return { repaired, failed }
        }
        for (const name of deficit.missing.keys()) {
          const replica = replicas.find((r) => r.name === name)
          if (replica === undefined) continue
          const result = yield* Effect.result(replicate(replica, batch))
          if (result._tag === "Success") {
            const same = result.success.checksum.algorithm !== manifest.checksum.algorithm ||
              result.success.checksum.value === manifest.checksum.value
            if (!same) {
              failed.push({ key: deficit.key, replica: name, reason: "checksum differs from the source manifest" })
              continue
            }
            const entry = entries.get(deficit.key)
            if (entry !== undefined) {
              entry.missing.delete(name)
              entry.have.add(name)
              if (entry.missing.size === 0) entries.delete(deficit.key)
            }
            repaired.push({ key: deficit.key, replica: name })
          } else {
            failed.push({ key: deficit.key, replica: name, reason: result.failure.code })
          }
        }
        return { repaired, failed }
      })

    const repair: Effect.Effect<RepairReport> = Effect.gen(function*() {
      const results = yield* Effect.forEach(deficits(), repairOne, { concurrency: 4 })
      return {
        repaired: results.flatMap((r) => r.repaired),
        failed: results.flatMap((r) => r.failed)
      }
    })

    return {
      name: `replicated(${replicas.map((r) => r.name).join(",")})`,
      replicas,
      options: opts,
      putObject,
      putManifest: () => Effect.void,
      verify,
      deficits,
      lagging: () => {
        let n = 0
        for (const v of behind.values()) n += v
        return n
      },
      settled,
      repair
    }
  })

/**
 * Alias of {@link make}, read as `Replicated.replicated([a, b, c], { quorum: 2 })`.
 *
 * @since 0.1.0
 */
export const replicated = make
