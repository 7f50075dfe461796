/**
 * The concurrency the state proposes: the mode's in-flight (each phase's
 * module says what its mode asks for), at least the in-flight a throttle
 * episode's end restored, at most `inflightHi` (except the step `probeUp`
 * probes above it), within `[floor, ceiling]`.
 */
import { cruiseInflight, downInflight, upInflight } from "./ProbeBw.ts"
import { probeInflight } from "./ProbeRtt.ts"
import { drainInflight, startupInflight } from "./Startup.ts"
import { clamp } from "./State.ts"
import type { DeliveryRateState } from "./State.ts"

/** The in-flight the mode asks for, before the bounds. */
const wanted = (s: DeliveryRateState): number => {
  switch (s.mode) {
    case "startup":
      return startupInflight(s)
    case "drain":
      return drainInflight(s)
    case "cruise":
      return cruiseInflight(s)
    case "probeUp":
      return upInflight(s)
    case "probeDown":
      return downInflight(s)
    case "probing":
      return probeInflight(s)
  }
}

/** The concurrency proposed: whole uploads (a hair below an integer rounds down, not up). */
export const target = (s: DeliveryRateState): number => {
  const hi = s.mode === "probeUp" ? Infinity : s.inflightHi
  const restored = s.mode === "probing" ? 0 : s.restoreFloor
  return clamp(s.config, Math.ceil(Math.min(Math.max(wanted(s), restored), hi) - 1e-9))
}
