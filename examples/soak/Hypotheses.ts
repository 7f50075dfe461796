/**
 * soak — the four hypotheses of issue 13, judged from a soak's samples
 * (pure: samples and the run's totals in, verdicts with their numbers out).
 *
 * 1. In-flight grows without bound: bytes held (and RSS) after warm-up.
 * 2. Pending state grows without bound: the commit ledger, verified batches
 *    waiting for a commit, records read and not committed.
 * 3. Recovery after a restart degrades with the backlog: a soak does not
 *    restart, so it says "not measured by this run".
 * 4. Retention deletes unread records: not applicable to the synthetic source
 *    (nothing is deleted); for Kafka the gaps the source reported, counted.
 *
 * Warm-up: the first 10 s of the offered period (its first quarter when it
 * is shorter than 40 s), and at least until the first commit: before a batch
 * has made the whole trip the pipeline only fills (at low rates with the
 * default batch target that takes tens of seconds), so a fit over it would
 * read the filling as growth. Never more than three quarters of the offered
 * period. A series "grows" when its fit over the rows after
 * warm-up explains it (r² ≥ 0.6) and rises by a material amount over them
 * (see `Fit.grows`); a sawtooth or noise does not.
 */
import * as Fit from "./Fit.ts"
import type { Sample } from "./Sampler.ts"

/** The run's totals the verdicts read beside the samples. */
export interface Facts {
  readonly rate: number
  readonly source: "synthetic" | "kafka"
  readonly offerSeconds: number
  readonly memoryBudgetBytes: number
  /** Bytes of the budget reserved for the source's read-ahead (Kafka prefetch). */
  readonly readAheadBytes: number
  readonly retentionGaps: number
  readonly retentionGapRecords: number
  readonly lost: number
  /** Records offered over the offered period (scheduled by the rate, or produced to the topic). */
  readonly offered: number
}

export type Verdict = "holds" | "refuted" | "not measured by this run" | "not applicable"

/** One hypothesis judged. */
export interface Judgement {
  readonly id: 1 | 2 | 3 | 4
  readonly hypothesis: string
  readonly verdict: Verdict
  readonly evidence: string
}

/** Fits of the series the verdicts read, over the rows after warm-up. */
export interface Fits {
  readonly warmupSeconds: number
  readonly steadySeconds: number
  readonly rss: Fit.Fit
  readonly heap: Fit.Fit
  readonly inflightBytes: Fit.Fit
  readonly ledgerBatches: Fit.Fit
  readonly lagRecords: Fit.Fit
  readonly backlogRecords: Fit.Fit
}

/** Whether the offered rate was sustained, and why not. */
export interface Sustained {
  readonly sustained: boolean
  readonly evidence: string
}

/** The rows of the offered period after warm-up. */
export const steadyRows = (samples: ReadonlyArray<Sample>, offerSeconds: number) => {
  const firstCommit = samples.find((s) => s.committed > 0)?.t ?? 0
  const warmupSeconds = Math.min(0.75 * offerSeconds, Math.max(offerSeconds >= 40 ? 10 : offerSeconds / 4, firstCommit))
  return { warmupSeconds, rows: samples.filter((s) => s.phase === "running" && s.t >= warmupSeconds) }
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
const num = (x: number, digits = 0) => x.toLocaleString("en-US", { maximumFractionDigits: digits })
const fitText = (f: Fit.Fit, unit: string, scale = 1) => `slope ${num(f.slope / scale, 2)} ${unit}/s, r² ${f.r2.toFixed(2)}`
const max = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => Math.max(a, b), 0)
const mean = (xs: ReadonlyArray<number>) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length)

/** Fits the series the verdicts read. */
export const fits = (samples: ReadonlyArray<Sample>, offerSeconds: number): Fits => {
  const { warmupSeconds, rows } = steadyRows(samples, offerSeconds)
  const t = rows.map((r) => r.t)
  const fit = (pick: (r: Sample) => number) => Fit.linear(t, rows.map(pick))
  return {
    warmupSeconds,
    steadySeconds: rows.length > 1 ? (rows.at(-1)?.t ?? 0) - (rows[0]?.t ?? 0) : 0,
    rss: fit((r) => r.rssBytes),
    heap: fit((r) => r.heapUsedBytes),
    inflightBytes: fit((r) => r.inflightBytes),
    ledgerBatches: fit((r) => r.ledgerBatches),
    lagRecords: fit((r) => r.lagRecords),
    backlogRecords: fit((r) => r.backlogRecords)
  }
}

/**
 * Whether the rate was sustained: the source's backlog (records offered and
 * not read) does not grow after warm-up and stays under one second of the
 * rate at the end of the offered period, and the records read over that
 * period are ≥ 97 % of those offered.
 */
export const sustained = (samples: ReadonlyArray<Sample>, facts: Facts, f: Fits, read: number): Sustained => {
  const running = samples.filter((s) => s.phase === "running")
  const endBacklog = running.at(-1)?.backlogRecords ?? 0
  const share = read / Math.max(1, facts.offered)
  const growing = Fit.grows(f.backlogRecords, f.steadySeconds, facts.rate)
  const ok = !growing && endBacklog <= facts.rate && share >= 0.97
  return {
    sustained: ok,
    evidence: `read ${num(read)} of ${num(facts.offered)} records offered (${(100 * share).toFixed(1)} %); ` +
      `backlog at the end of the offered period ${num(endBacklog)} records (${(endBacklog / facts.rate).toFixed(2)} s of the rate), ` +
      `after warm-up ${fitText(f.backlogRecords, "records")}`
  }
}

