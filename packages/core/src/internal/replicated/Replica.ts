/**
 * One replica's part of a replicated write: put → manifest → verify on that
 * replica, bounded by `lagTimeout`, every failure as a classified
 * `SinkFailure` (a verification failure is `Fatal`; a timeout is a
 * `Transient` `ReplicaTimeout`).
 *
 * @internal
 */
import * as Batch from "../../Batch.ts"
import * as Failure from "../../Failure.ts"
import type * as Sink from "../../Sink.ts"
import { Effect } from "effect"

/** What a replica must offer to be the source of a repair. */
export interface Readable {
  /** The stored body of the object at `key`. */
  readonly readObject: (key: string) => Effect.Effect<Uint8Array, Failure.SinkFailure>
  /** The manifest of the batch whose object is at `key`. */
  readonly readManifest: (key: string) => Effect.Effect<Batch.Manifest, Failure.SinkFailure>
}

/** A replica: any core sink, optionally readable. */
export type Replica = Sink.Sink & Partial<Readable>

/** A replica's verification failure, as the `Fatal` sink failure the quorum counts. */
export const failureOf = (error: Failure.SinkFailure | Failure.VerificationFailed): Failure.SinkFailure =>
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

/** Put → manifest → verify of `batch` on `replica`, within `lagTimeout` ms. */
export const write = (
  replica: Replica,
  batch: Batch.SealedBatch,
  lagTimeout: number
): Effect.Effect<Sink.PutReceipt, Failure.SinkFailure> =>
  Effect.gen(function*() {
    const receipt = yield* replica.putObject(batch)
    yield* replica.putManifest(Batch.manifestOf(batch, receipt.checksum))
    yield* replica.verify(receipt)
    return receipt
  }).pipe(
    Effect.mapError(failureOf),
    Effect.timeout(lagTimeout),
    Effect.catchTag("TimeoutError", () =>
      Effect.fail(
        new Failure.SinkFailure({
          failureClass: "Transient",
          code: "ReplicaTimeout",
          status: undefined,
          stage: "object_upload",
          retryAfterMillis: undefined,
          message: `${replica.name} did not verify ${batch.key} within ${lagTimeout} ms`
        })
      ))
  )

const RANK: Record<Failure.FailureClass, number> = { Throttled: 0, Transient: 1, Fatal: 2 }

/** The failure to report when the quorum is lost: a throttle first (so policies back off), then transient, then fatal. */
export const worst = (errors: ReadonlyArray<Failure.SinkFailure>): Failure.SinkFailure => {
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
