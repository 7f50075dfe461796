/**
 * Traces: the time series a simulation run records, one row every sample
 * period (100 virtual ms), and its CSV form (byte-identical for a seed).
 *
 * @since 0.1.0
 */

/**
 * One sample. Over several instances, counts and bytes are summed; `batchTargetBytes`
 * is instance 0's; `readGatePaused` counts paused instances.
 *
 * @since 0.1.0
 */
export interface TraceRow {
  /** End of the sample window, virtual ms. */
  readonly t: number
  readonly concurrency: number
  readonly inflightBatches: number
  readonly inflightBytes: number
  /** Payload bytes verified in the window, per second. */
  readonly goodputBytesPerSecond: number
  /** What the oracle served in the window: min(queue, store capacity in force), bytes per second. */
  readonly oracleBytesPerSecond: number
  /**
   * What the oracle got verified in the window, bytes per second: each byte it
   * served counts one batch's store time later (see `Oracle`), as a pipeline's
   * bytes count when the store verifies them. Goodput ratios (whole run and per
   * phase) use it; recovery and probe cost use the served bytes. Absent from
   * traces that do not model it (the replay's measured oracle): the served bytes.
   */
  readonly oracleVerifiedBytesPerSecond?: number | undefined
  /** Object-upload latency percentiles of requests completed in the window; `null` if none. */
  readonly p50Millis: number | null
  readonly p95Millis: number | null
  /** p95 ÷ unloaded latency for the window's mean object size; `null` if none. */
  readonly latencyInflation: number | null
  readonly requests: number
  /** Throttled requests in the window (503 SlowDown + 429). */
  readonly throttles: number
  readonly batchTargetBytes: number
  readonly readGatePaused: number
  readonly lagRecords: number
  /** Instances with a policy in mode `probing` at the end of the window. */
  readonly probing: number
  /**
   * Freshness: the age (seconds) at the end of the window of the oldest record
   * not yet committed (read or not), over every instance and partition; 0 when
   * everything produced is committed. From the simulated log's production
   * times, not from the pipeline.
   */
  readonly lagSeconds: number
  /**
   * Bytes held by the most loaded instance at the end of the window, counted
   * outside the pipeline: payload bytes the source handed it minus payload bytes
   * the store verified for it.
   */
  readonly heldBytes: number
}

/**
 * A run's trace.
 *
 * @since 0.1.0
 */
export interface Trace {
  readonly sampleMillis: number
  readonly rows: ReadonlyArray<TraceRow>
  /** Times (ms) of the scenario's events, with a short label. */
  readonly events: ReadonlyArray<{ readonly at: number; readonly label: string }>
}

/**
 * The CSV columns, in order.
 *
 * @since 0.1.0
 */
export const columns: ReadonlyArray<keyof TraceRow> = [
  "t",
  "concurrency",
  "inflightBatches",
  "inflightBytes",
  "goodputBytesPerSecond",
  "oracleBytesPerSecond",
  "p50Millis",
  "p95Millis",
  "latencyInflation",
  "requests",
  "throttles",
  "batchTargetBytes",
  "readGatePaused",
  "lagRecords",
  "probing",
  "lagSeconds",
  "heldBytes",
  "oracleVerifiedBytesPerSecond"
]

const cell = (v: number | null): string =>
  v === null ? "" : Number.isInteger(v) ? String(v) : v.toFixed(3)

/**
 * Renders a trace as CSV (header + one line per row; fixed number formatting, so
 * equal traces give equal bytes).
 *
 * **Example**
 *
 * ```ts
 * import { Trace } from "@sluice/testkit"
 * declare const trace: Trace.Trace
 * const csv: string = Trace.toCsv(trace)
 * ```
 *
 * @since 0.1.0
 */
export const toCsv = (trace: Trace): string => {
  const lines = [columns.join(",")]
  for (const row of trace.rows) lines.push(columns.map((c) => cell(row[c] ?? null)).join(","))
  return lines.join("\n") + "\n"
}

/**
 * The `q` quantile (0..1) of `values` (nearest rank); `null` when empty.
 *
 * @since 0.1.0
 */
export const quantile = (values: ReadonlyArray<number>, q: number): number | null => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank] ?? null
}
