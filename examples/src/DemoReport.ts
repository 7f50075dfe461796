/**
 * The demo's HTML report: one page with a summary table and each run's plots
 * (the testkit's SVG panels: in flight vs limit, goodput vs oracle, throttles,
 * p95 latency, freshness lag, bytes held), written next to nothing else so it
 * opens from disk in any browser.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import { Plot } from "@sluice/testkit"
import type { Runner, Scenario } from "@sluice/testkit"

/** One run of the comparison. */
export interface ReportRun {
  readonly label: string
  readonly result: Runner.RunResult
}

const escape = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const fixed = (n: number | null, digits: number): string => (n === null ? "–" : n.toFixed(digits))

/** Renders every run's plot and writes `<dir>/report.html`; returns the file's absolute path. */
export const write = (dir: string, scenario: Scenario.Scenario, runs: ReadonlyArray<ReportRun>) =>
  Effect.gen(function*() {
    const sections: Array<string> = []
    for (const { label, result } of runs) {
      const svg = yield* Plot.toSvg(result.trace, `${scenario.name} · ${label}`)
      sections.push(`<section><h2>${escape(label)}</h2>${svg}</section>`)
    }
    const header = ["policy", "goodput ÷ oracle", "worst degraded phase", "max lag s", "mean lag s", "max held MiB", "throttled share", "recovery s"]
    const rows = runs.map(({ label, result: { summary: s } }) =>
      [
        label,
        fixed(s.goodputRatio, 3),
        fixed(s.worstPhaseGoodput, 3),
        fixed(s.maxLagSeconds, 1),
        fixed(s.meanLagSeconds, 1),
        (s.heldBytesMax / 2 ** 20).toFixed(0),
        s.throttleRate.toFixed(2),
        s.recoverySeconds === null ? "never" : s.recoverySeconds.toFixed(1)
      ].map((c) => `<td>${escape(c)}</td>`).join("")
    )
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sluice demo · ${escape(scenario.name)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}
section{margin-top:2em}</style></head><body>
<h1>${escape(scenario.name)}</h1>
<p>${escape(scenario.description)}</p>
<p>${scenario.duration / 1000} virtual seconds per run. <em>Worst degraded phase</em> is goodput ÷ what the
store could take inside the worst degraded window (freshness while it is slow); <em>max lag</em> is the age of
the oldest record not yet committed.</p>
<table><thead><tr>${header.map((h) => `<th>${escape(h)}</th>`).join("")}</tr></thead>
<tbody>${rows.map((r) => `<tr>${r}</tr>`).join("\n")}</tbody></table>
${sections.join("\n")}
</body></html>
`
    const folder = resolve(dir)
    mkdirSync(folder, { recursive: true })
    const file = join(folder, "report.html")
    writeFileSync(file, html)
    return file
  })
