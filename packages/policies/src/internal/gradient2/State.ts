/**
 * Gradient2's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { Gradient2Config, Gradient2Mode } from "../../gradient2/Gradient2.ts"
import type * as Probe from "../../probe/Probe.ts"

/**
 * Gradient2's state.
 */
export interface Gradient2State {
  readonly config: Gradient2Config
  readonly mode: Gradient2Mode
  readonly limit: number
  readonly longRtt: number
  readonly longCount: number
  readonly windowStart: number
  readonly windowSum: number
  readonly windowCount: number
  readonly windowMaxInflight: number
  readonly lastDropAt: number
  readonly probe: Probe.ProbeState
  readonly proposed: number
}
