/**
 * CRC-32 of an object body (the CRC of zlib, gzip and S3's `CRC32` checksum),
 * a large pooled body on two threads at once.
 *
 * **Why two threads**: a sink checksums every body before it sends it (the
 * store checks the bytes against it), and at ~2–3.6 GB/s (`zlib.crc32`,
 * measured here) an 8 MiB body — `AdaptiveBatch`'s starting target — costs
 * 2–4 ms of the thread that also reads, seals and runs every policy. The
 * pipeline's pooled bodies live in `SharedArrayBuffer`s (`Batch.encodeBody`),
 * so a helper thread can read them without a copy: from
 * {@link SPLIT_FROM_BYTES} on, {@link of} hands the second half of the body to
 * the helper, computes the first half itself, waits for the helper's half (on
 * a word of shared memory, not the event loop) and combines the two
 * ({@link combine}). The checksum stays synchronous and takes about half as
 * long on the event loop.
 *
 * **Why not hand it the whole body**: tried and measured
 * (`docs/design/real-path-cost.md`): the wait for the thread then sits inside
 * the upload's time, the concurrency policies read it as a slower store and
 * raise the uploads in flight, and the extra bodies in flight cost more in
 * fresh memory than the checksum saved.
 *
 * The helper is a help, never a dependency: while it is starting, after it
 * failed or exited, and when its half is late (more than
 * {@link WAIT_FACTOR} × the event loop's own half), the event loop computes
 * the half itself; a failure is logged once ({@link logHelperFailure}). On a
 * machine with one core there is no core to help ({@link split}).
 *
 * @since 0.5.0
 */
import { availableParallelism } from "node:os"
import * as Zlib from "node:zlib"
import { Effect } from "effect"
import * as CrcHelper from "./internal/crcHelper.ts"

/**
 * Bodies from this size on are split with the helper thread. Measured here (2
 * cores, both busy with other work): for a 1 MiB body {@link of} cost the
 * event loop 171–241 µs of CPU against 252–292 µs in place, the exchange with
 * the helper 4–105 µs above the half it computes itself. Below 1 MiB that
 * cost approaches the half it saves; an 8 MiB body (the batch target's start)
 * saves about half its 2–4 ms.
 *
 * @since 0.5.0
 */
export const SPLIT_FROM_BYTES = 1024 * 1024

/**
 * How long the event loop waits for the helper's half, as a multiple of the
 * time its own half took (at least {@link MIN_WAIT_MILLIS}): both halves are
 * the same size and the same code, so the helper's takes about as long unless
 * its core is busy; at twice that, computing it here costs no more than
 * waiting longer would risk.
 *
 * @since 0.5.0
 */
export const WAIT_FACTOR = 2

/**
 * The shortest wait for the helper's half, in milliseconds: the time a job
 * takes to reach a worker that sleeps (~0.1 ms measured here) with room for
 * the scheduler.
 *
 * @since 0.5.0
 */
export const MIN_WAIT_MILLIS = 1

/**
 * Whether large shared bodies are split with the helper: only with a second
 * core to run it (`os.availableParallelism() ≥ 2`) and `zlib.crc32` (Node ≥
 * 22.2).
 *
 * @since 0.5.0
 */
export const split: boolean = availableParallelism() >= 2 && typeof Zlib.crc32 === "function"

/**
 * The CRC-32 of `data` as an unsigned 32-bit number. A view of a
 * `SharedArrayBuffer` of at least {@link SPLIT_FROM_BYTES} is computed half on
 * the helper thread when {@link split} holds; anything else in place
 * (`zlib.crc32`).
 *
 * **Example**
 *
 * ```ts
 * import { Crc32 } from "@sluice/core"
 *
 * Crc32.of(new TextEncoder().encode("123456789")) === 0xcbf43926 // true
 * ```
 *
 * @since 0.5.0
 */
export const of = (data: Uint8Array): number => {
  if (!split || data.byteLength < SPLIT_FROM_BYTES || !(data.buffer instanceof SharedArrayBuffer)) return inPlace(data)
  const half = data.byteLength >>> 1
  const second = data.subarray(half)
  const job = CrcHelper.start(second)
  const t0 = performance.now()
  const first = inPlace(data.subarray(0, half))
  if (job === undefined) return Zlib.crc32(second, first)
  const wait = Math.max(MIN_WAIT_MILLIS, WAIT_FACTOR * (performance.now() - t0))
  const helped = CrcHelper.finish(job, wait)
  return helped === undefined ? Zlib.crc32(second, first) : combine(first, helped, second.byteLength)
}

