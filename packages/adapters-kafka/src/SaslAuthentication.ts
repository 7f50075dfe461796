/**
 * SASL authentication failures: the broker refused the configured credentials.
 * Retrying cannot fix them (the password does not become right), so the
 * source fails at once with a typed error naming the mechanism and the user,
 * never the password.
 *
 * @since 0.2.0
 */
import type { Source } from "@sluice/core"
import { Schema } from "effect"

/**
 * The broker refused the source's SASL credentials (a wrong user or password,
 * or a mechanism the user has no credential for). The source failed with a
 * `SourceError` (operation `"authenticate"`) whose `cause` is this error (the
 * core `Source` contract fixes the error type); {@link fromSourceError} gets
 * it back.
 *
 * **Details**
 *
 * At `KafkaSource.make` the source makes one connection to a bootstrap broker
 * before building its client: a refusal there fails `make` after that single
 * attempt (the client itself would retry a refused login three times, 1 s
 * apart, and report only "Connection … failed"). A refusal later (the
 * password rotated while the source runs) fails the operation that met it
 * with this cause too, after the client's own bounded retries.
 *
 * **Example**
 *
 * ```ts
 * import { SaslAuthentication } from "@sluice/adapter-kafka"
 * declare const error: import("@sluice/core").Source.SourceError
 * const refused = SaslAuthentication.fromSourceError(error)
 * if (refused !== undefined) console.error(`${refused.mechanism} login as ${refused.username} refused by ${refused.broker}`)
 * ```
 *
 * @since 0.2.0
 */
export class SaslAuthenticationFailed extends Schema.TaggedError<SaslAuthenticationFailed>()("SaslAuthenticationFailed", {
  source: Schema.String,
  mechanism: Schema.String,
  username: Schema.String,
  /** The broker that refused, `"host:port"`. */
  broker: Schema.String,
  /** What the broker or the client said (never the password). */
  reason: Schema.String
}) {
  /** `SASL <mechanism> authentication as "<username>" failed at <broker>: <reason>`. */
  override get message(): string {
    return `SASL ${this.mechanism} authentication as "${this.username}" failed at ${this.broker}: ${this.reason}`
  }
}

/**
 * The `SaslAuthenticationFailed` carried by a source error, if any.
 *
 * **Example**
 *
 * ```ts
 * import { SaslAuthentication } from "@sluice/adapter-kafka"
 * declare const error: import("@sluice/core").Source.SourceError
 * SaslAuthentication.fromSourceError(error)?.mechanism // "SCRAM-SHA-512"
 * ```
 *
 * @since 0.2.0
 */
export const fromSourceError = (error: Source.SourceError): SaslAuthenticationFailed | undefined =>
  error.cause instanceof SaslAuthenticationFailed ? error.cause : undefined
