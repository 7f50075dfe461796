/**
 * bench:pipeline — records/s of the Sluice pipeline with the **default
 * policies** (`Composition.defaults()`) against a plain TypeScript loop doing
 * the same work, in the same process, rounds rotating.
 *
 * It lives in `@sluice/policies` because it needs both the core and the
 * default composition, and `@sluice/core` must not depend on the policies;
 * `packages/core/bench/pipeline.ts` launches it.
 *
 * Work per record, on both sides: seal into per-partition batches (at the
 * target the default composition starts with: `AdaptiveBatch`'s `initialBytes`
 * and `records`), encode the object body (`Batch.encodeBody`), CRC32 it
 * (the S3 adapter's default checksum, computed as the adapter computes it, on
 * both sides: `@node-rs/crc32`, the CPU's CRC instructions), store it and its
 * manifest, verify
 * (size and checksum read back from the store), commit each partition's
 * offsets in order; at most 8 uploads in flight (the knob's value for Sluice,
 * a pool of promises for the loop). The store is in memory with zero latency
 * on both sides: an Effect `Sink` for Sluice, `async` functions for the loop.
 * Records (150 B, 8 partitions, chunks of 1 000) are built once up front and
 * shared, so generation is not measured (see `--distinct`); each chunk's
 * records framed in one buffer as the Kafka source hands them out
 * (`Record.RecordChunk.framed`), or with `--input views` one view per record.
 *
 * ```sh
 * npm run bench:pipeline [-- --records 2000000 --distinct 250000 --rounds 5 --json]
 * # the same, without the launcher in packages/core/bench:
 * npx node --conditions=@sluice/source --expose-gc packages/policies/bench/pipeline.ts
 * ```
 *
 * `--rounds` (at least 3) rounds, each running both sides, the first side
 * rotating; medians. `--only sluice|plain|plain-pooled` runs one side (to
 * profile it). A third side, the same loop recycling each stored body's memory
 * as Sluice does with a sink that keeps no bodies (`Batch.recycleBody`), is the
 * harder baseline: it shows how much of Sluice's lead is the body pool.
 * With `--json` the only stdout line is one JSON object:
 * `{ sluiceRecordsPerSecond, plainRecordsPerSecond, ratio, peakRssBytes,
 * plainPooledRecordsPerSecond, ratioToPooledPlain, ratioToPooledPlainBest,
 * cpuRatioToPooledPlain, … }`
 * (`ratio` = sluice / plain by wall time; `peakRssBytes` = the process's peak
 * RSS, input included; `cpuRatio` and `mainThreadCpuRatio` = the same ratio
 * by CPU time, which other load on the machine disturbs less;
 * `ratioToPooledPlainBest` = the ratio of each side's best round,
 * `cpuRatioToPooledPlain` = of their median process CPU).
 */
import { Buffer } from "node:buffer"
import * as V8 from "node:v8"
import { crc32 } from "@node-rs/crc32"
import { Batch, Config, Failure, ObjectKey, Pipeline, Record } from "@sluice/core"
import type { Knob, Sink, Source } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import { Effect, Option, Stream } from "effect"
import { Flag } from "effect/cli"
import { AdaptiveBatch, Composition } from "../src/index.ts"

