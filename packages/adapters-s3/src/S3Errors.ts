/**
 * Classifies AWS SDK v3 errors into the core's three failure classes, so every
 * throttle reaches the policies as `Throttled`, faults worth retrying as
 * `Transient`, and everything retrying cannot fix (including a checksum the
 * store rejected) as `Fatal`.
 *
 * The SDK's own predicates (`@smithy/service-error-classification`) decide by
 * error name; the HTTP status decides too, because a 503 on HEAD has no body and
 * arrives as `name: "Unknown"`.
 *
 * @since 0.1.0
 */
import { Failure } from "@sluice/core"
import { isServerError, isThrottlingError, isTransientError } from "@smithy/service-error-classification"

/** The argument type of the SDK's predicates (`SdkError` of `@smithy/types`). */
type SdkError = Parameters<typeof isThrottlingError>[0]

/**
 * Codes meaning the store refused the bytes we sent as not matching their
 * checksum: never retried blindly (the body is wrong, not the network).
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.DIGEST_CODES.has("BadDigest") // true
 * ```
 *
 * @since 0.1.0
 */
export const DIGEST_CODES: ReadonlySet<string> = new Set([
  "BadDigest",
  "InvalidDigest",
  "XAmzContentSHA256Mismatch",
  "InvalidPart"
])

/** Statuses that say "slow down" whatever the body (or its absence) says. */
const THROTTLE_STATUSES: ReadonlySet<number> = new Set([429, 503])
/** Statuses worth retrying that say nothing about load. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([408, 500, 502, 504])
/** Socket-level failures without a response. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET"
])
const NETWORK_NAMES: ReadonlySet<string> = new Set(["TimeoutError", "RequestTimeout", "RequestTimeoutException"])

interface ErrorShape {
  readonly name?: unknown
  readonly message?: unknown
  readonly code?: unknown
  readonly Code?: unknown
  readonly cause?: unknown
  readonly $metadata?: { readonly httpStatusCode?: unknown } | undefined
  readonly $response?: { readonly statusCode?: unknown; readonly headers?: unknown } | undefined
}

const shapeOf = (error: unknown): ErrorShape => (typeof error === "object" && error !== null ? error : {})

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined)

/**
 * The HTTP status of an SDK error: `$metadata.httpStatusCode`, else
 * `$response.statusCode`; `undefined` when there was no response.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.statusOf({ name: "SlowDown", $metadata: { httpStatusCode: 503 } }) // 503
 * S3Errors.statusOf(new Error("socket hang up"))                            // undefined
 * ```
 *
 * @since 0.1.0
 */
export const statusOf = (error: unknown): number | undefined => {
  const e = shapeOf(error)
  const s = e.$metadata?.httpStatusCode ?? e.$response?.statusCode
  return typeof s === "number" && s > 0 ? s : undefined
}

/**
 * The provider error code: the SDK's `name` (`SlowDown`, `BadDigest`, `Unknown`
 * for a bodiless response, `TimeoutError`), else a Node socket code
 * (`ECONNRESET`).
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.codeOf(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })) // "ECONNRESET"
 * ```
 *
 * @since 0.1.0
 */
export const codeOf = (error: unknown): string => {
  const e = shapeOf(error)
  const name = str(e.Code) ?? str(e.name)
  const sys = str(e.code) ?? str(shapeOf(e.cause).code)
  if (name === undefined || name === "Error") return sys ?? name ?? "Unknown"
  return name
}

const headerOf = (error: unknown, header: string): string | undefined => {
  const headers = shapeOf(error).$response?.headers
  if (typeof headers !== "object" || headers === null) return undefined
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === header) return typeof v === "string" ? v : Array.isArray(v) ? str(v[0]) : undefined
  }
  return undefined
}

