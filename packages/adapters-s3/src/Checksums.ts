/**
 * Local checksums, computed exactly as S3 reports them, so a receipt can be
 * compared with what the store says it holds.
 *
 * CRC-64/NVME and CRC-32C come from the AWS SDK's own implementations
 * (`@aws-sdk/checksums/crc`); SHA-256 from `node:crypto`.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Crc32c, Crc64Nvme } from "@aws-sdk/checksums/crc"
import type { ChecksumAlgorithm } from "./S3Config.ts"

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
 * Checksums.multipartType("CRC64NVME") // "FULL_OBJECT"
 * Checksums.multipartType("SHA256")    // "COMPOSITE"
 * ```
 *
 * @since 0.1.0
 */
export const multipartType = (algorithm: ChecksumAlgorithm): ChecksumType =>
  algorithm === "SHA256" ? "COMPOSITE" : "FULL_OBJECT"

/**
 * The raw digest of `data` with `algorithm`.
 *
 * **Example**
 *
 * ```ts
 * import { Checksums } from "@sluice/adapter-s3"
 *
 * const raw: Uint8Array = await Checksums.digest("CRC64NVME", new Uint8Array([1, 2, 3]))
 * ```
 *
 * @since 0.1.0
 */
export const digest = async (algorithm: ChecksumAlgorithm, data: Uint8Array): Promise<Uint8Array> => {
  switch (algorithm) {
    case "SHA256":
      return createHash("sha256").update(data).digest()
    case "CRC32C": {
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
 * const single = await Checksums.objectChecksum("CRC64NVME", body, undefined)
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
    case "CRC64NVME":
      return output.ChecksumCRC64NVME
    case "CRC32C":
      return output.ChecksumCRC32C
    case "SHA256":
      return output.ChecksumSHA256
  }
}
