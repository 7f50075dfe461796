/**
 * Shared pressure: one notion of "we are behind" — bytes held (open + sealed +
 * uploading) against the memory budget — driving the **read gate**.
 *
 * - Above `highWater · budget`: pause reads. The pipeline seals open batches
 *   when the gate pauses, so what was read can be uploaded and freed.
 * - Below `lowWater · budget`: resume (hysteresis, so the gate does not flap).
 * - **Floor**: reads are never paused longer than `maxPauseMillis` while uploads
 *   make progress (an upload completed since the pause began).
 * - **Probe** (re-open): when the floor is reached the gate re-opens (`probing`)
 *   and stays open until the high-water mark is crossed again (from below: a
 *   fill still above it at the re-open does not pause again), which starts a
 *   new pause. In-flight bytes stay bounded regardless: the pipeline's byte
 *   semaphore never lets them exceed the budget.
 *
 * Modes: `open`, `paused`, `probing` (re-opened by the floor).
 *
 * @since 0.1.0
 */
import { Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Schema } from "effect"
import type { Layer } from "effect"
import type { SharedPressureState } from "../internal/shared/State.ts"

/**
 * Shared pressure's config. Defaults and ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `highWater` | 0.8 | 0.05 – 1 | pause above this fraction of the budget |
 * | `lowWater` | 0.5 | 0 – highWater | resume below this fraction |
 * | `maxPauseMillis` | 5 s | ≥ 0 | the floor: longest pause while uploads progress |
 * | `reopen` | true |  | the re-open probe; false disables it (`withoutProbe`, the ablation): a pause then ends only below `lowWater` |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const SharedPressureConfig = Schema.Struct({
  highWater: Field.number(0.8, { minimum: 0.05, maximum: 1 }).pipe(Field.doc("pause above this fraction of the budget")),
  lowWater: Field.number(0.5, { minimum: 0, maximum: 1 }).pipe(Field.doc("resume below this fraction", { range: "0 – highWater" })),
  maxPauseMillis: Field.millis("5 seconds").pipe(Field.doc("the floor: longest pause while uploads progress")),
  reopen: Field.boolean(true).pipe(Field.doc("the re-open probe; false disables it (`withoutProbe`, the ablation): a pause then ends only below `lowWater`"))
}).check(Field.ordered("lowWater", "highWater", (c) => [c.lowWater, c.highWater]))

/**
 * `SharedPressureConfig` as a type: what the `SharedPressureConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type SharedPressureConfig = typeof SharedPressureConfig.Type

/**
 * The gate's modes.
 *
 * @since 0.1.0
 */
export type PressureMode = "open" | "paused" | "probing"

const gateOf = (mode: PressureMode): Knob.ReadGate => (mode === "paused" ? "paused" : "open")

const onInflight = (s: SharedPressureState, signal: SignalBus.InflightSignal, now: number): SharedPressureState => {
  const c = s.config
  const budget = signal.budgetBytes
  const fill = budget > 0 ? signal.bytes / budget : 0
  const next = { ...s, fill }
  const pause = { ...next, mode: "paused" as const, pausedAt: now, pauses: s.pauses + 1 }
  switch (s.mode) {
    case "open":
      return fill >= c.highWater && !fed(s, signal) ? pause : next
    case "probing":
      // Re-opened by the floor: open until the high-water mark is crossed
      // again, from below. A fill still above it at the re-open is what the
      // floor overrode; pausing on it again at once re-opened for no read at
      // all (a 10 s pause where 5 s was promised). Once the fill is down to
      // the low-water mark the pressure is over: back to open (the next
      // crossing comes from below either way), so the probe ends — it was
      // reported as probing for the rest of a run.
      if (fill <= c.lowWater) return { ...next, mode: "open" }
      return fill >= c.highWater && s.fill < c.highWater && !fed(s, signal) ? pause : next
    case "paused":
      return fill <= c.lowWater ? { ...next, mode: "open" } : next
  }
}

