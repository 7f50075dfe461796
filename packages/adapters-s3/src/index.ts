/**
 * `@sluice/adapter-s3`: a Sluice sink on the AWS SDK v3 that sends an additional
 * checksum with every upload, proves every object by HEAD before any commit, and
 * surfaces every throttle to the policies.
 *
 * The command lines (`sluice audit`, `sluice calibrate`) are subpaths,
 * `@sluice/adapter-s3/AuditCli` and `@sluice/adapter-s3/CalibrateCli`, so
 * that a pipeline importing this index does not load `effect/cli`.
 *
 * @since 0.1.0
 * @module @sluice/adapter-s3
 */
export * as Checksums from "./Checksums.ts"
export * as S3Config from "./S3Config.ts"
export * as S3Errors from "./S3Errors.ts"
export * as S3Sink from "./S3Sink.ts"
export * as Audit from "./Audit.ts"
export * as AuditS3 from "./AuditS3.ts"
export * as Calibrate from "./Calibrate.ts"
export * as Calibration from "./Calibration.ts"
