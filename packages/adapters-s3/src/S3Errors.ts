/**
 * Classifies AWS SDK v3 errors into the core's three failure classes, so every
 * throttle reaches the policies as `Throttled`, faults worth retrying as
 * `Transient`, and everything retrying cannot fix (including a checksum the
 * store rejected) as `Fatal`.
 *
 * This module is Sluice's single S3 error classifier. It decides with the AWS
 * SDK's own predicates (`isThrottlingError`, `isTransientError`,
 * `isServerError` of `@smithy/service-error-classification`, which also know
 * Node's socket and DNS codes) and adds only what S3 needs on top: the HTTP
 * status decides too (a 503 on HEAD has no body and arrives as
 * `name: "Unknown"`), and S3's checksum refusals are never retried. The
 * `Classify` module of `@sluice/policies` is generic (any HTTP client) and
 * holds no S3 knowledge.
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

/**
 * Codes of a store that cannot be reached at all: connection refused, no
 * route, and DNS failures. They are classified `Transient` (a restarting
 * server refuses connections for a moment) with the code kept in
 * `SinkFailure.code`, so a retry policy can tell them from a reset and give up
 * after a few attempts (a wrong endpoint never starts answering).
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.UNREACHABLE_CODES.has("ECONNREFUSED") // true
 * ```
 *
 * @since 0.1.0
 */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH"
])

/**
 * Codes of an endpoint certificate the client refuses (Node's `tls` names them
 * after OpenSSL's verify errors): not signed by a trusted CA (a private CA not
 * given in `tls.ca`), self-signed, expired or not yet valid, revoked, or
 * issued for another host. Always `Fatal`: the next attempt meets the same
 * certificate, so retrying only delays the report of a misconfiguration.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.UNTRUSTED_CERTIFICATE_CODES.has("UNABLE_TO_VERIFY_LEAF_SIGNATURE") // true
 * ```
 *
 * @since 0.2.0
 */
export const UNTRUSTED_CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "ERR_TLS_CERT_ALTNAME_INVALID"
])

/** S3 answers 503 only to say "slow down" (`SlowDown`, or a bodiless 503 on HEAD). */
const THROTTLE_STATUS = 503
/** A request timeout answered by the server; the SDK names it `RequestTimeout` only when there is a body. */
const TIMEOUT_STATUS = 408

