/**
 * Latency measurement shared by the concurrency cores.
 *
 * @internal
 */
import type { SignalBus } from "@sluice/core"

type UploadSample = SignalBus.UploadSample

/**
 * Latency normalised by size: `latency / (1 + bytes / referenceBytes)`.
 *
 * Batches vary in size, so raw latency of `object_upload` mixes "the store is
 * slower" with "the batch was bigger". Dividing by `1 + bytes/ref` is latency per
 * "request overhead + ref bytes": for objects much smaller than `ref` it is the
 * plain latency (overhead dominates), for much larger ones it is latency per
 * `ref` bytes (transfer dominates). Samples with `bytes = 0` (manifests, HEADs)
 * are unchanged.
 */
export const normalised = (sample: UploadSample, referenceBytes: number): number =>
  sample.latencyMillis / (1 + sample.bytes / Math.max(1, referenceBytes))

/** EWMA of a value and of its absolute deviation (RFC 6298 style). */
export interface Ewma {
  readonly mean: number
  readonly deviation: number
  readonly count: number
}

export const emptyEwma: Ewma = { mean: 0, deviation: 0, count: 0 }

export const addEwma = (e: Ewma, value: number, alpha: number): Ewma =>
  e.count === 0
    ? { mean: value, deviation: value / 4, count: 1 }
    : {
      mean: e.mean + alpha * (value - e.mean),
      deviation: e.deviation + alpha * (Math.abs(value - e.mean) - e.deviation),
      count: e.count + 1
    }
