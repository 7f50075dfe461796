/**
 * soak — the sampler: once a second, one row of everything the soak watches.
 * Counts of records come from the audit (outside the pipeline); in-flight
 * work, pending state and the read gate from `handle.stats()`; knobs from
 * `handle.knobs`; failures by class from the pipeline's OpenTelemetry
 * metrics; stage p95 from the signal bus; memory and CPU from the process.
 */
import type { Pipeline, Source } from "@sluice/core"
import { Effect } from "effect"
import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import type { Audit } from "./Audit.ts"
import type { Latencies } from "./Latencies.ts"
import type { Telemetry } from "./Telemetry.ts"

/** One second of a soak. Counts are cumulative unless named per second; bytes are bytes. */
export interface Sample {
  /** Seconds since the start. */
  readonly t: number
  /** `running` while records are offered, `draining` after. */
  readonly phase: "running" | "draining"
  readonly read: number
  readonly verified: number
  readonly committed: number
  readonly readPerSecond: number
  readonly verifiedPerSecond: number
  readonly committedPerSecond: number
  /** Records read from the source and not committed yet. */
  readonly lagRecords: number
  /** Records the source has and the pipeline has not read: scheduled by the rate and not read (synthetic), behind the end of the log (Kafka). */
  readonly backlogRecords: number
  /** Batches uploading now, and batches sealed and waiting (a permit, a retry, their partition's commit). */
  readonly inflightBatches: number
  readonly queuedBatches: number
  /** Bytes charged to the memory budget now (open + sealed + uploading), and the payload bytes of open batches. */
  readonly inflightBytes: number
  readonly openBytes: number
  /** The commit ledger: batches sealed and not committed (sealed by the pipeline − committed per the audit). */
  readonly ledgerBatches: number
  /** Verified batches waiting for an earlier batch of their partition before they can be committed. */
  readonly verifiedNotCommitted: number
  readonly partitionsHeld: number
  readonly oldestUncommittedAgeMillis: number
  readonly rssBytes: number
  readonly heapUsedBytes: number
  readonly heapTotalBytes: number
  readonly arrayBuffersBytes: number
  /** Share of one core this process used over the second (user + system), and of the event loop busy. */
  readonly cpu: number
  readonly eventLoopBusy: number
  /** The longest the event loop was blocked over the second (ms; timers and I/O waited this long). */
  readonly eventLoopDelayMaxMillis: number
  readonly throttledPerSecond: number
  readonly transientPerSecond: number
  readonly fatalPerSecond: number
  readonly retries: number
  readonly verificationFailures: number
  readonly sourceErrors: number
  readonly retentionGapRecords: number
  readonly p95ObjectUploadMillis: number | null
  readonly p95ManifestUploadMillis: number | null
  readonly p95VerifyMillis: number | null
  readonly p95CommitMillis: number | null
  readonly requestsPerSecond: number
  readonly concurrency: number
  readonly batchTargetRecords: number
  readonly batchTargetBytes: number
  /** 1 when the read gate is paused. */
  readonly readGatePaused: number
  readonly probing: number
}

/** What the sampler reads. */
export interface SamplerDeps {
  readonly handle: Pipeline.PipelineHandle
  readonly source: Source.Source
  readonly audit: Audit
  readonly telemetry: Telemetry
  readonly latencies: Latencies
}

/**
 * A sampler started now: each call of the returned effect gives the row of
 * the time since the previous call.
 *
 * **Example**
 *
 * ```ts
 * const sample = Sampler.make({ handle, source, audit, telemetry, latencies })
 * const row = yield* sample("running")
 * ```
 */
export const make = (deps: SamplerDeps): (phase: Sample["phase"]) => Effect.Effect<Sample> => {
  const started = performance.now()
  let last = { at: started, read: 0, verified: 0, committed: 0, throttled: 0, transient: 0, fatal: 0 }
  let cpu = process.cpuUsage()
  let elu = performance.eventLoopUtilization()
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  return (phase) =>
    Effect.gen(function*() {
      const reading = yield* deps.telemetry.read
      const lag = yield* deps.source.lag
      const now = performance.now()
      const seconds = Math.max(1e-3, (now - last.at) / 1000)
      const counts = deps.audit.counts()
      const stats = deps.handle.stats()
      const knobs = deps.handle.knobs.current()
      const memory = process.memoryUsage()
      const cpuNow = process.cpuUsage()
      const eluNow = performance.eventLoopUtilization()
      const { p95, requests } = deps.latencies.take()
      const failures = {
        throttled: reading.failuresByClass["Throttled"] ?? 0,
        transient: reading.failuresByClass["Transient"] ?? 0,
        fatal: reading.failuresByClass["Fatal"] ?? 0
      }
      let backlog = 0
      for (const records of lag.values()) backlog += records
      const perSecond = (now: number, before: number) => (now - before) / seconds
      const row: Sample = {
        t: (now - started) / 1000,
        phase,
        read: counts.read,
        verified: counts.verified,
        committed: counts.committed,
        readPerSecond: perSecond(counts.read, last.read),
        verifiedPerSecond: perSecond(counts.verified, last.verified),
        committedPerSecond: perSecond(counts.committed, last.committed),
        lagRecords: counts.read - counts.committed,
        backlogRecords: backlog,
        inflightBatches: stats.uploading,
        queuedBatches: stats.queued,
        inflightBytes: stats.inflightBytes,
        openBytes: stats.openBytes,
        ledgerBatches: stats.batchesSealed - counts.batchesCommitted,
        verifiedNotCommitted: counts.verifiedNotCommitted,
        partitionsHeld: stats.partitionsHeld,
        oldestUncommittedAgeMillis: stats.oldestUncommittedAgeMillis,
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        heapTotalBytes: memory.heapTotal,
        arrayBuffersBytes: memory.arrayBuffers,
        cpu: (cpuNow.user - cpu.user + cpuNow.system - cpu.system) / 1e6 / seconds,
        eventLoopBusy: performance.eventLoopUtilization(eluNow, elu).utilization,
        eventLoopDelayMaxMillis: delay.max / 1e6,
        throttledPerSecond: perSecond(failures.throttled, last.throttled),
        transientPerSecond: perSecond(failures.transient, last.transient),
        fatalPerSecond: perSecond(failures.fatal, last.fatal),
        retries: reading.retries,
        verificationFailures: reading.verificationFailures,
        sourceErrors: counts.sourceErrors,
        retentionGapRecords: counts.retentionGapRecords,
        p95ObjectUploadMillis: p95.object_upload,
        p95ManifestUploadMillis: p95.manifest_upload,
        p95VerifyMillis: p95.verify,
        p95CommitMillis: p95.commit,
        requestsPerSecond: requests / seconds,
        concurrency: knobs.concurrency,
        batchTargetRecords: knobs.batchTarget.records,
        batchTargetBytes: knobs.batchTarget.bytes,
        readGatePaused: knobs.readGate === "open" ? 0 : 1,
        probing: deps.latencies.probing()
      }
      last = { at: now, read: counts.read, verified: counts.verified, committed: counts.committed, ...failures }
      cpu = cpuNow
      elu = eluNow
      delay.reset()
      return row
    })
}