/** The command line: read with `effect/cli`, its help and completions generated. */
const command = CommandLine.script("bench:pipeline", {
  records: Flag.Finite("records").pipe(
    Flag.withMetavar("n"),
    Flag.withDefault(2_000_000),
    Flag.withDescription("records through each side a round (default 2,000,000)")
  ),
  distinct: Flag.Finite("distinct").pipe(
    Flag.withMetavar("n"),
    Flag.withDefault(250_000),
    Flag.withDescription("distinct records built up front and repeated at later offsets (default 250,000)")
  ),
  rounds: Flag.Finite("rounds").pipe(
    Flag.withMetavar("n"),
    Flag.withDefault(5),
    Flag.withDescription("rounds, each running every side, the first side rotating; at least 3 (default 5)")
  ),
  input: Flag.Literals("input", ["framed", "views"]).pipe(
    Flag.withDefault("framed" as const),
    Flag.withDescription("the chunks' records: framed in one buffer per chunk, as the Kafka source hands them out (default), or one view per record into a slab")
  ),
  only: Flag.Literals("only", ["sluice", "plain", "plain-pooled"]).pipe(
    Flag.optional,
    Flag.map(Option.getOrUndefined),
    Flag.withDescription("run one side alone (to profile it); no ratio")
  ),
  json: CommandLine.switchFlag("json", "the only stdout line is one JSON object (the medians and ratios)")
}, "Records/s of the pipeline with the default policies against a plain loop doing the same work, in one process.", {
  invocation: "npm run bench:pipeline --"
})

/** The line's options, the counts checked (each a number ≥ 1), or why it is refused. */
const readLine = (argv: ReadonlyArray<string>) => {
  const line = command.read(argv)
  if (line._tag !== "Run") return line
  for (const name of ["records", "distinct", "rounds"] as const) {
    if (line.flags[name] < 1) return { _tag: "Invalid" as const, message: `bench:pipeline: --${name} needs a number ≥ 1` }
  }
  return line
}

const options = CommandLine.settle(readLine(process.argv.slice(2)), command.help)
if (options === undefined) process.exit()
const { input, json, only } = options
const totalRecords = options.records
const distinctRecords = options.distinct
const rounds = Math.max(3, options.rounds)
const concurrency = 8
const partitions = 8
const recordBytes = 150
const chunkRecords = 1_000

const log = (line: string): void => {
  if (!json) console.log(line)
}
const resolved = import.meta.resolve("@sluice/core")
if (!resolved.includes("/src/")) {
  console.error(`bench:pipeline: measuring the built @sluice/core (${resolved}); pass --conditions=@sluice/source for the sources`)
}

// The batch target the default composition starts with, from its own schema.
const adaptive = Effect.runSync(Config.decode("batch", AdaptiveBatch.AdaptiveBatchConfig, {}))
const target = { records: adaptive.records, bytes: adaptive.initialBytes }

/**
 * The input: each chunk's records framed in one buffer, as the Kafka source
 * hands them out (`--input views`: views into one slab per chunk). Only
 * `--distinct` records (250 000 by default) are built; the
 * stream repeats them at later offsets. Holding every record (2 M views) would
 * make each major GC of either side mark the whole input — a cost a consumer,
 * whose live records stay within its budget, does not have — and the peak RSS
 * that of the input.
 */
const chunks: Array<Record.RecordChunk> = []
{
  const encoder = new TextEncoder()
  const perPartition = Math.floor(totalRecords / partitions)
  const distinctPerPartition = Math.min(perPartition, Math.ceil(distinctRecords / partitions / chunkRecords) * chunkRecords)
  const built = new Map<string, Array<Uint8Array>>()
  const payloadsOf = (p: number, from: number, n: number): Array<Uint8Array> => {
    const key = `${p}/${from}/${n}`
    const cached = built.get(key)
    if (cached !== undefined) return cached
    const slab = new Uint8Array(n * recordBytes)
    const payloads = new Array<Uint8Array>(n)
    for (let i = 0; i < n; i++) {
      // Memory.recordPayload's bytes, written in place: 2 M small arrays would each be a malloc'd store.
      const payload = slab.subarray(i * recordBytes, (i + 1) * recordBytes)
      encoder.encodeInto(`bench/${p}/${from + i}`.padEnd(recordBytes, ".").slice(0, recordBytes), payload)
      payloads[i] = payload
    }
    built.set(key, payloads)
    return payloads
  }
  // Framed: one buffer per distinct chunk, shared by the chunks that repeat it.
  const framedOf = new Map<string, Uint8Array>()
  for (let from = 0; from < perPartition; from += chunkRecords) {
    for (let p = 0; p < partitions; p++) {
      const n = Math.min(chunkRecords, perPartition - from)
      const views = Record.chunkOf("bench", p, from, payloadsOf(p, from % distinctPerPartition, n))
      if (input === "views") {
        chunks.push(views)
        continue
      }
      const key = `${p}/${from % distinctPerPartition}/${n}`
      const framed = framedOf.get(key) ?? Record.frame(views).framed
      if (framed === undefined) throw new Error("a chunk with payloads frames")
      framedOf.set(key, framed)
      chunks.push({ ...views, payloads: undefined, framed })
    }
  }
  built.clear()
}
const records = chunks.reduce((n, c) => n + c.count, 0)
const inputRssBytes = process.memoryUsage.rss()

