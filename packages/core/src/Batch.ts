/**
 * Batches and manifests.
 *
 * A {@link SealedBatch} is the unit the pipeline uploads, verifies and commits: a
 * run of records from one `(source, partition)`. Its {@link Manifest} (an
 * `effect/Schema` type, stored as JSON next to the object) says exactly which
 * positions the object holds and with which checksum.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as ObjectKey from "./ObjectKey.ts"
import type { RecordChunk } from "./Record.ts"
import { chunkOf } from "./Record.ts"

/**
 * Why a batch was sealed.
 *
 * - `records` / `bytes`: it reached the batch target (sealed on fill).
 * - `age`: its oldest record waited `maxAge` (bound on staleness).
 * - `pressure`: the read gate closed and open batches were sealed early.
 * - `drain`: the source ended or the pipeline is shutting down.
 * - `gap`: the source reported a retention gap on the partition; the batch before
 *   the gap is sealed so the next one starts at the log start and records it.
 *
 * @since 0.1.0
 */
export const SealReason = Schema.Literals(["records", "bytes", "age", "pressure", "drain", "gap"])

/**
 * @since 0.1.0
 */
export type SealReason = typeof SealReason.Type

/**
 * The batch target knob: seal when either limit is reached, or when the oldest
 * record is `maxAgeMillis` old.
 *
 * @since 0.1.0
 */
export interface BatchTarget {
  readonly records: number
  readonly bytes: number
  readonly maxAgeMillis: number
}

/**
 * A checksum as stored by the sink (`algorithm` is e.g. `CRC64NVME`, `SHA256`;
 * `value` is the base64 text the store reports).
 *
 * @since 0.1.0
 */
export const Checksum = Schema.Struct({
  algorithm: Schema.String,
  value: Schema.String
})

/**
 * @since 0.1.0
 */
export type Checksum = typeof Checksum.Type

/**
 * A retention gap the source reported before this batch's first record: records
 * `expected .. logStart-1` were deleted by the log's retention before being read.
 *
 * @since 0.1.0
 */
export const GapRecord = Schema.Struct({
  expected: Schema.Number,
  logStart: Schema.Number,
  lostRecords: Schema.Number
})

/**
 * @since 0.1.0
 */
export type GapRecord = typeof GapRecord.Type

/**
 * A sealed batch, ready to upload.
 *
 * @since 0.1.0
 */
export interface SealedBatch {
  /** Deterministic object key (see `ObjectKey.make`). */
  readonly key: string
  readonly source: string
  readonly partition: number
  /** Per-partition sequence number, in seal order (used by the committer). */
  readonly sequence: number
  readonly firstOffset: number
  readonly lastOffset: number
  readonly records: number
  /** Payload bytes of all records. */
  readonly bytes: number
  readonly sealReason: SealReason
  readonly openedAt: number
  readonly sealedAt: number
  readonly chunks: ReadonlyArray<RecordChunk>
  /** A retention gap observed just before this batch, recorded in its manifest. */
  readonly gap?: GapRecord | undefined
}

/**
 * Builds a sealed batch from payloads at contiguous offsets, keyed as the
 * pipeline would key it.
 *
 * **When to use**
 *
 * Testing a sink (yours or a third party's) without running a pipeline.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 *
 * const batch = Batch.make({ source: "orders", partition: 0, firstOffset: 100, payloads: [new Uint8Array(10)] })
 * // batch.key === "orders/p=00000/00000000000000000100-00000000000000000100.rec"
 * ```
 *
 * @since 0.1.0
 */
export const make = (options: {
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly payloads: ReadonlyArray<Uint8Array>
  readonly prefix?: string | undefined
  readonly sealReason?: SealReason | undefined
  readonly sequence?: number | undefined
}): SealedBatch => {
  const chunk = chunkOf(options.source, options.partition, options.firstOffset, options.payloads, 0)
  const lastOffset = options.firstOffset + Math.max(1, options.payloads.length) - 1
  return {
    key: ObjectKey.make({
      prefix: options.prefix,
      source: options.source,
      partition: options.partition,
      firstOffset: options.firstOffset,
      lastOffset
    }),
    source: options.source,
    partition: options.partition,
    sequence: options.sequence ?? 0,
    firstOffset: options.firstOffset,
    lastOffset,
    records: chunk.count,
    bytes: chunk.bytes,
    sealReason: options.sealReason ?? "records",
    openedAt: 0,
    sealedAt: 0,
    chunks: chunk.count > 0 ? [chunk] : []
  }
}

/**
 * The manifest stored next to each object (`<key>.manifest.json`).
 *
 * @since 0.1.0
 */
export const Manifest = Schema.Struct({
  version: Schema.Literal(1),
  key: Schema.String,
  source: Schema.String,
  partition: Schema.Number,
  firstOffset: Schema.Number,
  lastOffset: Schema.Number,
  records: Schema.Number,
  /** Bytes of the object body (framed records). */
  objectBytes: Schema.Number,
  /** Bytes of the record payloads alone. */
  payloadBytes: Schema.Number,
  checksum: Checksum,
  sealReason: SealReason,
  openedAt: Schema.Number,
  sealedAt: Schema.Number,
  gap: Schema.optionalKey(GapRecord),
  /**
   * Present when the records' offsets are not contiguous (compacted topics,
   * transaction markers): `[firstOffset, count]` runs, in order, so record `i`'s
   * offset can be recovered (see {@link recordOffsets}).
   */
  offsetRuns: Schema.optionalKey(Schema.Array(Schema.Tuple([Schema.Number, Schema.Number])))
})

/**
 * @since 0.1.0
 */
export type Manifest = typeof Manifest.Type

/**
 * Size of the object body for a batch: each record framed as a 4-byte big-endian
 * length followed by its payload.
 *
 * @since 0.1.0
 */
