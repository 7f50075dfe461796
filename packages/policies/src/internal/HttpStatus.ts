/**
 * The HTTP statuses the failure classifier (`Classify.ts`) and the rate-cap
 * test (`RateCap.ts`) read, each named once.
 *
 * @internal
 */

/** 408 Request Timeout (RFC 9110): the server gave up waiting for the request; retrying is safe. */
export const REQUEST_TIMEOUT = 408
/** 429 Too Many Requests (RFC 6585): the server caps the client's request rate. */
export const TOO_MANY_REQUESTS = 429
/** 503 Service Unavailable (RFC 9110): S3 answers `SlowDown` with it when overloaded. */
export const SERVICE_UNAVAILABLE = 503

/** 5xx: the server failed (RFC 9110, section 15.6). */
export const isServerError = (status: number): boolean => status >= 500 && status <= 599
