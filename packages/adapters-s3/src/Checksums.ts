/**
 * Local checksums, computed exactly as S3 reports them, so a receipt can be
 * compared with what the store says it holds.
 *
 * CRC-32 and CRC-32C come from `@node-rs/crc32` (the CPU's CRC
 * instructions, a prebuilt native module). Where it does not load, CRC-32
 * comes from `node:zlib` (Node ≥ 22.2; on an older Node the SDK's pure-JS
 * CRC-32 stands in) through `Crc32.of` of `@sluice/core` (a pooled body of
 * 1 MiB or more half on a helper thread), and CRC-32C from the AWS SDK's
 * pure-JS `Crc32c`. CRC-64/NVME comes from the AWS SDK
 * (`@aws-sdk/checksums/crc`, pure JavaScript); SHA-256 from `node:crypto`.
 * `bench/checksum.ts` measures them (see the README).
 *
 * The whole-object CRC of a multipart upload is combined from its part CRCs
 * ({@link fullObjectOf}), never computed by a second pass over the body.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as Zlib from "node:zlib"
import { Crc32c, Crc32Js, Crc64Nvme } from "@aws-sdk/checksums/crc"
import * as Core from "@sluice/core"
import * as Crc from "./internal/Crc.ts"
import * as SimdCrc from "./internal/SimdCrc.ts"
import type { ChecksumAlgorithm } from "./S3Config.ts"

/**
 * The CRC algorithms: those whose multipart uploads carry a `FULL_OBJECT`
 * checksum, and whose values {@link combine}.
 *
 * @since 0.2.0
 */
export type CrcAlgorithm = Exclude<ChecksumAlgorithm, "SHA256">

/**
 * Whether `algorithm` is a CRC (see {@link CrcAlgorithm}).
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.isCrc("CRC32")  // true
 * Checksums.isCrc("SHA256") // false
 * ```
 *
 * @since 0.2.0
 */
export const isCrc = (algorithm: ChecksumAlgorithm): algorithm is CrcAlgorithm => algorithm !== "SHA256"

const specs: { readonly [A in CrcAlgorithm]: Crc.CrcSpec } = {
  CRC32: Crc.CRC32,
  CRC32C: Crc.CRC32C,
  CRC64NVME: Crc.CRC64NVME
}

/**
 * How S3 reports the checksum of a stored object.
 *
 * - `FULL_OBJECT`: the algorithm over the whole body (single PUT, and CRC
 *   multipart uploads created with `ChecksumType: FULL_OBJECT`).
 * - `COMPOSITE`: `base64(alg(concat(part digests)))-<parts>` (SHA-256
 *   multipart uploads).
 *
 * @since 0.1.0
 */
export type ChecksumType = "FULL_OBJECT" | "COMPOSITE"

/**
 * The checksum type a multipart upload uses for `algorithm`.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.multipartType("CRC32")  // "FULL_OBJECT"
 * Checksums.multipartType("SHA256") // "COMPOSITE"
 * ```
 *
 * @since 0.1.0
 */
export const multipartType = (algorithm: ChecksumAlgorithm): ChecksumType =>
  isCrc(algorithm) ? "FULL_OBJECT" : "COMPOSITE"

/** A 32-bit value as its 4 big-endian bytes (how S3 encodes a CRC-32). */
const uint32Digest = (value: number): Uint8Array =>
  new Uint8Array([value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff])

/**
 * `Crc32.of` of `@sluice/core` (≥ 0.5.0: a large pooled body half on a helper
 * thread); `zlib.crc32` in place with an older core, which the peer range
 * still admits (a namespace import: a missing export is `undefined`, not a
 * link error).
 */
const coreCrc32: ((data: Uint8Array) => number) | undefined = (Core as Partial<typeof Core>).Crc32?.of

/** `zlib.crc32` (Node ≥ 22.2, 20.15), absent on Node 22.0 and 22.1, which the package still supports. */
const nativeCrc32: ((data: Uint8Array) => number) | undefined = typeof Zlib.crc32 === "function"
  ? (data) => Zlib.crc32(data)
  : undefined