/** Whether RSS is flat after warm-up: it does not grow (`Fit.grows`) by more than 10 % of its mean over the rows after warm-up. */
export interface RssFlat {
  readonly flat: boolean
  readonly evidence: string
}

/** See {@link RssFlat}. */
export const rssFlat = (samples: ReadonlyArray<Sample>, f: Fits): RssFlat => {
  const rows = samples.filter((s) => s.phase === "running" && s.t >= f.warmupSeconds)
  const rssMean = mean(rows.map((r) => r.rssBytes))
  const growth = f.rss.slope * f.steadySeconds
  return {
    flat: !Fit.grows(f.rss, f.steadySeconds, 0.1 * rssMean),
    evidence: `after warm-up (${f.warmupSeconds.toFixed(0)} s) RSS ${fitText(f.rss, "MiB", 2 ** 20)}, ${growth >= 0 ? "+" : ""}${mib(growth)} over ${f.steadySeconds.toFixed(0)} s ` +
      `(mean ${mib(rssMean)}, min ${mib(Math.min(...rows.map((r) => r.rssBytes)))}, max ${mib(max(rows.map((r) => r.rssBytes)))}); heap used ${fitText(f.heap, "MiB", 2 ** 20)}`
  }
}

/** The four verdicts. */
export const judge = (samples: ReadonlyArray<Sample>, facts: Facts, f: Fits): ReadonlyArray<Judgement> => {
  const { rows } = steadyRows(samples, facts.offerSeconds)
  const all = samples
  const budget = facts.memoryBudgetBytes
  const heldMax = max(all.map((r) => r.inflightBytes))
  const rssMean = mean(rows.map((r) => r.rssBytes))
  const s = f.steadySeconds
  // Held bytes are bounded by the budget by construction: "grows" means a trend that is not a level at the budget.
  const pinned = rows.length > 0 && mean(rows.slice(-Math.max(1, Math.floor(rows.length / 4))).map((r) => r.inflightBytes)) >= 0.85 * (budget - facts.readAheadBytes)
  const heldGrows = Fit.grows(f.inflightBytes, s, 0.1 * budget) && !pinned
  const overBudget = heldMax > budget * 1.05
  const one: Judgement = {
    id: 1,
    hypothesis: "in-flight grows without bound",
    verdict: heldGrows || overBudget ? "holds" : "refuted",
    evidence: `bytes held max ${mib(heldMax)} vs budget ${mib(budget)}${facts.readAheadBytes > 0 ? ` (${mib(facts.readAheadBytes)} of it reserved for the source's read-ahead)` : ""}` +
      `${pinned ? ", held at the budget (the read gate bounds it)" : ""}; after warm-up (${f.warmupSeconds.toFixed(0)} s) held bytes ${fitText(f.inflightBytes, "MiB", 2 ** 20)}; ` +
      `RSS ${fitText(f.rss, "MiB", 2 ** 20)} (mean ${mib(rssMean)}, max ${mib(max(all.map((r) => r.rssBytes)))}, ` +
      `growth over the ${s.toFixed(0)} s after warm-up ${mib(f.rss.slope * s)}); heap used ${fitText(f.heap, "MiB", 2 ** 20)}; ` +
      `uploads in flight max ${max(all.map((r) => r.inflightBatches))} (concurrency knob max ${max(all.map((r) => r.concurrency))})`
  }
  const ledgerMean = mean(rows.map((r) => r.ledgerBatches))
  const ledgerGrows = Fit.grows(f.ledgerBatches, s, Math.max(16, 0.5 * ledgerMean))
  const lagGrows = Fit.grows(f.lagRecords, s, Math.max(facts.rate, 0.5 * mean(rows.map((r) => r.lagRecords))))
  const two: Judgement = {
    id: 2,
    hypothesis: "pending state grows without bound",
    verdict: ledgerGrows || lagGrows ? "holds" : "refuted",
    evidence: `commit ledger (batches sealed, not committed) max ${max(all.map((r) => r.ledgerBatches))}, mean after warm-up ${ledgerMean.toFixed(1)}, ${fitText(f.ledgerBatches, "batches")}; ` +
      `verified batches waiting for a commit max ${max(all.map((r) => r.verifiedNotCommitted))}; batches queued max ${max(all.map((r) => r.queuedBatches))}; ` +
      `partitions held max ${max(all.map((r) => r.partitionsHeld))}; records read and not committed max ${num(max(all.map((r) => r.lagRecords)))}, ${fitText(f.lagRecords, "records")}; ` +
      `open batches: payload ${mib(max(all.map((r) => r.openBytes)))} max (their count is not observable)`
  }
  const three: Judgement = {
    id: 3,
    hypothesis: "recovery after a restart degrades with the backlog",
    verdict: "not measured by this run",
    evidence: "a soak does not restart the archiver (issue 13 item 2 measures it)"
  }
  const four: Judgement = facts.source === "synthetic"
    ? { id: 4, hypothesis: "retention deletes unread records", verdict: "not applicable", evidence: "the synthetic source deletes nothing: no retention" }
    : {
      id: 4,
      hypothesis: "retention deletes unread records",
      verdict: facts.retentionGapRecords > 0 ? "holds" : "refuted",
      evidence: `${facts.retentionGaps} retention gaps reported by the source, ${num(facts.retentionGapRecords)} records deleted unread (counted as lost); ` +
        `read and not verified at the end: ${num(facts.lost - facts.retentionGapRecords)}` +
        (facts.retentionGapRecords === 0 ? "; the topic's retention (broker default, 7 days) is far longer than the run, so this run could not refute it under pressure (issue 13 item 4)" : "")
    }
  return [one, two, three, four]
}