/**
 * {@link of} as an Effect, followed by {@link logHelperFailure}.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Crc32 } from "@sluice/core"
 *
 * const crc = Effect.runSync(Crc32.compute(new TextEncoder().encode("123456789")))
 * crc === 0xcbf43926 // true
 * ```
 *
 * @since 0.5.0
 */
export const compute = (data: Uint8Array): Effect.Effect<number> => Effect.tap(Effect.sync(() => of(data)), () => logHelperFailure)

/**
 * Logs a warning, once per process, if the helper thread went out of service
 * (failed or exited): its halves are computed on the event loop from then on.
 * Does nothing otherwise. A sink that calls {@link of} runs it after its
 * checksums, so that the warning reaches the application's logger.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Crc32 } from "@sluice/core"
 * declare const body: Uint8Array
 *
 * const checksum = Effect.tap(Effect.sync(() => Crc32.of(body)), () => Crc32.logHelperFailure)
 * ```
 *
 * @since 0.5.0
 */
export const logHelperFailure: Effect.Effect<void> = Effect.suspend(() => {
  const failure = CrcHelper.takeFailure()
  return failure === undefined
    ? Effect.void
    : Effect.logWarning("CRC-32 helper thread out of service; checksums are computed on the event loop alone from now on", failure)
})

/** `zlib.crc32`, or the table-driven CRC on Node 22.0 and 22.1, which lack it. */
const inPlace = (data: Uint8Array): number => typeof Zlib.crc32 === "function" ? Zlib.crc32(data) : tableCrc32(data)

/** The reflected CRC-32 polynomial (zlib's `POLY`). */
const POLY = 0xedb88320

/** CRC-32 one byte at a time (only where `zlib.crc32` is missing: Node 22.0, 22.1). */
const tableCrc32 = (data: Uint8Array): number => {
  let crc = 0xffffffff
  for (let i = 0; i < data.length; i++) crc = (TABLE[(crc ^ (data[i] ?? 0)) & 0xff] ?? 0) ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}
const TABLE: ReadonlyArray<number> = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

/** `a(x) · b(x) mod p(x)`, both reflected (zlib's `multmodp`). */
const multiply = (a: number, b: number): number => {
  let m = 0x80000000
  let p = 0
  let x = b
  for (;;) {
    if ((a & m) !== 0) {
      p ^= x
      if ((a & (m - 1)) === 0) break
    }
    m >>>= 1
    x = (x & 1) !== 0 ? (x >>> 1) ^ POLY : x >>> 1
  }
  return p >>> 0
}

/** `x^(2^k) mod p(x)` for k = 0 … 31 (zlib's `x2n_table`). */
const X2N: ReadonlyArray<number> = (() => {
  const table: Array<number> = []
  let p = 0x40000000 // x^1
  for (let k = 0; k < 32; k++) {
    table.push(p)
    p = multiply(p, p)
  }
  return table
})()

/**
 * The CRC-32 of `A ‖ B` from the CRC-32 of `A`, that of `B` and the length of
 * `B` in bytes (zlib's `crc32_combine`): no pass over the bytes.
 *
 * **Example**
 *
 * ```ts
 * import { Crc32 } from "@sluice/core"
 *
 * const a = new TextEncoder().encode("1234"), b = new TextEncoder().encode("56789")
 * Crc32.combine(Crc32.of(a), Crc32.of(b), b.byteLength) === Crc32.of(new TextEncoder().encode("123456789")) // true
 * ```
 *
 * @since 0.5.0
 */
export const combine = (crcA: number, crcB: number, bytesB: number): number => {
  // x^(8·bytesB) mod p: the operator that shifts a CRC past bytesB zero bytes.
  let shift = 0x80000000 // x^0
  let n = bytesB
  let k = 3
  while (n > 0) {
    if (n % 2 === 1) shift = multiply(X2N[k % 32] ?? 0, shift)
    n = Math.floor(n / 2)
    k++
  }
  return (multiply(shift, crcA >>> 0) ^ (crcB >>> 0)) >>> 0
}