/** CRC32 as S3 reports it: base64 of the big-endian 4 bytes. */
const crc32Base64 = (crc: number): string => {
  const out = Buffer.allocUnsafe(4)
  out.writeUInt32BE(crc)
  return out.toString("base64")
}

/** What one run saw: objects stored, uploads in flight, RSS, time in encode and checksum. */
interface Observed {
  objects: number
  inflight: number
  maxInflight: number
  maxConcurrencyLimit: number
  peakRss: number
  /** Peak `process.memoryUsage().arrayBuffers` (encoded bodies live there), sampled at every put. */
  peakArrayBuffers: number
  encodeMillis: number
  checksumMillis: number
}
const observed = (): Observed => ({
  objects: 0,
  inflight: 0,
  maxInflight: 0,
  maxConcurrencyLimit: 0,
  peakRss: 0,
  peakArrayBuffers: 0,
  encodeMillis: 0,
  checksumMillis: 0
})

/**
 * The in-memory store both sides write to (a new one per run). It keeps what a
 * remote store reports back (size and checksum), not the body: a real store's
 * bodies leave the process, and keeping 300 MB a run would make the peak RSS
 * measure this store instead of the pipeline.
 */
interface StoredObject {
  readonly objectBytes: number
  readonly checksum: string
}
const newStore = () => ({
  objects: new Map<string, StoredObject>(),
  manifests: new Map<string, Batch.Manifest>()
})
type Store = ReturnType<typeof newStore>

/**
 * Encodes, checksums and stores a batch: the same work for both sides, CRC32
 * with what the S3 adapter computes it with where it loads (`@node-rs/crc32`).
 */
const put = (store: Store, seen: Observed, batch: Batch.SealedBatch): Sink.PutReceipt => {
  seen.objects++
  seen.inflight++
  seen.maxInflight = Math.max(seen.maxInflight, seen.inflight)
  seen.peakRss = Math.max(seen.peakRss, process.memoryUsage.rss())
  const t0 = performance.now()
  const body = Batch.encodeBody(batch)
  seen.peakArrayBuffers = Math.max(seen.peakArrayBuffers, process.memoryUsage().arrayBuffers)
  const t1 = performance.now()
  const checksum = crc32Base64(crc32(body))
  seen.encodeMillis += t1 - t0
  seen.checksumMillis += performance.now() - t1
  store.objects.set(batch.key, { objectBytes: body.byteLength, checksum })
  return { key: batch.key, objectBytes: body.byteLength, checksum: { algorithm: "CRC32", value: checksum } }
}

/** Size and checksum as the store reports them, or why they do not match. */
const check = (store: Store, receipt: Sink.PutReceipt): Failure.VerificationFailed | undefined => {
  const stored = store.objects.get(receipt.key)
  if (stored === undefined) return new Failure.VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" })
  if (stored.objectBytes !== receipt.objectBytes) {
    return new Failure.VerificationFailed({ key: receipt.key, reason: "SizeMismatch", expected: String(receipt.objectBytes), actual: String(stored.objectBytes) })
  }
  if (stored.checksum !== receipt.checksum.value) {
    return new Failure.VerificationFailed({ key: receipt.key, reason: "ChecksumMismatch", expected: receipt.checksum.value, actual: stored.checksum })
  }
  return undefined
}

