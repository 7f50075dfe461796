/**
 * Every built-in policy passes the testkit's conformance suite — the same
 * proofs a third-party policy runs: never below floor or above ceiling, backs off
 * under sustained overload, recovers through its probe, deterministic, no
 * NaN/Infinity proposals.
 */
import { Properties } from "@sluice/testkit"
import { conformance } from "@sluice/testkit/conformance"
import { AdaptiveBatch, Aimd, Gradient2, SharedPressure, Throttle, Vegas } from "../src/index.ts"

conformance(Aimd.policy, {})
conformance(Gradient2.policy, {})
conformance(Vegas.policy, {})
conformance(Throttle.policy, {})
conformance(AdaptiveBatch.policy, {})

// The read gate reacts to bytes held, not to latency: in the standard world the
// inflow (2 GB/s) exceeds what 8 uploads carry even before the overload, so the
// gate is already closed when the overload starts. Drive it where uploads keep
// up until the overload.
conformance(SharedPressure.policy, {}, {
  world: { ...Properties.standardWorld, inflowBytesPerSecond: 100e6 }
})