/**
 * The raw digest of `data` with `algorithm`.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const raw: Uint8Array = await Checksums.digest("CRC32", new TextEncoder().encode("123456789"))
 * // [0xcb, 0xf4, 0x39, 0x26]
 * ```
 *
 * @since 0.1.0
 */
export const digest = async (algorithm: ChecksumAlgorithm, data: Uint8Array): Promise<Uint8Array> => {
  switch (algorithm) {
    case "SHA256":
      return createHash("sha256").update(data).digest()
    case "CRC32": {
      // The CPU's CRC instructions; else a large pooled body half on a helper thread (`Crc32.of`), else `zlib.crc32`.
      if (SimdCrc.crc32 !== undefined) return uint32Digest(SimdCrc.crc32(data))
      if (nativeCrc32 !== undefined) return uint32Digest((coreCrc32 ?? nativeCrc32)(data))
      const c = new Crc32Js()
      c.update(data)
      return c.digest()
    }
    case "CRC32C": {
      if (SimdCrc.crc32c !== undefined) return uint32Digest(SimdCrc.crc32c(data))
      const c = new Crc32c()
      c.update(data)
      return c.digest()
    }
    case "CRC64NVME": {
      const c = new Crc64Nvme()
      c.update(data)
      return c.digest()
    }
  }
}

/**
 * The CRC of `first ‖ second` from the CRC digests of each and the byte length
 * of `second` (zlib's `crc32_combine`, for every {@link CrcAlgorithm}): no pass
 * over the bytes.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const a = new TextEncoder().encode("1234")
 * const b = new TextEncoder().encode("56789")
 * const both = Checksums.combine("CRC32", await Checksums.digest("CRC32", a), await Checksums.digest("CRC32", b), b.byteLength)
 * // equals await Checksums.digest("CRC32", new TextEncoder().encode("123456789"))
 * ```
 *
 * @since 0.2.0
 */
export const combine = (algorithm: CrcAlgorithm, first: Uint8Array, second: Uint8Array, secondBytes: number): Uint8Array => {
  const spec = specs[algorithm]
  return Crc.toDigest(spec, Crc.combine(spec, Crc.fromDigest(first), Crc.fromDigest(second), secondBytes))
}

/**
 * One part of a body: its CRC digest and its byte length.
 *
 * @since 0.2.0
 */
export interface PartDigest {
  readonly raw: Uint8Array
  readonly bytes: number
}

/**
 * The whole-body CRC (base64, as S3 reports a `FULL_OBJECT` checksum) of the
 * parts in order, combined from their digests ({@link combine}).
 *
 * **When to use**
 *
 * Completing a `FULL_OBJECT` multipart upload: the part CRCs were computed to
 * upload the parts; this costs microseconds per part where hashing the body
 * again costs a pass over every byte.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const body = new Uint8Array(12 * 1024 * 1024)
 * const parts = await Promise.all(
 *   Checksums.partRanges(body.byteLength, 5 * 1024 * 1024).map(async (r) => ({
 *     raw: await Checksums.digest("CRC32", body.subarray(r.start, r.end)),
 *     bytes: r.end - r.start
 *   }))
 * )
 * Checksums.fullObjectOf("CRC32", parts) // === await Checksums.objectChecksum("CRC32", body, undefined)
 * ```
 *
 * @since 0.2.0
 */
export const fullObjectOf = (algorithm: CrcAlgorithm, parts: ReadonlyArray<PartDigest>): string => {
  const spec = specs[algorithm]
  let value = 0n // the CRC of no bytes
  for (const part of parts) value = Crc.combine(spec, value, Crc.fromDigest(part.raw), part.bytes)
  return toBase64(Crc.toDigest(spec, value))
}

/**
 * Base64 text of a digest, as S3 prints it in `x-amz-checksum-*` headers.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.toBase64(new Uint8Array([1, 2, 3])) // "AQID"
 * ```
 *
 * @since 0.1.0
 */
export const toBase64 = (raw: Uint8Array): string => Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("base64")

/**
 * The part boundaries of a multipart upload of `size` bytes.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.partRanges(12, 5) // [{ start: 0, end: 5 }, { start: 5, end: 10 }, { start: 10, end: 12 }]
 * ```
 *
 * @since 0.1.0
 */