// ---------------------------------------------------------------------------
// Sluice: Pipeline.start with Composition.defaults(), an in-memory CRC32 sink.

const sluiceRun = (seen: Observed): Promise<number> => {
  const store = newStore()
  let knobs: Knob.Knobs["Service"] | undefined
  const sink: Sink.Sink = {
    name: "bench-memory",
    // `put` keeps size and checksum, not the body (as a remote store): bodies are recycled.
    keepsBodies: false,
    putObject: (batch) =>
      Effect.sync(() => {
        seen.maxConcurrencyLimit = Math.max(seen.maxConcurrencyLimit, knobs?.current().concurrency ?? 0)
        return put(store, seen, batch)
      }),
    putManifest: (manifest) => Effect.sync(() => void store.manifests.set(manifest.key, manifest)),
    verify: (receipt) =>
      Effect.suspend((): Effect.Effect<Sink.VerifiedReceipt, Failure.VerificationFailed> => {
        const failed = check(store, receipt)
        if (failed !== undefined) return Effect.fail(failed)
        seen.inflight--
        return Effect.succeed(receipt)
      })
  }
  const committed = new Map<number, number>()
  const source: Source.Source = {
    name: "bench",
    events: Stream.fromIterable(chunks),
    commit: (p, o) => Effect.sync(() => void committed.set(p, o)),
    pause: Effect.void,
    resume: Effect.void,
    lag: Effect.succeed(new Map())
  }
  return Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const handle = yield* Pipeline.start({ source, sink, config: { concurrency }, policies: Composition.defaults() })
      knobs = handle.knobs
      const stats = yield* handle.await
      return stats.recordsCommitted
    }))
  )
}

// ---------------------------------------------------------------------------
// Plain: the same work in a loop, `async` store calls, ≤ 8 uploads in flight.

interface OpenBatch {
  chunks: Array<Record.RecordChunk>
  records: number
  bytes: number
}

const plainRun = (seen: Observed): Promise<number> => loop(seen, false)
/** The loop recycling each stored body's memory as Sluice does (`Batch.recycleBody`): the harder baseline. */
const pooledPlainRun = (seen: Observed): Promise<number> => loop(seen, true)

