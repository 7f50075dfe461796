/**
 * soak — the synthetic source: records offered at a fixed rate in real time,
 * the way a busy producer offers them to a log. By `t` seconds after the
 * first pull, `rate × t` records are **scheduled**; a pull returns what is
 * scheduled and not yet read (up to `chunkRecords` per partition), so a
 * pipeline that reads slower than the rate leaves a backlog that grows, and
 * one that pauses (the read gate) sees it grow while paused: that backlog is
 * the "scheduled but not read" lag of the soak.
 *
 * Records are `recordBytes` long (150 by default). Their bytes come one of two
 * ways (`payloads`):
 * - `"pooled"` (the default): a pool of {@link POOL_BYTES} of records per
 *   run, built once, handed out again at later offsets (each chunk's offsets are
 *   fresh, its bytes are not), as `bench:pipeline` does. The source then costs
 *   one object per chunk, so the soak measures the pipeline, not its load
 *   generator running on the same event loop.
 * - `"fresh"`: one new buffer per chunk (a memcpy of a template: first writes
 *   to fresh memory are what a network read costs too), each record a new view
 *   into it holding its partition (u32) and offset (f64) in its first 12
 *   bytes. At 5 M records/s this costs the event loop about a third of its
 *   time and much of its garbage collection (profiled: chunk building 33 %,
 *   GC 19 % of the main thread).
 */
import type { Record, Source } from "@sluice/core"
import { Effect, Stream } from "effect"
import { performance } from "node:perf_hooks"

/** A rate-paced source, with its schedule for inspection. */
export interface SyntheticSource extends Source.Source {
  /** Records scheduled by the rate so far (frozen by `stop`), and read (handed to the pipeline). */
  readonly progress: () => { readonly scheduled: number; readonly read: number }
  /** Next offset committed per partition. */
  readonly committed: ReadonlyMap<number, number>
  /** Ends the schedule: nothing more is scheduled after now (the soak's end). */
  readonly stop: () => void
}

/** Options of {@link make}. */
export interface SyntheticOptions {
  readonly name: string
  /** Records per second offered. */
  readonly rate: number
  readonly partitions: number
  readonly recordBytes: number
  /** Most records of one partition per chunk (default 1000). */
  readonly chunkRecords?: number
  /** Milliseconds now (default `performance.now`). */
  readonly now?: () => number
  /** Where records' bytes come from (see the module doc); default `"pooled"`. */
  readonly payloads?: PayloadKind | undefined
  /** Bytes of records in the pool of a `"pooled"` source; default {@link POOL_BYTES}. */
  readonly poolBytes?: number | undefined
}

/** How a {@link SyntheticSource} makes its records' bytes: a pool reused at later offsets, or fresh buffers. */
export type PayloadKind = "pooled" | "fresh"

/**
 * Bytes of records in the pool of a `"pooled"` source (~280 k records of
 * 150 B), shared by its partitions: more than this machine's 32 MiB L3 cache,
 * so that encoding and checksumming read records from memory, as they would
 * fresh ones. Not more: each pooled record is a view, a heap object held for
 * the run. Measured at 5 M records/s here, a 128 MiB pool (~900 k views) gave
 * the same CPU (0.29–0.51 cores a second against 0.37–0.50) but V8's old
 * generation grew around it and RSS rose 154 MiB over the minute; ~38 MiB
 * held RSS flat.
 */
export const POOL_BYTES = 40 * 1024 * 1024

/**
 * A rate-paced source (see the module doc).
 *
 * **Example**
 *
 * ```ts
 * const source = SyntheticSource.make({ name: "soak", rate: 1_000_000, partitions: 8, recordBytes: 150 })
 * // … Pipeline.start({ source, … }); later: source.stop(); source.progress() // { scheduled, read }
 * ```
 */
