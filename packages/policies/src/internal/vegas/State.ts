/**
 * Vegas's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { VegasConfig, VegasMode } from "../../vegas/Vegas.ts"
import type * as Probe from "../../probe/Probe.ts"

/**
 * Vegas's state.
 */
export interface VegasState {
  readonly config: VegasConfig
  readonly mode: VegasMode
  readonly limit: number
  /** Minimum normalised latency; rises only through the probe. */
  readonly noLoad: number
  readonly probe: Probe.ProbeState
  readonly proposed: number
  /** When the last throttle cut happened: a throttle of a request begun before it is the same round. */
  readonly lastCutAt: number
}
