/**
 * ARC: Vector's Adaptive Request Concurrency, as a third-party Sluice policy on
 * upload concurrency, written only against the public API of `@sluice/core`.
 *
 * Time is cut into **windows** of about one round trip (`max(minWindow, the
 * last window's mean latency)`). At the end of each window the controller
 * compares the window's mean latency (`current`) with a **long-run mean** of
 * past windows (an EWMA, weight `smoothing`) and its deviation (an EWMA of
 * `|current − mean|`):
 *
 * - **backoff** — a `Throttled` failure in the window, or latency rising:
 *   `current > mean · (1 + tolerance) + deviations · deviation`. The limit is
 *   multiplied by `decrease` (at least −1, never below `floor`). Once per window.
 * - **steady** — otherwise. The long-run mean learns `current`, and when
 *   latency is not rising beyond one deviation (`current ≤ mean + deviation`)
 *   **and** the limit was used
 *   (some request started with `inflightAtStart ≥ limit`) the limit grows by 1,
 *   up to `ceiling`. An idle limit never grows.
 *
 * **The long-run mean learns only from windows that did not back off**, so load
 * cannot drag it upward: the latency of a congested store is never taken for
 * normal. The price is the trap this invites — a store that becomes slower *for
 * good* (a failover to a farther region) reads as congested forever and holds
 * the limit at its floor. The **forced probe** gets out of it (Envoy's
 * min-latency probe, BBR's PROBE_RTT): after `probeAfterWindows` windows in a
 * row at the floor, the limit is pinned at the floor until `probeSamples`
 * samples of requests started after the pin have arrived; their mean becomes
 * the long-run mean, and the limit is restored to the last good one (the
 * highest limit of a steady window since the previous probe, which each probe
 * lowers by `decrease` so that a restore the store cannot take is not repeated
 * at full height).
 *
 * Modes (a union, see {@link ArcMode}): `steady`, `backoff`, `probing`.
 *
 * Sources: Vector `src/sinks/util/adaptive_concurrency/controller.rs` (windows,
 * EWMA + deviation threshold, +1 / ×0.9); Envoy's adaptive concurrency filter
 * and Linux BBR (the pinned probe).
 *
 * @since 0.1.0
 */
import { Failure, Field, Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Effect, Schema } from "effect"
import type { Layer } from "effect"

/**
 * ARC's config. Every field has a default and a valid range:
 *
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `initial` | 8 | floor – ceiling | starting limit |
 * | `floor` | 1 | ≥ 1 | never below (uploads still make progress) |
 * | `ceiling` | 256 | ≥ floor | never above |
 * | `decrease` | 0.9 | 0.1 – 0.99 | multiplicative decrease per backoff window |
 * | `smoothing` | 0.4 | 0.01 – 1 | EWMA weight of a window in the long-run mean and deviation (Vector's `ewma_alpha`) |
 * | `deviations` | 2.5 | 0 – 10 | k in `mean + k · deviation` (Vector's `rtt_deviation_scale`) |
 * | `tolerance` | 0.05 | 0 – 10 | latency allowed above the mean before it counts as rising, as a fraction |
 * | `minWindow` | 100 ms | > 0 | shortest window |
 * | `referenceBytes` | 256 KiB | ≥ 0 | size normalisation: latency is read as `latency / (1 + bytes / referenceBytes)` so that bigger objects do not read as congestion; 0 = raw latency |
 * | `stage` | `object_upload` | a `Failure.Stage` | which samples measure latency (throttles of every stage back off) |
 * | `probe` | true | | the forced probe; `false` disables it (what the ablation runs) |
 * | `probeAfterWindows` | 8 | 1 – 1000 | windows in a row at the floor before the forced probe |
 * | `probeSamples` | 4 | 1 – 1000 | samples measured while pinned |
 * | `probeTimeout` | 30 s | > 0 | a probe that gets no sample this long ends without re-learning |
 *
 * **Example**
 *
 * ```ts
 * import { Config } from "@sluice/core"
 * import { Arc } from "sluice-policy-example"
 *
 * const result = Config.decodeResult("arc", Arc.ArcConfig, { ceiling: 64, minWindow: "250 millis" })
 * // Success: { initial: 8, floor: 1, ceiling: 64, decrease: 0.9, …, minWindow: 250, … }
 * ```
 *
 * @since 0.1.0
 */
