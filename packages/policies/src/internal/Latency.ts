/**
 * Latency measurement shared by the concurrency cores.
 *
 * @internal
 */
import type { SignalBus } from "@sluice/core"
import * as Fit from "./Fit.ts"

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
export const normalised = (sample: Pick<UploadSample, "latencyMillis" | "bytes">, referenceBytes: number): number =>
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
 * A learned size normalisation: `referenceBytes = a / b` for `latency ≈ a + b·bytes`,
 * so that `latency / (1 + bytes / ref)` is the same for every size on an
 * unloaded store (it is `a`), and scales with load.
 *
 * `a` is the mean latency of **bodiless** requests (`bytes = 0`: manifest
 * uploads, verifications) and `b` the mean transfer time per byte of the others
 * beyond `a` — both measured under the same load, so queueing inflates them
 * alike and cannot move their ratio. Until bodiless requests are seen, a
 * least-squares fit of the sized samples stands in. (The fit alone is not
 * enough: with batches of two or three sizes its intercept swings by 10× on
 * 10 % jitter, and each swing moved the baseline.)
 */
export interface Reference {
  readonly bytes: number
  readonly fit: Fit.Fit
  /** Mean latency (ms, EWMA) of bodiless requests; 0 until sampled. */
  readonly overhead: number
  /** Mean transfer time per byte (ms, EWMA) beyond `overhead`; 0 until sampled. */
  readonly perByte: number
}

export const initReference = (bytes: number): Reference => ({ bytes, fit: Fit.emptyFit, overhead: 0, perByte: 0 })

/** Forgetting per sample of the fallback fit. */
const FORGET = 0.99
/** EWMA weight of the overhead and per-byte means. */
const WEIGHT = 0.05
/** The reference moves only when the estimate is off by more than this factor. */
const HYSTERESIS = 1.25
const MIN_REFERENCE = 16 * 1024
const MAX_REFERENCE = 1024 * 1024 * 1024

const ewma = (previous: number, sample: number): number => (previous === 0 ? sample : previous + WEIGHT * (sample - previous))

/** `a / b` from the bodiless mean and the per-byte mean; `undefined` until both are sampled. */
export const measuredRatio = (r: Reference): number | undefined =>
  r.overhead > 0 && r.perByte > 0 ? r.overhead / r.perByte : undefined

/** `a / b` from the bodiless mean and the per-byte mean, else from the fit; `undefined` while unknown. */
const estimate = (r: Reference): number | undefined => {
  const measured = measuredRatio(r)
  if (measured !== undefined) return measured
  const solved = r.fit.n >= 8 ? Fit.solve(r.fit) : undefined
  return solved === undefined || solved.a <= 0 || solved.b <= 0 ? undefined : solved.a / solved.b
}

/**
 * Adds a sample (any stage: bodiless ones measure `a`). Returns the new
 * reference; `reference.bytes` differs from `r.bytes` when it moved (the caller
 * re-normalises what it keeps with {@link rescaleFactor}).
 */
export const learnReference = (r: Reference, sample: UploadSample): Reference => {
  if (sample.bytes <= 0) return { ...r, overhead: ewma(r.overhead, sample.latencyMillis) }
  const fit = Fit.addSample(r.fit, sample.bytes, sample.latencyMillis, FORGET)
  const perByte = r.overhead > 0 ? ewma(r.perByte, Math.max(1e-12, sample.latencyMillis - r.overhead) / sample.bytes) : r.perByte
  const next = { ...r, fit, perByte }
  const solved = estimate(next)
  if (solved === undefined) return next
  const candidate = Math.min(MAX_REFERENCE, Math.max(MIN_REFERENCE, solved))
  const ratio = candidate / r.bytes
  return ratio < HYSTERESIS && ratio > 1 / HYSTERESIS ? next : { ...next, bytes: candidate }
}

/**
 * The factor that turns a value of a `bytes`-sized sample normalised with
 * reference `from` into the same sample normalised with reference `to` (exact
 * for that size).
 */
export const rescaleFactor = (bytes: number, from: number, to: number): number =>
  (1 + bytes / Math.max(1, from)) / (1 + bytes / Math.max(1, to))

/** Mean size (bytes) of the sized samples of a reference's fit (0 before any). */
export const meanBytes = (r: Reference): number => (r.fit.n > 0 ? r.fit.sx / r.fit.n : 0)

/** Rescales an EWMA of normalised values (see {@link rescaleFactor}). */
export const rescaleEwma = (e: Ewma, factor: number): Ewma =>
  factor === 1 ? e : { ...e, mean: e.mean * factor, deviation: e.deviation * factor }
