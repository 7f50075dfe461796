/**
 * A sink that writes every batch to several replicas and calls it durable when
 * a quorum of them verified it.
 *
 * It is generic over any `Sink`. A failing replica neither fails the batch nor
 * loses data: once a quorum verified a batch, the others keep going for at
 * most `lagTimeout`; a replica that fails or times out is recorded as a
 * **deficit** for that key, and {@link ReplicatedSink.repair} re-copies missing
 * objects from a replica that holds them.
 *
 * This module wires the parts, each its own module under
 * `internal/replicated/`: the quorum write (`Quorum.ts`), one replica's write
 * (`Replica.ts`), the bounded state (`Ledger.ts`: puts awaiting verify,
 * deficits, lagging replicas), the background fibers (`Background.ts`) and
 * repair (`Repair.ts`).
 *
 * @since 0.1.0
 */
import type * as Batch from "./Batch.ts"
import * as Config from "./Config.ts"
import * as Failure from "./Failure.ts"
import type * as Sink from "./Sink.ts"
import { Background } from "./internal/replicated/Background.ts"
import * as Ledger from "./internal/replicated/Ledger.ts"
import * as Quorum from "./internal/replicated/Quorum.ts"
import * as Repair from "./internal/replicated/Repair.ts"
import type * as Replica_ from "./internal/replicated/Replica.ts"
import { Deferred, Effect, Schema, Scope } from "effect"

/**
 * What a replica must offer to be the source of a repair: reading an object
 * body and its manifest back (`S3Sink` does).
 *
 * **Example**
 *
 * ```ts
 * import { Replicated } from "@sluice/core"
 * import { S3Sink } from "@sluice/adapter-s3"
 *
 * declare const s3: S3Sink.S3Sink
 * const source: Replicated.Readable = s3 // S3 sinks can be read back
 * ```
 *
 * @since 0.1.0
 */
export interface Readable extends Replica_.Readable {}

/**
 * A replica: any core sink, optionally readable (needed to repair others from it).
 *
 * **Example**
 *
 * ```ts
 * import { Memory, Replicated } from "@sluice/core"
 *
 * const replica: Replicated.Replica = { ...Memory.sink(), name: "memory-a" } // not readable: cannot be a repair source
 * ```
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
 * | `release` | `"all-replicas"` | when `verify` completes: `"all-replicas"` once every replica of the batch finished or timed out (the pipeline releases the batch's bytes after `verify`, so its memory budget counts the slow replicas too); `"quorum"` at quorum (a slow replica then costs the pipeline nothing, but up to `maxBehind` batches per replica are held outside the budget) |
 * | `maxDeficits` | 10 000 | deficits (keys) kept for repair; beyond it the oldest is dropped and counted in `stats().droppedDeficits` (a replica missing that many keys needs a full resync, not a repair) |
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Replicated } from "@sluice/core"
 *
 * const options = Schema.decodeUnknownSync(Replicated.ReplicatedOptions)({ quorum: 2 })
 * // { quorum: 2, lagTimeout: 30000, maxBehind: 16, release: "all-replicas", maxDeficits: 10000 }
 * ```
 *
 * @since 0.1.0
 */
export const ReplicatedOptions = Schema.Struct({
  quorum: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  lagTimeout: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("30 seconds"))),
  maxBehind: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(16))),
  release: Schema.Literals(["all-replicas", "quorum"]).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<"all-replicas" | "quorum">("all-replicas"))
  ),
  maxDeficits: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.withDecodingDefaultKey(Effect.succeed(10_000)))
})

/**
 * `ReplicatedOptions` as a type: what the `ReplicatedOptions` schema decodes to.
 *
 * @since 0.1.0
 */
export type ReplicatedOptions = typeof ReplicatedOptions.Type

