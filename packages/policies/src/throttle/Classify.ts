/**
 * Classifies sink errors into `Throttled | Transient | Fatal`: the AWS SDK's own
 * classification (`@smithy/service-error-classification`) **plus HTTP status**.
 *
 * The status matters because a throttled `HEAD` has no body: the SDK then
 * reports the error name as `Unknown` (or `NotFound`-ish names), and its code
 * lists miss it. Rules, first match wins:
 *
 * | rule | class |
 * |---|---|
 * | checksum / digest mismatch (`BadDigest`, `InvalidDigest`, `XAmzContentSHA256Mismatch`, `ChecksumMismatch`, `SizeMismatch`, `Missing`) | Fatal |
 * | status 429 or 503, or the SDK says throttling (`SlowDown`, `ThrottlingException`, …) | Throttled |
 * | status 408 or 5xx, or the SDK says transient (timeouts, `ECONNRESET`, clock skew corrected, …) | Transient |
 * | any other 4xx | Fatal |
 * | no status and unrecognised | Fatal (never retried blindly) |
 *
 * `Retry-After` (seconds or an HTTP date) is read from the raw response headers
 * (`$response.headers`) or a `retryAfterMillis` / `retryAfterSeconds` field.
 *
 * @since 0.1.0
 */
import type { Failure } from "@sluice/core"
import { isClockSkewCorrectedError, isThrottlingError, isTransientError } from "@smithy/service-error-classification"

/**
 * The shape of an AWS SDK v3 error (and of most HTTP client errors), as far as
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
 * Codes that mean the stored bytes are not the bytes sent: retrying the same
 * request with the same body cannot help.
 *
 * @since 0.1.0
 */
export const CHECKSUM_CODES: ReadonlyArray<string> = [
  "BadDigest",
  "InvalidDigest",
  "XAmzContentSHA256Mismatch",
  "ChecksumMismatch",
  "SizeMismatch",
  "Missing"
]

const field = <K extends keyof ErrorLike>(e: unknown, key: K): ErrorLike[K] | undefined =>
  typeof e === "object" && e !== null && key in e ? (e as ErrorLike)[key] : undefined

/**
 * The HTTP status of an error, wherever the client put it.
 *
 * @since 0.1.0
 */
export const statusOf = (error: unknown): number | undefined =>
  field(error, "$metadata")?.httpStatusCode ?? field(error, "$response")?.statusCode ?? field(error, "statusCode") ??
    field(error, "status")

/**
 * The provider code of an error (`SlowDown`, `Unknown`, …).
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

const sdkView = (error: unknown, code: string, status: number | undefined) => {
  // The smithy predicates read `name`, `$metadata`, `$retryable`, `code`, `cause`.
  const cause = field(error, "cause")
  const skew = field(error, "$metadata") as { readonly clockSkewCorrected?: true } | undefined
  return Object.assign(new Error(field(error, "message") ?? code), {
    name: code,
    $metadata: { httpStatusCode: status, ...(skew?.clockSkewCorrected === true ? { clockSkewCorrected: true as const } : {}) },
    $retryable: field(error, "$retryable"),
    code: field(error, "code"),
    cause: cause instanceof Error ? cause : undefined
  })
}

/**
 * Classifies any error a sink may see (an AWS SDK error, an HTTP client error,
 * a Sluice `SinkFailure` or `VerificationFailed`).
 *
 * **When to use**
 *
 * In a sink adapter, to turn the client's error into a `SinkFailure` the
 * pipeline and policies understand.
 *
 * **Details**
 *
 * A `SinkFailure` is already classified and is returned as is. `now` (ms, for
 * an HTTP-date Retry-After) defaults to `Date.now()`.
 *
 * **Example**
 *
 * ```ts
 * import { Classify } from "@sluice/policies"
 *
 * // A throttled HEAD: no body, so the SDK says "Unknown".
 * const c = Classify.classify({ name: "Unknown", $metadata: { httpStatusCode: 503 } }, { stage: "verify" })
 * // c.failureClass === "Throttled"
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
  const view = sdkView(error, code, status)
  if (status === 429 || status === 503 || isThrottlingError(view)) return result("Throttled")
  if (status === 408 || (status !== undefined && status >= 500 && status <= 599)) return result("Transient")
  if (isTransientError(view) || isClockSkewCorrectedError(view) === true) return result("Transient")
  return result("Fatal")
}
