/**
 * Classifies the errors of a **generic** (non-S3) sink into
 * `Throttled | Transient | Fatal` by HTTP semantics and Node's socket codes.
 *
 * S3 errors are not classified here: `S3Errors.classify` of
 * `@sluice/adapter-s3` is Sluice's single S3 error classifier (S3's checksum
 * refusals, a bodiless 503 on HEAD, S3's throttling codes) and the S3 sink
 * applies it itself, so its failures reach the policies already classified.
 * `@sluice/policies` does not depend on the adapter, so this module keeps only
 * what holds for any HTTP client, and uses the AWS SDK's generic predicates
 * (`@smithy/service-error-classification`) for socket, DNS and timeout codes
 * rather than a list of its own. Rules, first match wins:
 *
 * | rule | class |
 * |---|---|
 * | already classified (`SinkFailure`) | as it is |
 * | a verification failure (`VerificationFailed`: `ChecksumMismatch`, `SizeMismatch`, `Missing`) | Fatal |
 * | status 429 or 503, or the SDK's generic throttling predicate (`ThrottlingException`, `$retryable.throttling`, …) | Throttled |
 * | status 408 or 5xx | Transient |
 * | no status, and a network failure (`ECONNRESET`, `ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, `ETIMEDOUT`, `TimeoutError`, …, also in `cause`) | Transient, the code kept |
 * | any other status (4xx), or unrecognised | Fatal (never retried blindly) |
 *
 * `Retry-After` (seconds or an HTTP date) is read from the raw response headers
 * (`$response.headers` or `headers`) or a `retryAfterMillis` /
 * `retryAfterSeconds` field.
 *
 * @since 0.1.0
 */
import type { Failure } from "@sluice/core"
import { isThrottlingError, isTransientError } from "@smithy/service-error-classification"
import { isServerError, REQUEST_TIMEOUT, SERVICE_UNAVAILABLE, TOO_MANY_REQUESTS } from "../internal/HttpStatus.ts"

/**
 * The shape of an HTTP client error (and of an AWS SDK v3 error), as far as
 * classification needs it. Every field is optional.
 *
 * @since 0.1.0
 */
export interface ErrorLike {
  readonly name?: string | undefined
  readonly message?: string | undefined
  readonly code?: string | undefined
  readonly Code?: string | undefined
  readonly status?: number | undefined
  readonly statusCode?: number | undefined
  readonly $metadata?: { readonly httpStatusCode?: number | undefined } | undefined
  readonly $response?: { readonly statusCode?: number | undefined; readonly headers?: Readonly<Record<string, string | undefined>> | undefined } | undefined
  readonly $retryable?: { readonly throttling?: boolean | undefined } | undefined
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined
  readonly retryAfterMillis?: number | undefined
  readonly retryAfterSeconds?: number | undefined
  readonly cause?: unknown
}

/**
 * The reasons of a core `VerificationFailed`: the stored bytes are not the
 * bytes sent, so retrying the same request with the same body cannot help.
 * (S3's own checksum refusals, `BadDigest` & co., are the S3 adapter's
 * business: `S3Errors.DIGEST_CODES`.)
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * Classify.CHECKSUM_CODES.includes("ChecksumMismatch") // true
 * ```
 *
 * @since 0.1.0
 */
export const CHECKSUM_CODES: ReadonlyArray<string> = ["ChecksumMismatch", "SizeMismatch", "Missing"]

const field = <K extends keyof ErrorLike>(e: unknown, key: K): ErrorLike[K] | undefined =>
  typeof e === "object" && e !== null && key in e ? (e as ErrorLike)[key] : undefined

/**
 * The HTTP status of an error, wherever the client put it.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * Classify.statusOf({ statusCode: 429 }) // 429
 * ```
 *
 * @since 0.1.0
 */
export const statusOf = (error: unknown): number | undefined =>
  field(error, "$metadata")?.httpStatusCode ?? field(error, "$response")?.statusCode ?? field(error, "statusCode") ??
    field(error, "status")

/**
 * The code of an error: the provider's (`Code`), the system's (`code`, e.g.
 * `ECONNREFUSED`) or the error's name; `Unknown` when none is set.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * Classify.codeOf(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })) // "ECONNREFUSED"
 * ```
 *
 * @since 0.1.0
 */
