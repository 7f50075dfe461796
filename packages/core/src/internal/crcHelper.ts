/**
 * The helper thread of `Crc32.of`: one `node:worker_threads` worker that
 * computes the CRC-32 of the second half of a body while the event loop
 * computes the first, each over the same `SharedArrayBuffer` (no copy).
 *
 * The exchange is synchronous on the event loop's side: {@link start} posts
 * the job, the caller computes its half, {@link finish} waits on a word of
 * shared memory (`Atomics.wait`) for the helper's answer. Nothing is queued:
 * the helper has at most one job, since {@link start} posts none while the
 * last is unanswered (after a wait that timed out, until the late answer
 * comes): a stalled helper holds one body's memory, not one per checksum.
 *
 * - **Never stalls**: the wait is bounded by the caller's deadline; past it,
 *   or while the helper is not running (not yet online, failed, exited),
 *   {@link finish} answers `undefined` and the caller computes the half
 *   itself. The late answer only frees the helper for the next job.
 * - **Never holds the process open**: the worker is `unref`'d (no callback
 *   ever waits on its messages).
 * - **Out of service for good** after an error or exit (one warning, from
 *   {@link takeFailure}); nothing restarts it.
 *
 * @internal
 */
import { Worker } from "node:worker_threads"

/** The helper's code, CommonJS (an `eval` worker): no file to ship or resolve. */
const SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const { crc32 } = require("node:zlib")
const answer = new Int32Array(workerData.answer)
parentPort.on("message", (job) => {
  const value = crc32(new Uint8Array(job.buffer, job.offset, job.length))
  Atomics.store(answer, 1, value | 0)
  Atomics.store(answer, 0, job.id)
  Atomics.notify(answer, 0)
})
`

/**
 * The answer word pair in shared memory: [0] the number of the job answered
 * last, [1] its CRC (as a signed 32-bit integer).
 */
const answer = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT))
const ANSWERED = 0
const VALUE = 1

let worker: Worker | undefined
let online = false
let failure: unknown
let failureReported = false
/** Job numbers: positive, wrapping before they leave the 31-bit range the answer word holds. */
let lastJob = 0

const fail = (reason: unknown): void => {
  if (failure === undefined) failure = reason
  online = false
  const stopped = worker
  worker = undefined
  if (stopped !== undefined) void stopped.terminate().catch(() => undefined)
}

/** The helper, started on first use; `undefined` until it is online, or once it failed. */
const ready = (): Worker | undefined => {
  if (failure !== undefined) return undefined
  if (worker === undefined) {
    try {
      // execArgv []: the process's flags are not the helper's (`--input-type=module` would make SOURCE an ES module).
      const w = new Worker(SOURCE, { eval: true, name: "sluice-crc32", execArgv: [], workerData: { answer: answer.buffer } })
      w.unref()
      w.once("online", () => {
        online = true
      })
      w.on("error", (error) => fail(error))
      w.on("messageerror", (error) => fail(error))
      w.on("exit", (code) => fail(new Error(`the CRC-32 helper thread exited with code ${code}`)))
      worker = w
    } catch (error) {
      fail(error)
    }
    return undefined
  }
  return online ? worker : undefined
}

/**
 * Posts the CRC-32 of `part` (a view of a `SharedArrayBuffer`) to the helper:
 * the job's number for {@link finish}, or `undefined` if the helper is not
 * running or has not answered its last job (the caller computes `part`
 * itself).
 */
export const start = (part: Uint8Array): number | undefined => {
  const w = ready()
  if (w === undefined || (lastJob !== 0 && Atomics.load(answer, ANSWERED) !== lastJob)) return undefined
  const id = lastJob = lastJob >= 0x3fffffff ? 1 : lastJob + 1
  try {
    w.postMessage({ id, buffer: part.buffer, offset: part.byteOffset, length: part.byteLength })
  } catch (error) {
    fail(error)
    return undefined
  }
  return id
}

/**
 * The helper's CRC for job `id`, waiting at most `waitMillis` for it; or
 * `undefined` if it did not come in time (the caller computes it).
 */
export const finish = (id: number, waitMillis: number): number | undefined => {
  const deadline = performance.now() + waitMillis
  for (;;) {
    const answered = Atomics.load(answer, ANSWERED)
    if (answered === id) return Atomics.load(answer, VALUE) >>> 0
    const left = deadline - performance.now()
    if (left <= 0 || worker === undefined) return undefined
    Atomics.wait(answer, ANSWERED, answered, left)
  }
}

/** Why the helper went out of service, the first time it is asked after that (for one warning). */
export const takeFailure = (): unknown => {
  if (failure === undefined || failureReported) return undefined
  failureReported = true
  return failure
}

/** The running helper, if any (tests stop it to prove the fallback). */
export const current = (): Worker | undefined => worker

/** Whether the helper is online and takes jobs (tests wait for it). */
export const isOnline = (): boolean => ready() !== undefined
