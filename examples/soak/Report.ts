/**
 * soak — the report folder `reports/soak-<time>/`:
 *
 * - `samples.csv`: one row a second (every field of `Sampler.Sample`);
 * - `soak.svg`: rates, lag, memory, pending state, stage p95, failures and
 *   knobs, drawn by `Svg.ts`;
 * - `pipeline.svg`: the same run in the testkit's six panels (`Plot.toSvg`
 *   over a `Trace` built from the samples), so it reads beside a simulator
 *   run's plot;
 * - `summary.md`: the settings, the totals, whether the rate was sustained,
 *   and the four hypotheses judged with their numbers;
 * - `result.json`: the object `--json` prints.
 */
import type { Trace } from "@sluice/testkit"
import { Plot } from "@sluice/testkit"
import { Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Fits, Judgement, RssFlat, Sustained } from "./Hypotheses.ts"
import type { Options } from "./Options.ts"
import type { Sample } from "./Sampler.ts"
import * as Svg from "./Svg.ts"

/** The run's totals, counted by the audit at the end (after the drain). */
export interface Totals {
  readonly offered: number
  readonly read: number
  readonly verified: number
  readonly committed: number
  readonly lost: number
  readonly committedNotVerified: number
  /** Read and not committed at the end: delivered again after a restart. */
  readonly uncommitted: number
  /** What the pipeline says it read (accepted from the source). */
  readonly pipelineRead: number
  readonly retentionGaps: number
  readonly retentionGapRecords: number
  readonly sourceErrors: number
  readonly verificationFailures: number
  readonly failuresByClass: Readonly<Record<string, number>>
  readonly retries: number
  /** What the pipeline says it committed (for comparison with the audit's count). */
  readonly pipelineCommitted: number
  readonly offerSeconds: number
  readonly drainSeconds: number
  readonly memoryBudgetBytes: number
  readonly readAheadBytes: number
  readonly loadAverage: { readonly start: ReadonlyArray<number>; readonly end: ReadonlyArray<number> }
  /** Notes of the source and sink (the topic, the bucket, the producer's rate). */
  readonly notes: ReadonlyArray<string>
}

/** What `--json` prints as its last line. */
export interface Result {
  readonly rate: number
  readonly durationSeconds: number
  readonly source: string
  readonly sink: string
  readonly achievedRecordsPerSecond: number
  readonly sustained: boolean
  readonly offered: number
  readonly read: number
  readonly verified: number
  readonly committed: number
  readonly lost: number
  readonly committedNotVerified: number
  readonly uncommittedAtEnd: number
  readonly rssMaxBytes: number
  /** Whether RSS is flat after warm-up (see `Hypotheses.rssFlat`). */
  readonly rssFlat: boolean
  readonly rssSlopeBytesPerSecond: number
  readonly rssR2: number
  readonly heapUsedMaxBytes: number
  readonly inflightBytesMax: number
  readonly memoryBudgetBytes: number
  readonly inflightBatchesMax: number
  readonly ledgerBatchesMax: number
  readonly lagSlopeRecordsPerSecond: number
  readonly lagR2: number
  readonly backlogSlopeRecordsPerSecond: number
  readonly drainSeconds: number
  readonly verificationFailures: number
  readonly sourceErrors: number
  readonly retentionGapRecords: number
  readonly hypotheses: Readonly<Record<string, string>>
  readonly samples: number
  readonly report: string
}

const max = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => Math.max(a, b), 0)
const mean = (xs: ReadonlyArray<number>) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length)
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
const num = (x: number, digits = 0) => x.toLocaleString("en-US", { maximumFractionDigits: digits })

/** A folder name for a run started at `date`: `soak-2026-11-30T12-34-56`. */
export const folderName = (date: Date): string => `soak-${date.toISOString().slice(0, 19).replace(/:/g, "-")}`

