/**
 * The policy contract: the plugin SDK of Sluice.
 *
 * A policy is a **pure core** (no Effect, no I/O, time is an argument) plus a
 * generic **Effect shell** ({@link layer}) that subscribes the core to the signal
 * bus and writes its proposals to the knobs. Third parties write the core; the
 * testkit's conformance suite drives it directly, and deployments compose the
 * shells as layers.
 *
 * Every policy must declare, for each knob it moves, a `floor` (the value that
 * still guarantees forward progress) and a `ceiling`, and a `probe`: how it
 * recovers from an over-correction. The types make all three required. A policy
 * that declares a probe also says how to turn it off (`withoutProbe`), so the
 * testkit can run every recovery check with the probe disabled too and show
 * that the probe — not something else — is what recovers (see {@link ablate}).
 *
 * @since 0.1.0
 */
import { Effect, Layer, PubSub } from "effect"
import type { Schema } from "effect"
import * as Config from "./Config.ts"
import { Knobs } from "./Knob.ts"
import { supervised } from "./PolicySupervisor.ts"
import type { KnobName, Proposal } from "./Knob.ts"
import { SignalBus } from "./Signal.ts"
import type { Signal } from "./Signal.ts"

/**
 * The range a policy keeps a numeric knob in.
 *
 * @since 0.1.0
 */
export interface Bounds {
  /** The lowest value the policy may propose: what still guarantees progress. */
  readonly floor: number
  /** The highest value the policy may propose. */
  readonly ceiling: number
}

/**
 * Bounds per knob moved. For `batchTarget` the bounds apply to its `bytes`; for
 * `readGate` the floor is the longest pause (ms) the policy allows while uploads
 * make progress and the ceiling is unused (`Infinity`).
 *
 * @since 0.1.0
 */
export type KnobBounds = { readonly [K in KnobName]?: Bounds }

/**
 * How a policy recovers from an over-correction.
 *
 * - `PinnedProbe`: Envoy's min-latency probe — pin the knob at `level` for
 *   `samples` samples (± `jitter` fraction), discard samples that began before the
 *   probe, then restore the saved value; forced after `forcedAfterWindowsAtFloor`
 *   consecutive windows at the floor.
 * - `RestoreProbe`: BBR-style — after `afterMillis` at the floor, restore the last
 *   value that was good.
 * - `ReopenProbe`: for gates — re-open after `afterMillis` closed while uploads
 *   progress.
 * - `NoProbe`: the policy never over-corrects (e.g. `Fixed`), or its probe was
 *   disabled (`withoutProbe`); `reason` says why. A `NoProbe` policy that still
 *   recovers in the conformance world is reported as recovering without a
 *   probe; one that does not, fails the recovery property.
 *
 * @since 0.1.0
 */
export type ProbeSpec =
  | {
    /** Pin the knob, re-measure, restore. */
    readonly _tag: "PinnedProbe"
    /** The value the knob is pinned at during the probe. */
    readonly level: number
    /** Samples to collect while pinned (requests that began after the pin). */
    readonly samples: number
    /** ± fraction applied to `samples`. */
    readonly jitter: number
    /** Consecutive windows at the floor after which the probe is forced. */
    readonly forcedAfterWindowsAtFloor: number
  }
  | {
    /** Restore the last good value after a time at the floor. */
    readonly _tag: "RestoreProbe"
    /** Time at the floor before the restore (ms). */
    readonly afterMillis: number
  }
  | {
    /** Re-open a closed gate after a time. */
    readonly _tag: "ReopenProbe"
    /** Time closed while uploads progress before the gate re-opens (ms). */
    readonly afterMillis: number
  }
  | {
    /** No probe. */
    readonly _tag: "NoProbe"
    /** Why the policy has none (or that it was disabled). */
    readonly reason: string
  }

/**
 * The result of one step.
 *
 * @since 0.1.0
 */
export interface Step<S> {
  /** The policy's next state. */
  readonly state: S
  /** A new proposal, or `undefined` to keep the one in force. */
  readonly proposal?: Proposal | undefined
}

