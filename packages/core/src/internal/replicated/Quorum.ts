/**
 * The quorum write of one batch: every replica writes at once; the put
 * returns when `quorum` of them verified (or fails with the most
 * pressure-relevant failure once the quorum can no longer be reached). Each
 * replica's outcome updates the put's {@link Ledger.Entry}, the deficits, and
 * the per-replica count of replications lagging behind a durable batch; the
 * entry settles when no replica of the put runs any more.
 *
 * The bookkeeping is plain synchronous code (one state transition per
 * replica outcome); only the writes themselves are Effects.
 *
 * @internal
 */
import type * as Batch from "../../Batch.ts"
import * as Failure from "../../Failure.ts"
import type * as Sink from "../../Sink.ts"
import { Clock, Deferred, Effect, Exit } from "effect"
import type { Background } from "./Background.ts"
import * as Ledger from "./Ledger.ts"
import * as Replica from "./Replica.ts"

/** What a quorum write reads and updates. */
export interface Context {
  readonly replicas: ReadonlyArray<Replica.Replica>
  readonly quorum: number
  readonly lagTimeout: number
  readonly maxBehind: number
  readonly puts: Ledger.Puts
  readonly deficits: Ledger.Deficits
  readonly behind: Ledger.Behind
  readonly background: Background
}

/** One put in progress: its entry, its outcome, and the failures seen so far. */
interface Run {
  readonly ctx: Context
  readonly batch: Batch.SealedBatch
  readonly entry: Ledger.Entry
  readonly done: Deferred.Deferred<Sink.PutReceipt, Failure.SinkFailure>
  readonly errors: Array<Failure.SinkFailure>
  /** Every replica was started or skipped (before that, no running replica does not mean settled). */
  launched: boolean
}

/** A warning to log after a state transition (the ledger dropped a deficit), or none. */
type Warning = string | undefined

const recordDeficit = (run: Run, replica: string, reason: string, now: number): Warning => {
  const dropped = run.ctx.deficits.record(run.entry.key, run.entry.have, replica, reason, now)
  const n = run.ctx.deficits.dropped
  // Warn at the first drop, then at every power of ten: visible, never a flood.
  return dropped && Number.isInteger(Math.log10(n))
    ? `replicated: deficit ledger full; ${n} deficit(s) dropped (oldest first): repair cannot re-copy them`
    : undefined
}

/** A replica stopped running: it no longer lags. */
const finished = (run: Run, replica: string): void => {
  if (run.entry.running.delete(replica) && run.entry.durable) run.ctx.behind.add(replica, -1)
}

/** The entry settles once every replica was started and none runs any more. */
const settleIfIdle = (run: Run): void => {
  if (run.launched && run.entry.running.size === 0) run.ctx.puts.settle(run.entry)
}

/** A quorum verified the batch: the put returns; replicas still running now lag; earlier failures become deficits. */
const becameDurable = (run: Run, receipt: Sink.PutReceipt, now: number): Warning => {
  const { entry, ctx } = run
  entry.durable = true
  for (const r of entry.running) ctx.behind.add(r, 1)
  let warning: Warning
  for (const [r, reason] of entry.missing) warning = recordDeficit(run, r, reason, now) ?? warning
  Deferred.doneUnsafe(run.done, Exit.succeed(receipt))
  return warning
}

const succeeded = (run: Run, replica: string, receipt: Sink.PutReceipt, now: number): Warning => {
  const { entry, ctx } = run
  finished(run, replica)
  entry.have.add(replica)
  entry.missing.delete(replica)
  ctx.deficits.resolve(entry.key, replica)
  return !entry.durable && entry.have.size >= ctx.quorum ? becameDurable(run, receipt, now) : undefined
}

const failed = (run: Run, replica: string, error: Failure.SinkFailure, now: number): Warning => {
  const { entry, ctx } = run
  finished(run, replica)
  run.errors.push(error)
  entry.missing.set(replica, error.code)
  if (entry.durable) return recordDeficit(run, replica, error.code, now)
  if (ctx.replicas.length - run.errors.length < ctx.quorum) {
    ctx.puts.forget(entry)
    Deferred.doneUnsafe(run.done, Exit.fail(Replica.worst(run.errors)))
  }
  return undefined
}

/** A replica's write died (a bug in the replica): a `Fatal` failure of that replica, so the put still settles. */
const defect = (replica: string, exit: Exit.Exit<unknown, unknown>) =>
  new Failure.SinkFailure({
    failureClass: "Fatal",
    code: "ReplicaDefect",
    status: undefined,
    stage: "object_upload",
    retryAfterMillis: undefined,
    message: `${replica} failed unexpectedly: ${String(exit)}`
  })

/** Applies one replica's outcome to the put (and settles it if that was the last replica). */
const outcome = (run: Run, replica: string, exit: Exit.Exit<Sink.PutReceipt, Failure.SinkFailure>) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    let warning: Warning
    if (Exit.isSuccess(exit)) {
      warning = succeeded(run, replica, exit.value, now)
    } else {
      const error = Exit.findErrorOption(exit)
      warning = failed(run, replica, error._tag === "Some" ? error.value : defect(replica, exit), now)
    }
    settleIfIdle(run)
    return warning === undefined ? Effect.void : Effect.logWarning(warning)
  })

const behindFailure = (replica: string, n: number) =>
  new Failure.SinkFailure({
    failureClass: "Transient",
    code: "Behind",
    status: undefined,
    stage: "object_upload",
    retryAfterMillis: undefined,
    message: `${replica} has ${n} replications in flight`
  })

/** Starts `replica`'s write in the background, or skips it (deficit `Behind`) when it lags too far. */
const start = (run: Run, replica: Replica.Replica): Effect.Effect<void> =>
  Effect.suspend(() => {
    const n = run.ctx.behind.of(replica.name)
    if (n >= run.ctx.maxBehind) return outcome(run, replica.name, Exit.fail(behindFailure(replica.name, n)))
    run.entry.running.add(replica.name)
    return Effect.asVoid(run.ctx.background.fork(
      Replica.write(replica, run.batch, run.ctx.lagTimeout).pipe(
        Effect.exit,
        Effect.flatMap((exit) => outcome(run, replica.name, exit)),
        // Interrupted (scope closed): no longer running, and not in storage for sure.
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            finished(run, replica.name)
            settleIfIdle(run)
          })
        )
      )
    ))
  })

/**
 * Writes `batch` to every replica; returns when a quorum verified it, fails
 * when the quorum is lost. The put's entry stays in `ctx.puts` until it is
 * verified (see `Replicated.make`'s `verify`).
 */
export const write = (ctx: Context, batch: Batch.SealedBatch): Effect.Effect<Sink.PutReceipt, Failure.SinkFailure> =>
  Effect.suspend(() => {
    const run: Run = {
      ctx,
      batch,
      entry: Ledger.entry(batch.key),
      done: Deferred.makeUnsafe<Sink.PutReceipt, Failure.SinkFailure>(),
      errors: [],
      launched: false
    }
    ctx.puts.start(run.entry)
    return Effect.forEach(ctx.replicas, (replica) => start(run, replica), { discard: true }).pipe(
      Effect.andThen(Effect.sync(() => {
        run.launched = true
        settleIfIdle(run)
      })),
      Effect.andThen(Deferred.await(run.done))
    )
  })