/** The `--json` object. */
export const result = (
  options: Options,
  totals: Totals,
  samples: ReadonlyArray<Sample>,
  fits: Fits,
  sustained: Sustained,
  rss: RssFlat,
  judgements: ReadonlyArray<Judgement>,
  folder: string
): Result => ({
  rate: options.rate,
  durationSeconds: options.duration / 1000,
  source: options.source,
  sink: options.sink,
  achievedRecordsPerSecond: Math.round(totals.committed / totals.offerSeconds),
  sustained: sustained.sustained,
  offered: totals.offered,
  read: totals.read,
  verified: totals.verified,
  committed: totals.committed,
  lost: totals.lost,
  committedNotVerified: totals.committedNotVerified,
  uncommittedAtEnd: totals.uncommitted,
  rssFlat: rss.flat,
  rssMaxBytes: max(samples.map((s) => s.rssBytes)),
  rssSlopeBytesPerSecond: Math.round(fits.rss.slope),
  rssR2: round3(fits.rss.r2),
  heapUsedMaxBytes: max(samples.map((s) => s.heapUsedBytes)),
  inflightBytesMax: max(samples.map((s) => s.inflightBytes)),
  memoryBudgetBytes: totals.memoryBudgetBytes,
  inflightBatchesMax: max(samples.map((s) => s.inflightBatches)),
  ledgerBatchesMax: max(samples.map((s) => s.ledgerBatches)),
  lagSlopeRecordsPerSecond: Math.round(fits.lagRecords.slope),
  lagR2: round3(fits.lagRecords.r2),
  backlogSlopeRecordsPerSecond: Math.round(fits.backlogRecords.slope),
  drainSeconds: round3(totals.drainSeconds),
  verificationFailures: totals.verificationFailures,
  sourceErrors: totals.sourceErrors,
  retentionGapRecords: totals.retentionGapRecords,
  hypotheses: Object.fromEntries(judgements.map((j) => [String(j.id), j.verdict])),
  samples: samples.length,
  report: folder
})

function round3(x: number): number {
  return Math.round(x * 1000) / 1000
}

/** The CSV: a header of `Sample` field names, one line per second. */
export const csv = (samples: ReadonlyArray<Sample>): string => {
  const first = samples[0]
  if (first === undefined) return ""
  const columns = Object.keys(first) as Array<keyof Sample>
  const cell = (v: Sample[keyof Sample]) => (v === null ? "" : typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : v)
  return [columns.join(","), ...samples.map((s) => columns.map((c) => cell(s[c])).join(","))].join("\n") + "\n"
}

/** The samples as a testkit trace (1 s rows), for `Plot.toSvg`. */
export const trace = (samples: ReadonlyArray<Sample>, options: Options, offerSeconds: number): Trace.Trace => ({
  sampleMillis: 1000,
  rows: samples.map((s) => ({
    t: Math.round(s.t * 1000),
    concurrency: s.concurrency,
    inflightBatches: s.inflightBatches,
    inflightBytes: s.inflightBytes,
    goodputBytesPerSecond: s.verifiedPerSecond * options.recordBytes,
    // The offered load: what an ideal archiver would archive.
    oracleBytesPerSecond: s.phase === "running" ? options.rate * options.recordBytes : 0,
    p50Millis: null,
    p95Millis: s.p95ObjectUploadMillis,
    latencyInflation: null,
    requests: Math.round(s.requestsPerSecond),
    throttles: Math.round(s.throttledPerSecond),
    batchTargetBytes: s.batchTargetBytes,
    readGatePaused: s.readGatePaused,
    lagRecords: s.backlogRecords + s.lagRecords,
    probing: s.probing,
    lagSeconds: s.oldestUncommittedAgeMillis / 1000,
    heldBytes: (s.read - s.verified) * options.recordBytes
  })),
  events: [{ at: offerSeconds * 1000, label: "drain" }]
})

