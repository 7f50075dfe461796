import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { Fixed } from "@sluice/core"
import { Policy } from "@sluice/core"
import { conformance, conformanceLayer } from "../src/Conformance.ts"
import * as Properties from "../src/Properties.ts"

/** A small adaptive policy: halve on throttle or latency per byte > 4x the best seen; +1 per quiet second. */
const HalveConfig = Schema.Struct({ floor: Schema.Int, ceiling: Schema.Int })
interface HalveState {
  readonly limit: number
  /** Best object-upload latency per byte seen. */
  readonly minLatency: number
  readonly lastChange: number
}
const Halver: Policy.Policy<typeof HalveConfig.Type, HalveState> = {
  name: "halver",
  config: HalveConfig,
  bounds: (c) => ({ concurrency: { floor: c.floor, ceiling: c.ceiling } }),
  probe: () => ({ _tag: "RestoreProbe", afterMillis: 1_000 }),
  init: () => ({ limit: 8, minLatency: Infinity, lastChange: 0 }),
  initial: (s) => ({ concurrency: s.limit }),
  step: (s, signal, now) => {
    // Only object uploads measure the store (manifests and verifies are tiny),
    // and per byte, so that batch sizes do not read as congestion.
    const upload = signal._tag === "UploadSample" && signal.stage === "object_upload" ? signal : undefined
    const perByte = upload === undefined ? Infinity : upload.latencyMillis / Math.max(1, upload.bytes)
    const congested = (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") ||
      (upload !== undefined && perByte > 4 * s.minLatency)
    const minLatency = Math.min(s.minLatency, perByte)
    if (congested && now - s.lastChange >= 500) {
      const limit = Math.max(1, Math.floor(s.limit / 2))
      return { state: { limit, minLatency, lastChange: now }, proposal: { concurrency: limit } }
    }
    if (signal._tag === "Tick" && now - s.lastChange >= 1_000 && s.limit < 64) {
      return { state: { limit: s.limit + 1, minLatency, lastChange: now }, proposal: { concurrency: s.limit + 1 } }
    }
    return { state: { ...s, minLatency } }
  }
}

// The suite as a third party runs it: every property passes for an adaptive policy…
conformance(Halver, { floor: 1, ceiling: 64 })
// …and Fixed, which never moves, fails backoff and recovery by design.
conformance(Fixed.policy, { concurrency: 8 }, { expectFailure: ["backsOffUnderOverload", "recoversAfterOverload"] })

// The same proofs for policies shipped only as layers, run in the simulated pipeline.
conformanceLayer("halver", Policy.layer(Halver, { floor: 1, ceiling: 64 }), { floor: 1, ceiling: 64 })
conformanceLayer("fixed:8", Fixed.layer({ concurrency: 8 }), { floor: 8, ceiling: 8 }, {
  expectFailure: ["backsOffUnderOverload", "recoversAfterOverload"]
})

describe("Properties", () => {
  it("Fixed passes bounds, determinism and finiteness, and fails backoff and recovery", () => {
    const verdicts = Properties.all(Fixed.policy, { concurrency: 8 })
    expect(verdicts.filter((v) => !v.pass).map((v) => v.property)).toEqual(["backsOffUnderOverload", "recoversAfterOverload"])
    expect(verdicts.find((v) => v.property === "recoversAfterOverload")?.detail).toContain("NoProbe")
  })

  it("catches a policy that goes below its floor or proposes NaN", () => {
    const Broken: Policy.Policy<{}, number> = {
      name: "broken",
      config: Schema.Struct({}),
      bounds: () => ({ concurrency: { floor: 2, ceiling: 16 } }),
      probe: () => ({ _tag: "RestoreProbe", afterMillis: 1_000 }),
      init: () => 8,
      initial: (s) => ({ concurrency: s }),
      step: (s, signal) => signal._tag === "Failure" ? { state: s / 2, proposal: { concurrency: s / 2 } } : { state: s }
    }
    expect(Properties.withinBounds(Broken, {}).pass).toBe(false)
    const NaNPolicy: Policy.Policy<{}, number> = {
      ...Broken,
      bounds: () => ({}),
      step: (s, signal) => signal._tag === "Tick" ? { state: s, proposal: { concurrency: Number.NaN } } : { state: s }
    }
    expect(Properties.finiteProposals(NaNPolicy, {})).toMatchObject({ pass: false })
  })

  it("drives the core in closed loop: the adaptive policy backs off under overload and comes back", () => {
    const { samples } = Properties.drive(Halver, { floor: 1, ceiling: 64 })
    const at = (t: number) => samples.find((s) => s.t === t)?.knobs.concurrency
    expect(at(60_000)).toBeGreaterThan(at(119_000) ?? Infinity)
    expect(at(119_000)).toBeLessThanOrEqual(4)
    expect(at(180_000)).toBeGreaterThanOrEqual(0.8 * (at(60_000) ?? Infinity))
  })
})