/**
 * A durable key missing on some replicas.
 *
 * **Example**
 *
 * ```ts
 * import type { Replicated } from "@sluice/core"
 *
 * declare const sink: Replicated.ReplicatedSink
 * const missingEu = sink.deficits().filter((d: Replicated.Deficit) => d.missing.has("s3:archive-eu"))
 * ```
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
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import type { Replicated } from "@sluice/core"
 *
 * declare const sink: Replicated.ReplicatedSink
 * const failed = Effect.map(sink.repair, (report: Replicated.RepairReport) => report.failed.length)
 * ```
 *
 * @since 0.1.0
 */
export interface RepairReport extends Repair.Report {}

/**
 * The sizes of a replicated sink's state, each bounded (see {@link make}).
 *
 * **Example**
 *
 * ```ts
 * import type { Replicated } from "@sluice/core"
 *
 * declare const sink: Replicated.ReplicatedSink
 * const { pending, deficits, droppedDeficits } = sink.stats()
 * ```
 *
 * @since 0.1.0
 */
export interface ReplicatedStats {
  /** Puts not yet verified (writing, or settled and awaiting `verify`). */
  readonly pending: number
  /** Keys with a deficit (at most `maxDeficits`). */
  readonly deficits: number
  /** Deficits dropped because the ledger was full. */
  readonly droppedDeficits: number
  /** Replications still running after their batch reached quorum (at most `maxBehind` per replica). */
  readonly lagging: number
  /** Replications running in the background. */
  readonly background: number
}

/**
 * A quorum-replicated sink.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import type { Replicated } from "@sluice/core"
 *
 * declare const sink: Replicated.ReplicatedSink
 * const nightly = Effect.andThen(sink.settled, sink.repair)
 * ```
 *
 * @since 0.1.0
 */
export interface ReplicatedSink extends Sink.Sink {
  readonly replicas: ReadonlyArray<Replica>
  readonly options: ReplicatedOptions
  /** Durable keys missing on some replica, now (oldest first, at most `maxDeficits`). */
  readonly deficits: () => ReadonlyArray<Deficit>
  /** Replications still running after their batch reached quorum. */
  readonly lagging: () => number
  /** Waits until no replication runs in the background (then every shortfall is a deficit). */
  readonly settled: Effect.Effect<void>
  /** Re-copies every deficit from a readable replica that has the object. */
  readonly repair: Effect.Effect<RepairReport>
  /** The sizes of the sink's state. */
  readonly stats: () => ReplicatedStats
}

/**
 * Rebuilds the batch an object holds from its manifest and body, so it can be
 * written to another replica through the ordinary `Sink` contract.
 *
 * **When to use**
 *
 * To repair or copy an archived object by hand (`repair` does it for deficits).
 *
 * **Example**
 *
 * ```ts
 * import { Batch, Replicated } from "@sluice/core"
 *
 * declare const manifest: Batch.Manifest
 * declare const body: Uint8Array
 * const batch = Replicated.batchFromObject(manifest, body) // batch.key === manifest.key
 * ```
 *
 * @since 0.1.0
 */
export const batchFromObject: (manifest: Batch.Manifest, body: Uint8Array) => Batch.SealedBatch = Repair.batchFromObject

const validate = (replicas: ReadonlyArray<Replica>, opts: ReplicatedOptions) => {
  if (replicas.length === 0 || opts.quorum > replicas.length) {
    return new Config.ConfigError({
      component: "replicated",
      message: `replicated: at ["quorum"]: Expected a quorum between 1 and ${replicas.length} (the number of replicas), got ${opts.quorum}`
    })
  }
  if (new Set(replicas.map((r) => r.name)).size !== replicas.length) {
    return new Config.ConfigError({ component: "replicated", message: "replicated: replica names must be distinct" })
  }
  return undefined
}