export const partRanges = (size: number, partSize: number): ReadonlyArray<{ readonly start: number; readonly end: number }> => {
  const out: Array<{ start: number; end: number }> = []
  for (let start = 0; start < size; start += partSize) out.push({ start, end: Math.min(size, start + partSize) })
  if (out.length === 0) out.push({ start: 0, end: 0 })
  return out
}

/**
 * The checksum S3 reports for `body` stored with `algorithm`: the whole-body
 * value for a single PUT (`partSize` undefined) or a `FULL_OBJECT` multipart
 * upload, the `COMPOSITE` value otherwise.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const body = new Uint8Array(12 * 1024 * 1024)
 * const single = await Checksums.objectChecksum("CRC32", body, undefined)
 * const multi = await Checksums.objectChecksum("SHA256", body, 5 * 1024 * 1024) // "…-3"
 * ```
 *
 * @since 0.1.0
 */
export const objectChecksum = async (
  algorithm: ChecksumAlgorithm,
  body: Uint8Array,
  partSize: number | undefined
): Promise<string> => {
  if (partSize === undefined || multipartType(algorithm) === "FULL_OBJECT") return toBase64(await digest(algorithm, body))
  const parts = partRanges(body.byteLength, partSize)
  const digests = await Promise.all(parts.map((r) => digest(algorithm, body.subarray(r.start, r.end))))
  return compositeOf(algorithm, digests)
}

/**
 * S3's composite checksum of a multipart upload from its part digests.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const parts = [new Uint8Array(5), new Uint8Array(3)]
 * const digests = await Promise.all(parts.map((p) => Checksums.digest("SHA256", p)))
 * const value = await Checksums.compositeOf("SHA256", digests) // "…=-2"
 * ```
 *
 * @since 0.1.0
 */
export const compositeOf = async (algorithm: ChecksumAlgorithm, partDigests: ReadonlyArray<Uint8Array>): Promise<string> =>
  `${toBase64(await digest(algorithm, Buffer.concat(partDigests)))}-${partDigests.length}`

/**
 * The `Checksum*` fields of S3 requests and responses (`PutObject`,
 * `UploadPart`, `CompleteMultipartUpload`, `HeadObject`).
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const fields: Checksums.ChecksumFields = Checksums.requestFields("SHA256", "abc=") // { ChecksumSHA256: "abc=" }
 * ```
 *
 * @since 0.1.0
 */
export interface ChecksumFields {
  ChecksumCRC32?: string | undefined
  ChecksumCRC64NVME?: string | undefined
  ChecksumCRC32C?: string | undefined
  ChecksumSHA256?: string | undefined
}

/**
 * The request field carrying `value` for `algorithm`, to spread into an SDK
 * command's input so the store checks the bytes it receives.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.requestFields("CRC32C", "yZRlqg==") // { ChecksumCRC32C: "yZRlqg==" }
 * ```
 *
 * @since 0.1.0
 */
export const requestFields = (algorithm: ChecksumAlgorithm, value: string): ChecksumFields => {
  switch (algorithm) {
    case "CRC32":
      return { ChecksumCRC32: value }
    case "CRC64NVME":
      return { ChecksumCRC64NVME: value }
    case "CRC32C":
      return { ChecksumCRC32C: value }
    case "SHA256":
      return { ChecksumSHA256: value }
  }
}

/**
 * The value for `algorithm` that a response (e.g. `HeadObject` with
 * `ChecksumMode: ENABLED`) reports; `undefined` when the store did not report
 * one.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * Checksums.reported("SHA256", { ChecksumSHA256: "abc=" }) // "abc="
 * Checksums.reported("CRC32C", { ChecksumSHA256: "abc=" }) // undefined
 * ```
 *
 * @since 0.1.0
 */
export const reported = (algorithm: ChecksumAlgorithm, output: ChecksumFields): string | undefined => {
  switch (algorithm) {
    case "CRC32":
      return output.ChecksumCRC32
    case "CRC64NVME":
      return output.ChecksumCRC64NVME
    case "CRC32C":
      return output.ChecksumCRC32C
    case "SHA256":
      return output.ChecksumSHA256
  }
}
