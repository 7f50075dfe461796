/**
 * `@sluice/core`'s package version, for the OpenTelemetry instrumentation
 * scope. `Metrics.test` checks it equals package.json's.
 *
 * @internal
 */
export const version = "0.4.0"
