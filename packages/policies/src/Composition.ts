/**
 * Composition: the default policy set, and composition strings
 * (`sluice-sim --policy aimd+throttle`) parsed into layers.
 *
 * @since 0.1.0
 */
import { Config as CoreConfig, Fixed, Suggestion } from "@sluice/core"
import type { Policy } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import { Effect, Layer, Result, Schema } from "effect"
import * as Aimd from "./aimd/Aimd.ts"
import * as AdaptiveBatch from "./batch/AdaptiveBatch.ts"
import * as DeliveryRate from "./deliveryrate/DeliveryRate.ts"
import * as Gradient2 from "./gradient2/Gradient2.ts"
import * as SharedPressure from "./shared/SharedPressure.ts"
import * as Throttle from "./throttle/Throttle.ts"
import * as Vegas from "./vegas/Vegas.ts"

/**
 * A composed set of policies, ready for `Pipeline.start({ policies })`.
 *
 * @since 0.1.0
 */
export type Policies<E = Config.ConfigError> = Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>

/**
 * Config of {@link defaults}: one optional config per member, each typed by its
 * schema's encoded form (`Config.Input`), so a misspelled key — or a member the
 * default does not have — fails `tsc`; {@link defaults} fails its layer with a
 * `ConfigError` for such a key in untyped data (JSON).
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * const config: Composition.DefaultsConfig = { deliveryRate: { ceiling: 128 }, batch: { initialBytes: 4 * 1024 * 1024 } }
 * // const typo: Composition.DefaultsConfig = { deliveryRate: { cieling: 128 } }   // tsc: 'cieling' does not exist …
 * // const gate: Composition.DefaultsConfig = { shared: { highWater: 0.8 } }        // tsc: no read gate in the default
 * ```
 *
 * @since 0.1.0
 */
export interface DefaultsConfig {
  /** The delivery-rate policy's config, over {@link defaultsBase}'s. */
  readonly deliveryRate?: Config.Input<typeof DeliveryRate.DeliveryRateConfig> | undefined
  /** Throttle's config, over {@link defaultsBase}'s. */
  readonly throttle?: Config.Input<typeof Throttle.ThrottleConfig> | undefined
  /** AdaptiveBatch's config. */
  readonly batch?: Config.Input<typeof AdaptiveBatch.AdaptiveBatchConfig> | undefined
}

/**
 * Config of {@link classic}: one optional config per member, typed as in
 * {@link DefaultsConfig}.
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * const config: Composition.ClassicConfig = { aimd: { ceiling: 64 }, shared: { maxPauseMillis: "2s" } }
 * ```
 *
 * @since 0.5.0
 */
export interface ClassicConfig {
  /** AIMD's config. */
  readonly aimd?: Config.Input<typeof Aimd.AimdConfig> | undefined
  /** Throttle's config (its own defaults: {@link defaultsBase} is the default's). */
  readonly throttle?: Config.Input<typeof Throttle.ThrottleConfig> | undefined
  /** SharedPressure's config. */
  readonly shared?: Config.Input<typeof SharedPressure.SharedPressureConfig> | undefined
  /** AdaptiveBatch's config. */
  readonly batch?: Config.Input<typeof AdaptiveBatch.AdaptiveBatchConfig> | undefined
}

/** The members {@link DefaultsConfig} may configure: its keys, each once (`tsc` fails when the two part). */
const DEFAULTS_MEMBERS: ReadonlyArray<string> = Object.keys({ deliveryRate: true, throttle: true, batch: true } satisfies Record<keyof DefaultsConfig, true>)
/** The members {@link ClassicConfig} may configure: its keys, each once. */
const CLASSIC_MEMBERS: ReadonlyArray<string> = Object.keys({ aimd: true, throttle: true, shared: true, batch: true } satisfies Record<keyof ClassicConfig, true>)

/**
 * A key naming no member of the composition (untyped data: JSON): a layer that
 * fails with a `ConfigError` naming it, else undefined. A config for a member
 * the composition does not have would otherwise be ignored without a word.
 */
const unknownMembers = (component: string, config: object, members: ReadonlyArray<string>): Policies | undefined => {
  const unknown = Object.keys(config).filter((k) => !members.includes(k))
  return unknown.length === 0 ? undefined : Layer.effectDiscard(Effect.fail(
    new CoreConfig.ConfigError({
      component,
      message: `${component}: no member ${unknown.map((k) => `"${k}"`).join(", ")} (its members: ${members.join(", ")})`
    })
  ))
}

