// A consumer's module that exports values built with Sluice's public API and no
// type annotations: `tsc --declaration` must be able to name every inferred type
// through the packages' exports (no "cannot be named without a reference to
// .../dist/src/..." errors). Compiled by examples/test/Packaging.test.ts.
import { S3Sink } from "@sluice/adapter-s3"
import { KafkaSource } from "@sluice/adapter-kafka"
import { Aimd, Composition } from "@sluice/policies"
import { Runner, Scenario } from "@sluice/testkit"

export const sink = S3Sink.make({ bucket: "archive" })
export const source = KafkaSource.make
export const aimd = Aimd.layer({})
export const policies = Composition.parse("default")
export const run = Runner.run
export const load = Scenario.load