interface ErrorShape {
  readonly name?: unknown
  readonly message?: unknown
  readonly code?: unknown
  readonly Code?: unknown
  readonly cause?: unknown
  readonly errors?: unknown
  readonly $retryable?: unknown
  readonly $metadata?: { readonly httpStatusCode?: unknown; readonly clockSkewCorrected?: unknown } | undefined
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

/** A Node system code (`ECONNREFUSED`) on the error, its cause, or the first of an `AggregateError`'s errors. */
const systemCodeOf = (error: unknown, depth = 0): string | undefined => {
  const e = shapeOf(error)
  const own = str(e.code)
  if (own !== undefined || depth >= 5) return own
  const inner = Array.isArray(e.errors) && e.errors.length > 0 ? e.errors[0] : undefined
  return (e.cause !== undefined ? systemCodeOf(e.cause, depth + 1) : undefined) ??
    (inner !== undefined ? systemCodeOf(inner, depth + 1) : undefined)
}

/**
 * The provider error code: the SDK's `name` (`SlowDown`, `BadDigest`, `Unknown`
 * for a bodiless response, `TimeoutError`), else a Node system code
 * (`ECONNRESET`, `ECONNREFUSED`, `ENOTFOUND`), looked up in the error's `cause`
 * and in an `AggregateError`'s errors too.
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
  if (name === undefined || name === "Error" || name === "AggregateError") return systemCodeOf(error) ?? name ?? "Unknown"
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
 * The server-requested delay of an SDK error's response, in milliseconds:
 * `Retry-After` (seconds or an HTTP date), else AWS's `x-amz-retry-after`
 * (milliseconds).
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
export const retryAfterOf = (error: unknown, now: number = Date.now()): number | undefined => {
  const standard = parseRetryAfter(headerOf(error, "retry-after"), now)
  if (standard !== undefined) return standard
  const amz = headerOf(error, "x-amz-retry-after")
  return amz !== undefined && /^\d+$/.test(amz.trim()) ? Number(amz.trim()) : undefined
}

const messageOf = (error: unknown): string => {
  const e = shapeOf(error)
  return str(e.message) ?? (error instanceof Error ? error.toString() : String(error))
}

/**
 * What the SDK's predicates read (`name`, `code`, `message`, `cause`,
 * `$retryable`, `$metadata`), with the status from wherever the error put it.
 */
const sdkView = (error: unknown, status: number | undefined): SdkError => {
  const e = shapeOf(error)
  const view = new Error(messageOf(error))
  view.name = str(e.name) ?? "Error"
  return Object.assign(view, {
    code: systemCodeOf(error),
    cause: e.cause,
    $retryable: e.$retryable,
    $metadata: {
      httpStatusCode: status,
      ...(e.$metadata?.clockSkewCorrected === true ? { clockSkewCorrected: true as const } : {})
    }
  }) as SdkError
}

/**
 * The class of an S3 error, from its code and status.
 *
 * **When to use**
 *
 * Where only the class is needed; {@link classify} builds the whole
 * `SinkFailure`.
 *
 * **Details**
 *
 * In order:
 * 1. a checksum refusal ({@link DIGEST_CODES}) is `Fatal`: the bytes are
 *    wrong, never retry them blindly; so is a refused endpoint certificate
 *    ({@link UNTRUSTED_CERTIFICATE_CODES}): the next attempt meets the same one;
 * 2. status 503, or the SDK's `isThrottlingError` (429, `SlowDown`,
 *    `ThrottlingException`, `$retryable.throttling`, …) is `Throttled` (so a
 *    bodiless 503 on HEAD, named `Unknown`, is a throttle);
 * 3. status 408, or the SDK's `isTransientError` (500/502/504, timeouts,
 *    `ECONNRESET`, `ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, … also in the
 *    error's `cause`; never an `AbortError`) or `isServerError` (other 5xx) is
 *    `Transient`;
 * 4. anything else is `Fatal`: another 4xx, or an error without a response
 *    that is not a network failure (a bug or a misconfiguration).
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.classOf({ name: "Unknown", $metadata: { httpStatusCode: 503 } }) // "Throttled"
 * ```
 *
 * @since 0.1.0
 */
export const classOf = (error: unknown): Failure.FailureClass => {
  const status = statusOf(error)
  const code = codeOf(error)
  if (DIGEST_CODES.has(code) || UNTRUSTED_CERTIFICATE_CODES.has(code)) return "Fatal"
  const sdk = sdkView(error, status)
  if (status === THROTTLE_STATUS || isThrottlingError(sdk)) return "Throttled"
  if (status === TIMEOUT_STATUS || isTransientError(sdk) || isServerError(sdk)) return "Transient"
  return "Fatal"
}

/**
 * Classifies any error thrown by an S3 request into a core `SinkFailure`.
 *
 * **When to use**
 *
 * Around every SDK call of an S3 sink (the sink does it for you).
 *
 * **Details**
 *
 * The class is {@link classOf}; `code` is {@link codeOf} (so connection
 * refused and DNS failures keep `ECONNREFUSED` / `ENOTFOUND` / `EAI_AGAIN`, see
 * {@link UNREACHABLE_CODES}); `retryAfterMillis` comes from the `Retry-After`
 * response header. A refused endpoint certificate's message says so and
 * names `tls.ca`. A `SinkFailure` is returned as it is.
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
  return new Failure.SinkFailure({
    failureClass: classOf(error),
    code: codeOf(error),
    status: statusOf(error),
    stage,
    retryAfterMillis: retryAfterOf(error, now),
    message: isUntrustedCertificate(error)
      ? `${messageOf(error)} (${codeOf(error)}: the endpoint's certificate is not trusted; for a private CA, give it in tls.ca)`
      : messageOf(error)
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

/**
 * Whether `error` (an SDK error or a classified `SinkFailure`) says the store
 * could not be reached at all (connection refused, no route, DNS).
 *
 * **When to use**
 *
 * In a retry decision: an unreachable endpoint deserves a few attempts (a
 * server restarting), not a retry budget of hours.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.isUnreachable(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })) // true
 * ```
 *
 * @since 0.1.0
 */
export const isUnreachable = (error: unknown): boolean =>
  UNREACHABLE_CODES.has(error instanceof Failure.SinkFailure ? error.code : codeOf(error))

/**
 * Whether `error` (an SDK error or a classified `SinkFailure`) is the client
 * refusing the endpoint's certificate ({@link UNTRUSTED_CERTIFICATE_CODES}):
 * for an endpoint behind a private CA, the CA is missing from `tls.ca`.
 *
 * **Example**
 *
 * ```ts
 * import { S3Errors } from "@sluice/adapter-s3"
 *
 * S3Errors.isUntrustedCertificate(Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" })) // true
 * ```
 *
 * @since 0.2.0
 */
export const isUntrustedCertificate = (error: unknown): boolean =>
  UNTRUSTED_CERTIFICATE_CODES.has(error instanceof Failure.SinkFailure ? error.code : codeOf(error))
