/**
 * soak — small SVG line charts: panels stacked on one time axis, each with
 * its own y axis from 0 (or its minimum, when negative) to its maximum, a few
 * ticks, and a legend line. Plain text out, no dependencies: the series the
 * testkit's plot does not have (memory, lag, pending state, stage p95) are
 * drawn here; the testkit's six panels are drawn by its own `Plot.toSvg`.
 */

/** A line: `null` values leave a gap. */
export interface Series {
  readonly name: string
  readonly color: string
  readonly values: ReadonlyArray<number | null>
  /** A horizontal reference line instead (e.g. the budget). */
  readonly dashed?: boolean
}

/** A panel: a title, the unit its values are divided by, and its lines. */
export interface Panel {
  readonly title: string
  readonly series: ReadonlyArray<Series>
}

const W = 820
const H = 150
const LEFT = 70
const RIGHT = 20
const TOP = 28
const BOTTOM = 22

const esc = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** A round step for about `n` ticks over `span`. */
const step = (span: number, n: number): number => {
  if (span <= 0) return 1
  const raw = span / n
  const p = 10 ** Math.floor(Math.log10(raw))
  const m = raw / p
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p
}

const label = (v: number): string => {
  const a = Math.abs(v)
  if (a >= 1e9) return `${(v / 1e9).toFixed(a >= 1e10 ? 0 : 1)}G`
  if (a >= 1e6) return `${(v / 1e6).toFixed(a >= 1e7 ? 0 : 1)}M`
  if (a >= 1e3) return `${(v / 1e3).toFixed(a >= 1e4 ? 0 : 1)}k`
  return Number.isInteger(v) ? String(v) : v.toFixed(2)
}

const panel = (p: Panel, t: ReadonlyArray<number>, y0: number, tMax: number): string => {
  const values = p.series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)))
  const lo = Math.min(0, ...values)
  const hi = Math.max(lo + 1e-9, ...values)
  const yStep = step(hi - lo, 4)
  const top = Math.ceil(hi / yStep) * yStep
  const plotH = H - TOP - BOTTOM
  const plotW = W - LEFT - RIGHT
  const x = (s: number) => LEFT + (tMax <= 0 ? 0 : (s / tMax) * plotW)
  const y = (v: number) => y0 + TOP + plotH - ((v - lo) / (top - lo || 1)) * plotH
  const out: Array<string> = []
  out.push(`<text x="${LEFT}" y="${y0 + 16}" font-size="12" font-weight="bold">${esc(p.title)}</text>`)
  let lx = LEFT + 8 + p.title.length * 7
  for (const s of p.series) {
    out.push(`<line x1="${lx}" y1="${y0 + 12}" x2="${lx + 16}" y2="${y0 + 12}" stroke="${s.color}" stroke-width="3"${s.dashed === true ? ` stroke-dasharray="4 3"` : ""}/>`)
    out.push(`<text x="${lx + 20}" y="${y0 + 16}" font-size="11">${esc(s.name)}</text>`)
    lx += 30 + s.name.length * 6.2
  }
  out.push(`<rect x="${LEFT}" y="${y0 + TOP}" width="${plotW}" height="${plotH}" fill="none" stroke="#ccc"/>`)
  for (let v = Math.ceil(lo / yStep) * yStep; v <= top + 1e-9; v += yStep) {
    out.push(`<line x1="${LEFT}" y1="${y(v).toFixed(1)}" x2="${LEFT + plotW}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`)
    out.push(`<text x="${LEFT - 4}" y="${(y(v) + 4).toFixed(1)}" font-size="10" text-anchor="end">${label(v)}</text>`)
  }
  const tStep = step(tMax, 10)
  for (let s = 0; s <= tMax + 1e-9; s += tStep) {
    out.push(`<text x="${x(s).toFixed(1)}" y="${y0 + H - 6}" font-size="10" text-anchor="middle">${label(s)}</text>`)
  }
  for (const s of p.series) {
    let d = ""
    let pen = false
    s.values.forEach((v, i) => {
      const at = t[i]
      if (v === null || !Number.isFinite(v) || at === undefined) {
        pen = false
        return
      }
      d += `${pen ? "L" : "M"}${x(at).toFixed(1)},${y(v).toFixed(1)}`
      pen = true
    })
    if (d !== "") {
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dashed === true ? ` stroke-dasharray="4 3"` : ""}/>`)
    }
  }
  return out.join("\n")
}

/**
 * An SVG document: `panels` stacked over `t` (times in seconds, or any x
 * values with their `xLabel`), titled.
 *
 * **Example**
 *
 * ```ts
 * const svg = Svg.chart("memory", [0, 1, 2], [{ title: "RSS (MiB)", series: [{ name: "rss", color: "#d62728", values: [100, 101, 99] }] }])
 * ```
 */
export const chart = (title: string, t: ReadonlyArray<number>, panels: ReadonlyArray<Panel>, xLabel = "time (s)"): string => {
  const tMax = Math.max(1, ...t)
  const height = 30 + panels.length * H + 16
  const body = panels.map((p, i) => panel(p, t, 30 + i * H, tMax)).join("\n")
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14">${esc(title)}</text>
${body}
<text x="${W / 2}" y="${height - 4}" font-size="11" text-anchor="middle">${esc(xLabel)}</text>
</svg>
`
}
