/**
 * The S3 sink's configuration: plain data decoded with an `effect/Schema`, so a
 * bad value fails at construction with a `ConfigError` naming the field.
 *
 * @since 0.1.0
 */
import { Config } from "@sluice/core"
import { Effect, Schema } from "effect"

/**
 * The additional checksums the sink can send and verify.
 *
 * - `CRC32` (default): computed with the CPU's CRC instructions by
 *   `@node-rs/crc32` (8.2 GB/s per core in `bench/checksum.ts`, 29× the
 *   SDK's pure-JS CRC-64/NVME; `node:zlib` where that module does not load).
 *   The checksum runs on the event loop inside the `object_upload` latency
 *   the policies read, so a slow one looks like store congestion. A multipart
 *   upload gets a whole-object (`FULL_OBJECT`) checksum, combined from the
 *   part CRCs, so HEAD returns the CRC of the whole body.
 * - `CRC64NVME`: S3's own default (what it computes when a client sends none);
 *   fewer undetected errors than CRC-32 but computed in pure JavaScript
 *   (110–280 MB/s here). Also `FULL_OBJECT` for multipart.
 * - `CRC32C`: `@node-rs/crc32` too (6.2 GB/s; the SDK's pure JavaScript where
 *   it does not load); `FULL_OBJECT` for multipart.
 * - `SHA256`: cryptographic; multipart objects carry S3's `COMPOSITE` value
 *   (`base64(sha256(part digests))-N`), which the sink computes locally too.
 *
 * @since 0.1.0
 */
export const ChecksumAlgorithm = Schema.Literals(["CRC32", "CRC64NVME", "CRC32C", "SHA256"])

/**
 * `ChecksumAlgorithm` as a type: what the `ChecksumAlgorithm` schema decodes to.
 *
 * @since 0.1.0
 */
export type ChecksumAlgorithm = typeof ChecksumAlgorithm.Type

/** S3's lower bound for every part but the last. */
const MIN_PART_BYTES = 5 * 1024 * 1024
/** S3's upper bound for one part. */
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024

/**
 * Static credentials. Leave `credentials` out to use the AWS SDK's default
 * provider chain (environment, profile, instance role, …).
 *
 * @since 0.1.0
 */
export const Credentials = Schema.Struct({
  accessKeyId: Schema.NonEmptyString,
  secretAccessKey: Schema.NonEmptyString,
  sessionToken: Schema.optionalKey(Schema.String)
})

/**
 * TLS to the endpoint, passed to the HTTPS agent (`node:tls`). PEM text.
 *
 * **When to use**
 *
 * For an `https://` endpoint whose certificate is signed by a private CA (an
 * on-premises store, a test server): without `ca` only Node's trust store is
 * trusted, and every request fails `Fatal` with the certificate error's code
 * (`S3Errors.UNTRUSTED_CERTIFICATE_CODES`).
 *
 * **Example**
 *
 * ```ts
 * import { readFileSync } from "node:fs"
 * import { S3Config } from "@sluice/adapter-s3"
 *
 * const config = S3Config.decode({
 *   bucket: "archive",
 *   endpoint: "https://127.0.0.1:29643",
 *   forcePathStyle: true,
 *   tls: { ca: readFileSync(".services/s3-tls/certs/ca.pem", "utf8") }
 * })
 * ```
 *
 * @since 0.2.0
 */
export const Tls = Schema.Struct({
  /** CA certificate(s) the endpoint's certificate must chain to (PEM), trusted instead of Node's trust store. */
  ca: Schema.optionalKey(Schema.String.check(Schema.isPattern(/-----BEGIN CERTIFICATE-----/, { expected: "PEM text (-----BEGIN CERTIFICATE-----)" })))
})