/**
 * A policy's pure core.
 *
 * **Details**
 *
 * - `config` is the Schema of the policy's config (with its defaults); the shell
 *   decodes user input with it, rejecting unknown fields.
 * - `init(config)` builds the initial state; `initial(state)` the proposal in
 *   force before the first signal.
 * - `step(state, signal, now)` returns the next state and, optionally, a new
 *   proposal. It must be pure and deterministic: same inputs, same outputs.
 * - `probe(config)` declares how the policy recovers from an over-correction,
 *   and `withoutProbe(config)` returns the same config with that probe disabled
 *   (`probe(withoutProbe(config))` is `NoProbe`; for a `NoProbe` policy it is
 *   the identity). It is what the testkit's ablation runs: every recovery check
 *   runs the policy as declared and through {@link ablate}, and passes only if
 *   the probed run recovers and the ablated one does not.
 *
 * **Example** (a third-party policy that halves concurrency on every throttle)
 *
 * ```ts
 * import { Schema } from "effect"
 * import { Policy } from "@sluice/core"
 *
 * const Config = Schema.Struct({ floor: Schema.Number, ceiling: Schema.Number, restore: Schema.Boolean })
 * type Config = typeof Config.Type
 *
 * export const Halver: Policy.Policy<Config, { limit: number; lastChange: number; restore: boolean }> = {
 *   name: "halver",
 *   config: Config,
 *   bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
 *   // Its probe: 10 s after the last change, double again (BBR-style restore).
 *   probe: (c) => c.restore ? { _tag: "RestoreProbe", afterMillis: 10_000 } : { _tag: "NoProbe", reason: "restore: false" },
 *   withoutProbe: (c) => ({ ...c, restore: false }),
 *   init: (c) => ({ limit: c.ceiling, lastChange: 0, restore: c.restore }),
 *   initial: (s) => ({ concurrency: s.limit }),
 *   step: (s, signal, now) => {
 *     if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") {
 *       const limit = Math.max(1, Math.floor(s.limit / 2))
 *       return { state: { ...s, limit, lastChange: now }, proposal: { concurrency: limit } }
 *     }
 *     if (s.restore && signal._tag === "Tick" && now - s.lastChange > 10_000 && s.limit < 64) {
 *       return { state: { ...s, limit: s.limit * 2, lastChange: now }, proposal: { concurrency: s.limit * 2 } }
 *     }
 *     return { state: s }
 *   }
 * }
 *
 * // The same policy with its probe disabled (what the ablation runs).
 * const ablated = Policy.ablate(Halver)
 * ```
 *
 * @since 0.1.0
 */
export interface Policy<C, S, I = unknown> {
  /** The policy's name, as the CLI, the metrics and the conformance suite show it. */
  readonly name: string
  /** The config schema: decodes `I` (its encoded form, what users write) to `C`. */
  readonly config: Schema.Codec<C, I>
  /**
   * The floor and ceiling of each knob the policy proposes to, for `config`:
   * its proposals must stay within them, and the conformance suite judges the
   * policy against them.
   */
  readonly bounds: (config: C) => KnobBounds
  /** How the policy recovers from an over-correction (its probe), for `config`. */
  readonly probe: (config: C) => ProbeSpec
  /**
   * `config` with the probe disabled: `probe(withoutProbe(config))` must be
   * `NoProbe`, and the core must then never run its probe (for `NoProbe`
   * policies, the identity). Optional in the type so that policies written
   * before it still compile, but the conformance suite fails a policy that
   * declares a probe without it: its probe could not be shown to be what
   * recovers.
   */
  readonly withoutProbe?: ((config: C) => C) | undefined
  /** The initial state for `config`. */
  readonly init: (config: C) => S
  /** The proposal in force before the first signal. */
  readonly initial: (state: S) => Proposal
  /**
   * One signal in: the next state and, optionally, a new proposal. Pure and
   * deterministic (`now` is the Clock's milliseconds, passed in).
   */
  readonly step: (state: S, signal: Signal, now: number) => Step<S>
  /**
   * The controller's mode in `state` (e.g. `"steady"`, `"backoff"`,
   * `"probing"`). Optional; when given, the shell publishes a `PolicyMode`
   * signal on every change, and the testkit counts time spent `"probing"` as
   * the probe's cost.
   */
  readonly mode?: ((state: S) => string) | undefined
}

/**
 * The policy with its probe disabled: every config is passed through the
 * policy's `withoutProbe` before `bounds`, `probe` and `init` see it. The
 * ablation of the testkit runs a policy twice, as declared and ablated.
 *
 * **Details**
 *
 * A policy without `withoutProbe` is returned unchanged (its probe, if it
 * declares one, cannot be disabled: {@link probeDisabled} says so).
 *
 * **Example**
 *
 * ```ts
 * import { Fixed, Policy } from "@sluice/core"
 *
 * const same = Policy.ablate(Fixed.policy) // Fixed has no probe: unchanged
 * Policy.probeDisabled(Fixed.policy, { concurrency: 8 }) // true
 * ```
 *
 * @since 0.1.0
 */
