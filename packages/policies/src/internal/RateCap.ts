/**
 * A throttle that caps the request rate, not the requests in flight: HTTP 429
 * Too Many Requests (RFC 6585). AdaptiveBatch grows objects under it (each
 * request's bytes are the throughput); Throttle reads no in-flight level from
 * it (`Throttle.cutTo`). A 503 SlowDown says the store is overloaded, which
 * fewer requests in flight answer.
 *
 * @internal
 */
import type { Failure } from "@sluice/core"
import { TOO_MANY_REQUESTS } from "./HttpStatus.ts"

/** The store refused the request for its rate (429), not for load. */
export const capsRequestRate = (failure: Failure.ClassifiedFailure): boolean => failure.status === TOO_MANY_REQUESTS