export const make = (options: SyntheticOptions): SyntheticSource => {
  const { partitions, recordBytes, rate } = options
  const chunkRecords = options.chunkRecords ?? 1000
  const now = options.now ?? (() => performance.now())
  const read = new Array<number>(partitions).fill(0)
  const committed = new Map<number, number>()
  let readTotal = 0
  let startedAt: number | undefined
  let stoppedAt: number | undefined
  let paused = false
  // A pull waits until at least this many records are due (≤ ~10 ms of them), so chunks are not single records.
  const minDue = Math.max(1, Math.min(Math.floor((partitions * chunkRecords) / 4), Math.floor(rate / 100)))
  const chunk = options.payloads === "fresh"
    ? freshChunks(options.name, chunkRecords, recordBytes)
    : pooledChunks(options.name, chunkRecords, recordBytes, options.poolBytes ?? POOL_BYTES)

  const scheduled = (): number => {
    if (startedAt === undefined) return 0
    const until = stoppedAt ?? now()
    return Math.floor((rate * (until - startedAt)) / 1000)
  }
  /** Partition `p`'s share of `total` scheduled records (the first ones get the remainder). */
  const share = (total: number, p: number) => Math.floor(total / partitions) + (p < total % partitions ? 1 : 0)

  /** The chunks due now, or how long to wait (ms) for enough to be due. */
  const take = (): Array<Record.RecordChunk> | number => {
    if (startedAt === undefined) startedAt = now()
    if (paused) return 5
    const total = scheduled()
    const due = total - readTotal
    if (due < minDue) {
      if (stoppedAt !== undefined) return due > 0 ? takeDue(total) : 50
      return Math.max(1, Math.ceil(((minDue - due) * 1000) / rate))
    }
    return takeDue(total)
  }
  const takeDue = (total: number): Array<Record.RecordChunk> => {
    const at = Date.now()
    const out: Array<Record.RecordChunk> = []
    for (let p = 0; p < partitions; p++) {
      const from = read[p] ?? 0
      const count = Math.min(chunkRecords, share(total, p) - from)
      if (count <= 0) continue
      out.push(chunk(p, from, count, at))
      read[p] = from + count
      readTotal += count
    }
    return out
  }

  const pull: Effect.Effect<ReadonlyArray<Record.RecordChunk>> = Effect.suspend(() => {
    const next = take()
    return typeof next === "number" ? Effect.as(Effect.sleep(next), []) : Effect.succeed(next)
  })

  return {
    name: options.name,
    events: Stream.fromEffectRepeat(pull).pipe(Stream.flattenIterable),
    commit: (partition, nextOffset) => Effect.sync(() => void committed.set(partition, nextOffset)),
    pause: Effect.sync(() => {
      paused = true
    }),
    resume: Effect.sync(() => {
      paused = false
    }),
    lag: Effect.sync(() => {
      const total = scheduled()
      const lag = new Map<number, number>()
      for (let p = 0; p < partitions; p++) lag.set(p, share(total, p) - (read[p] ?? 0))
      return lag
    }),
    progress: () => ({ scheduled: scheduled(), read: readTotal }),
    committed,
    stop: () => {
      if (stoppedAt === undefined) stoppedAt = now()
    }
  }
}

/** Builds the chunk of `count` records of `partition` from offset `from`. */
type ChunkOf = (partition: number, from: number, count: number, producedAt: number) => Record.RecordChunk

/**
 * Chunks of a `"pooled"` source: at most `poolBytes` of records (at least one
 * chunk), built once in chunks of `chunkRecords`, each record a view into its
 * chunk's slab holding its index in the pool (f64) in its first 8 bytes, the
 * rest `"x"`; handed out in turn at each chunk's offsets.
 */
const pooledChunks = (name: string, chunkRecords: number, recordBytes: number, poolBytes: number): ChunkOf => {
  const slots = Math.max(1, Math.floor(poolBytes / (chunkRecords * recordBytes)))
  const pool: Array<ReadonlyArray<Uint8Array>> = []
  for (let s = 0; s < slots; s++) {
    const slab = new Uint8Array(chunkRecords * recordBytes).fill(0x78)
    const view = new DataView(slab.buffer)
    const payloads: Array<Uint8Array> = new Array(chunkRecords)
    for (let i = 0; i < chunkRecords; i++) {
      view.setFloat64(i * recordBytes, s * chunkRecords + i)
      payloads[i] = slab.subarray(i * recordBytes, (i + 1) * recordBytes)
    }
    pool.push(payloads)
  }
  let next = 0
  return (partition, from, count, producedAt) => {
    const slot = pool[next] as ReadonlyArray<Uint8Array>
    next = (next + 1) % pool.length
    const payloads = count === chunkRecords ? slot : slot.slice(0, count)
    return { _tag: "RecordChunk", source: name, partition, firstOffset: from, count, bytes: count * recordBytes, payloads, producedAt }
  }
}

/**
 * Chunks of a `"fresh"` source: one new buffer each (a memcpy of a template of
 * `"x"`), each record a new view into it holding its partition (u32) and
 * offset (f64) in its first 12 bytes.
 */
const freshChunks = (name: string, chunkRecords: number, recordBytes: number): ChunkOf => {
  const template = new Uint8Array(chunkRecords * recordBytes).fill(0x78)
  return (partition, from, count, producedAt) => {
    const buffer = template.slice(0, count * recordBytes)
    const view = new DataView(buffer.buffer)
    const payloads: Array<Uint8Array> = new Array(count)
    for (let i = 0; i < count; i++) {
      const start = i * recordBytes
      view.setUint32(start, partition)
      view.setFloat64(start + 4, from + i)
      payloads[i] = buffer.subarray(start, start + recordBytes)
    }
    return { _tag: "RecordChunk", source: name, partition, firstOffset: from, count, bytes: count * recordBytes, payloads, producedAt }
  }
}
