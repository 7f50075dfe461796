/**
 * Plots: a trace rendered to SVG with Vega-Lite (compiled to Vega and rendered
 * server-side by Vega's headless view; no browser, no canvas). Six panels share
 * the time axis: requests in flight vs the concurrency limit, goodput vs the
 * oracle, throttles per second, p95 upload latency, freshness lag, and bytes
 * held. Probe windows and read-gate pauses are shaded across every panel, the
 * scenario's events are vertical rules, and one legend names every series.
 *
 * Goodput and throttles are 1-second means: per 100 ms sample they are a comb
 * of spikes (a window either completed an object or did not) that hides the
 * oracle line.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
// Types only (erased): the declarations this module emits do not name vega-lite.
import type { TopLevelSpec } from "vega-lite"
import type { Trace, TraceRow } from "./Trace.ts"

/**
 * Rendering failed, or the plotting libraries are not installed.
 *
 * @since 0.1.0
 */
export class PlotError extends Schema.TaggedError<PlotError>()("PlotError", {
  message: Schema.String
}) {}

/**
 * A Vega-Lite specification (what {@link spec} returns): JSON for any
 * Vega-Lite 6 renderer. Typed here, not with `vega-lite`'s own types, so that
 * the testkit's declarations do not need `vega-lite` installed.
 *
 * @since 0.5.0
 */
export type VegaLiteSpec = { readonly $schema: string } & { readonly [key: string]: unknown }

/**
 * The plotting libraries, optional peer dependencies of `@sluice/testkit`
 * (several MB that authors who never plot need not install), with the ranges
 * its `package.json` asks for.
 *
 * @since 0.5.0
 */
export const libraries = { vega: "^6.4.0", "vega-lite": "^6.5.0" } as const

/** What to run when a plotting library is missing. */
const installHint = `npm install --save-dev ${Object.entries(libraries).map(([name, range]) => `${name}@${range}`).join(" ")}`

/** Whether `cause` says that one of the plotting libraries could not be found. */
const isMissingLibrary = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null ? (cause as { readonly code?: unknown }).code : undefined
  const message = cause instanceof Error ? cause.message : String(cause)
  return (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && Object.keys(libraries).some((name) => message.includes(`'${name}'`))
}

/** Loads vega and vega-lite; a missing one fails with a `PlotError` that says how to install them. */
const load = Effect.tryPromise({
  try: () => Promise.all([import("vega"), import("vega-lite")]),
  catch: (cause) =>
    new PlotError({
      message: isMissingLibrary(cause)
        ? `plotting needs vega and vega-lite, which @sluice/testkit does not install (optional peer dependencies): ${installHint}`
        : `cannot load vega / vega-lite: ${cause instanceof Error ? cause.message : String(cause)}`
    })
})

/**
 * Succeeds when a plot can be drawn: vega and vega-lite load. Fails with a
 * `PlotError` naming the command that installs them. `sluice-sim run --plot`
 * checks it before the run, not after.
 *
 * @since 0.5.0
 */
export const available: Effect.Effect<void, PlotError> = Effect.asVoid(load)

/**
 * The panels, top to bottom; each is also the panel's title in the SVG.
 *
 * @since 0.2.0
 */
export const panels = [
  "requests in flight",
  "goodput (MB/s, 1 s mean) vs the oracle",
  "throttled requests per second (1 s mean)",
  "p95 object upload latency (ms)",
  "freshness lag (s): age of the oldest uncommitted record",
  "bytes held by the most loaded instance (MiB)"
] as const

/**
 * A panel of the plot.
 *
 * @since 0.2.0
 */
export type Panel = typeof panels[number]

/**
 * The line series and the panel each is drawn in; later series of a panel are
 * drawn on top (the oracle over goodput). Names are the legend's labels.
 *
 * @since 0.2.0
 */