export const ArcConfig = Schema.Struct({
  initial: Field.int(8, 1),
  floor: Field.int(1, 1),
  ceiling: Field.int(256, 1),
  decrease: Field.number(0.9, { minimum: 0.1, maximum: 0.99 }),
  smoothing: Field.number(0.4, { minimum: 0.01, maximum: 1 }),
  deviations: Field.number(2.5, { minimum: 0, maximum: 10 }),
  tolerance: Field.number(0.05, { minimum: 0, maximum: 10 }),
  minWindow: Field.positiveMillis("100 millis"),
  referenceBytes: Field.bytes("256 KiB"),
  stage: Failure.Stage.pipe(Schema.withDecodingDefaultKey(Effect.succeed<Failure.Stage>("object_upload"))),
  probe: Field.boolean(true),
  probeAfterWindows: Field.int(8, 1, 1000),
  probeSamples: Field.int(4, 1, 1000),
  probeTimeout: Field.positiveMillis("30 seconds")
}).check(
  Field.ordered("floor", "ceiling", (c) => [c.floor, c.ceiling]),
  Field.ordered("floor", "initial", (c) => [c.floor, c.initial]),
  Field.ordered("initial", "ceiling", (c) => [c.initial, c.ceiling])
)

/**
 * ARC's decoded config (what the core reads).
 *
 * **Example**
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Arc } from "sluice-policy-example"
 *
 * const config: Arc.ArcConfig = Schema.decodeUnknownSync(Arc.ArcConfig)({ floor: 2 })
 * config.probeAfterWindows // 8
 * ```
 *
 * @since 0.1.0
 */
export type ArcConfig = typeof ArcConfig.Type

/**
 * ARC's config as callers write it (durations and sizes as text or numbers,
 * every field optional).
 *
 * **Example**
 *
 * ```ts
 * import type { Arc } from "sluice-policy-example"
 *
 * const input: Arc.ArcInput = { ceiling: 64, probeTimeout: "10 seconds" }
 * ```
 *
 * @since 0.1.0
 */
export type ArcInput = Config.Input<typeof ArcConfig>

/**
 * ARC's modes, BBR-style: a named phase, not booleans.
 *
 * - `steady`: the last window was neither throttled nor rising; the limit
 *   grows by 1 per window while used and latency is within one deviation
 *   of the mean.
 * - `backoff`: the last window was throttled or rising: the limit was cut.
 * - `probing`: pinned at the floor by the forced probe, re-learning the mean.
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * const mode: Arc.ArcMode = Arc.policy.mode?.(Arc.init()) === "steady" ? "steady" : "backoff"
 * ```
 *
 * @since 0.1.0
 */
export type ArcMode = "steady" | "backoff" | "probing"

/**
 * The long-run latency: an EWMA of window means and of their deviation
 * (normalised milliseconds). `windows` is 0 until the first window is learned.
 *
 * **Example**
 *
 * ```ts
 * import type { Arc } from "sluice-policy-example"
 *
 * const unknown: Arc.LongRun = { mean: 0, deviation: 0, windows: 0 }
 * ```
 *
 * @since 0.1.0
 */
export interface LongRun {
  readonly mean: number
  readonly deviation: number
  readonly windows: number
}

/**
 * The window being measured.
 *
 * **Example**
 *
 * ```ts
 * import type { Arc } from "sluice-policy-example"
 *
 * const empty: Arc.ArcWindow = { start: 0, millis: 100, count: 0, sum: 0, rawSum: 0, used: false, throttled: false }
 * ```
 *
 * @since 0.1.0
 */
export interface ArcWindow {
  readonly start: number
  /** Its length: `max(minWindow, the previous window's mean raw latency)`. */
  readonly millis: number
  /** Samples of `stage` in it. */
  readonly count: number
  /** Their normalised latencies, summed. */
  readonly sum: number
  /** Their raw latencies, summed (the next window's length). */
  readonly rawSum: number
  /** Some request started with the limit full (`inflightAtStart ≥ limit`). */
  readonly used: boolean
  /** Some request was throttled. */
  readonly throttled: boolean
}

