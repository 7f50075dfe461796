/**
 * bench:compression — what a pipeline's `compression` costs and saves per
 * batch, in memory: the work the uploader does before a put (encode the framed
 * body, compress it with `Batch.prepareBody` — off the event loop from
 * `Compression.ASYNC_FROM_BYTES` on — and CRC32 the stored bytes, the S3
 * sink's default checksum), nothing else.
 *
 * Matrix: record size (50 / 150 / 1000 B) × batch size (1 / 8 / 64 MiB of
 * payload) × codec (none / gzip at its default level 6 / zstd at 3). Per cell:
 *
 * - records/s: records of the batch ÷ the median wall time of one batch;
 * - CPU µs/record: process CPU (user + system, every thread: the zlib work
 *   on libuv's pool counts) of the median batch ÷ its records;
 * - stored/raw: the stored object's size ÷ the framed body's
 *   (`Batch.bodyBytes`); stored B/record.
 *
 * The records are JSON events built from a seeded PRNG (a millisecond
 * timestamp, a random 16-hex-digit id, a user id, one of 8 event types, an
 * amount, and for larger records words from a 256-word vocabulary), each
 * distinct, cut or padded with spaces to the exact size. How well real data
 * compresses depends on it: treat the ratios as this data's, the CPU costs as
 * the codecs'.
 *
 * Each cell runs one warm-up batch, then batches until `--millis` (default
 * 600; 250 with `--quick`) have passed and at least `--min-rounds` (default
 * 3) were timed; figures are medians of those.
 *
 *   npm run bench:compression                  # the whole matrix (27 cells)
 *   npm run bench:compression -- --quick       # 12 cells, < 30 s
 *   npm run bench:compression -- --json        # last line: one JSON object
 *
 * Run it niced on a shared machine: `nice -n 10 npm run bench:compression`.
 * The command line is read with `effect/cli` ({@link command}: `-- --help`).
 */
import { cpus, loadavg } from "node:os"
import { crc32 } from "node:zlib"
import { Effect, Option } from "effect"
import { Flag } from "effect/cli"
import * as Batch from "../src/Batch.ts"
import * as CommandLine from "../src/CommandLine.ts"
import type * as Compression from "../src/Compression.ts"

const MiB = 1024 * 1024

/** Milliseconds each cell is timed for at least: long enough for a stable median, the matrix in ~2 min; `--quick`'s, in < 30 s. */
const MILLIS = { full: 600, quick: 250 }

/** `bench:compression`'s command line. */
export const command = CommandLine.script("bench:compression", {
  json: CommandLine.switchFlag("json", "no table: stdout's only line is one JSON object (the rows, the machine, its load)"),
  quick: CommandLine.switchFlag("quick", `12 cells, not 27 (1 MiB batches of each record size, 8 MiB of 150 B records), ${MILLIS.quick} ms each: < 30 s`),
  millis: Flag.Finite("millis").pipe(
    Flag.withMetavar("ms"),
    Flag.withDescription(`time each cell for at least this many ms (default ${MILLIS.full}; ${MILLIS.quick} with --quick)`),
    Flag.optional
  ),
  minRounds: Flag.Int("min-rounds").pipe(
    Flag.withMetavar("n"),
    Flag.withDescription("time at least this many batches per cell (default 3; below 1 counts as 1)"),
    Flag.withDefault(3)
  )
}, "What a pipeline's compression costs and saves per batch, in memory: encode, compress and CRC32 a batch, per record size × batch size × codec (none, gzip, zstd).", { invocation: "npm run bench:compression --" })

/** The flags as `effect/cli` read them. */
type Flags = typeof command extends CommandLine.Script<infer A> ? A : never

const codecs: ReadonlyArray<Compression.Codec> = ["none", "gzip", "zstd"]

/** The cells: [record bytes, batch payload bytes]. */
const cellsOf = (quick: boolean): ReadonlyArray<readonly [number, number]> =>
  quick
    ? [[50, 1 * MiB], [150, 1 * MiB], [1000, 1 * MiB], [150, 8 * MiB]]
    : [50, 150, 1000].flatMap((r) => [1 * MiB, 8 * MiB, 64 * MiB].map((b) => [r, b] as const))

/** A small seeded PRNG (mulberry32), so every run archives the same records. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const TYPES = ["view", "click", "cart.add", "cart.remove", "order.placed", "order.paid", "order.shipped", "refund"]
const WORDS = Array.from({ length: 256 }, (_, i) => {
  const syllables = ["ka", "lo", "mi", "ne", "ro", "su", "ta", "vi", "de", "po", "an", "el", "or", "us", "in", "ex"]
  return `${syllables[i % 16]}${syllables[(i >> 4) % 16]}${i % 3 === 0 ? syllables[(i * 7) % 16] : ""}`
})

/** `count` distinct JSON records of exactly `size` bytes, views into one buffer. */
const records = (size: number, count: number): Array<Uint8Array> => {
  const random = prng(size)
  const buffer = new Uint8Array(size * count)
  const encoder = new TextEncoder()
  const out = new Array<Uint8Array>(count)
  let ts = 1_767_225_600_000
  for (let i = 0; i < count; i++) {
    ts += Math.floor(random() * 40)
    const id = Math.floor(random() * 0xffffffff).toString(16).padStart(8, "0") + Math.floor(random() * 0xffffffff).toString(16).padStart(8, "0")
    let text = size < 100
      ? `{"ts":${ts},"id":"${id}","u":${Math.floor(random() * 100_000)}}`
      : `{"ts":${ts},"id":"${id}","user":"u-${Math.floor(random() * 1_000_000)}","type":"${TYPES[Math.floor(random() * 8)]}","amount":${(random() * 500).toFixed(2)},"note":"`
    while (size >= 100 && text.length < size - 2) text += `${WORDS[Math.floor(random() * 256)]} `
    text = size >= 100 ? `${text.slice(0, size - 2)}"}` : text
    const bytes = encoder.encode(text.padEnd(size, " ").slice(0, size))
    buffer.set(bytes, i * size)
    out[i] = buffer.subarray(i * size, (i + 1) * size)
  }
  return out
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2
}