export const bodyBytes = (batch: SealedBatch): number => batch.bytes + 4 * batch.records

/**
 * Encodes the object body: length-prefixed records, in offset order.
 *
 * **Details**
 *
 * The body is encoded **once per batch**: later calls with the same batch
 * object (a retry, another replica) return the same bytes until
 * {@link releaseBody}. Callers must not modify it.
 *
 * Size-only (simulated) chunks encode as zero-filled payloads of their size, so a
 * simulated source can still drive a real sink.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const batch: Batch.SealedBatch
 * const body: Uint8Array = Batch.encodeBody(batch)
 * const back: ReadonlyArray<Uint8Array> = Batch.decodeBody(body)
 * ```
 *
 * @since 0.1.0
 */
export const encodeBody = (batch: SealedBatch): Uint8Array => {
  const cached = bodies.get(batch)
  if (cached !== undefined) return cached
  const out = encode(batch)
  bodies.set(batch, out)
  return out
}

/**
 * Encoded bodies by batch, so that every attempt and every replica of one batch
 * shares one body. Weak: a batch that is dropped takes its body with it; the
 * pipeline also releases it explicitly ({@link releaseBody}) once stored.
 */
const bodies = new WeakMap<SealedBatch, Uint8Array>()

/**
 * Forgets the memoized body of `batch` (see {@link encodeBody}); the next
 * `encodeBody(batch)` encodes again.
 *
 * **When to use**
 *
 * Once the body was stored (or the batch abandoned): the pipeline's uploader
 * calls it after a successful object upload, so a body lives from the first
 * attempt to the first success, never longer.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const batch: Batch.SealedBatch
 *
 * const body = Batch.encodeBody(batch)
 * Batch.encodeBody(batch) === body // true: encoded once
 * Batch.releaseBody(batch)
 * ```
 *
 * @since 0.2.0
 */
export const releaseBody = (batch: SealedBatch): void => {
  bodies.delete(batch)
}

const encode = (batch: SealedBatch): Uint8Array => {
  const out = new Uint8Array(bodyBytes(batch))
  const view = new DataView(out.buffer)
  let at = 0
  for (const chunk of batch.chunks) {
    if (chunk.payloads !== undefined) {
      for (const p of chunk.payloads) {
        view.setUint32(at, p.byteLength)
        out.set(p, at + 4)
        at += 4 + p.byteLength
      }
    } else {
      const base = Math.floor(chunk.bytes / chunk.count)
      let extra = chunk.bytes - base * chunk.count
      for (let i = 0; i < chunk.count; i++) {
        const size = base + (extra > 0 ? 1 : 0)
        if (extra > 0) extra--
        view.setUint32(at, size)
        at += 4 + size
      }
    }
  }
  return out
}

/**
 * Decodes an object body back into record payloads.
 *
 * @since 0.1.0
 */
export const decodeBody = (body: Uint8Array): ReadonlyArray<Uint8Array> => {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const out: Array<Uint8Array> = []
  let at = 0
  while (at + 4 <= body.byteLength) {
    const size = view.getUint32(at)
    out.push(body.subarray(at + 4, at + 4 + size))
    at += 4 + size
  }
  return out
}

/**
 * The batch's offsets as `[firstOffset, count]` runs of consecutive offsets.
 *
 * @since 0.1.0
 */
export const offsetRuns = (batch: SealedBatch): Array<readonly [number, number]> => {
  const runs: Array<[number, number]> = []
  const push = (offset: number) => {
    const last = runs[runs.length - 1]
    if (last !== undefined && last[0] + last[1] === offset) last[1]++
    else runs.push([offset, 1])
  }
  for (const chunk of batch.chunks) {
    if (chunk.offsets === undefined) {
      const last = runs[runs.length - 1]
      if (last !== undefined && last[0] + last[1] === chunk.firstOffset) last[1] += chunk.count
      else runs.push([chunk.firstOffset, chunk.count])
    } else {
      for (const offset of chunk.offsets) push(offset)
    }
  }
  return runs
}

/**
 * The offset of every record of a stored object, from its manifest (in body
 * order, matching `decodeBody`).
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const manifest: Batch.Manifest
 * declare const body: Uint8Array
 * const offsets = Batch.recordOffsets(manifest)
 * const records = Batch.decodeBody(body) // records[i] sits at offsets[i]
 * ```
 *
 * @since 0.1.0
 */
export const recordOffsets = (manifest: Manifest): Array<number> => {
  const runs = manifest.offsetRuns ?? [[manifest.firstOffset, manifest.records] as const]
  const out: Array<number> = []
  for (const [first, count] of runs) for (let i = 0; i < count; i++) out.push(first + i)
  return out
}

/**
 * Builds the manifest of a batch once its object is stored with `checksum`.
 *
 * @since 0.1.0
 */
export const manifestOf = (batch: SealedBatch, checksum: Checksum): Manifest => ({
  version: 1,
  key: batch.key,
  source: batch.source,
  partition: batch.partition,
  firstOffset: batch.firstOffset,
  lastOffset: batch.lastOffset,
  records: batch.records,
  objectBytes: bodyBytes(batch),
  payloadBytes: batch.bytes,
  checksum,
  sealReason: batch.sealReason,
  openedAt: batch.openedAt,
  sealedAt: batch.sealedAt,
  ...(batch.gap !== undefined ? { gap: batch.gap } : {}),
  ...offsetRunsField(batch)
})

const offsetRunsField = (batch: SealedBatch): { offsetRuns?: ReadonlyArray<readonly [number, number]> } => {
  if (batch.lastOffset - batch.firstOffset + 1 === batch.records) return {}
  return { offsetRuns: offsetRuns(batch) }
}
