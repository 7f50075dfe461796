/**
 * When the replay's measured oracle gets its bytes verified: the counterpart,
 * on cells measured against the real store, of the simulator's
 * `Oracle.sent` / `Oracle.advance`. The oracle serves each second
 * min(queue, the phase's best cell); the bytes it serves count one batch's
 * store time later, as a pipeline's count when the store verifies them:
 * the object upload of the measured cell that sustains that rate soonest
 * (the lowest mean upload latency among the cells at or above it; the best
 * cell when none is), plus a manifest upload and a verify, each at least the
 * latency the replay imposes on every request. A batch under way when the
 * store changes finishes its remaining share at the new phase's time for the
 * same cell (same object size, the nearest in-flight the new phase measured).
 *
 * It is generous, as the simulator's is: no time to fill an object, and the
 * measured grid's latencies (two sizes, the grid's in-flights) only.
 *
 * @since 0.5.0
 */
import { Oracle } from "@sluice/testkit"
import type { Calibration } from "@sluice/adapter-s3"

/** One phase's measured store: its sweep's cells and the latency imposed on every request (ms). */
export interface MeasuredPhase {
  readonly cells: ReadonlyArray<Calibration.Cell>
  readonly requestMillis: number
}

/** Bytes served and not yet verified, on the cell that carries them. */
export interface InFlight extends Oracle.InFlight {
  readonly inflight: number
}

/** The two small requests of a batch after its object upload: the manifest's upload and the verify. */
const SMALL_REQUESTS_PER_BATCH = 2

/** The cells that answered: some upload succeeded, so their latency is a measurement. */
const answered = (phase: MeasuredPhase) => phase.cells.filter((c) => c.bytesPerSecond > 0 && c.latencyMeanMillis > 0)

/** A batch's store time on `cell` in `phase`: its object upload, then the manifest and the verify. */
const cellMillis = (phase: MeasuredPhase, cell: Calibration.Cell): number =>
  cell.latencyMeanMillis + SMALL_REQUESTS_PER_BATCH * phase.requestMillis

/**
 * The bytes served at `bytesPerSecond` in one step, on the measured cell that
 * sustains the rate soonest (`null` when no cell of the phase answered).
 *
 * @since 0.5.0
 */
export const sent = (phase: MeasuredPhase, bytes: number, bytesPerSecond: number): InFlight | null => {
  const cells = answered(phase)
  if (cells.length === 0) return null
  const fast = cells.filter((c) => c.bytesPerSecond >= bytesPerSecond * (1 - 1e-9))
  const pool = fast.length > 0 ? fast : [cells.reduce((a, b) => (b.bytesPerSecond > a.bytesPerSecond ? b : a))]
  const cell = pool.reduce((a, b) => (cellMillis(phase, b) < cellMillis(phase, a) ? b : a))
  return { bytes, objectBytes: cell.objectBytes, inflight: cell.inflight, done: 0 }
}

/** A batch's store time in `phase`: its cell's (same size, the nearest in-flight measured); infinite when the phase measured no such size. */
export const storeMillis = (phase: MeasuredPhase, batch: InFlight): number => {
  const same = answered(phase).filter((c) => c.objectBytes === batch.objectBytes)
  if (same.length === 0) return Number.POSITIVE_INFINITY
  const cell = same.reduce((a, b) => (Math.abs(b.inflight - batch.inflight) < Math.abs(a.inflight - batch.inflight) ? b : a))
  return cellMillis(phase, cell)
}

/**
 * Advances the bytes in flight by `millis` of `phase`: those verified, those
 * still in flight.
 *
 * @since 0.5.0
 */
export const advance = (phase: MeasuredPhase, inFlight: ReadonlyArray<InFlight>, millis: number) =>
  Oracle.advanceBy(inFlight, millis, (batch) => storeMillis(phase, batch))
