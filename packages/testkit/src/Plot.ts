/**
 * Plots: a trace rendered to SVG with Vega-Lite (compiled to Vega and rendered
 * server-side by Vega's headless view; no browser, no canvas). Four panels share
 * the time axis: concurrency and in-flight batches, goodput vs the oracle, p95
 * latency, in-flight bytes; the scenario's events are vertical rules.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as vega from "vega"
import * as vl from "vega-lite"
import type { TopLevelSpec } from "vega-lite"
import type { Trace } from "./Trace.ts"

/**
 * Rendering failed.
 *
 * @since 0.1.0
 */
export class PlotError extends Schema.TaggedError<PlotError>()("PlotError", {
  message: Schema.String
}) {}

interface Point {
  readonly t: number
  readonly panel: string
  readonly series: string
  readonly value: number
}

const panels = ["requests in flight", "goodput (MB/s)", "p95 object upload latency (ms)", "bytes held (MiB)"] as const

/**
 * The data points of a trace, long format (`t` in seconds).
 *
 * @since 0.1.0
 */
export const points = (trace: Trace): Array<Point> => {
  const out: Array<Point> = []
  for (const r of trace.rows) {
    const t = r.t / 1000
    out.push({ t, panel: panels[0], series: "concurrency limit", value: r.concurrency })
    out.push({ t, panel: panels[0], series: "uploading", value: r.inflightBatches })
    out.push({ t, panel: panels[1], series: "goodput", value: r.goodputBytesPerSecond / 1e6 })
    out.push({ t, panel: panels[1], series: "oracle", value: r.oracleBytesPerSecond / 1e6 })
    if (r.p95Millis !== null) out.push({ t, panel: panels[2], series: "p95", value: r.p95Millis })
    out.push({ t, panel: panels[3], series: "in flight", value: r.inflightBytes / 1048576 })
  }
  return out
}

/**
 * The Vega-Lite spec of a trace's plot.
 *
 * @since 0.1.0
 */
export const spec = (trace: Trace, title: string): TopLevelSpec => {
  const data = points(trace)
  const events = trace.events.map((e) => ({ t: e.at / 1000, label: e.label }))
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    background: "white",
    vconcat: panels.map((panel) => ({
      width: 720,
      height: 120,
      layer: [
        {
          data: { values: data.filter((p) => p.panel === panel) },
          mark: { type: "line", strokeWidth: 1, interpolate: "step-after" },
          encoding: {
            x: { field: "t", type: "quantitative", title: "virtual time (s)" },
            y: { field: "value", type: "quantitative", title: panel },
            color: { field: "series", type: "nominal", legend: { orient: "right", title: null } }
          }
        },
        ...(events.length > 0
          ? [{
            data: { values: events },
            mark: { type: "rule" as const, color: "#999", strokeDash: [4, 3] },
            encoding: { x: { field: "t", type: "quantitative" as const }, tooltip: { field: "label" } }
          }]
          : [])
      ]
    })),
    resolve: { scale: { color: "independent" } }
  }
}

/**
 * Renders a trace to an SVG document.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Plot } from "@sluice/testkit"
 * import type { Trace } from "@sluice/testkit"
 * declare const trace: Trace.Trace
 *
 * const svg: Effect.Effect<string, Plot.PlotError> = Plot.toSvg(trace, "knee-24 · fixed:8")
 * ```
 *
 * @since 0.1.0
 */
export const toSvg = (trace: Trace, title: string): Effect.Effect<string, PlotError> =>
  Effect.tryPromise({
    try: () => {
      const compiled = vl.compile(spec(trace, title)).spec
      const view = new vega.View(vega.parse(compiled), { renderer: "none" })
      return view.toSVG()
    },
    catch: (cause) => new PlotError({ message: cause instanceof Error ? cause.message : String(cause) })
  })
