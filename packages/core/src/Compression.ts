/**
 * Compression of object bodies: the codecs a pipeline may store its objects
 * with (`none`, `gzip`, `zstd`, all from `node:zlib`), their levels with the
 * ranges they accept, and compress / decompress.
 *
 * The pipeline compresses a batch's framed body once (see
 * `Batch.prepareBody`), every attempt and replica stores those bytes, the
 * checksum is over them, and the manifest records the codec
 * (`Manifest.compression`) so that `Batch.decodeObject` can read the object
 * back. Policies see the compressed bytes: an upload sample's `bytes` is the
 * stored size.
 *
 * **Why bodies compress off the event loop**: on JSON records
 * (`bench:compression`, a loaded 2-core VM) gzip at level 6 took 25–60 ms of
 * CPU per MiB and zstd at 3 5–15 ms, so a 64 MiB body compressed in place
 * would stall every other fiber — and the measured latency of every upload
 * in flight, which the policies read — for seconds. From
 * {@link ASYNC_FROM_BYTES} on, bodies compress on libuv's thread pool
 * (`zlib.gzip` / `zlib.zstdCompress`); below it, in place, where they take a
 * few milliseconds at most, about what the hop to the pool and back costs
 * (~1 ms there).
 *
 * @since 0.2.0
 */
import * as zlib from "node:zlib"
import { Effect, Schema } from "effect"

/**
 * The codec of a stored object body.
 *
 * - `none`: the framed records as they are.
 * - `gzip`: RFC 1952 (`gunzip` or any gzip tool reads it).
 * - `zstd`: Zstandard frames (`zstd -d`; `node:zlib` since Node 22.15/23.8).
 *
 * @since 0.2.0
 */
export const Codec = Schema.Literals(["none", "gzip", "zstd"])

/**
 * `Codec` as a type: what the `Codec` schema decodes to.
 *
 * @since 0.2.0
 */
export type Codec = typeof Codec.Type

/**
 * A codec with its level, as a batch carries it (`SealedBatch.compression`).
 * `level` undefined means the codec's default ({@link LEVELS}).
 *
 * @since 0.2.0
 */
export interface Setting {
  readonly codec: Codec
  readonly level?: number | undefined
}

/**
 * The levels each codec accepts, and the one used when none is given.
 *
 * | codec | min | max | default | |
 * |---|---|---|---|---|
 * | `gzip` | 1 | 9 | 6 | zlib's `Z_DEFAULT_COMPRESSION` |
 * | `zstd` | 1 | 22 | 3 | `ZSTD_CLEVEL_DEFAULT`; 20–22 need much more memory |
 *
 * @since 0.2.0
 */
export const LEVELS: {
  readonly gzip: { readonly min: number; readonly max: number; readonly default: number }
  readonly zstd: { readonly min: number; readonly max: number; readonly default: number }
} = {
  gzip: { min: 1, max: 9, default: 6 },
  zstd: { min: 1, max: 22, default: 3 }
}

/**
 * Framed bodies of at least this many bytes compress on libuv's thread pool
 * (see the module doc); smaller ones in place.
 *
 * @since 0.2.0
 */
export const ASYNC_FROM_BYTES = 64 * 1024

/**
 * Why `level` is not valid for `codec`, or `undefined` when it is (an
 * undefined level always is).
 *
 * **When to use**
 *
 * Checking config that names a codec and a level (the pipeline's
 * `compression` and `compressionLevel`).
 *
 * **Example**
 *
 * ```ts
 * import { Compression } from "@sluice/core"
 *
 * Compression.levelProblem("zstd", 19)   // undefined
 * Compression.levelProblem("gzip", 12)   // "Expected a gzip level from 1 to 9, got 12"
 * Compression.levelProblem("none", 3)    // "Expected no level with compression \"none\", got 3"
 * ```
 *
 * @since 0.2.0
 */
export const levelProblem = (codec: Codec, level: number | null | undefined): string | undefined => {
  if (level === undefined || level === null) return undefined
  if (codec === "none") return `Expected no level with compression "none", got ${level}`
  const { min, max } = LEVELS[codec]
  return Number.isInteger(level) && level >= min && level <= max
    ? undefined
    : `Expected a ${codec} level from ${min} to ${max}, got ${level}`
}

/**
 * Compresses `body` with `setting`, in place (on the calling thread).
 *
 * **When to use**
 *
 * Small bodies, tools and tests. The pipeline uses {@link compress}, which
 * moves large bodies off the event loop.
 *
 * **Example**
 *
 * ```ts
 * import { Compression } from "@sluice/core"
 *
 * const stored = Compression.compressSync(new Uint8Array(1000), { codec: "zstd" })
 * Compression.decompressSync(stored, "zstd").byteLength   // 1000
 * ```
 *
 * @since 0.2.0
 */
