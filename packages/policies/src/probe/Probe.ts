/**
 * The forced probe: a reusable, pure helper every controller uses to recover from
 * over-correction.
 *
 * Envoy's min-latency probe, with BBR's restore:
 *
 * 1. **Pin** the knob at a probe `level` (separate from the floor, clamped to it)
 *    for `samples` samples, jittered by `± jitter` from a seeded PRNG carried in
 *    the state (deterministic: same seed, same probes).
 * 2. **Discard** every sample of a request that began before the probe epoch
 *    (`startedAt < epoch`): it measured the old, loaded regime.
 * 3. **Restore** the saved value (BBR's PROBE_RTT → restore) and hand the
 *    caller the minimum measured during the probe (a fresh no-load baseline).
 *
 * A probe starts periodically (`intervalMillis`, jittered; `0` disables the
 * periodic probe) and is **forced** after `forcedAfterWindowsAtFloor`
 * consecutive windows (`windowMillis`) spent at the floor — the way out of the
 * shrinking-window trap. A probe that gathers no sample within `timeoutMillis`
 * ends anyway and restores.
 *
 * @since 0.1.0
 */
import type { Policy } from "@sluice/core"
import { Schema } from "effect"
import { Field } from "@sluice/core"
import * as Rng from "../internal/Rng.ts"

/**
 * The probe's config schema with some defaults changed (a controller whose
 * probe should be cheaper or more frequent than the shared defaults).
 *
 * **Example**
 *
 * ```ts
 * import { Probe } from "@sluice/policies"
 *
 * const Cheaper = Probe.configWith({ samples: 4, intervalMillis: 120_000 })
 * ```
 *
 * @since 0.1.0
 */
export function configWith(defaults: { readonly samples?: number; readonly intervalMillis?: number }) {
  return Schema.Struct({
    enabled: Field.boolean(true).pipe(Field.doc("false disables every probe (for tests and comparisons)")),
    level: Field.int(2, 1).pipe(Field.doc("the pinned value (concurrency), clamped to ≥ the floor")),
    samples: Field.int(defaults.samples ?? 8, 1, 1000).pipe(Field.doc("samples gathered while pinned")),
    jitter: Field.number(0.25, { minimum: 0, maximum: 0.9 }).pipe(Field.doc("± fraction applied to `samples` and `intervalMillis`")),
    intervalMillis: Field.millis(defaults.intervalMillis ?? 60_000).pipe(Field.doc("periodic probe; 0 = only forced probes")),
    windowMillis: Field.positiveMillis(1_000).pipe(Field.doc("the window of the at-floor count")),
    forcedAfterWindowsAtFloor: Field.int(3, 1).pipe(Field.doc("windows at the floor that force a probe")),
    timeoutMillis: Field.positiveMillis(10_000).pipe(Field.doc("a probe without samples ends after this")),
    seed: Field.int(1, 0, 0xffffffff).pipe(Field.doc("seed of the jitter PRNG"))
  })
}

/**
 * The probe's config. Defaults and ranges:
 *
 * <!-- config table: generated from the schema by `npm run docs:config` -->
 * | field | default | range | meaning |
 * |---|---|---|---|
 * | `enabled` | true |  | false disables every probe (for tests and comparisons) |
 * | `level` | 2 | ≥ 1 | the pinned value (concurrency), clamped to ≥ the floor |
 * | `samples` | 8 | 1 – 1000 | samples gathered while pinned |
 * | `jitter` | 0.25 | 0 – 0.9 | ± fraction applied to `samples` and `intervalMillis` |
 * | `intervalMillis` | 1 min | ≥ 0 | periodic probe; 0 = only forced probes |
 * | `windowMillis` | 1 s | > 0 | the window of the at-floor count |
 * | `forcedAfterWindowsAtFloor` | 3 | ≥ 1 | windows at the floor that force a probe |
 * | `timeoutMillis` | 10 s | > 0 | a probe without samples ends after this |
 * | `seed` | 1 | 0 – 2³² − 1 | seed of the jitter PRNG |
 * <!-- end config table -->
 *
 * @since 0.1.0
 */
export const ProbeConfig = configWith({})

/**
 * `ProbeConfig` as a type: what the `ProbeConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type ProbeConfig = typeof ProbeConfig.Type

/**
 * The probe config with every default (what `{}` decodes to).
 *
 * @since 0.1.0
 */
export const defaults: ProbeConfig = Schema.decodeUnknownSync(ProbeConfig)({})

/**
 * Why a probe started.
 *
 * @since 0.1.0
 */
export type ProbeReason = "periodic" | "floor"

