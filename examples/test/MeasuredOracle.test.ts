/**
 * The replay's measured oracle counts its bytes when a batch of them would be
 * verified: one measured upload plus a manifest and a verify after they are
 * served, re-timed when the store changes.
 */
import { describe, expect, it } from "vitest"
import * as MeasuredOracle from "../replay/MeasuredOracle.ts"

const cell = (inflight: number, objectBytes: number, bytesPerSecond: number, latencyMeanMillis: number) => ({
  inflight, objectBytes, seconds: 10, requests: 100, throttles: 0, errors: 0, bytesPerSecond, latencyMeanMillis, latencyStdMillis: 0
})

const MiB = 1 << 20
// A fast store: small objects are quick and carry 40 MB/s at 8 in flight; large ones carry 100 MB/s.
const fast: MeasuredOracle.MeasuredPhase = { requestMillis: 10, cells: [cell(8, 2 * MiB, 40e6, 400), cell(8, 8 * MiB, 100e6, 700), cell(32, 8 * MiB, 90e6, 3000)] }
// The same grid on a store ten times slower.
const slow: MeasuredOracle.MeasuredPhase = { requestMillis: 100, cells: [cell(8, 2 * MiB, 4e6, 4000), cell(8, 8 * MiB, 10e6, 7000), cell(32, 8 * MiB, 9e6, 30000)] }

describe("MeasuredOracle", () => {
  it("carries a rate on the cell that verifies it soonest, and counts the bytes one batch later", () => {
    const low = MeasuredOracle.sent(fast, 30e6, 30e6)
    expect(low).toMatchObject({ objectBytes: 2 * MiB, inflight: 8 })
    const high = MeasuredOracle.sent(fast, 60e6, 60e6)
    expect(high).toMatchObject({ objectBytes: 8 * MiB, inflight: 8 })
    // 400 ms + two 10 ms requests: not in 400 ms, all of it by 420 ms.
    const before = MeasuredOracle.advance(fast, [low!], 400)
    expect(before.verifiedBytes).toBe(0)
    expect(MeasuredOracle.advance(fast, before.inFlight, 21).verifiedBytes).toBe(30e6)
  })

  it("above every cell, the best one carries it", () => {
    expect(MeasuredOracle.sent(fast, 200e6, 200e6)).toMatchObject({ objectBytes: 8 * MiB, inflight: 8 })
  })

  it("re-times a batch under way when the store changes", () => {
    const batch = MeasuredOracle.sent(fast, 60e6, 60e6)!
    // Half of its 720 ms on the fast store, then the rest at the slow store's 7 200 ms for the same cell.
    const half = MeasuredOracle.advance(fast, [batch], 360)
    expect(MeasuredOracle.advance(slow, half.inFlight, 3500).verifiedBytes).toBe(0)
    expect(MeasuredOracle.advance(slow, half.inFlight, 3700).verifiedBytes).toBe(60e6)
  })

  it("a store that answered nothing keeps the bytes in flight", () => {
    const down: MeasuredOracle.MeasuredPhase = { requestMillis: 10, cells: [cell(8, 8 * MiB, 0, 0)] }
    expect(MeasuredOracle.sent(down, 1e6, 1e6)).toBeNull()
    const batch = MeasuredOracle.sent(fast, 60e6, 60e6)!
    const step = MeasuredOracle.advance(down, [batch], 60_000)
    expect(step.verifiedBytes).toBe(0)
    expect(step.inFlight).toHaveLength(1)
  })
})
