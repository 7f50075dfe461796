/**
 * A calibration sweep against a real S3-compatible store, with bounded load:
 * for every (in-flight, object size) cell, `inflight` workers upload objects of
 * that size in a closed loop for `cellSeconds`, each worker overwriting its one
 * key (the bucket holds at most `inflight × size` per cell; every key is
 * deleted at the end). What each cell measured feeds `Calibration.fit`.
 *
 * @since 0.3.0
 */
import { DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import type { S3Client } from "@aws-sdk/client-s3"
import { performance } from "node:perf_hooks"
import type * as Calibration from "./Calibration.ts"
import * as S3Errors from "./S3Errors.ts"

/**
 * What to sweep.
 *
 * @since 0.3.0
 */
export interface SweepOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Key prefix of the objects the sweep writes (and deletes). */
  readonly prefix: string
  readonly sizes: ReadonlyArray<number>
  readonly inflights: ReadonlyArray<number>
  /** How long each cell runs (after which no new upload starts). */
  readonly cellSeconds: number
  /** Called after each cell (progress). */
  readonly onCell?: ((cell: Calibration.Cell) => void) | undefined
}

/**
 * The largest sweep: cells (sizes × in-flights), the longest cell, the most
 * uploads at once and the largest object. A sweep past them is refused: it
 * is load on a store, and a typo should not become an hour of it.
 *
 * @since 0.3.0
 */
export const Bounds = { cells: 64, cellSeconds: 60, inflight: 256, objectBytes: 256 * 1024 * 1024 } as const

/** A worker whose upload failed transiently waits this long before the next (a store that is down is not hammered until the deadline). */
const TRANSIENT_PAUSE_MILLIS = 50

/** One cell: `inflight` workers in a closed loop for `cellSeconds`. */
const runCell = async (options: SweepOptions, inflight: number, objectBytes: number): Promise<Calibration.Cell> => {
  const body = Buffer.alloc(objectBytes, 0x61)
  const latencies: Array<number> = []
  let requests = 0
  let throttles = 0
  let errors = 0
  let bytes = 0
  const started = performance.now()
  const deadline = started + options.cellSeconds * 1000
  const worker = async (w: number) => {
    const key = `${options.prefix}/${inflight}x${objectBytes}/${w}`
    while (performance.now() < deadline) {
      const t0 = performance.now()
      try {
        await options.client.send(new PutObjectCommand({ Bucket: options.bucket, Key: key, Body: body, ContentLength: objectBytes }))
        latencies.push(performance.now() - t0)
        bytes += objectBytes
        requests++
      } catch (error) {
        const failureClass = S3Errors.classOf(error)
        // A transient failure (a kept-alive connection the server or a proxy
        // closed as it was reused: EPIPE, ECONNRESET; a 500) is counted and the
        // worker goes on, until the cell's deadline: a replay's sweep failed on
        // one such EPIPE right after toxiproxy's toxics were switched.
        if (failureClass === "Transient") {
          errors++
          await new Promise((resolve) => setTimeout(resolve, TRANSIENT_PAUSE_MILLIS))
          continue
        }
        requests++
        // A throttle is a measurement; a fatal failure ends the sweep (the store is not answering as a store).
        if (failureClass !== "Throttled") throw error
        throttles++
      }
    }
  }
  await Promise.all(Array.from({ length: inflight }, (_, w) => worker(w)))
  if (requests === 0 && errors > 0) throw new Error(`no upload of ${inflight} × ${objectBytes} B answered in ${options.cellSeconds} s: ${errors} transient failures (is the store up?)`)
  const seconds = (performance.now() - started) / 1000
  const mean = latencies.reduce((s, l) => s + l, 0) / Math.max(1, latencies.length)
  const std = Math.sqrt(latencies.reduce((s, l) => s + (l - mean) ** 2, 0) / Math.max(1, latencies.length))
  return { inflight, objectBytes, seconds, requests, throttles, errors, bytesPerSecond: bytes / seconds, latencyMeanMillis: mean, latencyStdMillis: std }
}

/**
 * Runs the sweep, sizes in the outer loop, in-flight in the inner, and deletes
 * every key it wrote (also when a cell fails).
 *
 * @since 0.3.0
 */
export const sweep = async (options: SweepOptions): Promise<Array<Calibration.Cell>> => {
  const cells: Array<Calibration.Cell> = []
  try {
    for (const size of options.sizes) {
      for (const n of options.inflights) {
        const cell = await runCell(options, n, size)
        cells.push(cell)
        options.onCell?.(cell)
      }
    }
  } finally {
    for (const size of options.sizes) {
      for (const n of options.inflights) {
        for (let w = 0; w < n; w++) {
          await options.client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: `${options.prefix}/${n}x${size}/${w}` })).catch(() => undefined)
        }
      }
    }
  }
  return cells
}