/**
 * Options of a composition.
 *
 * @since 0.1.0
 */
export interface CompositionOptions {
  /**
   * `false` builds every policy with its probe disabled (`Policy.ablate`): the
   * ablation of a composition, to show that its probes are what recovers.
   * Default `true`.
   */
  readonly probes?: boolean | undefined
}

const layerOptions = (options: CompositionOptions): Policy.LayerOptions => ({ probe: options.probes !== false })

/**
 * The default policies: delivery rate + throttle classifier + adaptive batch.
 *
 * **When to use**
 *
 * Unless you know better: this is what `default` means in `sluice-sim`.
 *
 * **Details**
 *
 * The delivery-rate policy replaced AIMD here (0.2.0): a store that gets
 * slower is not congestion, and AIMD cut concurrency exactly when more uploads
 * were needed (see docs/design/composition-on-slow-stores.md).
 * {@link classic} is the previous default. The delivery-rate policy and
 * Throttle share the answer to a throttle as {@link defaultsBase} sets them
 * (under `config`).
 *
 * No read gate: SharedPressure is not a member (it was until 0.4.0). The pipeline's byte
 * budget already bounds what is held (the source's read-ahead reserved from
 * it), and its admission seals open batches that alone keep a chunk out; the
 * gate's pauses bought nothing on the family test set or the shipped
 * scenarios (docs/design/generalization.md, 2026-12-07). Add it
 * (`Layer.merge(Composition.defaults(), SharedPressure.layer())`) to stop
 * reading earlier than the budget does.
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * const policies = Composition.defaults({ deliveryRate: { ceiling: 128 } })
 * // Pipeline.start({ source, sink, policies })
 * const ablated = Composition.defaults({}, { probes: false }) // every probe disabled
 * ```
 *
 * @since 0.1.0
 */
export const defaults = (config: DefaultsConfig = {}, options: CompositionOptions = {}): Policies => {
  const o = layerOptions(options)
  return unknownMembers("default", config, DEFAULTS_MEMBERS) ?? Layer.mergeAll(
    DeliveryRate.layer({ ...defaultsBase.deliveryRate, ...config.deliveryRate }, o),
    Throttle.layer({ ...defaultsBase.throttle, ...config.throttle }, o),
    AdaptiveBatch.layer(config.batch ?? {}, o)
  )
}

/**
 * What {@link defaults} sets on its members under the caller's config (a key
 * the caller gives wins): BBRv2's split of the answer to loss, here to
 * throttles. The delivery-rate policy keeps the long-term bound, in-flight ≤
 * 85 % of the level the store throttled at (`inflight_hi` less its 15 %
 * headroom: `throttleBeta: 0.85`); Throttle makes the short-term cut, ×0.7 on
 * an episode's first round (`inflight_lo`, β = 0.7: `firstBeta`), and cuts the
 * request rate only once a round under that cut is throttled too
 * (`rateOnFirstCut: false`). With each policy's own defaults both cut at once
 * (×0.7 and ×0.5 plus a rate cut) and the harsher won under the minimum: on a
 * store 10× slower that throttles just above what it needs, each up-probe
 * cost ~10 s below the needed in-flight (docs/design/composition-on-slow-stores.md,
 * item 8).
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * Composition.defaultsBase.throttle // { firstBeta: 0.7, rateOnFirstCut: false }
 * // the policies' own defaults instead:
 * const own = Composition.defaults({ deliveryRate: { throttleBeta: 0.7 }, throttle: { firstBeta: 0.5, rateOnFirstCut: true } })
 * ```
 *
 * @since 0.2.0
 */
export const defaultsBase = {
  deliveryRate: { throttleBeta: 0.85 },
  throttle: { firstBeta: 0.7, rateOnFirstCut: false }
} as const satisfies DefaultsConfig

/**
 * The previous default: AIMD + throttle classifier + shared pressure +
 * adaptive batch (`classic` in composition strings).
 *
 * **When to use**
 *
 * To compare with {@link defaults}, or on stores whose latency only moves with
 * our own load.
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * const policies = Composition.classic({ aimd: { ceiling: 64 } })
 * ```
 *
 * @since 0.2.0
 */