/**
 * Builds a quorum-replicated sink over `replicas`. Background replications run
 * in the current scope (closing it interrupts them).
 *
 * **When to use**
 *
 * To archive into several stores (regions, providers) and commit once a
 * quorum of them holds each batch.
 *
 * **Details**
 *
 * - `putObject` runs put → manifest → verify on every replica at once and
 *   returns when `quorum` of them verified; each replica's manifest carries its
 *   own checksum. If the quorum can no longer be reached it fails with the most
 *   pressure-relevant failure (a throttle first), so the pipeline retries the
 *   whole batch and nothing is committed.
 * - `putManifest` is a no-op. `verify` confirms the quorum recorded by
 *   `putObject` and, by default (`release: "all-replicas"`), **completes only
 *   when every replica of the batch finished or timed out** (`lagTimeout`):
 *   the pipeline releases a batch's bytes after `verify`, so no replica still
 *   holds a batch the memory budget no longer counts. A slow replica thus
 *   costs the pipeline up to `lagTimeout` per batch, visible to the policies
 *   as verify latency. With `release: "quorum"`, `verify` completes at quorum
 *   and a slow replica lags behind in the background instead (at most
 *   `maxBehind` batches per replica, which the pipeline's budget does not
 *   count).
 * - State is bounded: puts awaiting `verify` (a put settled but never verified
 *   is forgotten after 4096 others; its `verify` then fails `Missing`, so the
 *   batch is put again), deficits (`maxDeficits`, oldest dropped and counted),
 *   lagging replications (`maxBehind` per replica). `stats()` shows the sizes.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Replicated } from "@sluice/core"
 * import { S3Sink } from "@sluice/adapter-s3"
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
  options: Config.Input<typeof ReplicatedOptions>
): Effect.Effect<ReplicatedSink, Config.ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const opts = yield* Config.decode("replicated", ReplicatedOptions, options)
    const invalid = validate(replicas, opts)
    if (invalid !== undefined) return yield* invalid
    const ctx: Quorum.Context = {
      replicas,
      quorum: opts.quorum,
      lagTimeout: opts.lagTimeout,
      maxBehind: opts.maxBehind,
      puts: new Ledger.Puts(),
      deficits: new Ledger.Deficits(opts.maxDeficits),
      behind: new Ledger.Behind(),
      background: new Background(yield* Scope.Scope)
    }
    return {
      name: `replicated(${replicas.map((r) => r.name).join(",")})`,
      replicas,
      options: opts,
      putObject: (batch) => Quorum.write(ctx, batch),
      putManifest: () => Effect.void,
      verify: (receipt) => verify(ctx, opts.release, receipt),
      deficits: () => ctx.deficits.list(),
      lagging: () => ctx.behind.total(),
      settled: ctx.background.whenIdle,
      repair: Repair.repairAll(replicas, ctx.deficits, opts.lagTimeout),
      stats: () => ({
        pending: ctx.puts.size,
        deficits: ctx.deficits.size,
        droppedDeficits: ctx.deficits.dropped,
        lagging: ctx.behind.total(),
        background: ctx.background.running
      })
    }
  })

/** Confirms the quorum of a put (with `"all-replicas"`, once every replica of it is done); then forgets the put. */
const verify = (
  ctx: Quorum.Context,
  release: ReplicatedOptions["release"],
  receipt: Sink.PutReceipt
): Effect.Effect<Sink.VerifiedReceipt, Failure.VerificationFailed> =>
  Effect.suspend(() => {
    const entry = ctx.puts.get(receipt.key)
    if (entry === undefined || !entry.durable) {
      return Effect.fail(
        new Failure.VerificationFailed({
          key: receipt.key,
          reason: "Missing",
          expected: `quorum ${ctx.quorum}`,
          actual: `${entry?.have.size ?? 0} replicas`
        })
      )
    }
    const released = release === "all-replicas" ? Deferred.await(entry.settled) : Effect.void
    return released.pipe(
      Effect.map(() => {
        ctx.puts.forget(entry)
        return { key: receipt.key, objectBytes: receipt.objectBytes, checksum: receipt.checksum }
      })
    )
  })

/**
 * Alias of {@link make}, read as `Replicated.replicated([a, b, c], { quorum: 2 })`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Replicated } from "@sluice/core"
 *
 * const replica = (name: string) => ({ ...Memory.sink(), name })
 * const sink = Effect.scoped(Replicated.replicated([replica("a"), replica("b"), replica("c")], { quorum: 2 }))
 * ```
 *
 * @since 0.1.0
 */
export const replicated = make
