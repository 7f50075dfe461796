/**
 * Every built-in policy passes the testkit's conformance suite — the same
 * proofs a third-party policy runs: never below floor or above ceiling, backs off
 * under sustained overload, recovers through its probe (and not with the probe
 * disabled: the ablation), deterministic, no NaN/Infinity proposals.
 */
import { conformance } from "@sluice/testkit/conformance"
import { AdaptiveBatch, Aimd, DeliveryRate, Gradient2, SharedPressure, Throttle, Vegas } from "../src/index.ts"

conformance(Aimd.policy, {})
conformance(DeliveryRate.policy, {})
conformance(Gradient2.policy, {})
conformance(Vegas.policy, {})
conformance(Throttle.policy, {})
conformance(SharedPressure.policy, {})

// Adaptive batch backs off (open batches of the overload's extra partitions
// would fill the budget) but regrows ×growth per window on its own once they
// are gone: its restore probe only shortens that (one window instead of a
// few), so the ablation finds it recovers without its probe. That is the
// honest verdict, kept visible here rather than hidden by a world built to
// flatter it (see README, "Probe ablation").
conformance(AdaptiveBatch.policy, {}, { expectFailure: ["recoversAfterOverload"] })