/**
 * The forced probe in progress.
 *
 * **Example**
 *
 * ```ts
 * import type { Arc } from "sluice-policy-example"
 *
 * const justPinned: Arc.ArcProbe = { epoch: 60_000, values: [] }
 * ```
 *
 * @since 0.1.0
 */
export interface ArcProbe {
  /** When the pin began: samples of requests started before it are discarded. */
  readonly epoch: number
  /** Normalised latencies measured while pinned. */
  readonly values: ReadonlyArray<number>
}

/**
 * ARC's state: plain data, no Effect.
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * const state: Arc.ArcState = Arc.init({ initial: 16 })
 * state.limit // 16
 * ```
 *
 * @since 0.1.0
 */
export interface ArcState {
  readonly config: ArcConfig
  readonly mode: ArcMode
  /** The concurrency limit (an integer). */
  readonly limit: number
  /** The highest limit of a steady window since the last probe: what the probe restores. */
  readonly good: number
  readonly longRun: LongRun
  readonly window: ArcWindow
  /** Windows in a row that ended at the floor. */
  readonly windowsAtFloor: number
  /** The probe in progress (`mode` is `probing`), else `undefined`. */
  readonly probe: ArcProbe | undefined
  /** Forced probes run so far. */
  readonly probes: number
  /** The value last proposed. */
  readonly proposed: number
}

const emptyWindow = (start: number, millis: number): ArcWindow => ({
  start,
  millis,
  count: 0,
  sum: 0,
  rawSum: 0,
  used: false,
  throttled: false
})

/**
 * A sample's latency, normalised for its size (see `referenceBytes`).
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * Arc.normalised(100, 1_048_576, 1_048_576) // 50: a 1 MiB object at a 1 MiB reference counts half
 * Arc.normalised(100, 1_048_576, 0) // 100: no normalisation
 * ```
 *
 * @since 0.1.0
 */
export const normalised = (latencyMillis: number, bytes: number, referenceBytes: number): number =>
  referenceBytes > 0 ? latencyMillis / (1 + Math.max(0, bytes) / referenceBytes) : latencyMillis

/**
 * The long-run mean after one more window (EWMA of the mean, and of the
 * absolute deviation from the mean before it). The first window sets it.
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * const first = Arc.learn({ mean: 0, deviation: 0, windows: 0 }, 100, 0.4) // { mean: 100, deviation: 0, windows: 1 }
 * Arc.learn(first, 150, 0.4) // { mean: 120, deviation: 20, windows: 2 }
 * ```
 *
 * @since 0.1.0
 */
export const learn = (longRun: LongRun, current: number, smoothing: number): LongRun =>
  longRun.windows === 0
    ? { mean: current, deviation: 0, windows: 1 }
    : {
      mean: longRun.mean + smoothing * (current - longRun.mean),
      deviation: longRun.deviation + smoothing * (Math.abs(current - longRun.mean) - longRun.deviation),
      windows: longRun.windows + 1
    }

/**
 * Whether a window's mean latency is rising: above
 * `mean · (1 + tolerance) + deviations · deviation`. Never before the first
 * window is learned.
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * const config = Arc.init().config
 * Arc.rising({ mean: 100, deviation: 4, windows: 5 }, 111, config) // false: threshold 115
 * Arc.rising({ mean: 100, deviation: 4, windows: 5 }, 116, config) // true
 * ```
 *
 * @since 0.1.0
 */
export const rising = (longRun: LongRun, current: number, config: ArcConfig): boolean =>
  longRun.windows > 0 && current > longRun.mean * (1 + config.tolerance) + config.deviations * longRun.deviation

/** One multiplicative decrease: ×`decrease`, at least −1, never below the floor. */
const decreased = (c: ArcConfig, limit: number): number =>
  Math.max(c.floor, Math.min(limit - 1, Math.floor(limit * c.decrease)))

