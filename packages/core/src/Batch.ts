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
import { Effect, Schema } from "effect"
import * as Compression from "./Compression.ts"
import * as Bodies from "./internal/bodies.ts"
import { copyInto, FRAME_HEADER_BYTES, readFrames, writeFrames } from "./internal/frames.ts"
import * as ObjectKey from "./ObjectKey.ts"
import type { RecordChunk } from "./Record.ts"
import { chunkOf } from "./Record.ts"

/**
 * Why a batch was sealed.
 *
 * - `records` / `bytes`: it reached the batch target (sealed on fill).
 * - `age`: its oldest record waited `maxAge` (bound on staleness), and the
 *   uploader had room for it (fewer than two sealed batches per permit;
 *   whatever it held with `batch.ageSealWaits: false`).
 * - `pressure`: the read gate closed and open batches were sealed early.
 * - `drain`: the source ended or the pipeline is shutting down.
 * - `gap`: the source reported a retention gap on the partition; the batch before
 *   the gap is sealed so the next one starts at the log start and records it.
 * - `caughtUp`: the source read the partition's backlog (`Source.CaughtUp`): the
 *   records written before this run are committed without waiting `maxAge`.
 *
 * @since 0.1.0
 */
export const SealReason = Schema.Literals(["records", "bytes", "age", "pressure", "drain", "gap", "caughtUp"])

/**
 * `SealReason` as a type: what the `SealReason` schema decodes to.
 *
 * @since 0.1.0
 */
export type SealReason = typeof SealReason.Type

/**
 * The batch target knob: seal when either limit is reached, or when the oldest
 * record is `maxAgeMillis` old (and the uploader has room for the batch).
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
 * `Checksum` as a type: what the `Checksum` schema decodes to.
 *
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
 * `GapRecord` as a type: what the `GapRecord` schema decodes to.
 *
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
  /**
   * How the object body is compressed (the pipeline's `compression` config);
   * absent means `none`. Recorded in the manifest.
   */
  readonly compression?: Compression.Setting | undefined
}

/**
 * Builds a sealed batch from payloads at contiguous offsets, keyed as the
 * pipeline would key it.
 *
 * **When to use**
 *
 * Testing a sink (yours or a third party's) without running a pipeline.
 * With `compression`, the batch is stored compressed, as the pipeline's
 * `compression` config would have it.
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
  readonly compression?: Compression.Setting | undefined
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
    chunks: chunk.count > 0 ? [chunk] : [],
    ...(options.compression !== undefined && options.compression.codec !== "none" ? { compression: options.compression } : {})
  }
}

/**
 * The manifest stored next to each object (`<key>.manifest.json`).
 *
 * **Details**
 *
 * `version` is 1 for an uncompressed body and 2 for a compressed one, so that
 * a reader older than compression (whose schema takes version 1 only) refuses
 * a compressed object instead of reading its bytes as records. A manifest
 * without `compression` (written before it existed) decodes as `"none"`.
 *
 * @since 0.1.0
 */
