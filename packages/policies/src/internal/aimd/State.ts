/**
 * Aimd's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { AimdConfig, AimdMode } from "../../aimd/Aimd.ts"
import type * as Probe from "../../probe/Probe.ts"
import type * as Latency from "../Latency.ts"
import type * as ThrottleEpisode from "../ThrottleEpisode.ts"

/**
 * AIMD's state (plain data).
 */
export interface AimdState {
  readonly config: AimdConfig
  readonly mode: AimdMode
  /** The limit (fractional; proposed floored). */
  readonly limit: number
  /** The limit at the last flat sample: what a forced probe restores. */
  readonly lastGood: number
  /**
   * Slow-start threshold (TCP): below it the limit grows multiplicatively.
   * `ceiling` at start (`initial` without `slowStart`); every cut sets it to
   * the cut limit.
   */
  readonly ssthresh: number
  /** Minimum normalised latency; rises only through a probe. */
  readonly baseline: number
  /** Size of the sample that set the baseline (to re-normalise it exactly when the reference moves). */
  readonly baselineBytes: number
  /** Size of the sample that set the current probe's minimum. */
  readonly probeMinBytes: number
  readonly latency: Latency.Ewma
  /** The size normalisation in force (learned when `learnReference`). */
  readonly reference: Latency.Reference
  /** When the last decrease happened. */
  readonly lastCutAt: number
  readonly probe: Probe.ProbeState
  /** The value last proposed. */
  readonly proposed: number
  /** The throttle episode (its `clear` counts flat samples only). */
  readonly episode: ThrottleEpisode.ThrottleEpisode
  /** The limit before the storm's first throttle cut: where slow start returns to once it clears. */
  readonly beforeStorm: number
}