/**
 * Parses a `Retry-After` value (delay in seconds, or an HTTP date) into
 * milliseconds from `now`; `undefined` when absent or unreadable.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.parseRetryAfter("2", Date.now())                              // 2000
 * S3Errors.parseRetryAfter("Wed, 21 Oct 2037 07:28:00 GMT", Date.now())  // ms until then
 * ```
 *
 * @since 0.1.0
 */
export const parseRetryAfter = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000)
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * The server-requested delay of an SDK error's response, in milliseconds.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * const e = { name: "SlowDown", $response: { statusCode: 503, headers: { "retry-after": "2" } } }
 * S3Errors.retryAfterOf(e) // 2000
 * ```
 *
 * @since 0.1.0
 */
export const retryAfterOf = (error: unknown, now: number = Date.now()): number | undefined =>
  parseRetryAfter(headerOf(error, "retry-after"), now)

const isNetworkError = (error: unknown, depth = 0): boolean => {
  const e = shapeOf(error)
  const code = str(e.code)
  const name = str(e.name)
  const message = str(e.message) ?? ""
  if (code !== undefined && NETWORK_CODES.has(code)) return true
  if (name !== undefined && NETWORK_NAMES.has(name)) return true
  if (/socket hang up|ECONNRESET|EPIPE|timed? ?out/i.test(message)) return true
  return e.cause !== undefined && depth < 5 && isNetworkError(e.cause, depth + 1)
}

const messageOf = (error: unknown): string => {
  const e = shapeOf(error)
  return str(e.message) ?? (error instanceof Error ? error.toString() : String(error))
}

/**
 * Classifies any error thrown by an S3 request into the core's class.
 *
 * **Details**
 *
 * In order:
 * 1. a checksum refusal (`BadDigest`, `InvalidDigest`, `XAmzContentSHA256Mismatch`,
 *    `InvalidPart`) is `Fatal`: the bytes are wrong, never retry them blindly;
 * 2. status 429 or 503, or `isThrottlingError`, is `Throttled` (so a bodiless
 *    503 on HEAD, named `Unknown`, is a throttle);
 * 3. status 408/500/502/504, `isTransientError`, `isServerError`, a socket reset
 *    or a timeout is `Transient`;
 * 4. any other status (4xx) is `Fatal`; an error without a response that is not
 *    a network failure is `Fatal` too (a bug or a misconfiguration).
 *
 * `retryAfterMillis` comes from the `Retry-After` response header.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * const bareHead503 = Object.assign(new Error("UnknownError"), {
 *   name: "Unknown", $metadata: { httpStatusCode: 503 }
 * })
 * S3Errors.classify(bareHead503, "verify").failureClass // "Throttled"
 * ```
 *
 * @since 0.1.0
 */
export const classify = (error: unknown, stage: Failure.Stage, now: number = Date.now()): Failure.SinkFailure => {
  if (error instanceof Failure.SinkFailure) return error
  const status = statusOf(error)
  const code = codeOf(error)
  const sdk = (error instanceof Error ? error : Object.assign(new Error(messageOf(error)), shapeOf(error))) as SdkError
  const failureClass: Failure.FailureClass = DIGEST_CODES.has(code)
    ? "Fatal"
    : (status !== undefined && THROTTLE_STATUSES.has(status)) || isThrottlingError(sdk)
    ? "Throttled"
    : (status !== undefined && TRANSIENT_STATUSES.has(status)) || isTransientError(sdk) || isServerError(sdk) ||
        (status === undefined && isNetworkError(error))
    ? "Transient"
    : "Fatal"
  return new Failure.SinkFailure({
    failureClass,
    code,
    status,
    stage,
    retryAfterMillis: retryAfterOf(error, now),
    message: messageOf(error)
  })
}

/**
 * Whether `error` is the store refusing a body whose checksum did not match
 * (`BadDigest` & co.).
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.isDigestMismatch({ name: "BadDigest", $metadata: { httpStatusCode: 400 } }) // true
 * ```
 *
 * @since 0.1.0
 */
export const isDigestMismatch = (error: unknown): boolean => DIGEST_CODES.has(codeOf(error))