const loop = async (seen: Observed, recycle: boolean): Promise<number> => {
  const store = newStore()
  const putObject = async (batch: Batch.SealedBatch) => put(store, seen, batch)
  const putManifest = async (manifest: Batch.Manifest) => void store.manifests.set(manifest.key, manifest)
  const verify = async (receipt: Sink.PutReceipt) => {
    const failed = check(store, receipt)
    if (failed !== undefined) throw failed
    seen.inflight--
    return receipt
  }

  const open = new Map<number, OpenBatch>()
  const sequences = new Map<number, number>()
  // Per partition, the batches not yet committed in offset order.
  const pending = new Map<number, Array<{ readonly next: number; done: boolean }>>()
  const committed = new Map<number, number>()

  const seal = (partition: number, batch: OpenBatch, reason: Batch.SealReason): Batch.SealedBatch => {
    open.delete(partition)
    const sequence = sequences.get(partition) ?? 0
    sequences.set(partition, sequence + 1)
    const firstOffset = batch.chunks[0]?.firstOffset ?? 0
    const last = batch.chunks[batch.chunks.length - 1]
    const lastOffset = last === undefined ? firstOffset : Record.lastOffset(last)
    return {
      key: ObjectKey.make({ prefix: "", source: "bench", partition, firstOffset, lastOffset }),
      source: "bench",
      partition,
      sequence,
      firstOffset,
      lastOffset,
      records: batch.records,
      bytes: batch.bytes,
      sealReason: reason,
      openedAt: 0,
      sealedAt: 0,
      chunks: batch.chunks
    }
  }

  const upload = async (batch: Batch.SealedBatch, entry: { readonly next: number; done: boolean }) => {
    const receipt = await putObject(batch)
    if (recycle) Batch.recycleBody(batch)
    else Batch.releaseBody(batch)
    await putManifest(Batch.manifestOf(batch, receipt.checksum))
    await verify(receipt)
    entry.done = true
    const queue = pending.get(batch.partition) ?? []
    let n = 0
    while (queue[n]?.done === true) n++
    if (n > 0) committed.set(batch.partition, queue[n - 1]?.next ?? 0)
    queue.splice(0, n)
  }

  const inflight = new Set<Promise<void>>()
  const launch = async (batch: Batch.SealedBatch) => {
    while (inflight.size >= concurrency) await Promise.race(inflight)
    const entry = { next: batch.lastOffset + 1, done: false }
    const queue = pending.get(batch.partition) ?? []
    queue.push(entry)
    pending.set(batch.partition, queue)
    const running: Promise<void> = upload(batch, entry).finally(() => inflight.delete(running))
    inflight.add(running)
  }

  for (const chunk of chunks) {
    let rest: Record.RecordChunk | undefined = chunk
    while (rest !== undefined) {
      const batch: OpenBatch = open.get(rest.partition) ?? { chunks: [], records: 0, bytes: 0 }
      open.set(rest.partition, batch)
      const roomRecords = target.records - batch.records
      const roomBytes = target.bytes - batch.bytes
      if (rest.count < roomRecords && rest.bytes < roomBytes) {
        batch.chunks.push(rest)
        batch.records += rest.count
        batch.bytes += rest.bytes
        break
      }
      // Take what fits (records are all recordBytes long here), seal, go on with the tail.
      const take = Math.max(1, Math.min(rest.count, roomRecords, Math.floor(roomBytes / recordBytes)))
      const [head, tail]: readonly [Record.RecordChunk, Record.RecordChunk | undefined] = take >= rest.count
        ? [rest, undefined]
        : Record.splitAt(rest, take)
      batch.chunks.push(head)
      batch.records += head.count
      batch.bytes += head.bytes
      await launch(seal(rest.partition, batch, take === roomRecords ? "records" : "bytes"))
      rest = tail
    }
  }
  for (const [partition, batch] of [...open]) await launch(seal(partition, batch, "drain"))
  await Promise.all(inflight)
  let total = 0
  for (const next of committed.values()) total += next
  return total
}

// ---------------------------------------------------------------------------

const gc = (globalThis as { gc?: () => void }).gc

/** One measured run of one side. */
interface Round extends Observed {
  readonly wallMillis: number
  /**
   * JS-heap bytes allocated during the run, from V8's GC profiler: what every
   * GC freed plus the growth from start to end (an estimate: nothing counted
   * twice). Encoded bodies are ArrayBuffers outside the JS heap: see
   * `peakArrayBuffers` (sampled at every put).
   */
  readonly allocatedHeapBytes: number
  /** GCs during the run and their total pause (main thread). */
  readonly gcCount: number
  readonly gcPauseMillis: number
  /** Process CPU (user + system, V8's GC threads included): less sensitive than wall time to other load. */
  readonly cpuMillis: number
  /** CPU of the main thread alone (the pipeline's and the loop's own work, GC pauses, encode, checksum). */
  readonly mainThreadCpuMillis: number
}

