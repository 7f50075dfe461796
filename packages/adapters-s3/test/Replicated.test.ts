/**
 * Quorum replication over three real buckets with one replica behind a slow
 * proxy (the logic alone is tested in memory in @sluice/core).
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { Fixed, Memory, ObjectKey, Pipeline, Replicated } from "@sluice/core"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

describe("Replicated over three real buckets, one behind a slow proxy", () => {
  beforeAll(Env.requireServer)

  it("the pipeline finishes at quorum speed; the slow bucket gets deficits; repair re-copies them", async () => {
    const buckets = await Promise.all(["rep-a", "rep-b", "rep-c"].map((b) => Env.newBucket(b)))
    const [A, B, C] = buckets as [string, string, string]
    const latency = 3_000
    const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [{ method: "PUT", fault: FaultProxy.latency(latency) }])
      const a = yield* S3Sink.make(Env.sinkConfig(A))
      const b = yield* S3Sink.make(Env.sinkConfig(B))
      const c = yield* S3Sink.make(Env.sinkConfig(C, {}, proxy.endpoint))
      const sink = yield* Replicated.make([a, b, c], { quorum: 2, lagTimeout: "1 second" })
      const source = Memory.source({ name: "orders", partitions: 2, records: 4_000, recordBytes: 100, chunkRecords: 250 })
      const t = Date.now()
      const stats = yield* Pipeline.run({
        source,
        sink,
        config: { batch: { records: 500 }, tick: 20 },
        policies: Fixed.layer({ concurrency: 4 })
      })
      const took = Date.now() - t
      yield* sink.settled
      const deficits = sink.deficits()
      proxy.setRules([]) // the slow replica recovers
      const report = yield* sink.repair
      return { stats, took, deficits, report, after: sink.deficits(), committed: source.committed }
    })))
    // 16 batches at concurrency 4; waiting for the slow replica would take ≥ 16 × 2 × 3 s / 4.
    expect(result.stats.recordsCommitted).toBe(8_000)
    expect(result.took).toBeLessThan(6_000)
    expect(result.deficits).toHaveLength(16)
    expect(result.deficits.every((d) => d.missing.get(`s3:${C}`) === "ReplicaTimeout")).toBe(true)
    expect(result.report.failed).toEqual([])
    expect(result.report.repaired).toHaveLength(16)
    expect(result.after).toEqual([])

    const keysA = await Env.listKeys(A)
    expect(keysA).toHaveLength(32) // 16 objects + 16 manifests
    expect(await Env.listKeys(B)).toEqual(keysA)
    expect(await Env.listKeys(C)).toEqual(keysA)
    const c = Env.client()
    const key = ObjectKey.make({ source: "orders", partition: 1, firstOffset: 500, lastOffset: 999 })
    const [fromA, fromC] = await Promise.all([A, C].map(async (bucket) => {
      const out = await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      return Buffer.from(await out.Body!.transformToByteArray())
    }))
    c.destroy()
    expect(fromC?.equals(fromA ?? Buffer.alloc(0))).toBe(true)
  })
})
