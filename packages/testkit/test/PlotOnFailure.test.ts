/**
 * The plot-on-failure helper (`PlotOnFailure`): the failure path must work
 * the day a bound fails in CI, so it is tested: a failing assertion on a short
 * run (20 virtual seconds, ~0.3 s) fails with the original message followed
 * by the path of an SVG that exists, the trace and the summary beside it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as PlotOnFailure from "../src/PlotOnFailure.ts"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"

describe("PlotOnFailure.expectWithPlot", () => {
  // The failure path must work the day a bound fails in CI, so it is tested
  // too: a failing assertion on a short run (20 virtual seconds, ~0.3 s) must
  // fail with the original message followed by the path of an SVG that exists.
  it.effect("a failed assertion writes the plot, the trace and the summary, and names them in the message", () =>
    Effect.gen(function*() {
      const world = yield* Scenario.decode({
        name: "plot-on-failure",
        seed: 1,
        duration: "20 seconds",
        source: { recordsPerSecond: 100_000, recordBytes: 150, partitions: 2 },
        store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24 }
      })
      const result = yield* Runner.run(world)
      const dir = mkdtempSync(join(tmpdir(), "sluice-plot-on-failure-"))
      const exit = yield* Effect.exit(
        PlotOnFailure.expectWithPlot(result, "impossible", (summary) => expect(summary.goodputRatio, "impossible").toBeGreaterThan(2), { dir })
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      const message = error instanceof Error ? error.message : String(error)
      expect(message).toMatch(/^impossible: expected [\d.]+ to be greater than 2\n  plot: {4}/)
      const svg = /plot: +(\S+\.svg)/.exec(message)?.[1] ?? ""
      expect(svg).toBe(join(dir, "impossible.svg"))
      expect(existsSync(svg)).toBe(true)
      const text = readFileSync(svg, "utf8")
      expect(text.startsWith("<svg")).toBe(true)
      expect(text.trimEnd().endsWith("</svg>")).toBe(true)
      expect(readFileSync(join(dir, "impossible.csv"), "utf8").split("\n")[0]).toMatch(/^t,concurrency,/)
      expect(message).toContain(join(dir, "impossible.summary.json"))
      rmSync(dir, { recursive: true, force: true }) // kept when an expectation above fails, to look at
    }), 60_000)
})
