/**
 * Throttle's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { Knob } from "@sluice/core"
import type { ThrottleConfig, ThrottleMode } from "../../throttle/Throttle.ts"
import type * as CubicRate from "../../throttle/CubicRate.ts"
import type * as ThrottleEpisode from "../ThrottleEpisode.ts"

type Proposal = Knob.Proposal

/**
 * The throttle policy's state.
 */
export interface ThrottleState {
  readonly config: ThrottleConfig
  readonly mode: ThrottleMode
  readonly limit: number
  /** The limit in force before the episode: what the restore probe returns to. */
  readonly saved: number
  readonly lastCutAt: number
  /** The in-flight count the last cut was taken from (`Infinity` before the first; read only while not open). */
  readonly cutFrom: number
  readonly rate: CubicRate.CubicRate
  readonly proposed: Proposal
  /** Throttles seen (all of them, including those that did not cut). */
  readonly throttles: number
  /** The throttle episode (read, and its successes counted, only while not open). */
  readonly episode: ThrottleEpisode.ThrottleEpisode
  /** Successes since the limit reached the level just below `episode.throttledAt` (the plateau). */
  readonly plateau: number
  /** The combined concurrency in force (the last `Tick`'s; `Infinity` before one). */
  readonly knob: number
  /** The restore window: when it began, `Inflight` observations in it, and those with batches filling `knob`. */
  readonly busy: BusyWindow
}

/**
 * How much of a window the pipeline's batches filled the concurrency in force.
 */
export interface BusyWindow {
  readonly since: number
  readonly observed: number
  readonly full: number
  /**
   * The verdict while nothing is observed yet: `true` for the window a cut
   * begins (no evidence: probe), `false` for one that follows a window measured
   * idle (that window is the evidence until this one has its own).
   */
  readonly carried: boolean
}
