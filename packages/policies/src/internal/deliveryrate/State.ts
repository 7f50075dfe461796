/**
 * The delivery-rate policy's state: plain data, one field per thing the model
 * remembers, and the helpers every phase uses (an empty round, a mode change).
 * Internal: the public module (`DeliveryRate.ts`) exports the config, the
 * policy and its layer; the state is the policy's own.
 */
import type { SignalBus } from "@sluice/core"
import type { DeliveryRateConfig, DeliveryRateMode } from "../../deliveryrate/DeliveryRate.ts"
import * as Delivery from "../Delivery.ts"
import * as Latency from "../Latency.ts"
import * as ThrottleEpisode from "../ThrottleEpisode.ts"

/** The smallest latency taken as measured (ms): a zero latency (an in-memory sink on a virtual clock) would make every ratio 0/0. */
export const MIN_MILLIS = 0.001

/** What one round (or the probe) saw, from the samples of requests that began in it. */
export interface RoundStats {
  /** When the round began (ms). */
  readonly start: number
  /** Minimum normalised latency (`Infinity`: none). */
  readonly minLatency: number
  /** Size of the sample that set `minLatency` (to re-normalise it exactly). */
  readonly minBytes: number
  readonly samples: number
  /** Highest in-flight count a request of the round began at. */
  readonly inflight: number
  /** Highest rate sample that counts (limit used, or above the filter). */
  readonly rate: number
  /** Some request found the limit full: the round measured the store, not the source. */
  readonly limited: boolean
  readonly throttled: boolean
}

/** The probe in progress (PROBE_RTT). */
export interface DrainProbe {
  readonly epoch: number
  /** The drained in-flight level. */
  readonly level: number
  /** The mode to return to. */
  readonly resume: DeliveryRateMode
  /** The round that started it (the elevated one, or the last round). */
  readonly before: RoundStats
  /** Samples at the drained level (began after `epoch`, at ≤ `level` in flight). */
  readonly seen: RoundStats
}

/** The delivery-rate policy's state. */
export interface DeliveryRateState {
  readonly config: DeliveryRateConfig
  readonly mode: DeliveryRateMode
  readonly proposed: number
  readonly deliveries: Delivery.Deliveries
  /** Per-round maxima of the rate filter. */
  readonly rates: Delivery.RoundMaxima
  readonly round: RoundStats
  readonly lastRound: RoundStats
  readonly rounds: number
  /** Rounds since the mode began. */
  readonly phaseRounds: number
  readonly reference: Latency.Reference
  /** Minimum normalised latency (`Infinity` before the first sample); rises only through the probe. */
  readonly minLatency: number
  readonly minLatencyBytes: number
  /** When the minimum was last set or confirmed. */
  readonly minLatencyAt: number
  /** Highest in-flight a sample began at that confirmed the minimum: no queue of ours up to there. */
  readonly confirmedInflight: number
  /** Samples in a row ≥ (1 + `RISE_TOLERANCE`) × the minimum (their minimum and highest in-flight). */
  readonly risen: RoundStats
  /**
   * `a / b` of `latency ≈ a + b·bytes` (bytes), smoothed: the learned
   * reference's own means move with the queue the gain cycle builds and
   * drains (±2× at the knee), and the slot must not. It starts at the first
   * measured `a / b` (before that, `REFERENCE_BYTES`).
   */
  readonly sizeRatio: number
  /** `a / b` has been measured (bodiless requests and objects both sampled). */
  readonly ratioMeasured: boolean
  /** Mean object size (bytes, EWMA; 0 before the first). */
  readonly objectBytes: number
  /** Bodiless requests (manifest, verify) per object upload (EWMA). */
  readonly bodilessPerObject: number
  readonly bodilessSinceObject: number
  /** `startup`'s in-flight. */
  readonly startupLimit: number
  /** `startup`'s full-rate detection: the rate to beat, rounds without beating it. */
  readonly fullRate: number
  readonly fullRounds: number
  /** `probeUp`: in-flight aimed at, the rate before it and the in-flight that gave it, the step above `inflightHi`. */
  readonly upTarget: number
  readonly upBaseRate: number
  readonly upBaseInflight: number
  readonly upStep: number
  /** In-flight of the round before the last one (what the last round's rate samples measured). */
  readonly previousInflight: number
  /** Upper bound on in-flight from throttles and the knee (`Infinity`: none known). */
  readonly inflightHi: number
  /** The part of `inflightHi` throttles set (raised with it by clean probes; `Infinity`: none): what survives a store that got slower. */
  readonly throttleHi: number
  readonly lastCutAt: number
  /** The throttle episode: the lowest in-flight throttled, the last throttle, the clean successes since. */
  readonly episode: ThrottleEpisode.ThrottleEpisode
  /** The in-flight before the episode's first cut: what its end restores (BBR's `prior_cwnd`). */
  readonly priorInflight: number
  /** In-flight kept at least at this after a restore, until the rate filter has measured it (0: none). */
  readonly restoreFloor: number
  readonly probe: DrainProbe | undefined
  readonly probes: number
  /** Running uploads raised the minimum (`onPending`) and no measurement has settled it since. */
  readonly pendingRaised: boolean
  /** Minimum normalised latency of every object upload (`Infinity` before one): what an upload takes unqueued. */
  readonly objectMinLatency: number
  /** The last `RECENT_UPLOADS` (64) object uploads: normalised latency and the in-flight each began at. */
  readonly recentUploads: ReadonlyArray<readonly [number, number]>
}