export const classic = (config: ClassicConfig = {}, options: CompositionOptions = {}): Policies => {
  const o = layerOptions(options)
  return unknownMembers("classic", config, CLASSIC_MEMBERS) ?? Layer.mergeAll(
    Aimd.layer(config.aimd ?? {}, o),
    Throttle.layer(config.throttle ?? {}, o),
    SharedPressure.layer(config.shared ?? {}, o),
    AdaptiveBatch.layer(config.batch ?? {}, o)
  )
}

/**
 * The names a composition string may use.
 *
 * @since 0.1.0
 */
export const names = ["default", "classic", "fixed", "aimd", "deliveryrate", "throttle", "shared", "batch", "gradient2", "vegas"] as const

/**
 * A built-in policy name: one of {@link names}.
 *
 * @since 0.1.0
 */
export type PolicyName = (typeof names)[number]

/**
 * A composition string named a policy that does not exist (or `fixed` without
 * a valid `:N`).
 *
 * @since 0.1.0
 */
export class UnknownPolicy extends Schema.TaggedError<UnknownPolicy>()("UnknownPolicy", {
  spec: Schema.String,
  name: Schema.String,
  message: Schema.String
}) {}

/**
 * ` (did you mean "throttle"?)` for a name within 2 edits of a built-in
 * (typos, not other words: "thrttle", "agressive" is no name's), else "".
 */
const didYouMean = (part: string): string => {
  const lower = part.toLowerCase()
  const best = [...names].map((n) => ({ n, d: Suggestion.distance(lower, n) })).sort((x, y) => x.d - y.d)[0]
  return best !== undefined && best.d <= 2 && best.d < lower.length ? ` (did you mean "${best.n}"?)` : ""
}

const one = (spec: string, part: string, options: CompositionOptions): Result.Result<Policies, UnknownPolicy> => {
  const o = layerOptions(options)
  const fixed = /^fixed:(\d+)$/.exec(part)
  if (fixed !== null) {
    const n = Number(fixed[1])
    return n >= 1
      ? Result.succeed(Fixed.layer({ concurrency: n }))
      : Result.fail(new UnknownPolicy({ spec, name: part, message: `${part}: fixed concurrency must be ≥ 1` }))
  }
  switch (part) {
    case "default":
      return Result.succeed(defaults({}, options))
    case "classic":
      return Result.succeed(classic({}, options))
    case "aimd":
      return Result.succeed(Aimd.layer({}, o))
    case "deliveryrate":
      return Result.succeed(DeliveryRate.layer({}, o))
    case "throttle":
      return Result.succeed(Throttle.layer({}, o))
    case "shared":
      return Result.succeed(SharedPressure.layer({}, o))
    case "batch":
      return Result.succeed(AdaptiveBatch.layer({}, o))
    case "gradient2":
      return Result.succeed(Gradient2.layer({}, o))
    case "vegas":
      return Result.succeed(Vegas.layer({}, o))
    default:
      return Result.fail(
        new UnknownPolicy({
          spec,
          name: part,
          message: `unknown policy "${part}" in "${spec}"${didYouMean(part)}; expected ${names.join(", ")} (fixed as fixed:N), joined with "+"`
        })
      )
  }
}

/** A composition string's members, as written (`+`-joined, case and spaces ignored). */
const partsOf = (spec: string): ReadonlyArray<string> => spec.split("+").map((p) => p.trim().toLowerCase())

/**
 * Parses a composition string synchronously.
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 * import { Result } from "effect"
 *
 * const r = Composition.parseResult("aimd+throttle")
 * Result.isSuccess(r) // true
 * ```
 *
 * @since 0.1.0
 */
export const parseResult = (spec: string, options: CompositionOptions = {}): Result.Result<Policies, UnknownPolicy> => {
  const layers: Array<Policies> = []
  for (const part of partsOf(spec)) {
    const r = one(spec, part, options)
    if (Result.isFailure(r)) return Result.fail(r.failure)
    layers.push(r.success)
  }
  const [first, ...rest] = layers
  if (first === undefined) {
    return Result.fail(new UnknownPolicy({ spec, name: "", message: "empty policy spec" }))
  }
  return Result.succeed(rest.length === 0 ? first : Layer.mergeAll(first, ...rest))
}

/**
 * The floors a composition guarantees, as the testkit's runner checks them
 * (`floorViolations`): `concurrency`, and `batchBytes` (the batch target's
 * bytes).
 *
 * @since 0.5.0
 */
export interface CompositionFloors {
  readonly concurrency?: number | undefined
  readonly batchBytes?: number | undefined
}

