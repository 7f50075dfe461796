/**
 * Samples and rounds: what each completed request teaches the model (the
 * size normalisation, the latency minimum, the delivery rate, the object size,
 * bodiless requests per object), and the end of a round — when a request
 * that began after the round began completes — where each mode takes its
 * round's verdict (`Startup.ts`, `ProbeBw.ts`).
 */
import type { SignalBus } from "@sluice/core"
import * as Delivery from "../Delivery.ts"
import * as Latency from "../Latency.ts"
import { bdp } from "./Bdp.ts"
import { onLatency } from "./MinLatency.ts"
import { cruiseRound, downRound, downSample, upRound } from "./ProbeBw.ts"
import { probeSample, RECENT_UPLOADS } from "./ProbeRtt.ts"
import { drainRound, startupRound } from "./Startup.ts"
import { emptyRound, MIN_MILLIS, observe, observeLoad } from "./State.ts"
import type { DeliveryRateState, RoundStats } from "./State.ts"
import { target } from "./Target.ts"
import { clearedAbove } from "./Throttles.ts"

/** Rounds of the rate's max filter (BBR's bandwidth filter: 10 rounds). */
const RATE_WINDOW_ROUNDS = 10
/** `sizeRatio`: EWMA weight per object upload. */
const RATIO_WEIGHT = 0.01
/** Mean object size: EWMA weight of a new sample. */
const SIZE_WEIGHT = 0.1
/** Bodiless requests per object: EWMA weight. */
const BODILESS_WEIGHT = 0.05
/** Object uploads stand in for bodiless requests in the latency minimum while there are fewer than this many bodiless requests per object. */
const BODILESS_MEASURE = 0.25

/**
 * The next `sizeRatio`. The EWMA starts from the first measured `a / b`, as
 * every mean here starts from its first sample: started from `REFERENCE_BYTES`
 * (1 MiB) against a store whose `a / b` is 0.3 MiB, at 1 % per object it took
 * ~100 objects to come within a factor of e, and until then the BDP was up to
 * 2.5× too small (three instances sharing a store sat at 4–6 uploads each,
 * taking 0.66–0.72 of the oracle in the first 10 s where the AIMD default took
 * 0.77–0.81).
 */
const smoothRatio = (s: DeliveryRateState): number => {
  const measured = Latency.measuredRatio(s.reference)
  if (measured !== undefined && !s.ratioMeasured) return measured
  return s.sizeRatio + RATIO_WEIGHT * ((measured ?? s.reference.bytes) - s.sizeRatio)
}

/** Re-normalises what was measured with the old reference, each exactly for its own size. */
const learn = (s: DeliveryRateState, sample: SignalBus.UploadSample): DeliveryRateState => {
  const reference = Latency.learnReference(s.reference, sample)
  const from = s.reference.bytes
  const to = reference.bytes
  if (to === from) return { ...s, reference }
  const round = (r: RoundStats): RoundStats => ({ ...r, minLatency: r.minLatency * Latency.rescaleFactor(r.minBytes, from, to) })
  return {
    ...s,
    reference,
    minLatency: s.minLatency * Latency.rescaleFactor(s.minLatencyBytes, from, to),
    round: round(s.round),
    lastRound: round(s.lastRound),
    probe: s.probe === undefined ? undefined : { ...s.probe, before: round(s.probe.before), seen: round(s.probe.seen) }
  }
}

/** The round ends: the rate filter takes its maximum, and the mode its verdict. */
const endRound = (s: DeliveryRateState, now: number): DeliveryRateState => {
  const r = s.round
  const rates = r.rate > 0 ? Delivery.pushRound(s.rates, r.rate, RATE_WINDOW_ROUNDS) : s.rates
  const caught = s.restoreFloor > 0 && (bdp({ ...s, rates }) ?? 0) >= s.restoreFloor
  const next: DeliveryRateState = {
    ...s,
    restoreFloor: caught ? 0 : s.restoreFloor,
    rates,
    round: emptyRound(now),
    lastRound: r,
    previousInflight: s.lastRound.inflight,
    rounds: s.rounds + 1,
    phaseRounds: s.phaseRounds + 1
  }
  switch (s.mode) {
    case "probing":
      return next
    case "startup":
      return startupRound(next, r)
    case "drain":
      return drainRound(next, r, target(next))
    case "probeUp":
      return upRound(next, r, s.lastRound.inflight)
    case "probeDown":
      return downRound(next)
    case "cruise":
      return cruiseRound(next, r, s.lastRound)
  }
}

/** A completed request. */
export const onSample = (s0: DeliveryRateState, sample: SignalBus.UploadSample, now: number): DeliveryRateState => {
  let s = learn(s0, sample)
  const value = Math.max(MIN_MILLIS, Latency.normalised(sample, s.reference.bytes))
  const object = sample.stage === "object_upload" && sample.bytes > 0
  // The minimum is measured on bodiless requests (manifest, verify): their
  // latency is the store's per-request time, whatever the object sizes, and
  // cannot drift with the learned size normalisation (objects' normalised
  // latency moved ±25 % with it, and read as a queue). Object uploads stand
  // in while there are none.
  const measures = !object || s.bodilessPerObject < BODILESS_MEASURE
  if (measures) s = onLatency(s, sample, value, now)
  if (sample.startedAt >= s.round.start) s = { ...s, round: measures ? observe(s.round, sample, value) : observeLoad(s.round, sample) }
  if (measures) s = probeSample(s, sample, value, now)
  if (!object) return { ...s, bodilessSinceObject: s.bodilessSinceObject + 1 }
  s = {
    ...s,
    objectMinLatency: Math.min(s.objectMinLatency, value),
    recentUploads: [...s.recentUploads.slice(s.recentUploads.length >= RECENT_UPLOADS ? 1 : 0), [value, sample.inflightAtStart] as const]
  }
  s = clearedAbove(s, sample)
  const { deliveries, rate } = Delivery.complete(s.deliveries, sample.startedAt, now, sample.bytes)
  const limited = sample.inflightAtStart >= sample.limitAtStart
  const counts = limited || rate > Delivery.maxOf(s.rates, s.round.rate)
  s = {
    ...s,
    deliveries,
    round: counts ? { ...s.round, rate: Math.max(s.round.rate, rate) } : s.round,
    objectBytes: s.objectBytes === 0 ? sample.bytes : s.objectBytes + SIZE_WEIGHT * (sample.bytes - s.objectBytes),
    sizeRatio: smoothRatio(s),
    ratioMeasured: s.ratioMeasured || Latency.measuredRatio(s.reference) !== undefined,
    bodilessPerObject: s.bodilessPerObject + BODILESS_WEIGHT * (s.bodilessSinceObject - s.bodilessPerObject),
    bodilessSinceObject: 0
  }
  s = downSample(s, sample)
  return sample.startedAt >= s.round.start && s.mode !== "probing" ? endRound(s, now) : s
}