export const Manifest = Schema.Struct({
  version: Schema.Literals([1, 2]),
  key: Schema.String,
  source: Schema.String,
  partition: Schema.Number,
  firstOffset: Schema.Number,
  lastOffset: Schema.Number,
  records: Schema.Number,
  /** Bytes of the stored object (the framed records, compressed per `compression`): what the checksum covers. */
  objectBytes: Schema.Number,
  /**
   * The codec of the stored object (see `Compression.Codec`); `"none"` when
   * absent.
   *
   * @since 0.2.0
   */
  compression: Compression.Codec.pipe(Schema.withDecodingDefaultKey(Effect.succeed<Compression.Codec>("none"))),
  /**
   * Bytes of the framed records before compression (absent in manifests
   * written before compression existed, where it equals `objectBytes`).
   *
   * @since 0.2.0
   */
  bodyBytes: Schema.optionalKey(Schema.Number),
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
 * `Manifest` as a type: what the `Manifest` schema decodes to.
 *
 * @since 0.1.0
 */
export type Manifest = typeof Manifest.Type

/**
 * Size of the framed body of a batch, before any compression: each record
 * framed as a 4-byte big-endian length followed by its payload.
 *
 * **When to use**
 *
 * The uncompressed size (the manifest's `bodyBytes`). The size of the stored
 * object, compressed or not, is {@link objectBytes}.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 *
 * Batch.bodyBytes(Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(10)] }))   // 14
 * ```
 *
 * @since 0.1.0
 */
export const bodyBytes = (batch: SealedBatch): number => batch.bytes + FRAME_HEADER_BYTES * batch.records

/**
 * The codec `batch` is stored with (`"none"` when it carries none).
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 *
 * Batch.codecOf(Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [], compression: { codec: "zstd" } }))   // "zstd"
 * ```
 *
 * @since 0.2.0
 */
export const codecOf = (batch: SealedBatch): Compression.Codec => compressed(batch)?.codec ?? "none"

/**
 * Encodes the object body as stored: length-prefixed records, in offset
 * order, compressed as `batch.compression` says.
 *
 * **Details**
 *
 * The body is encoded (and compressed) **once per batch**: later calls with
 * the same batch object (a retry, another replica) return the same bytes
 * until {@link releaseBody}. Callers must not modify it. Sinks call it from
 * `putObject`; the pipeline has already compressed large bodies off the event
 * loop by then ({@link prepareBody}), so a sink gets them from the memo. Called
 * alone on a compressed batch, it compresses in place.
 *
 * Size-only (simulated) chunks encode as zero-filled payloads of their size, so a
 * simulated source can still drive a real sink.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const batch: Batch.SealedBatch
 * declare const manifest: Batch.Manifest   // the manifest written for it
 * const body: Uint8Array = Batch.encodeBody(batch)
 * const back: ReadonlyArray<Uint8Array> = Batch.decodeObject(manifest, body)
 * ```
 *
 * @since 0.1.0
 */
export const encodeBody = (batch: SealedBatch): Uint8Array => {
  const cached = Bodies.get(batch)
  if (cached !== undefined) return cached
  const framed = encode(batch)
  const setting = compressed(batch)
  if (setting === undefined) return Bodies.remember(batch, framed)
  const stored = Compression.compressSync(framed, setting)
  if (stored !== framed) Bodies.give(framed) // read by the compressor only, which is done with it
  return Bodies.remember(batch, stored)
}

/**
 * Encodes and compresses the body of a compressed batch ahead of its upload,
 * a large one off the event loop (`Compression.compress`), into the memo
 * {@link encodeBody} reads. Does nothing for an uncompressed batch: a sink
 * encodes it at once when it needs it (a simulated store never does).
 *
 * **When to use**
 *
 * Before the object upload, outside its timing: the pipeline's uploader calls
 * it so that compression time is neither in the `object_upload` latency
 * sample nor a stall of the event loop.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Batch } from "@sluice/core"
 * declare const batch: Batch.SealedBatch
 *
 * const size = Effect.map(Batch.prepareBody(batch), () => Batch.objectBytes(batch))
 * ```
 *
 * @since 0.2.0
 */
export const prepareBody = (batch: SealedBatch): Effect.Effect<void> => {
  const setting = compressed(batch)
  if (setting === undefined || Bodies.get(batch) !== undefined) return Effect.void
  return Effect.suspend(() => {
    const framed = encode(batch)
    return Effect.map(Compression.compress(framed, setting), (stored) => {
      // Only once the compressor is done with it (not if interrupted: it may still read it).
      if (stored !== framed) Bodies.give(framed)
      Bodies.remember(batch, stored)
    })
  })
}

/**
 * Bytes of the stored object of `batch`: {@link bodyBytes} when it is not
 * compressed; otherwise the compressed size, known once the body was encoded
 * (it is compressed in place here if it never was).
 *
 * **When to use**
 *
 * What an upload of `batch` sends: the pipeline reports it as the upload
 * sample's `bytes` (what the policies see) and the manifest as `objectBytes`.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 *
 * const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(1000)], compression: { codec: "gzip" } })
 * Batch.objectBytes(batch) < Batch.bodyBytes(batch)   // true: 1004 zero-ish bytes compress well
 * ```
 *
 * @since 0.2.0
 */
export const objectBytes = (batch: SealedBatch): number =>
  compressed(batch) === undefined ? bodyBytes(batch) : (Bodies.size(batch) ?? encodeBody(batch).byteLength)

/** The batch's compression, unless it is none. */
const compressed = (batch: SealedBatch): Compression.Setting | undefined =>
  batch.compression === undefined || batch.compression.codec === "none" ? undefined : batch.compression

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
  Bodies.release(batch)
}

/**
 * Forgets the memoized body of `batch`, like {@link releaseBody}, and lets a
 * later {@link encodeBody} reuse its memory: bodies of 64 KiB and more are
 * cut from pooled buffers (a bounded free list: at most 8 buffers, 128 MiB),
 * so that encoding writes into memory already mapped instead of a fresh
 * allocation per batch.
 *
 * **When to use**
 *
 * Only when nothing references the body any more: the pipeline's uploader
 * calls it after a successful object upload when the sink declares
 * `keepsBodies: false` (it keeps no reference once `putObject` has ended),
 * and {@link releaseBody} otherwise. A body recycled while a sink still holds
 * it is overwritten by the next batch's.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const batch: Batch.SealedBatch
 * declare const next: Batch.SealedBatch
 *
 * const body = Batch.encodeBody(batch)
 * // … the store has the bytes, and nothing refers to `body` any more:
 * Batch.recycleBody(batch)
 * Batch.encodeBody(next) // may be written into `body`'s memory
 * ```
 *
 * @since 0.3.0
 */
export const recycleBody = (batch: SealedBatch): void => {
  Bodies.recycle(batch)
}

const encode = (batch: SealedBatch): Uint8Array => {
  // Not zeroed when pooled: every byte is written below.
  const out = Bodies.take(bodyBytes(batch))
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  let at = 0
  for (const chunk of batch.chunks) {
    if (chunk.framed !== undefined) {
      // Already framed as the body frames records: one copy for the chunk.
      copyInto(out, chunk.framed, at)
      at += chunk.framed.byteLength
    } else if (chunk.payloads !== undefined) {
      at = writeFrames(out, at, chunk.payloads)
    } else {
      out.fill(0, at, at + chunk.bytes + FRAME_HEADER_BYTES * chunk.count) // zero payloads (a pooled buffer holds old bytes)
      const base = Math.floor(chunk.bytes / chunk.count)
      let extra = chunk.bytes - base * chunk.count
      for (let i = 0; i < chunk.count; i++) {
        const size = base + (extra > 0 ? 1 : 0)
        if (extra > 0) extra--
        view.setUint32(at, size)
        at += FRAME_HEADER_BYTES + size
      }
    }
  }
  return out
}

/**
 * Splits a framed (uncompressed) body back into record payloads.
 *
 * **When to use**
 *
 * On bytes you know are not compressed. A stored object may be: read it
 * with {@link decodeObject} and its manifest.
 *
 * @since 0.1.0
 */
export const decodeBody = (body: Uint8Array): ReadonlyArray<Uint8Array> => readFrames(body)

/**
 * Reads a stored object back into record payloads: decompresses it as its
 * manifest says (`compression`, checked against `bodyBytes` when present),
 * then splits the records ({@link decodeBody}).
 *
 * **When to use**
 *
 * Every reader of an archive: a manifest without `compression` (written
 * before compression existed) reads as `"none"`.
 *
 * **Details**
 *
 * Throws `Compression.DecompressionFailed` when the bytes do not decompress
 * with the manifest's codec to its `bodyBytes`. Record `i` sits at
 * `recordOffsets(manifest)[i]`.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const manifest: Batch.Manifest
 * declare const stored: Uint8Array
 *
 * const records = Batch.decodeObject(manifest, stored)
 * const offsets = Batch.recordOffsets(manifest)   // records[i] sits at offsets[i]
 * ```
 *
 * @since 0.2.0
 */
export const decodeObject = (
  manifest: Pick<Manifest, "compression" | "bodyBytes">,
  stored: Uint8Array
): ReadonlyArray<Uint8Array> => decodeBody(Compression.decompressSync(stored, manifest.compression, manifest.bodyBytes))

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
 * order, matching `decodeObject`).
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * declare const manifest: Batch.Manifest
 * declare const body: Uint8Array
 * const offsets = Batch.recordOffsets(manifest)
 * const records = Batch.decodeObject(manifest, body) // records[i] sits at offsets[i]
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
 * Builds the manifest of a batch once its object is stored with `checksum`
 * (computed over the stored bytes, compressed or not).
 *
 * **Details**
 *
 * `objectBytes` is the stored size ({@link objectBytes}), `bodyBytes` the
 * framed size before compression, `compression` the codec; a compressed
 * batch's manifest is version 2 (see {@link Manifest}).
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 *
 * const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(10)], compression: { codec: "zstd" } })
 * const manifest = Batch.manifestOf(batch, { algorithm: "CRC32", value: "AAAAAA==" })
 * manifest.compression // "zstd"; manifest.bodyBytes === 14
 * ```
 *
 * @since 0.1.0
 */
export const manifestOf = (batch: SealedBatch, checksum: Checksum): Manifest => ({
  version: compressed(batch) === undefined ? 1 : 2,
  key: batch.key,
  source: batch.source,
  partition: batch.partition,
  firstOffset: batch.firstOffset,
  lastOffset: batch.lastOffset,
  records: batch.records,
  objectBytes: objectBytes(batch),
  compression: codecOf(batch),
  bodyBytes: bodyBytes(batch),
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
