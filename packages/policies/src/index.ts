/**
 * `@sluice/policies`: the pressure policies of Sluice — AIMD, the delivery-rate
 * policy (BBR-like), the throttle classifier, shared pressure, adaptive batch,
 * Gradient2 and Vegas — each a pure core plus a layer, the forced probe they
 * share, and their composition.
 *
 * @since 0.1.0
 * @module @sluice/policies
 */
export * as AdaptiveBatch from "./batch/AdaptiveBatch.ts"
export * as Aimd from "./aimd/Aimd.ts"
export * as Classify from "./throttle/Classify.ts"
export * as Composition from "./Composition.ts"
export * as CubicRate from "./throttle/CubicRate.ts"
export * as DeliveryRate from "./deliveryrate/DeliveryRate.ts"
export * as Gradient2 from "./gradient2/Gradient2.ts"
export * as Probe from "./probe/Probe.ts"
export * as SharedPressure from "./shared/SharedPressure.ts"
export * as Throttle from "./throttle/Throttle.ts"
export * as Vegas from "./vegas/Vegas.ts"