/** One batch through encode + compress + checksum: wall and CPU ms, stored bytes. */
const once = async (batch: Batch.SealedBatch) => {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Effect.runPromise(Batch.prepareBody(batch))
  const body = Batch.encodeBody(batch)
  crc32(body)
  const wall = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  Batch.releaseBody(batch)
  return { wallMillis: wall, cpuMillis: (cpu.user + cpu.system) / 1000, stored: body.byteLength }
}

interface Row {
  readonly recordBytes: number
  readonly batchMiB: number
  readonly codec: Compression.Codec
  readonly records: number
  readonly rounds: number
  readonly recordsPerSecond: number
  readonly cpuMicrosPerRecord: number
  readonly storedRatio: number
  readonly storedBytesPerRecord: number
  readonly wallMillisPerBatch: number
}

const main = async (args: Flags) => {
  const millis = Option.getOrElse(args.millis, () => (args.quick ? MILLIS.quick : MILLIS.full))
  const minRounds = Math.max(1, args.minRounds)
  const cells = cellsOf(args.quick)
  const started = performance.now()
  const load = loadavg()
  const say = (line: string) => {
    if (!args.json) console.log(line)
  }
  say(`bench:compression on ${cpus().length}× ${cpus()[0]?.model ?? "?"}, node ${process.version}, load ${load.map((l) => l.toFixed(2)).join(" ")}`)
  say(`encode + compress + CRC32 per batch; medians of ≥ ${minRounds} batches over ≥ ${millis} ms per cell\n`)
  say("| record B | batch MiB | codec | records/s | CPU µs/record | stored/raw | stored B/record | ms/batch | rounds |")
  say("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
  const rows: Array<Row> = []
  const pools = new Map<number, Array<Uint8Array>>()
  for (const [recordBytes, batchBytes] of cells) {
    const count = Math.floor(batchBytes / recordBytes)
    // One pool per record size, the largest batch's worth; smaller batches take a prefix.
    const largest = Math.max(...cells.filter(([r]) => r === recordBytes).map(([, b]) => b))
    let pool = pools.get(recordBytes)
    if (pool === undefined) {
      pools.clear()
      pool = records(recordBytes, Math.floor(largest / recordBytes))
      pools.set(recordBytes, pool)
    }
    const payloads = pool.slice(0, count)
    for (const codec of codecs) {
      const batch = Batch.make({ source: "bench", partition: 0, firstOffset: 0, payloads, compression: { codec } })
      await once(batch) // warm-up
      const runs: Array<{ wallMillis: number; cpuMillis: number; stored: number }> = []
      const t0 = performance.now()
      while (runs.length < minRounds || performance.now() - t0 < millis) runs.push(await once(batch))
      const wall = median(runs.map((r) => r.wallMillis))
      const cpu = median(runs.map((r) => r.cpuMillis))
      const stored = runs[0]?.stored ?? 0
      const row: Row = {
        recordBytes,
        batchMiB: batchBytes / MiB,
        codec,
        records: count,
        rounds: runs.length,
        recordsPerSecond: count / (wall / 1000),
        cpuMicrosPerRecord: (cpu * 1000) / count,
        storedRatio: stored / Batch.bodyBytes(batch),
        storedBytesPerRecord: stored / count,
        wallMillisPerBatch: wall
      }
      rows.push(row)
      say(
        `| ${recordBytes} | ${row.batchMiB} | ${codec} | ${Math.round(row.recordsPerSecond).toLocaleString("en-US")} | ` +
          `${row.cpuMicrosPerRecord.toFixed(3)} | ${row.storedRatio.toFixed(3)} | ${row.storedBytesPerRecord.toFixed(1)} | ` +
          `${wall.toFixed(1)} | ${runs.length} |`
      )
    }
  }
  const seconds = (performance.now() - started) / 1000
  const cpu = process.cpuUsage()
  say(`\n${seconds.toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU; load at the end ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
  if (args.json) {
    console.log(JSON.stringify({
      node: process.version,
      cpus: cpus().length,
      loadStart: load,
      loadEnd: loadavg(),
      quick: args.quick,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      rows
    }))
  }
}

if (import.meta.main) {
  const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
  if (flags !== undefined) await main(flags)
}
