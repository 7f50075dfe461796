/**
 * The bandwidth-delay product: the in-flight, in batches, that delivers the
 * filtered rate at the minimum latency — what every mode's in-flight is a
 * multiple of.
 *
 * ```
 * bdp     = rate × slot(s̄) / s̄
 * slot(s) = minLatency × (1 + s / ref + k)     (one batch's time holding a slot, unloaded)
 * ```
 */
import * as Delivery from "../Delivery.ts"
import type { DeliveryRateState } from "./State.ts"

/** The BDP in batches (`undefined` until the rate, the minimum and the object size are all measured). */
export const bdp = (s: DeliveryRateState): number | undefined => {
  const rate = Delivery.maxOf(s.rates, s.round.rate)
  if (!(rate > 0) || !Number.isFinite(s.minLatency) || !(s.objectBytes > 0)) return undefined
  const slotMillis = s.minLatency * (1 + s.objectBytes / Math.max(1, s.sizeRatio) + s.bodilessPerObject)
  return (rate * slotMillis) / 1000 / s.objectBytes
}
