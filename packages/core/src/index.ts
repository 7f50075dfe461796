/**
 * `@sluice/core`: records, sources, sinks, the pipeline, signals, knobs, metrics
 * and the policy contract of Sluice.
 *
 * @since 0.1.0
 * @module @sluice/core
 */
export * as Batch from "./Batch.ts"
export * as CommitTracker from "./CommitTracker.ts"
export * as Compression from "./Compression.ts"
export * as Config from "./Config.ts"
export * as Crc32 from "./Crc32.ts"
export * as Failure from "./Failure.ts"
export * as Field from "./Field.ts"
export * as Fixed from "./Fixed.ts"
export * as Knob from "./Knob.ts"
export * as Memory from "./Memory.ts"
export * as Metrics from "./Metrics.ts"
export * as ObjectKey from "./ObjectKey.ts"
export * as Pipeline from "./Pipeline.ts"
export * as Policy from "./Policy.ts"
export * as PolicySupervisor from "./PolicySupervisor.ts"
export * as Record from "./Record.ts"
export * as Replicated from "./Replicated.ts"
export * as RetryPolicy from "./RetryPolicy.ts"
export * as Sealer from "./Sealer.ts"
export * as SignalBus from "./Signal.ts"
export * as Sink from "./Sink.ts"
export * as Source from "./Source.ts"
export * as Suggestion from "./Suggestion.ts"
