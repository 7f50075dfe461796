/**
 * `@sluice/adapter-kafka`: a Sluice source over Apache Kafka, on
 * `@platformatic/kafka`. Concurrent partitions, offsets committed only after
 * verification, retention gaps detected and surfaced, safe group rebalances.
 *
 * @since 0.1.0
 * @module @sluice/adapter-kafka
 */
export * as KafkaConfig from "./KafkaConfig.ts"
export * as KafkaStats from "./KafkaStats.ts"
export * as KafkaSource from "./KafkaSource.ts"
export * as RecordEnvelope from "./RecordEnvelope.ts"
export * as RetentionGap from "./RetentionGap.ts"
export * as SaslAuthentication from "./SaslAuthentication.ts"