const measure = async (run: (seen: Observed) => Promise<number>): Promise<Round> => {
  gc?.()
  const seen = observed()
  const cpu0 = process.cpuUsage()
  const thread0 = process.threadCpuUsage()
  const heap0 = V8.getHeapStatistics()
  const profiler = new V8.GCProfiler()
  profiler.start()
  const t0 = performance.now()
  const n = await run(seen)
  const wallMillis = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const thread = process.threadCpuUsage(thread0)
  const gcs = profiler.stop()?.statistics ?? []
  const heap1 = V8.getHeapStatistics()
  if (n !== records) throw new Error(`expected ${records} records committed, got ${n}`)
  let freedHeap = 0
  let pauseMicros = 0
  for (const gc of gcs) {
    freedHeap += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize)
    pauseMicros += gc.cost
  }
  return {
    ...seen,
    wallMillis,
    cpuMillis: (cpu.user + cpu.system) / 1000,
    mainThreadCpuMillis: (thread.user + thread.system) / 1000,
    allocatedHeapBytes: freedHeap + Math.max(0, heap1.used_heap_size - heap0.used_heap_size),
    gcCount: gcs.length,
    gcPauseMillis: pauseMicros / 1000
  }
}
const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2
}
const medianOf = (rs: ReadonlyArray<Round>, f: (r: Round) => number): number => median(rs.map(f))
const rate = (ms: number) => records / (ms / 1000)
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`
const describe = (label: string, rs: ReadonlyArray<Round>, extra: string) => {
  const wall = medianOf(rs, (r) => r.wallMillis)
  return `${label}${(rate(wall) / 1e6).toFixed(2)} M records/s  (median ${wall.toFixed(0)} ms of ${
    rs.map((r) => r.wallMillis.toFixed(0)).join(", ")
  }; CPU ${medianOf(rs, (r) => r.cpuMillis).toFixed(0)} ms, main thread ${medianOf(rs, (r) => r.mainThreadCpuMillis).toFixed(0)} ms; encode ${medianOf(rs, (r) => r.encodeMillis).toFixed(0)} + CRC32 ${
    medianOf(rs, (r) => r.checksumMillis).toFixed(0)
  }; ${rs[0]?.objects ?? 0} objects, ≤ ${Math.max(...rs.map((r) => r.maxInflight))} in flight${extra}, RSS ≤ ${mib(Math.max(...rs.map((r) => r.peakRss)))}; ` +
    `${mib(medianOf(rs, (r) => r.allocatedHeapBytes))} allocated on the JS heap, ArrayBuffers ≤ ${mib(Math.max(...rs.map((r) => r.peakArrayBuffers)))}, ` +
    `${medianOf(rs, (r) => r.gcCount)} GCs pausing ${medianOf(rs, (r) => r.gcPauseMillis).toFixed(0)} ms)`
}

if (only !== undefined) {
  const run = only === "sluice" ? sluiceRun : only === "plain" ? plainRun : pooledPlainRun
  await measure(run) // warm-up
  const rs: Array<Round> = []
  for (let r = 0; r < rounds; r++) rs.push(await measure(run))
  console.log(describe(`${only}: `, rs, ""))
  process.exit(0)
}

const sluice: Array<Round> = []
const plain: Array<Round> = []
const pooledPlain: Array<Round> = []
const sides = [
  { run: sluiceRun, rounds: sluice },
  { run: plainRun, rounds: plain },
  { run: pooledPlainRun, rounds: pooledPlain }
]
for (const side of sides) await measure(side.run) // warm-up
for (let r = 0; r < rounds; r++) {
  // Rotate which side goes first, so none always runs on another's garbage.
  for (let i = 0; i < sides.length; i++) {
    const side = sides[(r + i) % sides.length]
    if (side !== undefined) side.rounds.push(await measure(side.run))
  }
}

const sluiceRecordsPerSecond = Math.round(rate(medianOf(sluice, (r) => r.wallMillis)))
const plainRecordsPerSecond = Math.round(rate(medianOf(plain, (r) => r.wallMillis)))
const ratio = Number((sluiceRecordsPerSecond / plainRecordsPerSecond).toFixed(3))
const plainPooledRecordsPerSecond = Math.round(rate(medianOf(pooledPlain, (r) => r.wallMillis)))
const ratioToPooledPlain = Number((sluiceRecordsPerSecond / plainPooledRecordsPerSecond).toFixed(3))
// Best of the rounds (the least wall time per side): on a shared VM a round
// is only ever slowed by other work, never sped up, so the least time is the
// cost least disturbed (Python's `timeit` reports it for that reason). Here
// each side's rounds fall into two modes about 2× apart, and a median flips
// with how many land in each.
const bestWall = (rs: ReadonlyArray<Round>) => Math.min(...rs.map((r) => r.wallMillis))
const ratioToPooledPlainBest = Number((bestWall(pooledPlain) / bestWall(sluice)).toFixed(3))
const cpuRatioToPooledPlain = Number((medianOf(pooledPlain, (r) => r.cpuMillis) / medianOf(sluice, (r) => r.cpuMillis)).toFixed(3))
const cpuRatio = Number((medianOf(plain, (r) => r.cpuMillis) / medianOf(sluice, (r) => r.cpuMillis)).toFixed(3))
const mainThreadCpuRatio = Number((medianOf(plain, (r) => r.mainThreadCpuMillis) / medianOf(sluice, (r) => r.mainThreadCpuMillis)).toFixed(3))
const peakRssBytes = process.resourceUsage().maxRSS * 1024
const roundRatios = sluice.map((s, i) => Number(((plain[i]?.wallMillis ?? NaN) / s.wallMillis).toFixed(3)))
const maxConcurrencyLimit = Math.max(...sluice.map((r) => r.maxConcurrencyLimit))

log(
  `records: ${records} × ${recordBytes} B, ${partitions} partitions, batch target ${target.records} records / ${mib(target.bytes)}, ` +
    `CRC32, concurrency ${concurrency}, ${rounds} rounds rotating the order (median)`
)
log(describe("sluice (default policies)   ", sluice, `, concurrency knob ≤ ${maxConcurrencyLimit}`))
log(describe("plain loop                  ", plain, ""))
log(describe("plain loop, bodies recycled ", pooledPlain, ""))
log(`ratio sluice / plain = ${ratio.toFixed(2)}  (per round: ${roundRatios.join(", ")}; by process CPU: ${cpuRatio.toFixed(2)}, by main-thread CPU: ${mainThreadCpuRatio.toFixed(2)})`)
log(`ratio sluice / plain loop with bodies recycled = ${ratioToPooledPlain.toFixed(2)}  (best round of each: ${ratioToPooledPlainBest.toFixed(2)}; by process CPU: ${cpuRatioToPooledPlain.toFixed(2)})`)
log(`peak RSS (process, input included) = ${mib(peakRssBytes)}; RSS after building the input ${mib(inputRssBytes)}`)
if (json) {
  const summary = (rs: ReadonlyArray<Round>) => ({
    wallMillis: rs.map((r) => Math.round(r.wallMillis)),
    cpuMillis: Math.round(medianOf(rs, (r) => r.cpuMillis)),
    mainThreadCpuMillis: Math.round(medianOf(rs, (r) => r.mainThreadCpuMillis)),
    encodeMillis: Math.round(medianOf(rs, (r) => r.encodeMillis)),
    checksumMillis: Math.round(medianOf(rs, (r) => r.checksumMillis)),
    objects: rs[0]?.objects ?? 0,
    maxInflight: Math.max(...rs.map((r) => r.maxInflight)),
    peakRssBytes: Math.max(...rs.map((r) => r.peakRss)),
    allocatedHeapBytes: Math.round(medianOf(rs, (r) => r.allocatedHeapBytes)),
    peakArrayBuffersBytes: Math.max(...rs.map((r) => r.peakArrayBuffers)),
    gcCount: medianOf(rs, (r) => r.gcCount),
    gcPauseMillis: Math.round(medianOf(rs, (r) => r.gcPauseMillis))
  })
  console.log(JSON.stringify({
    sluiceRecordsPerSecond,
    plainRecordsPerSecond,
    ratio,
    peakRssBytes,
    cpuRatio,
    mainThreadCpuRatio,
    roundRatios,
    plainPooledRecordsPerSecond,
    ratioToPooledPlain,
    ratioToPooledPlainBest,
    cpuRatioToPooledPlain,
    inputRssBytes,
    records,
    recordBytes,
    rounds,
    concurrency,
    policies: "default",
    maxConcurrencyLimit,
    sluice: summary(sluice),
    plain: summary(plain),
    plainPooled: summary(pooledPlain)
  }))
}
