/**
 * Knobs: the values policies move, and the combiners that decide when several
 * policies propose to the same knob.
 *
 * **Combiners** (each documented where it is defined):
 *
 * - `concurrency`: the **minimum** of the proposals (the most conservative wins),
 *   never below 1 so uploads always make progress.
 * - `batchTarget`: field-wise **minimum** of `records`, `bytes` and `maxAgeMillis`
 *   (the smallest batch anyone asked for; a memory policy can always shrink it).
 *   The configured `maxAgeMillis` is also a bound: no policy can make records
 *   wait longer than the deployment allows.
 * - `readGate`: `paused` if **any** policy asks for it (one "we are behind" is
 *   enough to stop reading).
 * - `rate`: the **minimum** of the configured rate and the non-null
 *   proposals. `null` means "no limit from me": a `null` proposal never lifts
 *   the configured rate, and no proposal can exceed it (a configured 10/s stays
 *   at most 10/s whatever policies propose); unlimited only when neither the
 *   configuration nor any policy sets a rate.
 *
 * A knob nobody proposes to keeps the pipeline's configured base value.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Stream, SubscriptionRef } from "effect"
import type { BatchTarget } from "./Batch.ts"

/**
 * The read gate: `open` (reading) or `paused`.
 *
 * @since 0.1.0
 */
export type ReadGate = "open" | "paused"

/**
 * The values of every knob.
 *
 * @since 0.1.0
 */
export interface KnobValues {
  /** Maximum batches uploading at once. */
  readonly concurrency: number
  /** When an open batch is sealed: records, bytes, max age. */
  readonly batchTarget: BatchTarget
  /** Whether the pipeline reads from the source. */
  readonly readGate: ReadGate
  /** Maximum object uploads started per second; `null` for unlimited. */
  readonly rate: number | null
}

/**
 * The names of the knobs.
 *
 * @since 0.1.0
 */
export type KnobName = keyof KnobValues

/**
 * A policy's proposal: any subset of the knobs.
 *
 * @since 0.1.0
 */
export interface Proposal {
  /** Uploads at once; combined by minimum (never below 1). */
  readonly concurrency?: number
  /** Fields left out are not proposed to (the others' or the base value applies). */
  readonly batchTarget?: Partial<BatchTarget>
  /** `paused` pauses reading; combined: paused if any policy pauses. */
  readonly readGate?: ReadGate
  /** Uploads started per second (`null`: no limit from this policy); combined by minimum with the configured rate. */
  readonly rate?: number | null
}

/**
 * Combines the proposals of every policy over the base values.
 *
 * @since 0.1.0
 */
export const combine = (base: KnobValues, proposals: Iterable<Proposal>): KnobValues => {
  let concurrency: number | undefined
  let records: number | undefined
  let bytes: number | undefined
  let maxAgeMillis: number | undefined
  let paused = false
  let anyGate = false
  // The configured rate is a cap: proposals can only lower it.
  let rate: number | undefined = base.rate ?? undefined
  for (const p of proposals) {
    if (p.concurrency !== undefined) concurrency = concurrency === undefined ? p.concurrency : Math.min(concurrency, p.concurrency)
    if (p.batchTarget !== undefined) {
      const t = p.batchTarget
      if (t.records !== undefined) records = records === undefined ? t.records : Math.min(records, t.records)
      if (t.bytes !== undefined) bytes = bytes === undefined ? t.bytes : Math.min(bytes, t.bytes)
      if (t.maxAgeMillis !== undefined) {
        maxAgeMillis = maxAgeMillis === undefined ? t.maxAgeMillis : Math.min(maxAgeMillis, t.maxAgeMillis)
      }
    }
    if (p.readGate !== undefined) {
      anyGate = true
      if (p.readGate === "paused") paused = true
    }
    if (p.rate !== undefined && p.rate !== null) rate = rate === undefined ? p.rate : Math.min(rate, p.rate)
  }
  return {
    concurrency: Math.max(1, Math.floor(concurrency ?? base.concurrency)),
    batchTarget: {
      records: Math.max(1, Math.floor(records ?? base.batchTarget.records)),
      bytes: Math.max(1, Math.floor(bytes ?? base.batchTarget.bytes)),
      maxAgeMillis: Math.max(1, Math.min(maxAgeMillis ?? Infinity, base.batchTarget.maxAgeMillis))
    },
    readGate: anyGate ? (paused ? "paused" : "open") : base.readGate,
    rate: rate ?? null
  }
}

/**
 * The knobs service.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Knob } from "@sluice/core"
 *
 * const halve = Effect.gen(function*() {
 *   const knobs = yield* Knob.Knobs
 *   const now = knobs.current()
 *   yield* knobs.propose("my-policy", { concurrency: Math.max(1, now.concurrency / 2) })
 * })
 * ```
 *
 * @since 0.1.0
 */
export class Knobs extends Context.Service<Knobs, {
  /** Records `policy`'s latest proposal and recomputes the combined values. */
  readonly propose: (policy: string, proposal: Proposal) => Effect.Effect<void>
  /** The combined values now (synchronous read). */
  readonly current: () => KnobValues
  /** The latest proposal of each policy. */
  readonly proposals: () => ReadonlyMap<string, Proposal>
  /** Emits the current values, then every change. */
  readonly changes: Stream.Stream<KnobValues>
  /** The base values (used for knobs nobody proposes to). */
  readonly base: KnobValues
}>()("@sluice/core/Knobs") {}

/**
 * Builds the knobs with `base` values.
 *
 * @since 0.1.0
 */
export const make = (base: KnobValues): Effect.Effect<Knobs["Service"]> =>
  Effect.gen(function*() {
    const ref = yield* SubscriptionRef.make(base)
    const latest = new Map<string, Proposal>()
    let current = base
    return Knobs.of({
      base,
      propose: (policy, proposal) =>
        Effect.suspend(() => {
          const previous = latest.get(policy)
          latest.set(policy, {
            ...previous,
            ...proposal,
            ...(proposal.batchTarget !== undefined ? { batchTarget: { ...previous?.batchTarget, ...proposal.batchTarget } } : {})
          })
          const next = combine(base, latest.values())
          if (sameValues(next, current)) return Effect.void
          current = next
          return SubscriptionRef.set(ref, next)
        }),
      current: () => current,
      proposals: () => latest,
      changes: SubscriptionRef.changes(ref)
    })
  })

/**
 * The {@link Knobs} service as a layer, with `base` values (see {@link make}).
 * `Pipeline.start` builds its own from its config; this is for running
 * policies without a pipeline (tests, replays).
 *
 * @since 0.1.0
 */
export const layer = (base: KnobValues): Layer.Layer<Knobs> => Layer.effect(Knobs, make(base))

const sameValues = (a: KnobValues, b: KnobValues): boolean =>
  a.concurrency === b.concurrency && a.readGate === b.readGate && a.rate === b.rate &&
  a.batchTarget.records === b.batchTarget.records && a.batchTarget.bytes === b.batchTarget.bytes &&
  a.batchTarget.maxAgeMillis === b.batchTarget.maxAgeMillis