export const compressSync = (body: Uint8Array, setting: Setting): Uint8Array => {
  switch (setting.codec) {
    case "none":
      return body
    case "gzip":
      return bytesOf(zlib.gzipSync(body, gzipOptions(setting.level)))
    case "zstd":
      return bytesOf(zlib.zstdCompressSync(body, zstdOptions(setting.level)))
  }
}

/**
 * Compresses `body` with `setting`: bodies of {@link ASYNC_FROM_BYTES} or
 * more on libuv's thread pool, smaller ones in place.
 *
 * **Details**
 *
 * A zlib failure here (out of memory) is a defect: the input is bytes we
 * framed ourselves, so no input is "bad". An interrupted fiber does not stop
 * the work already handed to the pool; its result is dropped.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Compression } from "@sluice/core"
 *
 * const stored = await Effect.runPromise(Compression.compress(new Uint8Array(1 << 20), { codec: "gzip", level: 1 }))
 * ```
 *
 * @since 0.2.0
 */
export const compress = (body: Uint8Array, setting: Setting): Effect.Effect<Uint8Array> => {
  if (setting.codec === "none") return Effect.succeed(body)
  if (body.byteLength < ASYNC_FROM_BYTES) return Effect.sync(() => compressSync(body, setting))
  const codec = setting.codec
  return Effect.callback<Uint8Array>((resume) => {
    const done = (error: Error | null, out: Buffer) =>
      resume(error === null ? Effect.succeed(trimmed(bytesOf(out))) : Effect.die(error))
    if (codec === "gzip") zlib.gzip(body, { ...gzipOptions(setting.level), chunkSize: ASYNC_CHUNK_BYTES }, done)
    else zlib.zstdCompress(body, { ...zstdOptions(setting.level), chunkSize: ASYNC_CHUNK_BYTES }, done)
  })
}

/**
 * Output chunk of an asynchronous compression. zlib's default (16 KiB) makes
 * one thread-pool round trip per 16 KiB out: measured here on 8 MiB of JSON
 * records, zstd then took ~1.5× the CPU of the synchronous call; from 256 KiB
 * on, the same as it.
 */
const ASYNC_CHUNK_BYTES = 256 * 1024

/**
 * A result that fits in one output chunk is a view of it: copied out when it
 * uses less than half of it, so a small body does not hold a whole chunk.
 */
const trimmed = (bytes: Uint8Array): Uint8Array => (bytes.byteLength * 2 < bytes.buffer.byteLength ? bytes.slice() : bytes)

/**
 * A stored body could not be decompressed with the codec its manifest names
 * (corrupt or truncated bytes, another codec, or a size other than the
 * manifest's `bodyBytes`).
 *
 * @since 0.2.0
 */
export class DecompressionFailed extends Schema.TaggedError<DecompressionFailed>()("DecompressionFailed", {
  codec: Codec,
  message: Schema.String
}) {}

/**
 * Decompresses a stored body with `codec`; throws {@link DecompressionFailed}
 * when it cannot. With `expectedBytes` (the manifest's `bodyBytes`), a result
 * of another size fails too, and output past it is never produced (a
 * corrupt or hostile object cannot make the reader allocate more).
 *
 * **When to use**
 *
 * Reading an object back; most readers want `Batch.decodeObject`, which
 * calls it with the manifest's codec and size, then splits the records.
 *
 * **Example**
 *
 * ```ts
 * import { Compression } from "@sluice/core"
 *
 * const body = new TextEncoder().encode("hello")
 * const stored = Compression.compressSync(body, { codec: "gzip" })
 * Compression.decompressSync(stored, "gzip", 5)   // the 5 bytes of "hello"
 * ```
 *
 * @since 0.2.0
 */
export const decompressSync = (stored: Uint8Array, codec: Codec, expectedBytes?: number | undefined): Uint8Array => {
  if (codec === "none") return stored
  // One byte of headroom, so that output longer than expected is seen as such.
  const limit = expectedBytes === undefined ? {} : { maxOutputLength: Math.max(1, expectedBytes + 1) }
  let out: Uint8Array
  try {
    out = bytesOf(codec === "gzip" ? zlib.gunzipSync(stored, limit) : zlib.zstdDecompressSync(stored, limit))
  } catch (error) {
    throw new DecompressionFailed({ codec, message: error instanceof Error ? error.message : String(error) })
  }
  if (expectedBytes !== undefined && out.byteLength !== expectedBytes) {
    throw new DecompressionFailed({ codec, message: `Expected ${expectedBytes} bytes once decompressed, got ${out.byteLength}` })
  }
  return out
}

/** A plain `Uint8Array` view of zlib's `Buffer` (no copy), like every other body. */
const bytesOf = (buffer: Buffer): Uint8Array => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)

const gzipOptions = (level: number | undefined): zlib.ZlibOptions => ({ level: level ?? LEVELS.gzip.default })

const zstdOptions = (level: number | undefined): zlib.ZstdOptions => ({
  params: { [zlib.constants.ZSTD_c_compressionLevel]: level ?? LEVELS.zstd.default }
})