/** The decision at the end of a window (see the module doc). */
const closeWindow = (s: ArcState, now: number): ArcState => {
  const c = s.config
  const w = s.window
  const current = w.count > 0 ? w.sum / w.count : undefined
  const millis = w.count > 0 ? Math.max(c.minWindow, w.rawSum / w.count) : w.millis
  const window = emptyWindow(now, millis)
  const backoff = w.throttled || (current !== undefined && rising(s.longRun, current, c))
  const next: ArcState = backoff
    ? { ...s, mode: "backoff", limit: decreased(c, s.limit) }
    : current === undefined
    ? s // no sample: nothing learned, nothing decided
    : {
      ...s,
      mode: "steady",
      good: Math.max(s.good, s.limit),
      longRun: learn(s.longRun, current, c.smoothing),
      limit: w.used && (s.longRun.windows === 0 || current <= s.longRun.mean + s.longRun.deviation) ? Math.min(c.ceiling, s.limit + 1) : s.limit
    }
  const windowsAtFloor = next.limit <= c.floor ? s.windowsAtFloor + 1 : 0
  if (c.probe && windowsAtFloor >= c.probeAfterWindows) {
    return { ...next, window, windowsAtFloor: 0, mode: "probing", limit: c.floor, probe: { epoch: now, values: [] } }
  }
  return { ...next, window, windowsAtFloor }
}

/** Ends the probe: the mean is re-learned from `values` (if any) and the last good limit restored. */
const endProbe = (s: ArcState, now: number, values: ReadonlyArray<number>): ArcState => {
  const c = s.config
  const mean = values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length
  const longRun: LongRun = mean === undefined
    ? s.longRun
    : { mean, deviation: values.reduce((a, v) => a + Math.abs(v - mean), 0) / values.length, windows: 1 }
  return {
    ...s,
    mode: "steady",
    limit: Math.min(c.ceiling, Math.max(c.floor, s.good)),
    good: Math.max(c.floor, Math.floor(s.good * c.decrease)),
    longRun,
    window: emptyWindow(now, s.window.millis),
    windowsAtFloor: 0,
    probe: undefined,
    probes: s.probes + 1
  }
}

/** One signal while pinned. A throttle at the floor aborts the probe: the store is sick even there. */
const stepProbing = (s: ArcState, probe: ArcProbe, signal: SignalBus.Signal, now: number): ArcState => {
  const c = s.config
  if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled" && signal.startedAt >= probe.epoch) {
    return { ...s, mode: "backoff", probe: undefined, window: emptyWindow(now, s.window.millis), windowsAtFloor: 0 }
  }
  if (signal._tag === "UploadSample" && signal.stage === c.stage && signal.startedAt >= probe.epoch) {
    const values = [...probe.values, normalised(signal.latencyMillis, signal.bytes, c.referenceBytes)]
    return values.length >= c.probeSamples ? endProbe(s, now, values) : { ...s, probe: { ...probe, values } }
  }
  return now - probe.epoch >= c.probeTimeout ? endProbe(s, now, probe.values) : s
}

/** Adds a signal to the current window. */
const measure = (s: ArcState, signal: SignalBus.Signal): ArcState => {
  const c = s.config
  const w = s.window
  if (signal._tag === "UploadSample" && signal.stage === c.stage) {
    return {
      ...s,
      window: {
        ...w,
        count: w.count + 1,
        sum: w.sum + normalised(signal.latencyMillis, signal.bytes, c.referenceBytes),
        rawSum: w.rawSum + signal.latencyMillis,
        used: w.used || signal.inflightAtStart >= s.limit
      }
    }
  }
  if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") {
    return { ...s, window: { ...w, throttled: true } }
  }
  return s
}

/**
 * One step of the core: pure, deterministic, no Effect.
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * const s0 = Arc.init({ initial: 10 })
 * const throttled = Arc.step(s0, {
 *   _tag: "Failure", at: 50, startedAt: 40, latencyMillis: 10, inflightAtStart: 10, limitAtStart: 10, attempt: 1,
 *   failure: { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined }
 * }, 50)
 * Arc.step(throttled.state, { _tag: "Tick", at: 200, knobs: { concurrency: 10, batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 }, readGate: "open", rate: null } }, 200).proposal
 * // { concurrency: 9 }: the window ended throttled
 * ```
 *
 * @since 0.1.0
 */
