/**
 * What every S3 operation of the sink shares: the client, the decoded config,
 * the bucket key of a batch key, and one way to send a request (aborted on
 * interruption, its error classified by `S3Errors`).
 *
 * @internal
 */
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import type { S3Client, UploadPartCommand } from "@aws-sdk/client-s3"
import * as Core from "@sluice/core"
import type { Failure } from "@sluice/core"
import { Effect } from "effect"
import type { S3Config } from "../S3Config.ts"
import * as S3Errors from "../S3Errors.ts"
import * as SimdCrc from "./SimdCrc.ts"

/** The sink's request context. */
export interface Request {
  readonly client: S3Client
  readonly config: S3Config
  readonly bucket: string
  /** The key in the bucket of a batch key (`keyPrefix` applied). */
  readonly storageKey: (key: string) => string
}

/** The request context of a config and client. */
export const make = (config: S3Config, client: S3Client): Request => {
  const prefix = config.keyPrefix === "" ? "" : `${config.keyPrefix.replace(/\/+$/, "")}/`
  return { client, config, bucket: config.bucket, storageKey: (key) => `${prefix}${key}` }
}

/**
 * Sends one SDK request. Interruption aborts it (the SDK's `abortSignal`); a
 * failure becomes a classified `SinkFailure` of `stage`.
 */
export const send = <A>(stage: Failure.Stage, f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, Failure.SinkFailure> =>
  Effect.tryPromise({ try: (signal) => f(signal), catch: (e) => S3Errors.classify(e, stage) })

/**
 * A body upload as the config asks: with `signPayload` false, the request
 * carries `x-amz-content-sha256: UNSIGNED-PAYLOAD`, which the SDK's signer
 * takes as the payload hash instead of hashing the body (a SHA-256 of every
 * byte on the event loop, ~5% of the Kafka → S3 benchmark's CPU). The headers,
 * the additional checksum among them, are still signed, and S3 checks that
 * checksum against the bytes it receives.
 */
export const bodyUpload = <C extends PutObjectCommand | UploadPartCommand>(request: Request, command: C): C => {
  if (request.config.signPayload) return command
  if (command instanceof PutObjectCommand) {
    command.middlewareStack.add((next) => (args) => next(unsigned(args)), UNSIGNED_STEP)
  } else {
    command.middlewareStack.add((next) => (args) => next(unsigned(args)), UNSIGNED_STEP)
  }
  return command
}

const UNSIGNED_STEP = { step: "build", name: "sluiceUnsignedPayload" } as const

/** Sets the payload hash header on the HTTP request of `args`. */
const unsigned = <A extends { readonly request: unknown }>(args: A): A => {
  const http = args.request
  if (typeof http === "object" && http !== null && "headers" in http) {
    const headers = http.headers
    if (typeof headers === "object" && headers !== null) Object.assign(headers, { [CONTENT_SHA256]: UNSIGNED_PAYLOAD })
  }
  return args
}

const CONTENT_SHA256 = "x-amz-content-sha256"
const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"

/** What an object upload sent: the checksum value, and the milliseconds spent computing checksums. */
export interface Uploaded {
  readonly value: string
  readonly checksumMillis: number
}

/** The result of a local computation and the event-loop time it took. */
export interface Timed<A> {
  readonly value: A
  /** Milliseconds (fractional) the computation held the event loop (the `Clock`'s). */
  readonly millis: number
}

/**
 * Runs a local computation (a checksum) that cannot fail, timing its
 * synchronous part: the checksums hash every byte before their promise
 * settles, so that is all their work, and no other fiber's work (another
 * part's request) is counted in it. Then logs, once each, if the native CRC
 * module did not load (`SimdCrc.logLoadFailure`) and if the CRC-32 helper
 * thread went out of service (`Crc32.logHelperFailure`).
 */
export const compute = <A>(f: () => Promise<A>): Effect.Effect<Timed<A>> =>
  Effect.clockWith((clock) =>
    Effect.suspend(() => {
      const start = clock.currentTimeNanosUnsafe()
      const pending = f()
      const millis = Number(clock.currentTimeNanosUnsafe() - start) / 1e6
      return Effect.tap(Effect.map(Effect.promise(() => pending), (value) => ({ value, millis })), () => Effect.andThen(SimdCrc.logLoadFailure, helperFailure))
    })
  )

/** `Crc32.logHelperFailure` of `@sluice/core` ≥ 0.5.0; nothing with an older core (see `Checksums`). */
const helperFailure: Effect.Effect<void> = (Core as Partial<typeof Core>).Crc32?.logHelperFailure ?? Effect.void

/** The whole body of the object at bucket key `key` (failures classified as `stage`). */
export const getBytes = (request: Request, key: string, stage: Failure.Stage): Effect.Effect<Uint8Array, Failure.SinkFailure> =>
  send(stage, async (abortSignal) => {
    const out = await request.client.send(new GetObjectCommand({ Bucket: request.bucket, Key: key }), { abortSignal })
    if (out.Body === undefined) return new Uint8Array(0)
    return out.Body.transformToByteArray()
  })