/**
 * The probe's phase: `idle` (counting windows, waiting for the next periodic
 * probe) or `pinned` (holding the knob at the probe level).
 *
 * @since 0.1.0
 */
export type ProbePhase = "idle" | "pinned"

/**
 * The probe's state (plain data, carried inside a core's state).
 *
 * @since 0.1.0
 */
export interface ProbeState {
  readonly phase: ProbePhase
  readonly reason: ProbeReason
  /** PRNG state for the jitter. */
  readonly rng: number
  /** When the current (or last) probe began; samples that started before it are discarded. */
  readonly epoch: number
  /** The value to restore when the probe ends. */
  readonly saved: number
  /** Samples still to gather while pinned. */
  readonly remaining: number
  /** Minimum value measured during the current probe (`Infinity` before the first). */
  readonly minSeen: number
  readonly nextProbeAt: number
  readonly windowStart: number
  /** Whether every observation of the current window was at the floor. */
  readonly windowAtFloor: boolean
  readonly windowsAtFloor: number
  /** Probes started so far. */
  readonly probes: number
}

const schedule = (config: ProbeConfig, rng: number, now: number): readonly [number, number] => {
  if (config.intervalMillis <= 0) return [Infinity, rng]
  const [f, next] = Rng.jitterFactor(rng, config.jitter)
  return [now + config.intervalMillis * f, next]
}

/**
 * The initial probe state. Its clock starts at the first {@link observe} (so a
 * core works the same on a virtual clock starting at 0 and on wall-clock time).
 *
 * **Example**
 *
 * ```ts
 * import { Probe } from "@sluice/policies"
 *
 * const state = Probe.init(Probe.defaults)
 * ```
 *
 * @since 0.1.0
 */
export const init = (config: ProbeConfig): ProbeState => ({
  phase: "idle",
  reason: "periodic",
  rng: config.seed >>> 0,
  epoch: -Infinity,
  saved: 0,
  remaining: 0,
  minSeen: Infinity,
  nextProbeAt: Infinity,
  windowStart: -Infinity,
  windowAtFloor: true,
  windowsAtFloor: 0,
  probes: 0
})

/**
 * Observes time passing with the knob at (or above) its floor. Returns the new
 * state and, when a probe is due, why.
 *
 * **When to use**
 *
 * Call on every signal (ticks included) while `idle`; start the probe with
 * {@link begin} when `due` is set.
 *
 * @since 0.1.0
 */
export const observe = (
  config: ProbeConfig,
  state: ProbeState,
  now: number,
  atFloor: boolean
): { readonly state: ProbeState; readonly due: ProbeReason | undefined } => {
  if (state.phase !== "idle") return { state, due: undefined }
  if (state.windowStart === -Infinity) {
    const [nextProbeAt, rng] = schedule(config, state.rng, now)
    return { state: { ...state, windowStart: now, windowAtFloor: atFloor, nextProbeAt, rng }, due: undefined }
  }
  let { windowAtFloor, windowStart, windowsAtFloor } = state
  windowAtFloor = windowAtFloor && atFloor
  const window = Math.max(1, config.windowMillis)
  const elapsed = Math.floor((now - windowStart) / window)
  if (elapsed >= 1) {
    // Windows skipped without observations keep the state of the last one.
    windowsAtFloor = windowAtFloor ? windowsAtFloor + elapsed : 0
    windowStart += elapsed * window
    windowAtFloor = atFloor
  }
  const next = { ...state, windowAtFloor, windowStart, windowsAtFloor }
  if (!config.enabled) return { state: next, due: undefined }
  if (windowsAtFloor >= config.forcedAfterWindowsAtFloor) return { state: next, due: "floor" }
  if (now >= state.nextProbeAt) return { state: next, due: "periodic" }
  return { state: next, due: undefined }
}

/**
 * Starts a probe at `now` that will restore `saved`: the state becomes `pinned`
 * for a jittered number of samples.
 *
 * @since 0.1.0
 */
export const begin = (config: ProbeConfig, state: ProbeState, now: number, saved: number, reason: ProbeReason): ProbeState => {
  const [f, rng] = Rng.jitterFactor(state.rng, config.jitter)
  return {
    ...state,
    phase: "pinned",
    reason,
    rng,
    epoch: now,
    saved,
    remaining: Math.max(1, Math.round(config.samples * f)),
    minSeen: Infinity,
    probes: state.probes + 1
  }
}

/**
 * What a sample did to a pinned probe: `stale` (began before the epoch,
 * discarded), `counted`, or `done` (the last sample needed: call {@link end}).
 *
 * @since 0.1.0
 */
export type SampleOutcome = "stale" | "counted" | "done"