export const lineSeries = [
  { series: "concurrency limit", panel: panels[0], color: "#1f77b4", width: 1.5, step: true },
  { series: "uploading", panel: panels[0], color: "#9ecae1", width: 1, step: false },
  { series: "goodput (1 s mean)", panel: panels[1], color: "#2ca02c", width: 1.2, step: false },
  { series: "oracle", panel: panels[1], color: "#000000", width: 1.5, step: true },
  { series: "throttles/s (1 s mean)", panel: panels[2], color: "#d62728", width: 1.2, step: false },
  { series: "p95 latency", panel: panels[3], color: "#9467bd", width: 1.2, step: false },
  { series: "freshness lag", panel: panels[4], color: "#8c564b", width: 1.5, step: false },
  { series: "held (source − verified)", panel: panels[5], color: "#9edae5", width: 3, step: false },
  { series: "in flight (pipeline)", panel: panels[5], color: "#ff7f0e", width: 1, step: false }
] as const

/**
 * The name of a line series.
 *
 * @since 0.2.0
 */
export type Series = typeof lineSeries[number]["series"]

/**
 * What a shaded interval marks: some policy probing, or some instance's read
 * gate paused.
 *
 * @since 0.2.0
 */
export type ShadeKind = "probing" | "read gate paused"

/** Light and opaque (not translucent), so the legend shows the same color as the panels. */
const shadeColors: Record<ShadeKind, string> = { "probing": "#fbe7a6", "read gate paused": "#dde1e8" }

/**
 * One point of a line series (`t` in seconds, the end of its sample window).
 *
 * @since 0.1.0
 */
export interface Point {
  readonly t: number
  readonly panel: Panel
  readonly series: Series
  readonly value: number
}

/**
 * A shaded interval, in seconds.
 *
 * @since 0.2.0
 */
export interface Shade {
  readonly from: number
  readonly to: number
  readonly kind: ShadeKind
}

/**
 * The centred moving average of `values` over `window` entries (truncated at
 * the ends, so the first and last values average fewer entries).
 *
 * **When to use**: to smooth a per-sample series to a per-second one:
 * `window = 1000 / trace.sampleMillis`.
 *
 * **Details**: entry `i` averages entries `i - ⌊window/2⌋` to
 * `i + ⌈window/2⌉ - 1`; a window of 1 (or less) returns the values unchanged.
 * Centred rather than trailing, so a drop lines up with the event that caused
 * it instead of lagging it by half a second.
 *
 * **Example**
 *
 * ```ts
 * import { Plot } from "@sluice/testkit"
 *
 * Plot.movingAverage([0, 6, 0, 6], 3) // [3, 2, 4, 3]: entry i averages i - 1 to i + 1
 * ```
 *
 * @since 0.2.0
 */
export const movingAverage = (values: ReadonlyArray<number>, window: number): Array<number> => {
  const n = Math.max(1, Math.round(window))
  const prefix = [0]
  for (const v of values) prefix.push((prefix.at(-1) ?? 0) + v)
  return values.map((_, i) => {
    const lo = Math.max(0, i - Math.floor(n / 2))
    const hi = Math.min(values.length, i + Math.ceil(n / 2))
    return ((prefix[hi] ?? 0) - (prefix[lo] ?? 0)) / (hi - lo)
  })
}

/**
 * The data points of a trace, long format (`t` in seconds).
 *
 * **When to use**: to plot a trace with another tool, or to check what a plot
 * shows.
 *
 * **Details**: goodput (MB/s) and throttles (per second) are 1-second centred
 * means over `1000 / trace.sampleMillis` rows; the oracle, concurrency and
 * bytes are the per-sample values. Samples without completed uploads have no
 * p95 point.
 *
 * **Example**
 *
 * ```ts
 * import { Plot } from "@sluice/testkit"
 * import type { Trace } from "@sluice/testkit"
 * declare const trace: Trace.Trace
 *
 * const oracle = Plot.points(trace).filter((p) => p.series === "oracle")
 * ```
 *
 * @since 0.1.0
 */
