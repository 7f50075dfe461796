/**
 * The fit recovers the model it is given: cells computed from known
 * parameters with the store model's own formula (mean latency `L₀(1 + j)`,
 * standard deviation `L₀ · j`, throughput from `Calibration.predict`) give
 * back those parameters; a sweep without two sizes at in-flight 1 is refused.
 */
import { describe, expect, it } from "vitest"
import { Calibration } from "../src/index.ts"

const truth: Calibration.StoreModel = {
  baseLatencyMillis: 30,
  bandwidthBytesPerSecond: 20e6,
  knee: 6,
  jitter: 0.2,
  throttleAbove: 16,
  throttleProbability: 0.3
}

const cellOf = (model: Calibration.StoreModel, inflight: number, objectBytes: number): Calibration.Cell => {
  const l0 = (model.baseLatencyMillis + (objectBytes * 1000) / model.bandwidthBytesPerSecond) * Math.max(1, inflight / model.knee)
  const throttled = model.throttleAbove !== null && inflight > model.throttleAbove
  const requests = 1000
  return {
    inflight,
    objectBytes,
    seconds: 10,
    requests,
    throttles: throttled ? Math.round(requests * model.throttleProbability) : 0,
    errors: 0,
    bytesPerSecond: Calibration.predict(model, inflight, objectBytes),
    latencyMeanMillis: l0 * (1 + model.jitter),
    latencyStdMillis: l0 * model.jitter
  }
}

describe("Calibration.fit", () => {
  it("recovers latency, bandwidth, knee, jitter and the throttle onset from a sweep of the model itself", () => {
    const cells = [65_536, 1 << 20, 8 << 20].flatMap((s) => [1, 2, 4, 8, 16, 32].map((n) => cellOf(truth, n, s)))
    const fit = Calibration.fit(cells)
    expect(fit.model.baseLatencyMillis).toBeCloseTo(30, 6)
    expect(fit.model.bandwidthBytesPerSecond / 20e6).toBeCloseTo(1, 6)
    expect(fit.model.jitter).toBeCloseTo(0.2, 6)
    expect(fit.model.knee).toBe(6)
    expect(fit.model.throttleAbove).toBe(16)
    expect(fit.model.throttleProbability).toBeCloseTo(0.3, 2)
    expect(fit.maxError).toBeLessThan(0.01)
    // The store block is the scenario's: a number of ms, bytes per second, the knee.
    expect(Calibration.storeBlock(fit.model)).toMatchObject({ baseLatency: 30, bandwidthPerRequest: 20_000_000, knee: 6, throttleAbove: 16 })
  })

  it("says when the model does not fit: a store whose throughput falls past its knee", () => {
    const cells = [65_536, 1 << 20].flatMap((s) => [1, 4, 16].map((n) => cellOf({ ...truth, throttleAbove: null }, n, s)))
    // A host that collapses under load (a quarter of the knee's throughput at 16): no knee fits that.
    const worse = cells.map((c) => (c.inflight === 16 ? { ...c, bytesPerSecond: c.bytesPerSecond / 4 } : c))
    const fit = Calibration.fit(worse)
    expect(fit.cells).toHaveLength(6)
    expect(fit.maxError).toBeGreaterThan(0.2)
    // The same sweep without the collapse fits (the error is the collapse's).
    expect(Calibration.fit(cells).maxError).toBeLessThan(0.01)
  })

  it("refuses a sweep with one size at in-flight 1, naming what it needs", () => {
    const cells = [1, 4].map((n) => cellOf(truth, n, 1 << 20))
    expect(() => Calibration.fit(cells)).toThrow(/in-flight 1 at two object sizes or more \(has 1\)/)
  })
})