/** The soak's own charts. */
export const chart = (samples: ReadonlyArray<Sample>, options: Options, totals: Totals): string => {
  const t = samples.map((s) => s.t)
  const col = (pick: (s: Sample) => number | null) => samples.map(pick)
  const M = 2 ** 20
  return Svg.chart(`soak ${options.source} → ${options.sink}, ${num(options.rate)} records/s offered for ${options.duration / 1000} s (real time)`, t, [
    {
      title: "records per second",
      series: [
        { name: "offered", color: "#000000", values: col((s) => (s.phase === "running" ? options.rate : 0)), dashed: true },
        { name: "read", color: "#1f77b4", values: col((s) => s.readPerSecond) },
        { name: "verified", color: "#2ca02c", values: col((s) => s.verifiedPerSecond) },
        { name: "committed", color: "#ff7f0e", values: col((s) => s.committedPerSecond) }
      ]
    },
    {
      title: "lag (records)",
      series: [
        { name: "read, not committed", color: "#8c564b", values: col((s) => s.lagRecords) },
        { name: "offered, not read (backlog)", color: "#d62728", values: col((s) => s.backlogRecords) }
      ]
    },
    {
      title: "memory (MiB)",
      series: [
        { name: "RSS", color: "#d62728", values: col((s) => s.rssBytes / M) },
        { name: "heap used", color: "#9467bd", values: col((s) => s.heapUsedBytes / M) },
        { name: "array buffers", color: "#17becf", values: col((s) => s.arrayBuffersBytes / M) },
        { name: "held (budget)", color: "#ff7f0e", values: col((s) => s.inflightBytes / M) },
        { name: "budget", color: "#000000", values: col(() => totals.memoryBudgetBytes / M), dashed: true }
      ]
    },
    {
      title: "pending state (batches)",
      series: [
        { name: "commit ledger", color: "#1f77b4", values: col((s) => s.ledgerBatches) },
        { name: "uploading", color: "#2ca02c", values: col((s) => s.inflightBatches) },
        { name: "queued", color: "#ff7f0e", values: col((s) => s.queuedBatches) },
        { name: "verified, waiting to commit", color: "#9467bd", values: col((s) => s.verifiedNotCommitted) }
      ]
    },
    {
      title: "p95 per stage (ms)",
      series: [
        { name: "object upload", color: "#1f77b4", values: col((s) => s.p95ObjectUploadMillis) },
        { name: "manifest", color: "#ff7f0e", values: col((s) => s.p95ManifestUploadMillis) },
        { name: "verify", color: "#2ca02c", values: col((s) => s.p95VerifyMillis) },
        { name: "commit", color: "#d62728", values: col((s) => s.p95CommitMillis) }
      ]
    },
    {
      title: "failures per second",
      series: [
        { name: "throttled", color: "#d62728", values: col((s) => s.throttledPerSecond) },
        { name: "transient", color: "#ff7f0e", values: col((s) => s.transientPerSecond) },
        { name: "fatal", color: "#000000", values: col((s) => s.fatalPerSecond) }
      ]
    },
    {
      title: "knobs and CPU",
      series: [
        { name: "concurrency", color: "#1f77b4", values: col((s) => s.concurrency) },
        { name: "batch target (k records)", color: "#2ca02c", values: col((s) => s.batchTargetRecords / 1000) },
        { name: "read gate paused ×10", color: "#7f7f7f", values: col((s) => s.readGatePaused * 10) },
        { name: "CPU (% of a core ÷ 10)", color: "#d62728", values: col((s) => s.cpu * 10) }
      ]
    }
  ])
}

