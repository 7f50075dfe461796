/**
 * The one-file builds of `examples/bundle/build.ts`: built here with rolldown, then
 * run as processes. The archiver of `kafka-to-s3/` answers as its own command
 * (a module bundled into it must not take the entry's arguments as its own),
 * and `bench:peer`'s Sluice contender, run from its build on the real broker
 * and S3 server, archives a topic that is then read back from the bucket
 * (`bench/archive.ts`: every offset once, every object with its manifest).
 */
import { spawnSync } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bundleAll, bundleOne } from "../bundle/build.ts"
import * as Archive from "../bench/archive.ts"
import type { Job, Result } from "../bench/contender.ts"
import { RESULT } from "../bench/contender.ts"
import * as Services from "../bench/services.ts"
import { reachable } from "./services.ts"

// A directory of this run's own (ReadmeCommands' smokes build into dist/bundle meanwhile),
// inside the tree: the packages left outside the files resolve from its node_modules.
const dir = join(import.meta.dirname, "..", "dist", `bundle-test-${process.pid}`)
let kafkaToS3Bundle = ""
let benchE2eBundle = ""

beforeAll(async () => {
  const files = await bundleAll(dir)
  kafkaToS3Bundle = files[0] ?? ""
  benchE2eBundle = files[1] ?? ""
}, 120_000)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("examples/bundle/build.ts — the archivers as one file each", () => {
  it("builds both; the kafka-to-s3 build answers --help as its command, and refuses a bad line with exit 2", () => {
    expect([kafkaToS3Bundle, benchE2eBundle]).toEqual([join(dir, "kafka-to-s3.mjs"), join(dir, "bench-e2e.mjs")])
    for (const file of [kafkaToS3Bundle, benchE2eBundle, join(dir, "archiver.json")]) expect(existsSync(file)).toBe(true)

    const help = spawnSync(process.execPath, [kafkaToS3Bundle, "--help"], { encoding: "utf8", timeout: 60_000 })
    expect(help.stderr).toBe("")
    expect(help.status).toBe(0)
    expect(help.stdout).toContain("A Kafka topic into an S3 bucket with the default policies")
    expect(help.stdout).toContain("--config")

    // A module of the build that took the line as its own would print its own usage here.
    const bad = spawnSync(process.execPath, [kafkaToS3Bundle, "--no-such-flag"], { encoding: "utf8", timeout: 60_000 })
    expect(bad.status).toBe(2)
    expect(bad.stderr).not.toContain("usage: node examples/dist/KafkaToS3.js")
    expect(bad.stderr).toContain("--no-such-flag")
  })

  it("keeps the Kafka client's option validation: a strict client refuses wrong options with the same messages as on the sources", async () => {
    const fixture = join(import.meta.dirname, "fixtures", "bundle", "strict-client.ts")
    const built = join(dir, "strict-client.mjs")
    await bundleOne(fixture, built)
    const sources = spawnSync(process.execPath, ["--conditions=@sluice/source", fixture], { encoding: "utf8", timeout: 60_000 })
    const bundled = spawnSync(process.execPath, [built], { encoding: "utf8", timeout: 60_000 })
    expect(sources.status, sources.stderr).toBe(0)
    expect(bundled.status, bundled.stderr).toBe(0)
    expect(sources.stdout).toContain("consumer, clientId a number: UserError /options/clientId must be string.")
    expect(sources.stdout).toContain("consumer, not strict: built")
    expect(bundled.stdout).toBe(sources.stdout)
  }, 120_000)

  it("runs bench:peer's Sluice contender from its build on the real services: the bucket holds every offset once", async () => {
    const services = Services.fromEnv()
    const client = Services.s3Client(services)
    const id = `${process.pid}-${Date.now().toString(36)}`
    const topic = `sluice-bundle-${id}`
    const bucket = `bundle-${id}`
    const partitions = 4
    const records = 20_000
    try {
      await reachable(`S3 server at ${services.s3.endpoint}`, client.send(new CreateBucketCommand({ Bucket: bucket })))
      const ends = await reachable(`Kafka broker ${services.brokers.join(",")}`, Services.produceTopic(services, topic, partitions, records))
      const job: Job = { topic, partitions, records, groupId: `${topic}-sluice`, bucket, recordsPerObject: 0, policies: "default" }
      const run = spawnSync(process.execPath, [benchE2eBundle, "--role", "sluice", "--job", JSON.stringify(job)], {
        encoding: "utf8",
        timeout: 120_000,
        env: process.env
      })
      expect(run.status, run.stderr).toBe(0)
      // The native CRC loaded from node_modules beside the build (not the slower fallback).
      expect(run.stderr).not.toContain("without the CPU's CRC instructions")
      const line = run.stdout.split("\n").find((l) => l.startsWith(RESULT))
      expect(line, run.stdout).toBeDefined()
      const result = JSON.parse((line ?? "").slice(RESULT.length)) as Result
      expect(result.records).toBe(records)

      // From outside: the bucket read back against the topic's end offsets.
      const archive = await Archive.check(client, bucket, ends, true)
      expect(archive.records).toBe(records)
      expect(await Services.groupOffsets(services, job.groupId, topic, partitions)).toEqual(ends)
    } finally {
      await Archive.removeBucket(client, bucket).catch(() => undefined)
      await Services.deleteTopic(services, topic).catch(() => undefined)
      client.destroy()
    }
  }, 240_000)
})