export const codeOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "VerificationFailed") {
    const reason = field(error, "reason" as keyof ErrorLike)
    if (typeof reason === "string") return reason
  }
  const candidates = [field(error, "Code"), field(error, "code"), field(error, "name")]
  for (const c of candidates) if (typeof c === "string" && c !== "" && c !== "Error") return c
  return "Unknown"
}

/**
 * Parses a `Retry-After` value (delta seconds or an HTTP date) into ms from `now`.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * Classify.parseRetryAfter("3", Date.now()) // 3000
 * ```
 *
 * @since 0.1.0
 */
export const parseRetryAfter = (value: string, now: number): number | undefined => {
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * The server-requested delay of an error, in ms.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * Classify.retryAfterOf({ headers: { "retry-after": "2" } }, Date.now()) // 2000
 * ```
 *
 * @since 0.1.0
 */
export const retryAfterOf = (error: unknown, now: number): number | undefined => {
  const ms = field(error, "retryAfterMillis")
  if (typeof ms === "number") return ms
  const s = field(error, "retryAfterSeconds")
  if (typeof s === "number") return s * 1000
  const headers = field(error, "$response")?.headers ?? field(error, "headers")
  if (headers === undefined) return undefined
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === "retry-after" && v !== undefined) return parseRetryAfter(v, now)
  }
  return undefined
}

/** What the SDK's generic predicates read: `name`, `code`, `cause`, `$retryable` (no status: decided here). */
const sdkView = (error: unknown) => {
  const cause = field(error, "cause")
  const name = field(error, "name")
  return Object.assign(new Error(field(error, "message") ?? ""), {
    name: typeof name === "string" && name !== "" ? name : "Error",
    $metadata: {},
    $retryable: field(error, "$retryable"),
    code: field(error, "code"),
    cause: cause instanceof Error ? cause : undefined
  })
}

/**
 * Classifies the error of a generic (non-S3) sink: an HTTP client error, a
 * Node socket error, a Sluice `SinkFailure` or `VerificationFailed`.
 *
 * **When to use**
 *
 * In a sink adapter for a store other than S3, to turn the client's error into
 * the `ClassifiedFailure` the pipeline and the policies understand. For S3 use
 * `S3Errors.classify` of `@sluice/adapter-s3` (the S3 sink already does).
 *
 * **Details**
 *
 * A `SinkFailure` is already classified and is returned as it is. Connection
 * refused and DNS failures (`ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`) are
 * `Transient` with their code kept, so a retry policy can give up on them
 * early. `now` (ms, for an HTTP-date Retry-After) defaults to `Date.now()`.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * const c = Classify.classify({ statusCode: 503, headers: { "retry-after": "2" } }, { stage: "object_upload" })
 * // c.failureClass === "Throttled", c.retryAfterMillis === 2000
 * ```
 *
 * @since 0.1.0
 */
export const classify = (
  error: unknown,
  options: { readonly stage?: Failure.Stage | undefined; readonly now?: number | undefined } = {}
): Failure.ClassifiedFailure => {
  const stage = options.stage ?? "object_upload"
  if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "SinkFailure") {
    const f = error as unknown as Failure.SinkFailure
    return { failureClass: f.failureClass, code: f.code, status: f.status, stage: f.stage, retryAfterMillis: f.retryAfterMillis }
  }
  const code = codeOf(error)
  const status = statusOf(error)
  const retryAfterMillis = retryAfterOf(error, options.now ?? Date.now())
  const result = (failureClass: Failure.FailureClass): Failure.ClassifiedFailure => ({
    failureClass,
    code,
    status,
    stage,
    retryAfterMillis
  })
  if (CHECKSUM_CODES.includes(code)) return result("Fatal")
  const view = sdkView(error)
  if (status === TOO_MANY_REQUESTS || status === SERVICE_UNAVAILABLE || isThrottlingError(view)) return result("Throttled")
  if (status === REQUEST_TIMEOUT || (status !== undefined && isServerError(status))) return result("Transient")
  if (status === undefined && isTransientError(view)) return result("Transient")
  return result("Fatal")
}
