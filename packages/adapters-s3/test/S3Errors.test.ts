/** The classifier on constructed SDK-shaped errors (no server needed). */
import { describe, expect, it } from "vitest"
import * as S3Errors from "../src/S3Errors.ts"

/** An error shaped like an AWS SDK v3 ServiceException. */
const sdkError = (
  name: string,
  status: number | undefined,
  options: { readonly headers?: Record<string, string>; readonly fault?: "client" | "server"; readonly message?: string } = {}
): Error => {
  const e = new Error(options.message ?? name)
  e.name = name
  return Object.assign(e, {
    $fault: options.fault ?? (status !== undefined && status >= 500 ? "server" : "client"),
    $metadata: status === undefined ? {} : { httpStatusCode: status, attempts: 1 },
    ...(status === undefined ? {} : { $response: { statusCode: status, headers: options.headers ?? {} } })
  })
}

/** A Node socket error, as the SDK's http handler rethrows it. */
const socketError = (code: string, message: string): Error => Object.assign(new Error(message), { code })

describe("S3Errors.classify", () => {
  it.each([
    ["SlowDown", 503, "Throttled"],
    ["Unknown", 503, "Throttled"], // throttled HEAD: no body, no name
    ["TooManyRequests", 429, "Throttled"],
    ["Unknown", 429, "Throttled"],
    ["ThrottlingException", 400, "Throttled"],
    ["RequestLimitExceeded", undefined, "Throttled"],
    ["InternalError", 500, "Transient"],
    ["Unknown", 500, "Transient"],
    ["BadGateway", 502, "Transient"],
    ["GatewayTimeout", 504, "Transient"],
    ["RequestTimeout", 408, "Transient"],
    ["NotImplemented", 501, "Transient"], // isServerError
    ["TimeoutError", undefined, "Transient"],
    ["AccessDenied", 403, "Fatal"],
    ["NoSuchBucket", 404, "Fatal"],
    ["NotFound", 404, "Fatal"],
    ["InvalidRequest", 400, "Fatal"],
    ["EntityTooSmall", 400, "Fatal"],
    ["BadDigest", 400, "Fatal"],
    ["BadDigest", 500, "Fatal"], // a digest refusal is never retried, whatever the status
    ["InvalidDigest", 400, "Fatal"],
    ["XAmzContentSHA256Mismatch", 400, "Fatal"],
    ["InvalidPart", 400, "Fatal"],
    ["PreconditionFailed", 412, "Fatal"]
  ] as const)("%s / %s → %s", (name, status, expected) => {
    const failure = S3Errors.classify(sdkError(name, status), "object_upload")
    expect(failure.failureClass).toBe(expected)
    expect(failure.code).toBe(name)
    expect(failure.status).toBe(status)
    expect(failure.stage).toBe("object_upload")
  })

  it.each([
    [socketError("ECONNRESET", "read ECONNRESET"), "ECONNRESET"],
    [socketError("EPIPE", "write EPIPE"), "EPIPE"],
    [socketError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"), "ECONNREFUSED"],
    [Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }), "ECONNRESET"],
    [Object.assign(new Error("wrapped"), { cause: socketError("ETIMEDOUT", "t") }), "ETIMEDOUT"]
  ])("socket failure %s → Transient", (error, code) => {
    const failure = S3Errors.classify(error, "verify")
    expect(failure).toMatchObject({ failureClass: "Transient", code, status: undefined, stage: "verify" })
  })

  it("an error with no response that is not a network failure is Fatal", () => {
    expect(S3Errors.classify(new TypeError("Cannot read properties of undefined"), "object_upload").failureClass).toBe("Fatal")
    expect(S3Errors.classify("weird", "object_upload").failureClass).toBe("Fatal")
  })

  it("an AbortError (our own interruption) is not transient", () => {
    const e = new Error("Request aborted")
    e.name = "AbortError"
    expect(S3Errors.classify(e, "object_upload").failureClass).toBe("Fatal")
  })

  it("reads Retry-After in seconds and as an HTTP date, any header case", () => {
    const now = Date.parse("2030-01-01T00:00:00Z")
    expect(S3Errors.classify(sdkError("SlowDown", 503, { headers: { "retry-after": "3" } }), "verify", now).retryAfterMillis)
      .toBe(3000)
    expect(S3Errors.classify(sdkError("Unknown", 429, { headers: { "Retry-After": "0.5" } }), "verify", now).retryAfterMillis)
      .toBe(500)
    const date = "Tue, 01 Jan 2030 00:00:10 GMT"
    expect(S3Errors.classify(sdkError("SlowDown", 503, { headers: { "retry-after": date } }), "verify", now).retryAfterMillis)
      .toBe(10_000)
    expect(S3Errors.classify(sdkError("SlowDown", 503, { headers: { "retry-after": "soon" } }), "verify", now).retryAfterMillis)
      .toBeUndefined()
    expect(S3Errors.classify(sdkError("SlowDown", 503), "verify", now).retryAfterMillis).toBeUndefined()
    expect(S3Errors.parseRetryAfter("Mon, 31 Dec 2029 23:59:00 GMT", now)).toBe(0)
  })

  it("reads the status from $response when $metadata lacks it", () => {
    const e = Object.assign(new Error("x"), { name: "Unknown", $metadata: {}, $response: { statusCode: 503, headers: {} } })
    expect(S3Errors.classify(e, "verify")).toMatchObject({ failureClass: "Throttled", status: 503 })
  })

  it("keeps the message and recognises digest refusals", () => {
    const e = sdkError("BadDigest", 400, { message: "The CRC64NVME you specified did not match the calculated checksum." })
    expect(S3Errors.classify(e, "object_upload").message).toContain("did not match")
    expect(S3Errors.isDigestMismatch(e)).toBe(true)
    expect(S3Errors.isDigestMismatch(sdkError("SlowDown", 503))).toBe(false)
  })

  it.each([
    [socketError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"), "ECONNREFUSED"],
    [socketError("ENOTFOUND", "getaddrinfo ENOTFOUND s3.invalid"), "ENOTFOUND"],
    [socketError("EAI_AGAIN", "getaddrinfo EAI_AGAIN s3.example"), "EAI_AGAIN"],
    [socketError("EHOSTUNREACH", "connect EHOSTUNREACH 10.0.0.1:443"), "EHOSTUNREACH"],
    // Happy eyeballs: both addresses refused, reported as an AggregateError.
    [new AggregateError([socketError("ECONNREFUSED", "connect ECONNREFUSED ::1:9000")], "connect failed"), "ECONNREFUSED"],
    [Object.assign(new Error("wrapped"), { cause: socketError("ENOTFOUND", "getaddrinfo ENOTFOUND x") }), "ENOTFOUND"]
  ])("an unreachable store (%s) is Transient with its code kept, and isUnreachable", (error, code) => {
    const failure = S3Errors.classify(error, "object_upload")
    expect(failure).toMatchObject({ failureClass: "Transient", code, status: undefined })
    expect(S3Errors.isUnreachable(error)).toBe(true)
    expect(S3Errors.isUnreachable(failure)).toBe(true)
  })

  it.each([...S3Errors.UNTRUSTED_CERTIFICATE_CODES])("a refused endpoint certificate (%s) is Fatal, says so and names tls.ca", (code) => {
    const failure = S3Errors.classify(socketError(code, "unable to verify the first certificate"), "object_upload")
    expect(failure).toMatchObject({ failureClass: "Fatal", code, status: undefined })
    expect(failure.message).toContain("give it in tls.ca")
    expect(S3Errors.isUntrustedCertificate(failure)).toBe(true)
    expect(S3Errors.isUnreachable(failure)).toBe(false)
  })

  it("a reset or a timeout is not unreachable", () => {
    expect(S3Errors.isUnreachable(socketError("ECONNRESET", "read ECONNRESET"))).toBe(false)
    expect(S3Errors.isUnreachable(sdkError("TimeoutError", undefined))).toBe(false)
    expect(S3Errors.isUnreachable(sdkError("SlowDown", 503))).toBe(false)
  })

  it("classOf agrees with classify and uses the SDK's own lists (clock skew corrected, $retryable)", () => {
    const skew = Object.assign(sdkError("RequestTimeTooSkewed", 403), { $metadata: { httpStatusCode: 403, clockSkewCorrected: true } })
    expect(S3Errors.classOf(skew)).toBe("Transient")
    const retryable = Object.assign(sdkError("Weird", 400), { $retryable: { throttling: true } })
    expect(S3Errors.classOf(retryable)).toBe("Throttled")
    for (const [name, status] of [["SlowDown", 503], ["AccessDenied", 403], ["InternalError", 500]] as const) {
      expect(S3Errors.classOf(sdkError(name, status))).toBe(S3Errors.classify(sdkError(name, status), "verify").failureClass)
    }
  })

  it("reads x-amz-retry-after (milliseconds) when there is no Retry-After", () => {
    expect(S3Errors.classify(sdkError("SlowDown", 503, { headers: { "x-amz-retry-after": "1500" } }), "verify").retryAfterMillis)
      .toBe(1500)
  })
})
