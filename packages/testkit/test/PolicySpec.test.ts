/**
 * Policies from their own module: `--policy ./path.mjs` (case kept), composed
 * with built-ins through `+`, checked from the trace (the knob the module
 * proposes bounds the run); clear errors for a module that is not a policy or
 * cannot be imported.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
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
})
