/**
 * soak — request latencies per stage and policy modes, read from the
 * pipeline's signal bus (public API): every `UploadSample` lands in its
 * stage's window, which the sampler empties once a second to get that
 * second's p95; `PolicyMode` signals say which policies are probing now.
 * Commits are not on the bus: the soak times them itself, around the
 * source's `commit` (`record("commit", ms)`).
 */
import type { Pipeline, SignalBus } from "@sluice/core"
import { Effect, Stream } from "effect"
import type { Scope } from "effect"

/** The stages a sink request belongs to. */
export const stages = ["object_upload", "manifest_upload", "verify", "commit"] as const
export type Stage = typeof stages[number]

/** Latency windows and policy modes, fed by the bus. */
export interface Latencies {
  /** The p95 (ms) of each stage's requests since the last call (`null`: none), and the number of requests; empties the windows. */
  readonly take: () => { readonly p95: Readonly<Record<Stage, number | null>>; readonly requests: number }
  /** Policies whose mode is `probing` now. */
  readonly probing: () => number
  /** Adds a latency measured outside the bus (the commits). */
  readonly record: (stage: Stage, millis: number) => void
}

/** The `q` quantile (nearest rank) of `values`, sorted in place; `null` when empty. */
export const quantile = (values: Array<number>, q: number): number | null => {
  if (values.length === 0) return null
  values.sort((a, b) => a - b)
  return values[Math.min(values.length - 1, Math.max(0, Math.ceil(q * values.length) - 1))] ?? null
}

/**
 * Subscribes to `handle.bus` in the current scope (a fiber reads it until the
 * scope closes).
 *
 * **Example**
 *
 * ```ts
 * const latencies = yield* Latencies.follow(handle)
 * latencies.take().p95.object_upload // ms, or null
 * ```
 */
export const follow = (handle: Pipeline.PipelineHandle): Effect.Effect<Latencies, never, Scope.Scope> =>
  Effect.gen(function*() {
    const windows: Record<Stage, Array<number>> = { object_upload: [], manifest_upload: [], verify: [], commit: [] }
    const modes = new Map<string, string>()
    const subscription = yield* handle.bus.subscribe
    const on = (signal: SignalBus.Signal) => {
      if (signal._tag === "UploadSample") windows[signal.stage].push(signal.latencyMillis)
      else if (signal._tag === "PolicyMode") modes.set(signal.policy, signal.mode)
    }
    yield* Stream.fromSubscription(subscription).pipe(
      Stream.runForEachArray((signals) => Effect.sync(() => signals.forEach(on))),
      Effect.forkScoped
    )
    return {
      take: () => {
        let requests = 0
        const p95 = {} as Record<Stage, number | null>
        for (const stage of stages) {
          requests += windows[stage].length
          p95[stage] = quantile(windows[stage], 0.95)
          windows[stage] = []
        }
        return { p95, requests }
      },
      probing: () => [...modes.values()].filter((m) => m === "probing").length,
      record: (stage, millis) => void windows[stage].push(millis)
    }
  })
