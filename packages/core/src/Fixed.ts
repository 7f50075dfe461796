/**
 * `Fixed`: constant knobs. The first policy, and the baseline every adaptive
 * policy is measured against (it is what today's archivers run: 8 uploads, a
 * fixed batch, whatever the store does).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Layer } from "effect"
import type { ConfigError } from "./Config.ts"
import * as Config from "./Config.ts"
import type { Knobs, Proposal } from "./Knob.ts"
import * as Policy from "./Policy.ts"
import type { SignalBus } from "./Signal.ts"

/**
 * `Fixed`'s config: each given knob is held constant; knobs left out are not
 * proposed to.
 *
 * @since 0.1.0
 */
export const FixedConfig = Schema.Struct({
  concurrency: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  batchRecords: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  batchBytes: Schema.optionalKey(Config.PositiveBytes),
  maxAge: Schema.optionalKey(Config.Millis),
  rate: Schema.optionalKey(Schema.NullOr(Schema.Finite.check(Schema.isGreaterThan(0))))
})

/**
 * `FixedConfig` as a type: what the `FixedConfig` schema decodes to.
 *
 * @since 0.1.0
 */
export type FixedConfig = typeof FixedConfig.Type

const proposalOf = (c: FixedConfig): Proposal => ({
  ...(c.concurrency !== undefined ? { concurrency: c.concurrency } : {}),
  ...(c.batchRecords !== undefined || c.batchBytes !== undefined || c.maxAge !== undefined
    ? {
      batchTarget: {
        ...(c.batchRecords !== undefined ? { records: c.batchRecords } : {}),
        ...(c.batchBytes !== undefined ? { bytes: c.batchBytes } : {}),
        ...(c.maxAge !== undefined ? { maxAgeMillis: c.maxAge } : {})
      }
    }
    : {}),
  ...(c.rate !== undefined ? { rate: c.rate } : {})
})

/**
 * The `Fixed` policy core. Its floor and ceiling are the constant itself, and it
 * declares `NoProbe`: it never over-corrects, and never recovers either (so
 * `withoutProbe` is the identity).
 *
 * **Example**
 *
 * ```ts
 * import { Fixed, Policy } from "@sluice/core"
 *
 * const eight = Policy.layer(Fixed.policy, { concurrency: 8 })
 * ```
 *
 * @since 0.1.0
 */
export const policy: Policy.Policy<FixedConfig, Proposal, Config.Input<typeof FixedConfig>> = {
  name: "fixed",
  config: FixedConfig,
  bounds: (c) => ({
    ...(c.concurrency !== undefined ? { concurrency: { floor: c.concurrency, ceiling: c.concurrency } } : {}),
    ...(c.batchBytes !== undefined ? { batchTarget: { floor: c.batchBytes, ceiling: c.batchBytes } } : {})
  }),
  probe: () => ({ _tag: "NoProbe", reason: "constant knobs never move" }),
  withoutProbe: (c) => c,
  init: proposalOf,
  initial: (proposal) => proposal,
  step: (state) => ({ state })
}

/**
 * `Fixed` as a layer: the given knobs held constant, whatever the store does.
 *
 * **Example** (the baseline adaptive policies are measured against: 8 uploads at once)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Fixed, Memory, Pipeline } from "@sluice/core"
 *
 * const stats = Effect.runPromise(Pipeline.run({
 *   source: Memory.source({ name: "orders", partitions: 4, records: 10_000, recordBytes: 150 }),
 *   sink: Memory.sink(),
 *   policies: Fixed.layer({ concurrency: 8 })
 * }))
 * ```
 *
 * @since 0.1.0
 */
export const layer = (config: Config.Input<typeof FixedConfig>): Layer.Layer<never, ConfigError, SignalBus | Knobs> =>
  Policy.layer(policy, config)
