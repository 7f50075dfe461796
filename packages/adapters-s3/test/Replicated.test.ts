/**
 * Quorum replication: in memory for the logic, then three real buckets with
 * one replica behind a slow proxy.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { Failure, Fixed, Memory, ObjectKey, Pipeline } from "@sluice/core"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import * as Replicated from "../src/Replicated.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf } from "./support/Batches.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

const failure = (failureClass: Failure.FailureClass, code: string) =>
  new Failure.SinkFailure({ failureClass, code, status: undefined, stage: "object_upload", retryAfterMillis: undefined, message: code })

const named = (name: string, sink: Memory.MemorySink): Memory.MemorySink => ({ ...sink, name })

describe("Replicated (in memory)", () => {
  it("is durable at quorum and records a deficit for the failing replica", async () => {
    const a = named("a", Memory.sink())
    const b = named("b", Memory.sink())
    const c = named("c", Memory.sink({ fault: () => failure("Transient", "InternalError") }))
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([a, b, c], { quorum: 2 })
      const batch = batchOf({ count: 10, recordBytes: 10 })
      const receipt = yield* sink.putObject(batch)
      yield* sink.verify(receipt)
      yield* sink.settled
      return { deficits: sink.deficits(), key: batch.key }
    })))
    expect(a.objects.has(out.key) && b.objects.has(out.key)).toBe(true)
    expect(a.manifests.has(out.key)).toBe(true)
    expect(out.deficits).toHaveLength(1)
    expect(out.deficits[0]?.missing.get("c")).toBe("InternalError")
    expect([...(out.deficits[0]?.have ?? [])].sort()).toEqual(["a", "b"])
  })

  it("fails when the quorum is lost, reporting the throttle first, and records no deficit", async () => {
    const a = named("a", Memory.sink())
    const b = named("b", Memory.sink({ fault: () => failure("Fatal", "AccessDenied") }))
    const c = named("c", Memory.sink({ fault: () => failure("Throttled", "SlowDown") }))
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([a, b, c], { quorum: 2 })
      const error = yield* Effect.flip(sink.putObject(batchOf({ count: 10, recordBytes: 10 })))
      const verify = yield* Effect.flip(sink.verify({ key: "x", objectBytes: 1, checksum: { algorithm: "SHA256", value: "" } }))
      yield* sink.settled
      return { error, verify, deficits: sink.deficits() }
    })))
    expect(out.error).toMatchObject({ failureClass: "Throttled", code: "SlowDown" })
    expect(out.verify).toMatchObject({ _tag: "VerificationFailed", reason: "Missing" })
    expect(out.deficits).toEqual([])
  })

  it("does not wait for a slow replica past the quorum", async () => {
    const slow = named("slow", Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 1_000 : 0) }))
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([named("a", Memory.sink()), named("b", Memory.sink()), slow], {
        quorum: 2,
        lagTimeout: "3 seconds"
      })
      const t = Date.now()
      yield* sink.putObject(batchOf({ count: 10, recordBytes: 10 }))
      const took = Date.now() - t
      const lagging = sink.lagging()
      yield* sink.settled
      return { took, lagging, deficits: sink.deficits(), laggingAfter: sink.lagging() }
    })))
    expect(out.took).toBeLessThan(600)
    expect(out.lagging).toBe(1)
    expect(out.laggingAfter).toBe(0)
    expect(out.deficits).toEqual([]) // it caught up within lagTimeout
  })

  it("rejects a quorum larger than the replica set, naming the field", async () => {
    const error = await Effect.runPromise(Effect.scoped(Effect.flip(
      Replicated.make([named("a", Memory.sink()), named("b", Memory.sink())], { quorum: 3 })
    )))
    expect(error.message).toContain("quorum")
    const bad = await Effect.runPromise(Effect.scoped(Effect.flip(
      Replicated.make([named("a", Memory.sink())], { quorum: 1, lagTimeout: "soon" })
    )))
    expect(bad.message).toContain("lagTimeout")
  })
})

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