export const points = (trace: Trace): Array<Point> => {
  const rows = trace.rows
  const perSecond = 1000 / trace.sampleMillis
  const goodput = movingAverage(rows.map((r) => r.goodputBytesPerSecond / 1e6), perSecond)
  const throttles = movingAverage(rows.map((r) => r.throttles * perSecond), perSecond)
  const value = (r: TraceRow, i: number, series: Series): number | null => {
    switch (series) {
      case "concurrency limit":
        return r.concurrency
      case "uploading":
        return r.inflightBatches
      case "goodput (1 s mean)":
        return goodput[i] ?? 0
      case "oracle":
        return r.oracleBytesPerSecond / 1e6
      case "throttles/s (1 s mean)":
        return throttles[i] ?? 0
      case "p95 latency":
        return r.p95Millis
      case "freshness lag":
        return r.lagSeconds
      case "in flight (pipeline)":
        return r.inflightBytes / 1048576
      case "held (source − verified)":
        return r.heldBytes / 1048576
    }
  }
  const out: Array<Point> = []
  for (const { panel, series } of lineSeries) {
    rows.forEach((r, i) => {
      const v = value(r, i, series)
      if (v !== null) out.push({ t: r.t / 1000, panel, series, value: v })
    })
  }
  return out
}

/**
 * The probe windows (rows with `probing > 0`) and read-gate pauses (rows with
 * `readGatePaused > 0`) of a trace, contiguous rows coalesced into one interval.
 *
 * **When to use**: to shade or count the time a run spent probing or paused.
 *
 * **Details**: a row covers its sample window, `(t - sampleMillis, t]`, so a
 * run of rows from `a` to `b` gives the interval `[(a - sampleMillis) / 1000,
 * b / 1000]` seconds. Probing intervals come first, each kind in time order.
 *
 * **Example**
 *
 * ```ts
 * import { Plot } from "@sluice/testkit"
 * import type { Trace } from "@sluice/testkit"
 * declare const trace: Trace.Trace
 *
 * const probeSeconds = Plot.shades(trace)
 *   .filter((s) => s.kind === "probing")
 *   .reduce((sum, s) => sum + s.to - s.from, 0)
 * ```
 *
 * @since 0.2.0
 */
export const shades = (trace: Trace): Array<Shade> => {
  const out: Array<Shade> = []
  const coalesce = (kind: ShadeKind, on: (r: TraceRow) => boolean) => {
    let from: number | null = null
    let to = 0
    for (const r of trace.rows) {
      if (on(r)) {
        if (from === null) from = (r.t - trace.sampleMillis) / 1000
        to = r.t / 1000
      } else if (from !== null) {
        out.push({ from, to, kind })
        from = null
      }
    }
    if (from !== null) out.push({ from, to, kind })
  }
  coalesce("probing", (r) => r.probing > 0)
  coalesce("read gate paused", (r) => r.readGatePaused > 0)
  return out
}

/** A step series' points without those that repeat the previous value (the line is the same, the SVG smaller). */
const steps = (series: ReadonlyArray<Point>): Array<Point> =>
  series.filter((p, i) => i === 0 || i === series.length - 1 || p.value !== series[i - 1]?.value)

/** More event labels than this would overprint each other; the rules stay. */
const maxEventLabels = 8

/**
 * The Vega-Lite spec of a trace's plot.
 *
 * **When to use**: to render the plot elsewhere (a notebook, the Vega editor),
 * or to change it before rendering; `toSvg` renders it as is.
 *
 * **Details**: one `vconcat` of the panels, each a layer of the shaded
 * intervals (bottom), its line series in `lineSeries` order, and the events as
 * dashed rules. Every layer shares one color scale, so the figure has a single
 * legend; the time axis is the same in every panel.
 *
 * **Example**
 *
 * ```ts
 * import { Plot } from "@sluice/testkit"
 * import type { Trace } from "@sluice/testkit"
 * declare const trace: Trace.Trace
 *
 * const json = JSON.stringify(Plot.spec(trace, "knee-24 · fixed:8"))
 * ```
 *
 * @since 0.1.0
 */
export const spec = (trace: Trace, title: string): VegaLiteSpec => toSpec(trace, title) as unknown as VegaLiteSpec