/**
 * The S3 sink's config. Sizes accept `"8 MiB"` or bytes; durations accept
 * `"30 seconds"` or milliseconds.
 *
 * | field | default | meaning |
 * |---|---|---|
 * | `bucket` | (required) | bucket holding objects and manifests |
 * | `endpoint` | AWS | endpoint URL, e.g. `http://127.0.0.1:19000` for a local server |
 * | `region` | `us-east-1` | signing region |
 * | `forcePathStyle` | `false` | `http://host/bucket/key` addressing (needed by most local servers) |
 * | `credentials` | SDK chain | static `{ accessKeyId, secretAccessKey, sessionToken? }` |
 * | `checksumAlgorithm` | `CRC32` | additional checksum sent with every upload and compared on verify |
 * | `signPayload` | `false` | `true`: SigV4 signs each body's SHA-256; `false`: bodies go up as `UNSIGNED-PAYLOAD` (headers still signed; the additional checksum, which S3 checks on receipt, covers the bytes) |
 * | `multipartThreshold` | 16 MiB | objects of at least this size use multipart upload |
 * | `partSize` | 8 MiB | multipart part size (5 MiB .. 5 GiB) |
 * | `partConcurrency` | 4 | parts of one object uploaded at once |
 * | `fullReadVerify` | `false` | verify also reads the object back and recomputes its checksum |
 * | `keyPrefix` | `""` | prefix put before every key in the bucket |
 * | `maxAttempts` | 1 | SDK attempts per request; 1 surfaces every throttle to the policies |
 * | `requestTimeout` | 60 seconds | socket inactivity timeout per request (0 = none) |
 * | `tls` | Node's trust store | `{ ca }`: the CA (PEM text) an `https://` endpoint's certificate must chain to, see {@link Tls} |
 *
 * **Example**
 *
 * ```ts
 * import { S3Config } from "@sluice/adapter-s3"
 *
 * const config = S3Config.decode({
 *   bucket: "archive",
 *   endpoint: "http://127.0.0.1:19000",
 *   forcePathStyle: true,
 *   credentials: { accessKeyId: "sluice", secretAccessKey: "sluicesecret" },
 *   partSize: "8 MiB"
 * }) // Effect<S3Config.S3Config, ConfigError>
 * ```
 *
 * @since 0.1.0
 */
export const S3Config = Schema.Struct({
  bucket: Schema.String.check(Schema.isMinLength(3)),
  endpoint: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s/]+/))),
  region: Schema.NonEmptyString.pipe(Schema.withDecodingDefaultKey(Effect.succeed("us-east-1"))),
  forcePathStyle: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  credentials: Schema.optionalKey(Credentials),
  checksumAlgorithm: ChecksumAlgorithm.pipe(Schema.withDecodingDefaultKey(Effect.succeed<ChecksumAlgorithm>("CRC32"))),
  signPayload: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  multipartThreshold: Config.Bytes.check(Schema.isGreaterThanOrEqualTo(1)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<number | string>("16 MiB"))
  ),
  partSize: Config.Bytes.check(Schema.isBetween({ minimum: MIN_PART_BYTES, maximum: MAX_PART_BYTES })).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed<number | string>("8 MiB"))
  ),
  partConcurrency: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(4))
  ),
  fullReadVerify: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  keyPrefix: Schema.String.pipe(Schema.withDecodingDefaultKey(Effect.succeed(""))),
  maxAttempts: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(1))
  ),
  requestTimeout: Config.Millis.pipe(Schema.withDecodingDefaultKey(Effect.succeed<number | string>("60 seconds"))),
  tls: Schema.optionalKey(Tls)
})

/**
 * `S3Config` as a type: what the `S3Config` schema decodes to.
 *
 * @since 0.1.0
 */
export type S3Config = typeof S3Config.Type

/**
 * What a caller writes: the config's encoded form (defaulted keys optional,
 * sizes and durations as text or numbers), so a misspelled key fails `tsc`.
 *
 * @since 0.2.0
 */
export type S3ConfigInput = Config.Input<typeof S3Config>

/**
 * Decodes plain config data, failing with a `ConfigError` such as
 * `s3: at ["partSize"]: Expected a value between 5242880 and 5368709120, got 1024`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { S3Config } from "@sluice/adapter-s3"
 *
 * const bad = Effect.flip(S3Config.decode({ bucket: "archive", checksumAlgorithm: "MD5" }))
 * // ConfigError: s3: at ["checksumAlgorithm"] …
 * ```
 *
 * @since 0.1.0
 */
export const decode = (input: unknown): Effect.Effect<S3Config, Config.ConfigError> => Config.decode("s3", S3Config, input)
