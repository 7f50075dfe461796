/**
 * soak — one run: the source and sink the options name (`Endpoints`),
 * wrapped by the audit, through `Pipeline.start` with the default config and
 * the default policies; sampled every second (`Sampler`) while records are
 * offered for `--duration`; then the offer stops, the pipeline drains
 * (`handle.drain`: stop reading, seal, finish, commit), a last sample is
 * taken, and the report is written (`Report`) with the hypotheses judged
 * (`Hypotheses`).
 */
import { Pipeline } from "@sluice/core"
import type { Source } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Effect, Fiber } from "effect"
import * as Os from "node:os"
import { performance } from "node:perf_hooks"
import * as Audit from "./Audit.ts"
import * as Endpoints from "./Endpoints.ts"
import * as Hypotheses from "./Hypotheses.ts"
import * as Latencies from "./Latencies.ts"
import type { Options } from "./Options.ts"
import * as Report from "./Report.ts"
import * as Sampler from "./Sampler.ts"
import type { Sample } from "./Sampler.ts"
import * as Telemetry from "./Telemetry.ts"

/** How long the drain may take before the run fails with `DrainTimedOut`. */
export const DRAIN_DEADLINE = "60 seconds"

/** Wraps `commit` with a timer (commits are not on the signal bus). */
const timedCommits = <S extends Source.Source>(source: S, record: (millis: number) => void): S => ({
  ...source,
  commit: (partition: number, nextOffset: number) =>
    Effect.suspend(() => {
      const started = performance.now()
      return Effect.tap(source.commit(partition, nextOffset), () => Effect.sync(() => record(performance.now() - started)))
    })
})

const k = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : `${(n / 1e3).toFixed(0)}k`)
const progressLine = (s: Sample) =>
  `soak ${s.t.toFixed(0).padStart(4)} s ${s.phase === "running" ? "" : "(draining) "}read ${k(s.readPerSecond)}/s committed ${k(s.committedPerSecond)}/s ` +
  `backlog ${k(s.backlogRecords)} lag ${k(s.lagRecords)} held ${(s.inflightBytes / 2 ** 20).toFixed(0)} MiB rss ${(s.rssBytes / 2 ** 20).toFixed(0)} MiB ` +
  `uploading ${s.inflightBatches}/${s.concurrency} ledger ${s.ledgerBatches} cpu ${(100 * s.cpu).toFixed(0)}%\n`

/**
 * Runs a soak and writes its report under `options.out`; the `--json`
 * object. `argv` is echoed in the summary.
 *
 * **Example**
 *
 * ```ts
 * const result = await Effect.runPromise(Soak.run(options, process.argv.slice(2)))
 * result.verified === result.committed // after the drain
 * ```
 */
export const run = (options: Options, argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const startedAt = new Date()
    const loadStart = Os.loadavg()
    const telemetry = Telemetry.make()
    yield* Effect.addFinalizer(() => telemetry.shutdown)
    const audit = Audit.make()
    const ends = yield* Endpoints.make(options)
    let recordCommit = (_millis: number) => {}
    const source = audit.source(timedCommits(ends.source, (millis) => recordCommit(millis)))
    const sink = audit.sink(ends.sink)
    const handle = yield* Pipeline.start({ source, sink, policies: Composition.defaults(), meterProvider: telemetry.meterProvider })
    const latencies = yield* Latencies.follow(handle)
    recordCommit = (millis) => latencies.record("commit", millis)
    const sample = Sampler.make({ handle, source, audit, telemetry, latencies })
    const samples: Array<Sample> = []
    let phase: Sample["phase"] = "running"
    const t0 = performance.now()

    // One row a second, on a grid from the start: a late tick does not shift the next ones, and
    // slots missed while the event loop was blocked are skipped (the row's `t` shows the gap).
    const sampling = yield* Effect.forkScoped(Effect.gen(function*() {
      for (let n = 1;; n++) {
        n = Math.max(n, Math.ceil((performance.now() - t0) / 1000))
        const wait = t0 + n * 1000 - performance.now()
        if (wait > 0) yield* Effect.sleep(wait)
        const row = yield* sample(phase)
        samples.push(row)
        process.stderr.write(progressLine(row))
      }
    }))

    // The offered period; a pipeline that ends before it failed (the synthetic and Kafka sources never end).
    yield* Effect.raceFirst(
      Effect.sleep(options.duration),
      Effect.flatMap(handle.await, () => Effect.die(new Error("the pipeline ended before the offered period was over")))
    )
    phase = "draining"
    const offered = yield* ends.stop
    const offerSeconds = (performance.now() - t0) / 1000
    const stats = yield* handle.drain(DRAIN_DEADLINE)
    const drainSeconds = (performance.now() - t0) / 1000 - offerSeconds
    yield* Fiber.interrupt(sampling)
    const last = yield* sample("draining")
    samples.push(last)
    process.stderr.write(progressLine(last))

    const counts = audit.counts()
    const reading = yield* telemetry.read
    const totals: Report.Totals = {
      offered,
      read: counts.read,
      verified: counts.verified,
      committed: counts.committed,
      lost: audit.lost(),
      committedNotVerified: counts.committedNotVerified,
      uncommitted: audit.uncommitted(),
      pipelineRead: stats.recordsRead,
      retentionGaps: counts.retentionGaps,
      retentionGapRecords: counts.retentionGapRecords,
      sourceErrors: counts.sourceErrors,
      verificationFailures: reading.verificationFailures,
      failuresByClass: reading.failuresByClass,
      retries: reading.retries,
      pipelineCommitted: stats.recordsCommitted,
      offerSeconds,
      drainSeconds,
      memoryBudgetBytes: handle.config.memoryBudget,
      readAheadBytes: ends.source.readAheadBytes ?? 0,
      loadAverage: { start: loadStart, end: Os.loadavg() },
      notes: ends.notes
    }
    const facts: Hypotheses.Facts = {
      rate: options.rate,
      source: options.source,
      offerSeconds,
      memoryBudgetBytes: totals.memoryBudgetBytes,
      readAheadBytes: totals.readAheadBytes,
      retentionGaps: totals.retentionGaps,
      retentionGapRecords: totals.retentionGapRecords,
      lost: totals.lost,
      offered
    }
    const fits = Hypotheses.fits(samples, offerSeconds)
    const sustained = Hypotheses.sustained(samples, facts, fits, counts.read)
    const rss = Hypotheses.rssFlat(samples, fits)
    const judgements = Hypotheses.judge(samples, facts, fits)
    const folder = Report.folderName(startedAt)
    const dir = `${options.out}/${folder}`
    const result = Report.result(options, totals, samples, fits, sustained, rss, judgements, dir)
    const pipelineSvg = yield* Report.pipelineSvg(samples, options, offerSeconds)
    Report.write(options.out, folder, {
      csv: Report.csv(samples),
      soakSvg: Report.chart(samples, options, totals),
      pipelineSvg,
      summary: Report.summary(options, argv, totals, samples, fits, sustained, rss, judgements, result),
      result
    })
    return { result, sustained, rss, judgements }
  }))