/** The specification, typed by vega-lite (a dev dependency) where it is built. */
const toSpec = (trace: Trace, title: string): TopLevelSpec => {
  const data = points(trace)
  const intervals = shades(trace)
  const events = trace.events.map((e) => ({ t: e.at / 1000, label: e.label }))
  const end = Math.max(trace.sampleMillis, trace.rows.at(-1)?.t ?? 0) / 1000
  const shadeKinds = (Object.keys(shadeColors) as Array<ShadeKind>).filter((k) => intervals.some((s) => s.kind === k))
  const flat = new Set(panels.filter((panel) => data.every((p) => p.panel !== panel || p.value === 0)))
  const domain = [...lineSeries.map((s) => s.series), ...shadeKinds]
  const color = (field: string) => ({
    field,
    type: "nominal" as const,
    scale: { domain, range: [...lineSeries.map((s) => s.color), ...shadeKinds.map((k) => shadeColors[k])] },
    legend: { title: null }
  })
  const x = (field: string, last: boolean) => ({
    field,
    type: "quantitative" as const,
    scale: { domain: [0, end], nice: false, zero: false },
    axis: { title: last ? "virtual time (s)" : null }
  })
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: title, anchor: "start" },
    background: "white",
    config: {
      view: { stroke: "#ddd" },
      title: { fontSize: 14 },
      legend: { orient: "right", labelFontSize: 11, labelLimit: 300, symbolType: "stroke", symbolStrokeWidth: 4, symbolSize: 300 }
    },
    spacing: 14,
    vconcat: panels.map((panel, index) => {
      const last = index === panels.length - 1
      return {
        title: { text: panel, anchor: "start", frame: "group", fontSize: 11, fontWeight: "normal", offset: 4 },
        width: 760,
        height: 100,
        layer: [
          ...(intervals.length > 0
            ? [{
              data: { values: intervals },
              mark: { type: "rect" as const },
              encoding: { x: x("from", last), x2: { field: "to" }, color: color("kind") }
            }]
            : []),
          ...lineSeries.filter((s) => s.panel === panel).map((s) => ({
            data: { values: s.step ? steps(data.filter((p) => p.series === s.series)) : data.filter((p) => p.series === s.series) },
            mark: {
              type: "line" as const,
              strokeWidth: s.width,
              interpolate: s.step ? "step-after" as const : "linear" as const
            },
            encoding: {
              x: x("t", last),
              y: {
                field: "value",
                type: "quantitative" as const,
                title: null,
                // an all-zero panel (no throttles) gets a 0–1 axis instead of a degenerate one
                scale: flat.has(panel) ? { domain: [0, 1] } : { zero: true }
              },
              color: color("series")
            }
          })),
          ...(events.length > 0
            ? [{
              data: { values: events },
              mark: { type: "rule" as const, color: "#888", strokeDash: [4, 3] },
              encoding: { x: x("t", last), tooltip: { field: "label" } }
            }]
            : []),
          ...(index === 0 && events.length > 0 && events.length <= maxEventLabels
            ? [{
              data: { values: events },
              mark: { type: "text" as const, align: "left" as const, baseline: "top" as const, dx: 3, dy: 2, fontSize: 9, color: "#555" },
              encoding: { x: x("t", last), y: { value: 0 }, text: { field: "label" } }
            }]
            : [])
        ]
      }
    }),
    resolve: { scale: { color: "shared" } }
  }
}

/**
 * Renders a trace to an SVG document.
 *
 * **When to use**: to look at a run (`sluice-sim run … --plot out.svg` calls
 * it); `spec` gives the Vega-Lite spec instead.
 *
 * **Details**: Vega-Lite compiled to Vega and rendered by Vega's headless SVG
 * renderer (no browser, no canvas, no native modules).
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
  // vega and vega-lite (several MB) load only when a plot is asked for.
  Effect.flatMap(load, ([vega, vl]) =>
    Effect.tryPromise({
      try: () => {
        const compiled = vl.compile(toSpec(trace, title)).spec
        const view = new vega.View(vega.parse(compiled), { renderer: "none" })
        return view.toSVG()
      },
      catch: (cause) => new PlotError({ message: cause instanceof Error ? cause.message : String(cause) })
    }))
