/**
 * A full core pipeline (Memory.source → S3 sink through the fault proxy) on the
 * real server: every record lands exactly once, and no offset is ever committed
 * before the batch holding it was verified in storage.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { Batch, Fixed, Memory, ObjectKey, Pipeline, RetryPolicy } from "@sluice/core"
import { CommitGuard } from "@sluice/testkit"
import { Effect, Layer, Schema } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

beforeAll(Env.requireServer)

const fastRetry = Layer.succeed(RetryPolicy.CurrentRetryPolicy, RetryPolicy.exponential({ baseMillis: 20, maxMillis: 500 }))

/** Decodes every archived object and counts each record position. */
const readArchive = async (bucket: string) => {
  const c = Env.client()
  const seen = new Map<string, number>()
  const manifests: Array<Batch.Manifest> = []
  try {
    for (const key of await Env.listKeys(bucket)) {
      const out = await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      const bytes = await out.Body!.transformToByteArray()
      if (key.endsWith(".manifest.json")) {
        manifests.push(Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(new TextDecoder().decode(bytes)))
        continue
      }
      for (const record of Batch.decodeBody(bytes)) {
        const id = new TextDecoder().decode(record).replace(/\.+$/, "")
        seen.set(id, (seen.get(id) ?? 0) + 1)
      }
    }
  } finally {
    c.destroy()
  }
  return { seen, manifests }
}

describe("Pipeline → S3 sink through the fault proxy", () => {
  it("every record lands exactly once despite throttles, resets and 500s; commits only after verify", async () => {
    const bucket = await Env.newBucket("pipeline")
    const partitions = 4
    const records = 5_000
    const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [
        { method: "PUT", path: /\.rec$/, times: 3, fault: FaultProxy.slowDown() },
        { method: "PUT", path: /\.rec$/, skip: 4, times: 2, fault: FaultProxy.reset },
        { method: "PUT", path: /manifest\.json$/, skip: 2, times: 2, fault: FaultProxy.tooManyRequests("0") },
        { method: "HEAD", times: 3, fault: FaultProxy.bare503 },
        { method: "HEAD", skip: 6, times: 2, fault: FaultProxy.internalError },
        { method: "PUT", skip: 10, times: 5, fault: FaultProxy.latency(150) }
      ])
      const s3 = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
      const source = Memory.source({ name: "orders", partitions, records, recordBytes: 100, chunkRecords: 250 })
      const g = CommitGuard.guard(s3, source)
      const stats = yield* Pipeline.run({
        source: g.source,
        sink: g.sink,
        config: { batch: { records: 1_000 }, tick: 20 },
        policies: Layer.mergeAll(Fixed.layer({ concurrency: 8 }), fastRetry)
      })
      return { stats, g, source, faults: proxy.hits.filter((h) => h.fault !== undefined).length }
    })))
    const { stats, g, source } = result
    expect(g.violations).toEqual([])
    expect(result.faults).toBeGreaterThanOrEqual(10)
    expect(stats.throttles).toBeGreaterThanOrEqual(6)
    expect(stats.retries).toBeGreaterThanOrEqual(10)
    expect(stats.recordsCommitted).toBe(partitions * records)
    for (let p = 0; p < partitions; p++) expect(source.committed.get(p)).toBe(records)

    const { seen, manifests } = await readArchive(bucket)
    expect(seen.size).toBe(partitions * records)
    expect([...seen.values()].every((n) => n === 1)).toBe(true)
    for (let p = 0; p < partitions; p++) {
      for (const offset of [0, 999, 1000, records - 1]) expect(seen.get(`orders/${p}/${offset}`)).toBe(1)
    }
    expect(manifests.length).toBe(stats.batchesVerified)
    expect(manifests.reduce((n, m) => n + m.records, 0)).toBe(partitions * records)
  })

  it("a batch whose body is corrupted in flight is never committed", async () => {
    const bucket = await Env.newBucket("pipeline-corrupt")
    const bad = ObjectKey.make({ source: "orders", partition: 1, firstOffset: 2_000, lastOffset: 2_999 })
    const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [
        { method: "PUT", path: new RegExp(`${bad.replace(/[.=]/g, "\\$&")}$`), fault: FaultProxy.corrupt }
      ])
      const s3 = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
      const source = Memory.source({ name: "orders", partitions: 2, records: 5_000, recordBytes: 100, chunkRecords: 250 })
      const g = CommitGuard.guard(s3, source)
      const exit = yield* Effect.exit(Pipeline.run({
        source: g.source,
        sink: g.sink,
        config: { batch: { records: 1_000 }, concurrency: 2, tick: 20 },
        policies: fastRetry
      }))
      return { exit, g, source }
    })))
    expect(outcome.exit._tag).toBe("Failure")
    expect(String(outcome.exit._tag === "Failure" ? outcome.exit.cause : "")).toMatch(/BatchFailed/)
    expect(outcome.g.violations).toEqual([])
    // Partition 1 never got past the corrupted batch.
    expect(outcome.source.committed.get(1) ?? 0).toBeLessThanOrEqual(2_000)
    expect(outcome.g.commits.filter((c) => c.partition === 1).every((c) => c.nextOffset <= 2_000)).toBe(true)
    expect(outcome.g.verifiedKeys.has(bad)).toBe(false)
    expect(await Env.listKeys(bucket)).not.toContain(bad)
  })
})
