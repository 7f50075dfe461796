/**
 * Policies from their own module: `--policy ./path.mjs` (case kept), composed
 * with built-ins through `+`, checked from the trace (the knob the module
 * proposes bounds the run); clear errors for a module that is not a policy or
 * cannot be imported.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Config } from "@sluice/core"
import { Aimd, AdaptiveBatch, Composition, Throttle } from "@sluice/policies"
import * as PolicySpec from "../src/PolicySpec.ts"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"

const CAPPED = "./packages/testkit/test/fixtures/CappedPolicy.mjs"

const small = {
  name: "small",
  seed: 11,
  duration: "20 seconds",
  source: { recordsPerSecond: 200_000, recordBytes: 150, partitions: 4 },
  store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.2 },
  pipeline: { memoryBudget: "64 MiB", concurrency: 16, batch: { records: 20_000, bytes: "4 MiB", maxAge: "1 second" } }
}

describe("PolicySpec: policies from their own module", () => {
  it.effect("a module's default Policy runs with its named config, composed with built-ins; the path keeps its case", () =>
    Effect.gen(function*() {
      const resolved = yield* PolicySpec.resolve(`${CAPPED}+throttle+shared`)
      expect(resolved.label).toBe(`${CAPPED}+throttle+shared`)
      const scenario = yield* Scenario.decode(small)
      const { trace, summary } = yield* Runner.run(scenario, { policy: resolved.label, policies: resolved.policies })
      expect(summary.failure).toBeNull()
      // The module caps concurrency at 3 (the pipeline's base is 16): the most conservative proposal wins.
      const concurrency = trace.rows.map((r) => r.concurrency)
      expect(Math.max(...concurrency)).toBe(3)
      expect(summary.bytesVerified).toBeGreaterThan(0)
    }))

  it.effect("a module Policy's declared floors (Policy.bounds of its decoded config) are the spec's floors, composed too (issue 29)", () =>
    Effect.gen(function*() {
      expect((yield* PolicySpec.resolve(CAPPED)).floors).toEqual({ concurrency: 3 })
      // Composed, the lowest floor counts: the knobs' combiners take the minimum of
      // the proposals, so throttle (floor 1) may rightly cut below the module's 3,
      // and fixed:5 beside it is held to 3.
      expect((yield* PolicySpec.resolve(`${CAPPED}+throttle+shared`)).floors).toEqual({ concurrency: 1 })
      expect((yield* PolicySpec.resolve(`${CAPPED}+fixed:5`)).floors).toEqual({ concurrency: 3 })
    }))

  it.effect("a built-in composition's floors are its members' declared ones, the lowest per knob (issue 29)", () =>
    Effect.gen(function*() {
      // From the policies' own declarations (Policy.bounds of their default configs), not from the testkit.
      const concurrencyFloor = (yield* Config.decode("throttle", Throttle.policy.config, Composition.defaultsBase.throttle)).floor
      const batchFloor = (yield* Config.decode("batch", AdaptiveBatch.policy.config, {})).minBytes
      expect((yield* PolicySpec.resolve("default")).floors).toEqual({ concurrency: concurrencyFloor, batchBytes: batchFloor })
      expect((yield* PolicySpec.resolve("batch")).floors).toEqual({ batchBytes: batchFloor })
      expect((yield* PolicySpec.resolve("fixed:6+aimd")).floors).toEqual({ concurrency: Math.min(6, (yield* Config.decode("aimd", Aimd.policy.config, {})).floor) })
      expect((yield* PolicySpec.resolve("shared")).floors).toEqual({})
    }))

  it.effect("a module whose default export is not a policy, or that cannot be imported, is a PolicySpecError saying so", () =>
    Effect.gen(function*() {
      const notPolicy = yield* Effect.flip(PolicySpec.resolve("./packages/testkit/test/fixtures/NotAPolicy.mjs"))
      expect(notPolicy.message).toContain("default export must be a policies Layer")
      const missing = yield* Effect.flip(PolicySpec.resolve("./no/such/Policy.mjs+throttle"))
      expect(missing.message).toContain(`could not import policy module "./no/such/Policy.mjs"`)
      const unknown = yield* Effect.flip(PolicySpec.resolve("no-such-policy-package"))
      expect(unknown.message).toContain("unknown policy")
      expect(unknown.message).toContain("as a package")
    }))

  it.effect("a package inside a composition (issue 29): composed as its built path is, the built-ins beside it parsed together", () =>
    Effect.gen(function*() {
      // sluice-policy-example is examples/custom-policy, linked into node_modules by npm ci (built by npm test).
      const byName = yield* PolicySpec.resolve("sluice-policy-example+throttle+shared")
      const byPath = yield* PolicySpec.resolve("./examples/custom-policy/dist/index.js+throttle+shared")
      expect(byName.label).toBe("sluice-policy-example+throttle+shared")
      const scenario = yield* Scenario.decode(small)
      const a = yield* Runner.run(scenario, { policy: byName.label, policies: byName.policies })
      const b = yield* Runner.run(scenario, { policy: byPath.label, policies: byPath.policies })
      expect(a.summary.failure).toBeNull()
      expect(a.summary.bytesVerified).toBeGreaterThan(0)
      // Same seed, same policies: the same run, row for row.
      expect(a.trace.rows.map((r) => r.concurrency)).toEqual(b.trace.rows.map((r) => r.concurrency))
      expect(a.summary.bytesVerified).toBe(b.summary.bytesVerified)
    }))

  it.effect("a typo is an unknown policy with a suggestion, alone or composed; a name that is no package says both", () =>
    Effect.gen(function*() {
      const alone = yield* Effect.flip(PolicySpec.resolve("thrttle"))
      expect(alone.message).toContain(`unknown policy "thrttle"`)
      expect(alone.message).toContain(`(did you mean "throttle"?)`)
      const composed = yield* Effect.flip(PolicySpec.resolve("aimd+thrttle+shared"))
      expect(composed.message).toContain(`unknown policy "thrttle" in "aimd+thrttle+shared" (did you mean "throttle"?)`)
      expect(composed.message).toContain("as a package")
      const far = yield* Effect.flip(PolicySpec.resolve("aimd+zzzzzzzz"))
      expect(far.message).not.toContain("did you mean")
    }))
})
