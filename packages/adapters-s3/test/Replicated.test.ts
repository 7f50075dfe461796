/**
 * Quorum replication over three real buckets, one behind a proxy that holds
 * every upload (the logic alone, timeouts included, is tested in memory on
 * virtual time in @sluice/core).
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { Fixed, Memory, ObjectKey, Pipeline, Replicated } from "@sluice/core"
import { Effect } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

describe("Replicated over three real buckets, one holding every upload", () => {
  beforeEach(Env.requireServer)

  it("release quorum: the pipeline finishes at quorum while one bucket answers nothing; that bucket falls behind (deficits); repair re-copies them", async () => {
    const buckets = await Promise.all(["rep-a", "rep-b", "rep-c"].map((b) => Env.newBucket(b)))
    const [A, B, C] = buckets as [string, string, string]
    const maxBehind = 4
    const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [{ method: "PUT", fault: FaultProxy.hold }])
      const a = yield* S3Sink.make(Env.sinkConfig(A))
      const b = yield* S3Sink.make(Env.sinkConfig(B))
      const c = yield* S3Sink.make(Env.sinkConfig(C, {}, proxy.endpoint))
      // lagTimeout far beyond the test, and verify released at quorum: only the
      // quorum can let the pipeline finish (the default, "all-replicas", would
      // hold each batch until C answered or lagTimeout passed: tested in core).
      const sink = yield* Replicated.make([a, b, c], { quorum: 2, lagTimeout: "1 hour", maxBehind, release: "quorum" })
      const source = Memory.source({ name: "orders", partitions: 2, records: 4_000, recordBytes: 100, chunkRecords: 250 })
      // One upload at a time, so exactly `maxBehind` batches start on C before it is skipped.
      const stats = yield* Pipeline.run({
        source,
        sink,
        config: { batch: { records: 500, stagger: 0 }, tick: 20 },
        policies: Fixed.layer({ concurrency: 1 })
      }).pipe(Effect.timeoutOrElse({
        duration: "45 seconds",
        orElse: () => Effect.die(new Error("the pipeline did not finish while one replica held every upload: it waits for more than the quorum"))
      }))
      const atEnd = { lagging: sink.lagging(), deficits: sink.deficits(), keysC: yield* Effect.promise(() => Env.listKeys(C)) }
      // Each of C's replications still running has its PUT waiting at the proxy.
      yield* Effect.promise(() => Env.waitFor(`${maxBehind} uploads held for C`, () => proxy.held() === maxBehind))
      // C answers again: its held replications complete.
      proxy.setRules([])
      proxy.release()
      yield* sink.settled
      const deficits = sink.deficits()
      const report = yield* sink.repair
      return { stats, atEnd, deficits, report, after: sink.deficits(), committed: source.committed }
    })))
    expect(result.stats.recordsCommitted).toBe(8_000)
    expect([...result.committed.values()]).toEqual([4_000, 4_000])
    // When the pipeline finished, C had stored nothing: its first uploads were held
    // (still running, counted as lagging), and the 12 batches after them skipped it.
    expect(result.atEnd.keysC).toEqual([])
    expect(result.atEnd.lagging).toBe(maxBehind)
    expect(result.atEnd.deficits).toHaveLength(16 - maxBehind)
    // Once released, the held ones completed; the skipped ones stay deficits until repaired.
    expect(result.deficits).toHaveLength(16 - maxBehind)
    expect(result.deficits.every((d) => d.missing.get(`s3:${C}`) === "Behind" && d.missing.size === 1)).toBe(true)
    expect(result.deficits.every((d) => [...d.have].sort().join() === [`s3:${A}`, `s3:${B}`].sort().join())).toBe(true)
    expect(result.report.failed).toEqual([])
    expect(result.report.repaired).toHaveLength(16 - maxBehind)
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