/**
 * A pause that would only cost: open batches are held (the pipeline seals them
 * when the gate pauses) and what is sealed or uploading already feeds the
 * uploads the concurrency limit allows — the store is behind, not the reading.
 * Sealing early then only queues small objects behind the others (per-request
 * overhead at the knee: `wide-knee` 0.95 → 0.98 without those pauses), and the
 * byte semaphore bounds memory anyway. With nothing open a pause seals nothing
 * and only stops reading: it still happens. Unknown feed (no `object_upload`
 * sample yet): pause.
 *
 * "Feeds the uploads" is also met once what is sealed or uploading holds the
 * low-water share of the budget: a pause could then only end when uploads
 * have drained it to below the low-water mark anyway, and meanwhile it takes
 * memory from uploads that memory, not the store, is bounding (a concurrency
 * limit far above what the budget holds: a store that got slower). In
 * `wide-slowdown-10x` those pauses drained the uploads in flight from ~60 to
 * ~35 every few seconds (goodput in the slowdown 0.96 → 0.89).
 */
const fed = (s: SharedPressureState, signal: SignalBus.InflightSignal): boolean =>
  signal.openBytes > 0 && s.feedBytes > 0 &&
  signal.bytes - signal.openBytes >= Math.min(s.feedBytes, s.config.lowWater * signal.budgetBytes)

const floor = (s: SharedPressureState, now: number): SharedPressureState =>
  s.config.reopen && s.mode === "paused" && now - s.pausedAt >= s.config.maxPauseMillis && s.lastProgressAt >= s.pausedAt
    ? { ...s, mode: "probing", reopens: s.reopens + 1 }
    : s

/**
 * The shared pressure core.
 *
 * **When to use**
 *
 * Always: it keeps reading from outrunning uploading, and turns a slow store
 * into early seals and a paused source rather than unbounded buffering.
 *
 * **Details**
 *
 * Knob `readGate`. Bounds: floor `maxPauseMillis` (see `Policy.KnobBounds`),
 * ceiling `Infinity`. Probe: `ReopenProbe` after `maxPauseMillis`.
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { SharedPressure } from "@sluice/policies"
 * import { Schema } from "effect"
 *
 * const config = Schema.decodeUnknownSync(SharedPressure.SharedPressureConfig)({ highWater: 0.9 })
 * const inflight = { _tag: "Inflight", at: 100, batches: 4, bytes: 95, openBytes: 10, budgetBytes: 100 } as const
 * const { proposals } = Policy.replay(SharedPressure.policy, config, [[inflight, 100]])
 * // proposals: [[0, { readGate: "open" }], [100, { readGate: "paused" }]]
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<SharedPressureConfig, SharedPressureState, Config.Input<typeof SharedPressureConfig>> = {
  name: "shared",
  mode: (s) => s.mode,
  config: SharedPressureConfig,
  // Without the re-open probe no pause is bounded.
  bounds: (c) => ({ readGate: { floor: c.reopen ? c.maxPauseMillis : Infinity, ceiling: Infinity } }),
  probe: (c) =>
    c.reopen
      ? { _tag: "ReopenProbe", afterMillis: c.maxPauseMillis }
      : { _tag: "NoProbe", reason: "re-open probe disabled by config (reopen = false)" },
  withoutProbe: (c) => ({ ...c, reopen: false }),
  init: (config) => ({ config, mode: "open", pausedAt: -Infinity, lastProgressAt: -Infinity, fill: 0, pauses: 0, reopens: 0, feedBytes: 0 }),
  initial: () => ({ readGate: "open" }),
  step: (s, signal, now) => {
    let next = s
    if (signal._tag === "Inflight") next = onInflight(s, signal, now)
    else if (signal._tag === "UploadSample") {
      next = signal.stage === "object_upload"
        ? { ...s, lastProgressAt: now, feedBytes: signal.limitAtStart * signal.bytes }
        : { ...s, lastProgressAt: now }
    }
    next = floor(next, now)
    return gateOf(next.mode) === gateOf(s.mode) ? { state: next } : { state: next, proposal: { readGate: gateOf(next.mode) } }
  }
}

/**
 * Shared pressure as a layer.
 *
 * **Details**
 *
 * `config` is typed by {@link SharedPressureConfig}'s encoded form
 * (`Config.Input<typeof SharedPressureConfig>`), so a misspelled key fails `tsc`. Data
 * whose static type is `unknown` (JSON read from a file) is accepted too, and
 * checked when the layer is built: bad config fails it with a `ConfigError`
 * naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { SharedPressure } from "@sluice/policies"
 *
 * const shared = SharedPressure.layer({ highWater: 0.8, lowWater: 0.5, maxPauseMillis: "5 seconds" })
 * const ablated = SharedPressure.layer({}, { probe: false }) // its probe disabled (the ablation)
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: Config.Input<typeof SharedPressureConfig>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> => Policy.layer(policy, config, options)