/** A member's declared bounds: its config input decoded with its schema, then `Policy.bounds`. */
const boundsOf = <C, S, I>(policy: Policy.Policy<C, S, I>, input: I) => (): Result.Result<Policy.KnobBounds, Config.ConfigError> =>
  Result.map(CoreConfig.decodeResult(policy.name, policy.config, input), policy.bounds)

/**
 * Each built-in name's members as {@link parseResult} builds them, as their
 * bounds (`fixed:N` is read from the name; an unknown name fails the parse first).
 */
const membersOf: Readonly<Record<string, ReadonlyArray<() => Result.Result<Policy.KnobBounds, Config.ConfigError>>>> = {
  default: [
    boundsOf(DeliveryRate.policy, defaultsBase.deliveryRate),
    boundsOf(Throttle.policy, defaultsBase.throttle),
    boundsOf(AdaptiveBatch.policy, {})
  ],
  classic: [boundsOf(Aimd.policy, {}), boundsOf(Throttle.policy, {}), boundsOf(SharedPressure.policy, {}), boundsOf(AdaptiveBatch.policy, {})],
  aimd: [boundsOf(Aimd.policy, {})],
  deliveryrate: [boundsOf(DeliveryRate.policy, {})],
  throttle: [boundsOf(Throttle.policy, {})],
  shared: [boundsOf(SharedPressure.policy, {})],
  batch: [boundsOf(AdaptiveBatch.policy, {})],
  gradient2: [boundsOf(Gradient2.policy, {})],
  vegas: [boundsOf(Vegas.policy, {})]
}

/**
 * The floors a composition string guarantees: each member's declared floors
 * (`Policy.bounds` of its config as {@link parse} builds it), and per knob the
 * **lowest** of the members that move it — the knobs' combiners take the
 * minimum of the proposals (`Knob`), so a composition is only as high as its
 * lowest floor. `fixed:N` holds N. The testkit's CLI checks a run against
 * them (`floorViolations`).
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 * import { Result } from "effect"
 *
 * const floors = Composition.floorsResult("default")
 * Result.isSuccess(floors) // true: { concurrency: 1, batchBytes: 1048576 } with the shipped defaults
 * ```
 *
 * @since 0.5.0
 */
export const floorsResult = (spec: string): Result.Result<CompositionFloors, UnknownPolicy | Config.ConfigError> => {
  const parsed = parseResult(spec)
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
  let concurrency: number | undefined
  let batchBytes: number | undefined
  const lowest = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b))
  for (const part of partsOf(spec)) {
    const fixed = /^fixed:(\d+)$/.exec(part)
    if (fixed !== null) {
      concurrency = lowest(concurrency, Number(fixed[1]))
      continue
    }
    for (const member of membersOf[part] ?? []) {
      const result = member()
      if (Result.isFailure(result)) return Result.fail(result.failure)
      const bounds = result.success
      concurrency = lowest(concurrency, bounds.concurrency?.floor)
      batchBytes = lowest(batchBytes, bounds.batchTarget?.floor)
    }
  }
  return Result.succeed({ ...(concurrency === undefined ? {} : { concurrency }), ...(batchBytes === undefined ? {} : { batchBytes }) })
}

/**
 * Parses a composition string — `fixed:N`, `aimd`, `deliveryrate`, `throttle`, `shared`,
 * `batch`, `gradient2`, `vegas` joined with `+`, or `default` ({@link defaults}:
 * `deliveryrate+throttle+batch` with {@link defaultsBase} on the first two) or
 * `classic` (`aimd+throttle+shared+batch`) — into the policies' layer, each
 * other name with its policy's default config.
 *
 * **Details**
 *
 * An unknown name fails the layer with {@link UnknownPolicy} when it is built
 * (use {@link parseResult} to validate up front).
 *
 * **Example**
 *
 * ```ts
 * import { Composition } from "@sluice/policies"
 *
 * const policies = Composition.parse("aimd+throttle+shared")
 * const ablated = Composition.parse("aimd+throttle+shared", { probes: false })
 * ```
 *
 * @since 0.1.0
 */
export const parse = (spec: string, options: CompositionOptions = {}): Policies<Config.ConfigError | UnknownPolicy> => {
  const r = parseResult(spec, options)
  return Result.isSuccess(r) ? r.success : Layer.effectDiscard(Effect.fail(r.failure))
}