export const step = (s: ArcState, signal: SignalBus.Signal, now: number): Policy.Step<ArcState> => {
  const next = s.probe !== undefined
    ? stepProbing(s, s.probe, signal, now)
    : measure(now - s.window.start >= s.window.millis ? closeWindow(s, now) : s, signal)
  const value = next.mode === "probing" ? next.config.floor : next.limit
  return value === s.proposed
    ? { state: next }
    : { state: { ...next, proposed: value }, proposal: { concurrency: value } }
}

/**
 * ARC's initial state for a config (decoded with {@link ArcConfig}; defaults
 * for every field left out).
 *
 * **Example**
 *
 * ```ts
 * import { Arc } from "sluice-policy-example"
 *
 * Arc.init().limit // 8
 * Arc.init({ initial: 4, floor: 2 }).config.floor // 2
 * ```
 *
 * @since 0.1.0
 */
export const init = (input: ArcInput = {}): ArcState => initState(Schema.decodeUnknownSync(ArcConfig)(input))

const initState = (config: ArcConfig): ArcState => ({
  config,
  mode: "steady",
  limit: config.initial,
  good: config.initial,
  longRun: { mean: 0, deviation: 0, windows: 0 },
  window: emptyWindow(0, config.minWindow),
  windowsAtFloor: 0,
  probe: undefined,
  probes: 0,
  proposed: config.initial
})

/**
 * The ARC core: what the testkit's conformance suite drives and what
 * `Policy.layer` runs.
 *
 * **When to use**
 *
 * Upload concurrency against a store whose latency rises past some
 * concurrency (a knee) and that throttles when pushed: the controller finds
 * the knee from latency alone and backs off on throttles.
 *
 * **Details**
 *
 * Bounds: `concurrency` in `[floor, ceiling]`. Probe: a `PinnedProbe` at the
 * floor for `probeSamples` samples, forced after `probeAfterWindows` windows at
 * the floor; `withoutProbe` sets `probe: false` (then `NoProbe`).
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import { Schema } from "effect"
 * import { Arc } from "sluice-policy-example"
 *
 * const config = Schema.decodeUnknownSync(Arc.ArcConfig)({ ceiling: 64 })
 * const { proposals } = Policy.replay(Arc.policy, config, []) // [[0, { concurrency: 8 }]]
 * const ablated = Policy.ablate(Arc.policy) // the same core, its probe off
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<ArcConfig, ArcState, ArcInput> = {
  name: "arc",
  mode: (s) => s.mode,
  config: ArcConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: (c) =>
    c.probe
      ? { _tag: "PinnedProbe", level: c.floor, samples: c.probeSamples, jitter: 0, forcedAfterWindowsAtFloor: c.probeAfterWindows }
      : { _tag: "NoProbe", reason: "probe: false" },
  withoutProbe: (c) => ({ ...c, probe: false }),
  init: initState,
  initial: (s) => ({ concurrency: s.proposed }),
  step
}

/**
 * ARC as a policies layer (`Policy.layer` of {@link policy}); its config is
 * decoded when the layer is built, and bad config fails it with a
 * `ConfigError` naming the field.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 * import { Arc } from "sluice-policy-example"
 *
 * const stats = Effect.runPromise(Pipeline.run({
 *   source: Memory.source({ name: "orders", partitions: 4, records: 10_000, recordBytes: 150 }),
 *   sink: Memory.sink(),
 *   policies: Layer.mergeAll(Arc.layer({ ceiling: 64 }))
 * }))
 * const ablated = Arc.layer({}, { probe: false }) // its probe disabled
 * ```
 *
 * @since 0.1.0
 */
export const layer: {
  <I>(config: I & Config.OnlyUnknown<I>, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
  (config?: ArcInput, options?: Policy.LayerOptions): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs>
} = (config: unknown = {}, options: Policy.LayerOptions = {}): Layer.Layer<never, Config.ConfigError, SignalBus.SignalBus | Knob.Knobs> =>
  Policy.layer(policy, config, options)