export const ablate = <C, S, I>(policy: Policy<C, S, I>): Policy<C, S, I> => {
  const off = policy.withoutProbe
  if (off === undefined) return policy
  return {
    ...policy,
    bounds: (c) => policy.bounds(off(c)),
    probe: (c) => policy.probe(off(c)),
    init: (c) => policy.init(off(c)),
    withoutProbe: off
  }
}

/**
 * Whether {@link ablate} really disables the policy's probe for `config`:
 * `probe(withoutProbe(config))` is `NoProbe`.
 *
 * @since 0.1.0
 */
export const probeDisabled = <C, S>(policy: Policy<C, S>, config: C): boolean =>
  ablate(policy).probe(config)._tag === "NoProbe"

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 */
export interface LayerOptions {
  /** `false` runs the policy with its probe disabled ({@link ablate}); default `true`. */
  readonly probe?: boolean | undefined
}

/**
 * Runs a policy core over a sequence of `(signal, now)` pairs, purely. Returns
 * every proposal with its time — what the conformance suite and unit tests use.
 *
 * @since 0.1.0
 */
export const replay = <C, S>(
  policy: Policy<C, S>,
  config: C,
  signals: Iterable<readonly [Signal, number]>
): { readonly state: S; readonly proposals: ReadonlyArray<readonly [number, Proposal]> } => {
  let state = policy.init(config)
  const proposals: Array<readonly [number, Proposal]> = [[0, policy.initial(state)]]
  for (const [signal, now] of signals) {
    const next = policy.step(state, signal, now)
    state = next.state
    if (next.proposal !== undefined) proposals.push([now, next.proposal])
  }
  return { state, proposals }
}

/**
 * The generic shell: turns a policy core into a `Layer` that, for as long as it
 * is alive, steps the core on every signal and writes its proposals to the knobs.
 *
 * **Details**
 *
 * The config is decoded with the policy's Schema when the layer is built: bad
 * config fails the layer with a `ConfigError` naming the field. The subscription
 * is taken before the layer finishes building, so no signal published afterwards
 * is missed.
 *
 * **Example**
 *
 * ```ts
 * import { Layer } from "effect"
 * import { Fixed, Policy } from "@sluice/core"
 *
 * const policies = Layer.mergeAll(Policy.layer(Fixed.policy, { concurrency: 8 }))
 * // The same policy with its probe disabled (the ablation of a composition):
 * const ablated = Policy.layer(Fixed.policy, { concurrency: 8 }, { probe: false })
 * ```
 *
 * @since 0.1.0
 */
export const layer = <C, S, I>(
  declared: Policy<C, S, I>,
  input?: I,
  options: LayerOptions = {}
): Layer.Layer<never, Config.ConfigError, SignalBus | Knobs> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const policy = options.probe === false ? ablate(declared) : declared
    const raw: unknown = input ?? {}
    const config = yield* Config.decode(policy.name, policy.config, raw)
    const bus = yield* SignalBus
    const knobs = yield* Knobs
    const subscription = yield* bus.subscribe
    let state = policy.init(config)
    const modeOf = policy.mode
    let mode = modeOf?.(state)
    yield* knobs.propose(policy.name, policy.initial(state))
    // Every signal queued since the last wake-up, as one array: a direct
    // `takeAll` loop, without a Stream's pull machinery on every wake-up (and,
    // like the Stream it replaces, no yield between arrays).
    const stepAll = (signals: ReadonlyArray<Signal>): Effect.Effect<void> => {
      let proposal: Proposal | undefined
      for (const signal of signals) {
        // Modes are published for observers; cores do not react to them.
        if (signal._tag === "PolicyMode") continue
        const next = policy.step(state, signal, signal.at)
        state = next.state
        if (next.proposal !== undefined) proposal = { ...proposal, ...next.proposal }
        if (modeOf !== undefined) {
          const now = modeOf(state)
          if (now !== mode) {
            mode = now
            bus.publishUnsafe({ _tag: "PolicyMode", at: signal.at, policy: policy.name, mode: now })
          }
        }
      }
      return proposal === undefined ? Effect.void : knobs.propose(policy.name, proposal)
    }
    yield* Effect.forever(Effect.flatMap(PubSub.takeAll(subscription), (signals) => Effect.suspend(() => stepAll(signals))), {
      disableYield: true
    }).pipe(
      // A core that throws ends the run with PolicyFailed (see PolicySupervisor),
      // instead of leaving its last proposal in force while nothing steps it.
      supervised(policy.name),
      Effect.forkScoped
    )
  }))