/** A round that has seen nothing yet. */
export const emptyRound = (start: number): RoundStats => ({
  start,
  minLatency: Infinity,
  minBytes: 0,
  samples: 0,
  inflight: 0,
  rate: 0,
  limited: false,
  throttled: false
})

/** The state in `mode`, its round count restarted when the mode changes. */
export const withMode = (s: DeliveryRateState, mode: DeliveryRateMode): DeliveryRateState =>
  mode === s.mode ? s : { ...s, mode, phaseRounds: 0 }

/** The in-flight bounds of the config. */
export const clamp = (c: DeliveryRateConfig, v: number): number => Math.min(c.ceiling, Math.max(c.floor, v))

/** A sample's latency and load, counted in a round. */
export const observe = (r: RoundStats, sample: SignalBus.UploadSample, value: number): RoundStats => ({
  ...r,
  minLatency: Math.min(r.minLatency, value),
  minBytes: value < r.minLatency ? sample.bytes : r.minBytes,
  samples: r.samples + 1,
  inflight: Math.max(r.inflight, sample.inflightAtStart),
  limited: r.limited || sample.inflightAtStart >= sample.limitAtStart
})

/** A sample that does not measure latency still tells the round's load. */
export const observeLoad = (r: RoundStats, sample: SignalBus.UploadSample): RoundStats => ({
  ...r,
  inflight: Math.max(r.inflight, sample.inflightAtStart),
  limited: r.limited || sample.inflightAtStart >= sample.limitAtStart
})

/** The size normalisation until `a / b` is first measured (then learned; AIMD's `referenceBytes` default). */
export const REFERENCE_BYTES = 1024 * 1024

/** The state before the first signal: `startup` at `initial`, nothing measured. */
export const init = (config: DeliveryRateConfig): DeliveryRateState => ({
  config,
  mode: "startup",
  proposed: config.initial,
  deliveries: Delivery.emptyDeliveries,
  rates: [],
  round: emptyRound(-Infinity),
  lastRound: emptyRound(-Infinity),
  rounds: 0,
  phaseRounds: 0,
  reference: Latency.initReference(REFERENCE_BYTES),
  minLatency: Infinity,
  minLatencyBytes: 0,
  minLatencyAt: -Infinity,
  confirmedInflight: 0,
  risen: emptyRound(-Infinity),
  sizeRatio: REFERENCE_BYTES,
  ratioMeasured: false,
  objectBytes: 0,
  bodilessPerObject: 2,
  bodilessSinceObject: 0,
  startupLimit: config.initial,
  fullRate: 0,
  fullRounds: 0,
  upTarget: config.initial,
  upBaseRate: 0,
  upBaseInflight: 0,
  upStep: 1,
  previousInflight: 0,
  inflightHi: Infinity,
  throttleHi: Infinity,
  lastCutAt: -Infinity,
  episode: ThrottleEpisode.none,
  priorInflight: 0,
  restoreFloor: 0,
  probe: undefined,
  probes: 0,
  pendingRaised: false,
  objectMinLatency: Infinity,
  recentUploads: []
})
