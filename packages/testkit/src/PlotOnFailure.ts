/**
 * When an assertion on a run fails, write the run's plot and trace and name
 * them in the failure message: a red CI job then says *where to look*, not
 * only which number was off.
 *
 * Files go to `$SLUICE_REPORT_DIR` (CI can upload that directory as an
 * artifact) or, by default, `<os temp dir>/sluice-reports/`:
 *
 * - `<name>.svg` — `Plot.toSvg`: six panels on one time axis (without the
 *   optional plotting libraries the plot is skipped and the message says why);
 * - `<name>.csv` — `Trace.toCsv`: every 100 ms sample;
 * - `<name>.summary.json` — the run's `Summary`.
 *
 * @since 0.5.0
 */
import { Cause, Effect, Result } from "effect"
import { mkdir, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Plot from "./Plot.ts"
import type * as Runner from "./Runner.ts"
import type * as Summary from "./Summary.ts"
import * as Trace from "./Trace.ts"

/**
 * Where reports are written: `$SLUICE_REPORT_DIR`, else `<os temp dir>/sluice-reports`.
 *
 * @since 0.5.0
 */
export const reportDir = (): string => process.env["SLUICE_REPORT_DIR"] ?? join(tmpdir(), "sluice-reports")

/**
 * Options of {@link writeReport}, {@link plotOnFailure} and {@link expectWithPlot}.
 *
 * @since 0.5.0
 */
export interface ReportOptions {
  /** Directory for the files (default {@link reportDir}). */
  readonly dir?: string | undefined
}

/**
 * What {@link writeReport} wrote. `svg` is absent when the plot could not be rendered (`plotError` says why).
 *
 * @since 0.5.0
 */
export interface Report {
  readonly svg: string | undefined
  readonly csv: string
  readonly summary: string
  readonly plotError: string | undefined
}

/**
 * Writes the run's plot, trace and summary as `<name>.svg|.csv|.summary.json`.
 * A plot that fails to render still leaves the CSV and the summary (the
 * failure being reported matters more than the picture).
 *
 * @since 0.5.0
 */
export const writeReport = (result: Runner.RunResult, name: string, options: ReportOptions = {}): Effect.Effect<Report> =>
  Effect.gen(function*() {
    const dir = options.dir ?? reportDir()
    const base = join(dir, name.replace(/[^\w.-]+/g, "_"))
    const title = `${result.summary.scenario} · ${result.summary.policy} · seed ${result.summary.seed}`
    const rendered = yield* Effect.result(Plot.toSvg(result.trace, title))
    return yield* Effect.promise(async () => {
      await mkdir(dir, { recursive: true })
      const csv = `${base}.csv`
      const summary = `${base}.summary.json`
      await writeFile(csv, Trace.toCsv(result.trace))
      await writeFile(summary, JSON.stringify(result.summary, null, 2) + "\n")
      if (Result.isFailure(rendered)) return { svg: undefined, csv, summary, plotError: rendered.failure.message }
      const svg = `${base}.svg`
      await writeFile(svg, rendered.success)
      return { svg, csv, summary, plotError: undefined }
    })
  })

const footer = (report: Report): string =>
  [
    "",
    report.svg === undefined ? `  plot:    not rendered (${report.plotError ?? "unknown error"})` : `  plot:    ${report.svg}`,
    `  trace:   ${report.csv}`,
    `  summary: ${report.summary}`
  ].join("\n")

/** The failure with the report's paths appended to its message (an `Error` keeps its class, diff and stack). */
const withFooter = (error: unknown, report: Report): Error => {
  if (error instanceof Error) {
    error.message = `${error.message}${footer(report)}`
    return error
  }
  return new Error(`${String(error)}${footer(report)}`)
}

/**
 * Wraps assertions on `result`: if `self` fails (a failed `Assert.expect…`)
 * or throws (a failed vitest `expect`), the run's report is written and the
 * test dies with the original error, its message followed by the paths.
 * Interruption passes through untouched.
 *
 * **Example**
 *
 * ```ts
 * import { Assert, PlotOnFailure } from "@sluice/testkit"
 * import type { Runner } from "@sluice/testkit"
 * declare const result: Runner.RunResult
 *
 * const checked = Assert.expectRecoveryWithin(result, 10).pipe(PlotOnFailure.plotOnFailure(result, "recovery-seed-42"))
 * ```
 *
 * @since 0.5.0
 */
export const plotOnFailure = (result: Runner.RunResult, name: string, options: ReportOptions = {}) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
  Effect.catchCause(self, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.interrupt
      : Effect.flatMap(writeReport(result, name, options), (report) => Effect.die(withFooter(Cause.squash(cause), report))))

/**
 * Runs plain (vitest `expect`) assertions on a run's summary and trace; on the
 * first that fails, writes the report and fails the test with the paths in
 * the message (see {@link plotOnFailure}).
 *
 * **Example**
 *
 * ```ts
 * import { PlotOnFailure } from "@sluice/testkit"
 * import type { Runner } from "@sluice/testkit"
 * import { expect } from "vitest"
 * declare const result: Runner.RunResult
 *
 * const checked = PlotOnFailure.expectWithPlot(result, "floor-seed-42", (summary, trace) => {
 *   expect(summary.floorViolations).toBe(0)
 *   expect(Math.min(...trace.rows.map((r) => r.concurrency))).toBeGreaterThanOrEqual(2)
 * })
 * ```
 *
 * @since 0.5.0
 */
export const expectWithPlot = (
  result: Runner.RunResult,
  name: string,
  assertions: (summary: Summary.Summary, trace: Trace.Trace) => void,
  options: ReportOptions = {}
): Effect.Effect<void> =>
  Effect.sync(() => assertions(result.summary, result.trace)).pipe(plotOnFailure(result, name, options))
