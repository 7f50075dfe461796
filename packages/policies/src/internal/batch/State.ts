/**
 * AdaptiveBatch's state: plain data, the policy's own (internal: the public module
 * exports the config, the modes, the policy and its layer).
 */
import type { AdaptiveBatchConfig, BatchMode } from "../../batch/AdaptiveBatch.ts"
import type { Fit } from "../Fit.ts"

/**
 * Adaptive batch's state.
 */
export interface AdaptiveBatchState {
  readonly config: AdaptiveBatchConfig
  readonly mode: BatchMode
  readonly target: number
  /** The last target chosen without memory pressure: what the restore probe returns to. */
  readonly lastGood: number
  readonly fit: Fit
  /** Mean latency (ms, EWMA) of a manifest upload; 0 until sampled. */
  readonly manifestMillis: number
  /** Mean latency (ms, EWMA) of a verification; 0 until sampled. */
  readonly verifyMillis: number
  /** Mean transfer time per byte of object uploads (ms, EWMA): latency minus the overhead of a bodiless request. */
  readonly perByteMillis: number
  readonly windowStart: number
  readonly windowSamples: number
  readonly budgetBytes: number
  /** Bytes held / budget at the last `Inflight` signal. */
  readonly fill: number
  /** Highest share of the budget held by open batches in the current window. */
  readonly openPeak: number
  /** The concurrency limit in force (from `Tick`; 0 until known). */
  readonly limit: number
  /** Minimum latency of a bodiless request (manifest, verify) in each of the last windows (newest last). */
  readonly bodilessMins: ReadonlyArray<number>
  /** `Inflight` signals in the window, and those that found the pipeline memory-bound. */
  readonly inflightSignals: number
  readonly boundSignals: number
  /** `Inflight` signals in the window that found bytes held ≥ `MEMORY_BOUND_AT` of the budget. */
  readonly fullSignals: number
  /** Sum of the uploads in flight over the window's `Inflight` signals (their mean: ÷ `inflightSignals`). */
  readonly batchesSum: number
  /** `Inflight` signals in the window that found every upload slot taken (uploads in flight ≥ the concurrency limit). */
  readonly slotSignals: number
  /** The window saw a throttle, or a request-rate limit in force (`Tick`'s `rate`): requests, not slots, bound the uploads. */
  readonly requestBound: boolean
  /** Uploads started per second in force (the last `Tick`'s `rate`; `null`: none): it paces the uploads, whatever memory and the concurrency limit allow. */
  readonly rate: number | null
  /** The store answered 429 (Too Many Requests: a request-rate limit), and no `Tick` since found no rate in force: the rate in force stands for the store's cap on requests, not only a backoff from throttles. */
  readonly rateCapped: boolean
  /** Since when the target has sat at the floor (`Infinity`: not at the floor). */
  readonly atFloorSince: number
  readonly proposed: number
}
