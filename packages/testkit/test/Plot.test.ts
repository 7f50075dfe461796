import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { Fixed } from "@sluice/core"
import * as Plot from "../src/Plot.ts"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"
import type { Trace, TraceRow } from "../src/Trace.ts"

const row = (t: number, over: Partial<TraceRow> = {}): TraceRow => ({
  t,
  concurrency: 4,
  inflightBatches: 1,
  inflightBytes: 0,
  goodputBytesPerSecond: 0,
  oracleBytesPerSecond: 0,
  p50Millis: null,
  p95Millis: null,
  latencyInflation: null,
  requests: 0,
  throttles: 0,
  batchTargetBytes: 0,
  readGatePaused: 0,
  lagRecords: 0,
  probing: 0,
  lagSeconds: 0,
  heldBytes: 0,
  ...over
})

/** `n` rows of 100 ms; `over(i)` sets row i's fields. */
const synthetic = (n: number, over: (i: number) => Partial<TraceRow>): Trace => ({
  sampleMillis: 100,
  rows: Array.from({ length: n }, (_, i) => row((i + 1) * 100, over(i))),
  events: []
})

/** The SVG's text elements' contents. */
const texts = (svg: string): Array<string> => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1] ?? "")

/** How many shapes each `rect` mark group of the SVG draws (one group per panel). */
const rectCounts = (svg: string): Array<number> =>
  [...svg.matchAll(/<g class="mark-rect role-mark[^>]*>(.*?)<\/g>/gs)].map((m) => (m[1] ?? "").split("<path").length - 1)

describe("Plot", () => {
  it("movingAverage: centred, truncated at the ends, identity for a window of 1", () => {
    expect(Plot.movingAverage([0, 6, 0, 6], 3)).toEqual([3, 2, 4, 3])
    expect(Plot.movingAverage([1, 5, 2], 1)).toEqual([1, 5, 2])
    expect(Plot.movingAverage([], 10)).toEqual([])
    // a comb (one spike of 10 every 10 samples) is flat at its mean away from the ends
    const comb = Array.from({ length: 100 }, (_, i) => (i % 10 === 0 ? 10 : 0))
    expect(new Set(Plot.movingAverage(comb, 10).slice(5, 95))).toEqual(new Set([1]))
  })

  it("points: goodput is a 1 s mean, throttles a per-second rate, the oracle per sample", () => {
    const trace = synthetic(50, (i) => ({
      goodputBytesPerSecond: i % 10 === 0 ? 10e6 : 0,
      oracleBytesPerSecond: 1e6,
      throttles: i % 10 === 3 ? 2 : 0,
      lagSeconds: i / 10,
      heldBytes: 1048576,
      inflightBytes: 524288
    }))
    const points = Plot.points(trace)
    const series = (name: Plot.Series) => points.filter((p) => p.series === name).map((p) => p.value)
    expect(series("goodput (1 s mean)").slice(5, 45).every((v) => Math.abs(v - 1) < 1e-9)).toBe(true)
    expect(series("oracle")).toEqual(Array.from({ length: 50 }, () => 1))
    // 2 throttles per second, as a rate
    expect(series("throttles/s (1 s mean)").slice(5, 45).every((v) => Math.abs(v - 2) < 1e-9)).toBe(true)
    expect(series("freshness lag").at(-1)).toBeCloseTo(4.9)
    expect(series("held (source − verified)")[0]).toBe(1)
    expect(series("in flight (pipeline)")[0]).toBe(0.5)
    // no completions, no p95 point
    expect(series("p95 latency")).toEqual([])
  })

  it("shades: contiguous probing / paused rows coalesce into intervals covering their sample windows", () => {
    const probing = [0, 1, 1, 0, 0, 1, 0, 0, 1, 1]
    const paused = [2, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    const trace = synthetic(10, (i) => ({ probing: probing[i] ?? 0, readGatePaused: paused[i] ?? 0 }))
    expect(Plot.shades(trace)).toEqual([
      { from: 0.1, to: 0.3, kind: "probing" },
      { from: 0.5, to: 0.6, kind: "probing" },
      { from: 0.8, to: 1, kind: "probing" },
      { from: 0, to: 0.2, kind: "read gate paused" }
    ])
  })

  it.effect("toSvg: probe windows and read-gate pauses shaded in every panel, one shape per interval, not per row", () =>
    Effect.gen(function*() {
      // 300 s: probing for 10 s every 60 s (5 intervals, 500 rows), the gate paused for 5 s every 100 s (3, 150)
      const trace = synthetic(3000, (i) => ({ probing: i % 600 < 100 ? 1 : 0, readGatePaused: i % 1000 >= 950 ? 1 : 0 }))
      expect(Plot.shades(trace)).toHaveLength(8)
      const svg = yield* Plot.toSvg(trace, "probes")
      expect(rectCounts(svg)).toEqual(Plot.panels.map(() => 8))
      expect(texts(svg).filter((t) => t === "probing" || t === "read gate paused")).toEqual(["probing", "read gate paused"])
      // without either, no shading and no legend entry
      const plain = yield* Plot.toSvg(synthetic(100, () => ({})), "plain")
      expect(rectCounts(plain)).toEqual([])
      expect(texts(plain)).not.toContain("probing")
      expect(texts(plain)).not.toContain("read gate paused")
    }))

  it.effect("toSvg on a real run: every panel, every series once in one legend, the oracle over goodput, events", () =>
    Effect.gen(function*() {
      const scenario = yield* Scenario.decode({
        name: "plot-small",
        seed: 3,
        duration: "12 seconds",
        source: { recordsPerSecond: 100_000, recordBytes: 100, partitions: 2 },
        store: { baseLatency: "8 millis", bandwidthPerRequest: "64 MiB/s", knee: 24, jitter: 0.1 },
        pipeline: { memoryBudget: "8 MiB", batch: { records: 20_000, maxAge: "1 second" } },
        events: [
          { at: "4 seconds", store: { baseLatency: "3 seconds" } },
          { at: "8 seconds", store: { baseLatency: "8 millis" } }
        ]
      })
      const { trace } = yield* Runner.run(scenario, { policy: "fixed:2", policies: Fixed.layer({ concurrency: 2 }), floors: { concurrency: 2 } })
      const svg = yield* Plot.toSvg(trace, "plot-small · fixed:2")
      expect(svg.startsWith("<svg")).toBe(true)
      const text = texts(svg)
      expect(text).toContain("plot-small · fixed:2")
      for (const panel of Plot.panels) expect(text).toContain(panel)
      for (const { series } of Plot.lineSeries) expect(text.filter((t) => t === series)).toHaveLength(1)
      expect(text).toContain("virtual time (s)")
      // the oracle is drawn after (over) goodput
      expect(svg.indexOf("series: oracle")).toBeGreaterThan(svg.indexOf("series: goodput (1 s mean)"))
      // fixed:2 neither probes nor pauses the read gate: nothing shaded
      expect(Plot.shades(trace)).toEqual([])
      expect(rectCounts(svg)).toEqual([])
      // both events: a dashed rule in every panel, labelled in the top one
      expect(text).toContain("baseLatency=3000")
      expect([...svg.matchAll(/aria-roledescription="rule mark"/g)]).toHaveLength(2 * Plot.panels.length)
    }))
})

describe("Plot.libraries", () => {
  it("names the ranges the package asks for: optional peers of the testkit, dev dependencies here", () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      readonly peerDependencies: Readonly<Record<string, string>>
      readonly peerDependenciesMeta: Readonly<Record<string, { readonly optional?: boolean }>>
      readonly devDependencies: Readonly<Record<string, string>>
    }
    for (const [name, range] of Object.entries(Plot.libraries)) {
      expect(manifest.peerDependencies[name], name).toBe(range)
      expect(manifest.peerDependenciesMeta[name]?.optional, name).toBe(true)
      expect(manifest.devDependencies[name], name).toBe(range)
    }
  })
})
