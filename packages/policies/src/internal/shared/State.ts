/**
 * SharedPressure's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { PressureMode, SharedPressureConfig } from "../../shared/SharedPressure.ts"

/**
 * Shared pressure's state.
 */
export interface SharedPressureState {
  readonly config: SharedPressureConfig
  readonly mode: PressureMode
  readonly pausedAt: number
  readonly lastProgressAt: number
  /** Bytes held / budget at the last `Inflight` signal. */
  readonly fill: number
  readonly pauses: number
  readonly reopens: number
  /**
   * Bytes the uploads need held to stay busy: the concurrency limit times the
   * object size, from the last `object_upload` sample.
   */
  readonly feedBytes: number
}
