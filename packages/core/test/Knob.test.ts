import { describe, expect, it } from "@effect/vitest"
import { Knob } from "../src/index.ts"

const base: Knob.KnobValues = {
  concurrency: 8,
  batchTarget: { records: 100, bytes: 1000, maxAgeMillis: 60_000 },
  readGate: "open",
  rate: null
}

describe("Knob.combine", () => {
  it("keeps the base when nobody proposes", () => {
    expect(Knob.combine(base, [])).toEqual(base)
  })
  it("concurrency: the most conservative wins, never below 1", () => {
    expect(Knob.combine(base, [{ concurrency: 20 }, { concurrency: 3 }]).concurrency).toBe(3)
    expect(Knob.combine(base, [{ concurrency: 0 }]).concurrency).toBe(1)
    expect(Knob.combine(base, [{ concurrency: 20 }]).concurrency).toBe(20)
  })
  it("batch target: field-wise minimum over the fields proposed", () => {
    const t = Knob.combine(base, [{ batchTarget: { bytes: 500 } }, { batchTarget: { bytes: 800, records: 50 } }]).batchTarget
    expect(t).toEqual({ records: 50, bytes: 500, maxAgeMillis: 60_000 })
  })
  it("batch target: the configured max age bounds every proposal", () => {
    expect(Knob.combine(base, [{ batchTarget: { maxAgeMillis: 120_000 } }]).batchTarget.maxAgeMillis).toBe(60_000)
    expect(Knob.combine(base, [{ batchTarget: { maxAgeMillis: 5_000 } }]).batchTarget.maxAgeMillis).toBe(5_000)
  })
  it("read gate: paused if any policy pauses", () => {
    expect(Knob.combine(base, [{ readGate: "open" }, { readGate: "paused" }]).readGate).toBe("paused")
    expect(Knob.combine(base, [{ readGate: "open" }]).readGate).toBe("open")
  })
  it("rate: minimum of the limits, null is unlimited", () => {
    expect(Knob.combine(base, [{ rate: null }, { rate: 50 }, { rate: 20 }]).rate).toBe(20)
    expect(Knob.combine(base, [{ rate: null }]).rate).toBeNull()
  })
  it("rate: the configured rate caps every proposal (a configured 10/s never becomes 20/s)", () => {
    const capped: Knob.KnobValues = { ...base, rate: 10 }
    expect(Knob.combine(capped, [{ rate: 20 }]).rate).toBe(10)
    expect(Knob.combine(capped, [{ rate: null }]).rate).toBe(10)
    expect(Knob.combine(capped, [{ rate: 5 }, { rate: 20 }]).rate).toBe(5)
    expect(Knob.combine(capped, []).rate).toBe(10)
  })
})
