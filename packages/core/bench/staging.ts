/**
 * The staging buffer of `writeFrames` (`src/internal/frames.ts`): small
 * records bound for a pooled body (a `SharedArrayBuffer`) are framed in an
 * unshared buffer first and copied on with one `memcpy` (`Buffer#fill`) each
 * time it fills, because V8 copies a small record into shared memory byte by
 * byte when unaligned. This measures ns a record for staging buffers of 0
 * (none: `set` straight into the body), 4, 16, 64, 256 KiB and 1 MiB: 54 k
 * records of 150 B (views into one slab, as a `Memory` source hands them out)
 * framed into an 8 MiB shared body at an odd offset, 40 rounds, the sizes
 * alternated within each round, the median round reported.
 *
 * ```sh
 * npm run bench:staging
 * ```
 *
 * It calls `writeFramesStaged`, what `writeFrames` runs into shared memory
 * with its staging buffer as a parameter; "none" is `set` straight into the
 * body, as before staging.
 */
import { writeFramesStaged } from "../src/internal/frames.ts"

const FRAME_HEADER_BYTES = 4
const RECORD_BYTES = 150
const RECORDS = 54_000
const ROUNDS = 40
const SIZES = [0, 4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024]

const slab = new Uint8Array(RECORDS * (RECORD_BYTES + 1))
for (let i = 0; i < slab.length; i++) slab[i] = Math.imul(i, 31) & 0xff
// One byte between records: the views sit at every alignment.
const payloads = Array.from({ length: RECORDS }, (_, i) => slab.subarray(i * (RECORD_BYTES + 1), i * (RECORD_BYTES + 1) + RECORD_BYTES))
const body = new Uint8Array(new SharedArrayBuffer(RECORDS * (RECORD_BYTES + FRAME_HEADER_BYTES) + 1))
const writers = SIZES.map((size) => {
  if (size > 0) {
    const stage = new Uint8Array(size)
    return () => writeFramesStaged(body, 1, payloads, stage)
  }
  return () => {
    const view = new DataView(body.buffer)
    let end = 1
    for (const p of payloads) {
      view.setUint32(end, p.byteLength)
      body.set(p, end + FRAME_HEADER_BYTES)
      end += FRAME_HEADER_BYTES + p.byteLength
    }
    return end
  }
})
const times = SIZES.map((): Array<number> => [])
for (let r = 0; r < ROUNDS; r++) {
  writers.forEach((write, k) => {
    const start = performance.now()
    write()
    times[k]?.push(performance.now() - start)
  })
}
console.log(`staging buffer → ns a record (median of ${ROUNDS} rounds; ${RECORDS} records of ${RECORD_BYTES} B into shared memory)`)
SIZES.forEach((size, k) => {
  const xs = [...(times[k] ?? [])].sort((a, b) => a - b)
  const median = xs[Math.floor(xs.length / 2)] ?? 0
  console.log(`${size === 0 ? "none" : `${size / 1024} KiB`}`.padStart(9), (median * 1e6 / RECORDS).toFixed(1).padStart(7))
})
