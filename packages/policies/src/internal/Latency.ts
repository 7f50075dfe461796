/**
 * Latency measurement shared by the concurrency cores.
 *
 * @internal
 */
import type { SignalBus } from "@sluice/core"
import * as Fit from "../batch/AdaptiveBatch.ts"

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

/**
 * A learned size normalisation: `referenceBytes = a / b` from a least-squares
 * fit of `latency ≈ a + b·bytes`, so that `latency / (1 + bytes / ref)` is the
 * same for every size on an unloaded store (it is `a`), and scales with load.
 */
export interface Reference {
  readonly bytes: number
  readonly fit: Fit.Fit
}

export const initReference = (bytes: number): Reference => ({ bytes, fit: Fit.emptyFit })

/** Forgetting per sample of the reference fit. */
const FORGET = 0.99
/** The reference moves only when the fit says it is off by more than this factor. */
const HYSTERESIS = 1.25
const MIN_REFERENCE = 16 * 1024
const MAX_REFERENCE = 1024 * 1024 * 1024

/**
 * Adds a sample to the reference fit. Returns the new reference and `rescale`,
 * the factor that converts a value normalised with the old reference into one
 * normalised with the new one (at the fit's mean size); `1` when unchanged.
 */
export const learnReference = (
  r: Reference,
  sample: UploadSample
): { readonly reference: Reference; readonly rescale: number } => {
  if (sample.bytes <= 0) return { reference: r, rescale: 1 }
  const fit = Fit.addSample(r.fit, sample.bytes, sample.latencyMillis, FORGET)
  const solved = fit.n >= 8 ? Fit.solve(fit) : undefined
  if (solved === undefined || solved.a <= 0 || solved.b <= 0) return { reference: { ...r, fit }, rescale: 1 }
  const candidate = Math.min(MAX_REFERENCE, Math.max(MIN_REFERENCE, solved.a / solved.b))
  const ratio = candidate / r.bytes
  if (ratio < HYSTERESIS && ratio > 1 / HYSTERESIS) return { reference: { ...r, fit }, rescale: 1 }
  const x = fit.sx / fit.n
  return { reference: { bytes: candidate, fit }, rescale: (1 + x / r.bytes) / (1 + x / candidate) }
}

/** Rescales an EWMA of normalised values (see {@link learnReference}). */
export const rescaleEwma = (e: Ewma, factor: number): Ewma =>
  factor === 1 ? e : { ...e, mean: e.mean * factor, deviation: e.deviation * factor }
