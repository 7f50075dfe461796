import { describe, expect, it } from "@effect/vitest"
import * as Rng from "../src/Rng.ts"

describe("Rng", () => {
  it("is deterministic for a seed and differs between seeds", () => {
    const a = Rng.make(7)
    const b = Rng.make(7)
    const c = Rng.make(8)
    const xs = Array.from({ length: 100 }, () => a.uniform())
    expect(Array.from({ length: 100 }, () => b.uniform())).toEqual(xs)
    expect(Array.from({ length: 100 }, () => c.uniform())).not.toEqual(xs)
  })

  it("draws uniforms in [0, 1) and Exp(1) with mean 1", () => {
    const rng = Rng.make(1)
    let sum = 0
    for (let i = 0; i < 100_000; i++) {
      const u = rng.uniform()
      expect(u >= 0 && u < 1).toBe(true)
    }
    for (let i = 0; i < 100_000; i++) sum += rng.exponential()
    expect(sum / 100_000).toBeCloseTo(1, 1)
  })

  it("has a pure core: next(state) gives the same value as the generator", () => {
    const [u] = Rng.next(Rng.seedState(3))
    expect(Rng.make(3).uniform()).toBe(u)
  })
})
