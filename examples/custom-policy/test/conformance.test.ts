/**
 * The testkit's conformance suite for ARC, as any third-party policy runs it:
 * config decodes; never below floor / above ceiling (standard drive + 5 000
 * seeded random signals); backs off under sustained overload; recovers through
 * its probe and NOT without it (the ablation: `Policy.ablate`, from
 * `withoutProbe`); deterministic; finite proposals.
 */
import { Policy } from "@sluice/core"
import { Properties } from "@sluice/testkit"
import { conformance } from "@sluice/testkit/conformance"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Arc } from "../src/index.ts"

conformance(Arc.policy, {})
conformance(Arc.policy, { floor: 2, ceiling: 48, initial: 4 })

describe("ARC's probe ablation, read off the standard world", () => {
  const config = Schema.decodeUnknownSync(Arc.ArcConfig)({})

  it("withoutProbe really disables the probe: PinnedProbe as declared, NoProbe ablated", () => {
    expect(Arc.policy.probe(config)._tag).toBe("PinnedProbe")
    expect(Policy.probeDisabled(Arc.policy, config)).toBe(true)
    expect(Policy.ablate(Arc.policy).probe(config)).toEqual({ _tag: "NoProbe", reason: "probe: false" })
  })

  it("with the probe it is back within the 60 s bound; without it, concurrency is still at the floor", () => {
    const verdict = Properties.recoversAfterOverload(Arc.policy, config)
    expect(verdict.pass, verdict.detail).toBe(true)
    expect(verdict.detail).toMatch(/with its PinnedProbe; with the probe disabled, after 60 s: concurrency still 1/)
    // The same, read off the two drives directly.
    const world = Properties.standardWorld
    const after = (p: Policy.Policy<Arc.ArcConfig, Arc.ArcState>) =>
      Properties.drive(p, config, world).samples.filter((s) => s.t > world.overloadUntil && s.t <= world.overloadUntil + world.recoveryMillis)
    const before = Properties.drive(Arc.policy, config, world).samples.filter((s) => s.t <= world.overloadFrom).at(-1)?.knobs.concurrency ?? 0
    expect(after(Arc.policy).some((s) => s.knobs.concurrency >= 0.8 * before)).toBe(true)
    const ablated = after(Policy.ablate(Arc.policy)).map((s) => s.knobs.concurrency)
    expect(Math.max(...ablated)).toBeLessThanOrEqual(2)
    expect(ablated.at(-1)).toBe(config.floor)
  })
})