/** The Markdown summary. */
export const summary = (
  options: Options,
  argv: ReadonlyArray<string>,
  totals: Totals,
  samples: ReadonlyArray<Sample>,
  fits: Fits,
  sustained: Sustained,
  rss: RssFlat,
  judgements: ReadonlyArray<Judgement>,
  json: Result
): string => {
  const running = samples.filter((s) => s.phase === "running" && s.t >= fits.warmupSeconds)
  const row = (name: string, pick: (s: Sample) => number | null, fmt: (x: number) => string) => {
    const xs = running.map(pick).filter((x): x is number => x !== null)
    return `| ${name} | ${xs.length === 0 ? "–" : fmt(mean(xs))} | ${xs.length === 0 ? "–" : fmt(max(xs))} |`
  }
  const ms = (x: number) => `${x.toFixed(1)} ms`
  return `# Soak ${options.source} → ${options.sink}: ${num(options.rate)} records/s for ${options.duration / 1000} s

\`npm run soak -- ${argv.join(" ")}\` · ${Os.cpus().length} cores, Node ${process.version}, load average ${totals.loadAverage.start.map((l) => l.toFixed(1)).join(" ")} at the start, ${totals.loadAverage.end.map((l) => l.toFixed(1)).join(" ")} at the end · ${options.partitions} partitions, records of ${options.recordBytes} B, default pipeline config (memory budget ${mib(totals.memoryBudgetBytes)}) and default policies (\`Composition.defaults()\`)
${totals.notes.map((n) => `\n- ${n}`).join("")}

## Result

**${sustained.sustained ? "Sustained" : "Not sustained"}**: ${sustained.evidence}.

**RSS ${rss.flat ? "flat" : "not flat"} after warm-up**: ${rss.evidence}.

| | |
|---|---|
| offered (scheduled by the rate) | ${num(totals.offered)} |
| read by the pipeline | ${num(totals.read)} |
| verified in storage | ${num(totals.verified)} |
| committed to the source | ${num(totals.committed)} (the pipeline's own count: ${num(totals.pipelineCommitted)}) |
| lost (committed while not verified, or deleted by retention) | ${num(totals.lost)} |
| committed while not verified | ${num(totals.committedNotVerified)} |
| read and not committed at the end (abandoned by the drain; delivered again after a restart) | ${num(totals.uncommitted)} (the pipeline accepted ${num(totals.pipelineRead)} of the ${num(totals.read)} read) |
| achieved (committed ÷ ${totals.offerSeconds.toFixed(1)} s offered) | ${num(json.achievedRecordsPerSecond)} records/s |
| drain (stop reading → everything read committed) | ${totals.drainSeconds.toFixed(2)} s |
| RSS max | ${mib(json.rssMaxBytes)} |
| bytes held max / budget | ${mib(json.inflightBytesMax)} / ${mib(totals.memoryBudgetBytes)} |
| failures by class | ${Object.entries(totals.failuresByClass).map(([k, v]) => `${k} ${v}`).join(", ") || "none"} (retries ${totals.retries}) |
| verification failures · source errors · retention gaps | ${totals.verificationFailures} · ${totals.sourceErrors} · ${totals.retentionGaps} (${num(totals.retentionGapRecords)} records) |

Counts of records are the audit's: the source and the sink are wrapped, and every chunk read, object verified and commit made is counted outside the pipeline.

## The four hypotheses (issue 13)

| # | hypothesis | verdict | evidence |
|---|---|---|---|
${judgements.map((j) => `| ${j.id} | ${j.hypothesis} | **${j.verdict}** | ${j.evidence} |`).join("\n")}

## After warm-up (${fits.warmupSeconds.toFixed(0)} s: at least 10 s, and until the first commit), per second

| | mean | max |
|---|---:|---:|
${[
    row("read (records/s)", (s) => s.readPerSecond, (x) => num(x)),
    row("committed (records/s)", (s) => s.committedPerSecond, (x) => num(x)),
    row("CPU (share of one core)", (s) => s.cpu, (x) => x.toFixed(2)),
    row("event loop busy", (s) => s.eventLoopBusy, (x) => `${(100 * x).toFixed(0)} %`),
    row("event loop blocked, longest (ms)", (s) => s.eventLoopDelayMaxMillis, (x) => x.toFixed(0)),
    row("uploads in flight", (s) => s.inflightBatches, (x) => x.toFixed(1)),
    row("concurrency knob", (s) => s.concurrency, (x) => x.toFixed(1)),
    row("batch target (records)", (s) => s.batchTargetRecords, (x) => num(x)),
    row("read gate paused (share of samples)", (s) => s.readGatePaused, (x) => x.toFixed(2)),
    row("p95 object upload", (s) => s.p95ObjectUploadMillis, ms),
    row("p95 manifest upload", (s) => s.p95ManifestUploadMillis, ms),
    row("p95 verify", (s) => s.p95VerifyMillis, ms),
    row("p95 commit", (s) => s.p95CommitMillis, ms)
  ].join("\n")}

## What is not observed

- The commit ledger's size is not exposed by the core: it is derived as batches sealed (\`stats.batchesSealed\`) − batches committed (counted by the audit).
- The number of open batches is not exposed (only their payload bytes, \`stats.openBytes\`).
- Source read errors: only the errors that reach the pipeline (each ends the run) are counted; errors a source retries itself are not visible.
- Commit latency is timed around the source's \`commit\` by the soak (it is not on the signal bus).

## Files

- \`samples.csv\`: one row a second · \`soak.svg\`: the charts above · \`pipeline.svg\`: the testkit's six panels (its x axis says "virtual time": here it is real time) · \`result.json\`
`
}

/** Writes the folder and returns its path. */
export const write = (
  root: string,
  folder: string,
  files: { readonly csv: string; readonly soakSvg: string; readonly pipelineSvg: string | undefined; readonly summary: string; readonly result: Result }
): string => {
  const dir = Path.join(root, folder)
  mkdirSync(dir, { recursive: true })
  writeFileSync(Path.join(dir, "samples.csv"), files.csv)
  writeFileSync(Path.join(dir, "soak.svg"), files.soakSvg)
  if (files.pipelineSvg !== undefined) writeFileSync(Path.join(dir, "pipeline.svg"), files.pipelineSvg)
  writeFileSync(Path.join(dir, "summary.md"), files.summary)
  writeFileSync(Path.join(dir, "result.json"), JSON.stringify(files.result, null, 2) + "\n")
  return dir
}

/** The testkit's plot of the run, or `undefined` (with the reason on stderr) when it cannot be drawn. */
export const pipelineSvg = (samples: ReadonlyArray<Sample>, options: Options, offerSeconds: number): Effect.Effect<string | undefined> =>
  Plot.toSvg(trace(samples, options, offerSeconds), `soak ${options.source} → ${options.sink} · ${num(options.rate)} records/s · real time`).pipe(
    Effect.catch((e) => Effect.sync(() => {
      process.stderr.write(`soak: pipeline.svg not drawn: ${e.message}\n`)
      return undefined
    }))
  )