/**
 * Feeds one sample (`value` measured by a request that began at `startedAt`) to
 * a pinned probe.
 *
 * @since 0.1.0
 */
export const sample = (
  state: ProbeState,
  startedAt: number,
  value: number
): { readonly state: ProbeState; readonly outcome: SampleOutcome } => {
  if (state.phase !== "pinned" || startedAt < state.epoch) return { state, outcome: "stale" }
  const remaining = state.remaining - 1
  return {
    state: { ...state, remaining, minSeen: Math.min(state.minSeen, value) },
    outcome: remaining <= 0 ? "done" : "counted"
  }
}

/**
 * Whether a pinned probe has run out of time without its samples.
 *
 * @since 0.1.0
 */
export const timedOut = (config: ProbeConfig, state: ProbeState, now: number): boolean =>
  state.phase === "pinned" && now - state.epoch >= config.timeoutMillis

/**
 * Ends the probe at `now`: back to `idle`, the at-floor count reset and the next
 * periodic probe scheduled. The caller restores `state.saved` and may adopt
 * `state.minSeen` as its new baseline.
 *
 * @since 0.1.0
 */
export const end = (config: ProbeConfig, state: ProbeState, now: number): ProbeState => {
  const [nextProbeAt, rng] = schedule(config, state.rng, now)
  return { ...state, phase: "idle", rng, nextProbeAt, windowStart: now, windowAtFloor: true, windowsAtFloor: 0 }
}

/**
 * The same probe config with every probe disabled (`enabled: false`): what a
 * controller's `withoutProbe` returns for its `probe` field.
 *
 * **Example**
 *
 * ```ts
 * import { Probe } from "@sluice/policies"
 *
 * Probe.spec(Probe.disabled(Probe.defaults), 1)._tag // "NoProbe"
 * ```
 *
 * @since 0.1.0
 */
export const disabled = (config: ProbeConfig): ProbeConfig => ({ ...config, enabled: false })

/**
 * The pinned level for a knob whose floor is `floor`.
 *
 * @since 0.1.0
 */
export const level = (config: ProbeConfig, floor: number): number => Math.max(floor, config.level)

/**
 * The contract's description of this probe.
 *
 * **Example**
 *
 * ```ts
 * import { Probe } from "@sluice/policies"
 *
 * const spec = Probe.spec(Probe.defaults, 1) // { _tag: "PinnedProbe", level: 2, samples: 8, ... }
 * ```
 *
 * @since 0.1.0
 */
export const spec = (config: ProbeConfig, floor: number): Policy.ProbeSpec =>
  config.enabled
    ? {
      _tag: "PinnedProbe",
      level: level(config, floor),
      samples: config.samples,
      jitter: config.jitter,
      forcedAfterWindowsAtFloor: config.forcedAfterWindowsAtFloor
    }
    : { _tag: "NoProbe", reason: "probe disabled by config (probe.enabled = false)" }

/**
 * One step of a concurrency controller's probe lifecycle, shared by AIMD,
 * Gradient2 and Vegas: while `probing`, end the probe when it timed out;
 * otherwise observe time at (or above) the floor and start a probe when one is
 * due, restoring `saved(reason)` when it ends.
 *
 * @since 0.1.0
 */
export const advance = <S>(
  config: ProbeConfig,
  floor: number,
  current: { readonly probing: boolean; readonly limit: number; readonly probe: ProbeState },
  now: number,
  on: {
    /** The probe timed out: end it (restore). */
    readonly timeout: () => S
    /** Still idle, with the observed probe state. */
    readonly idle: (probe: ProbeState) => S
    /** A probe starts, with the pinned probe state. */
    readonly pin: (probe: ProbeState) => S
    /** The value the probe restores when it ends. */
    readonly saved: (reason: ProbeReason) => number
  }
): S | undefined => {
  if (current.probing) return timedOut(config, current.probe, now) ? on.timeout() : undefined
  const o = observe(config, current.probe, now, Math.floor(current.limit) <= floor)
  return o.due === undefined ? on.idle(o.state) : on.pin(begin(config, o.state, now, on.saved(o.due), o.due))
}

/**
 * The concurrency a controller proposes: the probe level while probing, else
 * its (floored) limit — emitted only when it changed.
 *
 * @since 0.1.0
 */
export const propose = <S extends { readonly proposed: number }>(
  config: ProbeConfig,
  floor: number,
  previous: number,
  next: S,
  probing: boolean,
  limit: number
): Policy.Step<S> => {
  const value = probing ? level(config, floor) : Math.floor(limit)
  return value === previous ? { state: next } : { state: { ...next, proposed: value }, proposal: { concurrency: value } }
}
