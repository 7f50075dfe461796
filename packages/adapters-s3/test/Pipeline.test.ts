/**
 * A full core pipeline (Memory.source → S3 sink through the fault proxy) on the
 * real server: every record lands exactly once, and no offset is ever committed
 * before the batch holding it was verified in storage.
 */
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { Batch, Fixed, Memory, ObjectKey, Pipeline, RetryPolicy } from "@sluice/core"
import { CommitGuard } from "@sluice/testkit"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import * as Checksums from "../src/Checksums.ts"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

beforeEach(Env.requireServer)

/** The requests with `method` whose decoded path (without the query) matches `path`. */
const hitsOn = (hits: ReadonlyArray<FaultProxy.Hit>, method: string, path: RegExp) =>
  hits.filter((h) => h.method === method && path.test(decodeURIComponent(h.path.split("?")[0] ?? "")))

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
        config: { batch: { records: 1_000, stagger: 0 }, concurrency: 2, tick: 20 },
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

  it("a batch whose verify (HEAD) fails is retried and verified last; nothing past it is committed before", async () => {
    const bucket = await Env.newBucket("pipeline-verify-retry")
    const records = 5_000
    const key = (partition: number, first: number) =>
      ObjectKey.make({ source: "orders", partition, firstOffset: first, lastOffset: first + 999 })
    const bad = key(1, 1_000)
    const lastOfPartition1 = key(1, 4_000)
    const badPath = new RegExp(`${FaultProxy.literal(bad)}$`)
    let guard: CommitGuard.Guarded<S3Sink.S3Sink, Memory.MemorySource> | undefined
    // Outside the guard: what was verified when each commit was made.
    const commits: Array<{ partition: number; nextOffset: number; badVerified: boolean }> = []
    const upToBad = () => commits.some((c) => c.partition === 1 && c.nextOffset === 1_000)
    const laterVerified = () => guard?.verifiedKeys.has(lastOfPartition1) ?? false
    const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [
        // The PUT and the manifest of the batch succeed; its HEAD fails: once
        // with a 500, then with a bare 503 until partition 1 was committed up to
        // it and every later batch of partition 1 is verified. So the pipeline
        // holds verified offsets past an unverified batch, whatever the timing.
        { method: "HEAD", path: badPath, times: 1, fault: FaultProxy.internalError },
        { method: "HEAD", path: badPath, while: () => !(upToBad() && laterVerified()), fault: FaultProxy.bare503 }
      ])
      const s3 = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
      const source = Memory.source({ name: "orders", partitions: 2, records, recordBytes: 100, chunkRecords: 250 })
      const g = CommitGuard.guard(s3, source)
      guard = g
      const observed = {
        ...g.source,
        commit: (partition: number, nextOffset: number) =>
          Effect.suspend(() => {
            commits.push({ partition, nextOffset, badVerified: g.verifiedKeys.has(bad) })
            return g.source.commit(partition, nextOffset)
          })
      }
      const stats = yield* Pipeline.run({
        source: observed,
        sink: g.sink,
        config: { batch: { records: 1_000, stagger: 0 }, tick: 20 },
        policies: Layer.mergeAll(Fixed.layer({ concurrency: 4 }), fastRetry)
      }).pipe(Effect.timeoutOrElse({
        duration: "45 seconds",
        orElse: () =>
          Effect.die(new Error(
            `no end: partition 1 committed up to the failing batch: ${upToBad()}; later batches verified: ${laterVerified()}; commits ${JSON.stringify(commits)}`
          ))
      }))
      return { stats, g, source, hits: proxy.hits }
    })))
    const { stats, g, source, hits } = outcome
    expect(g.violations).toEqual([])
    // The batch failed verify at least once (the HEAD, not the PUT) and was verified in the end, after every later batch of its partition.
    const badHeads = hitsOn(hits, "HEAD", badPath)
    expect(badHeads[0]?.fault).toBe("Error")
    expect(badHeads.at(-1)?.fault).toBeUndefined()
    expect(hitsOn(hits, "PUT", badPath).every((h) => h.fault === undefined)).toBe(true)
    expect(stats.retries).toBeGreaterThanOrEqual(badHeads.length - 1)
    const order = [...g.verifiedKeys]
    expect(order.indexOf(bad)).toBeGreaterThan(order.indexOf(lastOfPartition1))
    for (const first of [2_000, 3_000, 4_000]) expect(order.indexOf(key(1, first))).toBeLessThan(order.indexOf(bad))
    // Partition 1 was committed up to the unverified batch and never past it until it was verified.
    const p1 = commits.filter((c) => c.partition === 1)
    expect(p1.filter((c) => c.nextOffset > 1_000).every((c) => c.badVerified)).toBe(true)
    expect(p1.some((c) => c.nextOffset === 1_000 && !c.badVerified)).toBe(true)
    // Then everything was committed.
    expect(stats.recordsCommitted).toBe(2 * records)
    expect(source.committed.get(0)).toBe(records)
    expect(source.committed.get(1)).toBe(records)
  })

  it("an object overwritten between put and verify fails the run with BatchFailed (verify, ChecksumMismatch); nothing of it is committed", async () => {
    const bucket = await Env.newBucket("pipeline-verify-mismatch")
    const bad = ObjectKey.make({ source: "orders", partition: 1, firstOffset: 2_000, lastOffset: 2_999 })
    const c = Env.client()
    try {
      const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const s3 = yield* S3Sink.make(Env.sinkConfig(bucket))
        // After the batch's object and manifest are stored, someone overwrites the
        // object with other bytes of the same size and a valid checksum of the
        // same algorithm: only comparing the store's checksum can catch it.
        const overwriting: S3Sink.S3Sink = {
          ...s3,
          putManifest: (manifest: Batch.Manifest) =>
            Effect.tap(s3.putManifest(manifest), () =>
              manifest.key !== bad ? Effect.void : Effect.promise(async () => {
                const out = await c.send(new GetObjectCommand({ Bucket: bucket, Key: bad }))
                const body = await out.Body!.transformToByteArray()
                body[body.length - 1] = (body[body.length - 1] ?? 0) ^ 0xff
                await c.send(new PutObjectCommand({
                  Bucket: bucket,
                  Key: bad,
                  Body: body,
                  ContentLength: body.byteLength,
                  ChecksumCRC64NVME: await Checksums.objectChecksum("CRC64NVME", body, undefined)
                }))
              }))
        }
        const source = Memory.source({ name: "orders", partitions: 2, records: 5_000, recordBytes: 100, chunkRecords: 250 })
        const g = CommitGuard.guard(overwriting, source)
        const exit = yield* Effect.exit(Pipeline.run({
          source: g.source,
          sink: g.sink,
          config: { batch: { records: 1_000, stagger: 0 }, concurrency: 2, tick: 20 },
          policies: fastRetry
        }))
        return { exit, g, source }
      })))
      const { exit, g, source } = outcome
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      // Fatal: not retried, the run fails with the typed error naming the batch and the stage.
      expect(error).toMatchObject({ _tag: "BatchFailed", key: bad, stage: "verify", code: "ChecksumMismatch", failureClass: "Fatal", attempts: 1 })
      expect(g.violations).toEqual([])
      expect(g.verifiedKeys.has(bad)).toBe(false)
      expect(source.committed.get(1) ?? 0).toBeLessThanOrEqual(2_000)
      expect(g.commits.filter((x) => x.partition === 1).every((x) => x.nextOffset <= 2_000)).toBe(true)
    } finally {
      c.destroy()
    }
  })

  it("a verify that keeps failing fails the run with BatchFailed (verify) once the retry policy gives up; nothing of it is committed", async () => {
    const bucket = await Env.newBucket("pipeline-verify-giveup")
    const bad = ObjectKey.make({ source: "orders", partition: 0, firstOffset: 1_000, lastOffset: 1_999 })
    const badPath = new RegExp(`${FaultProxy.literal(bad)}$`)
    const threeAttempts: RetryPolicy.RetryPolicy = {
      delayMillis: (failure, attempt) => (failure.failureClass === "Fatal" || attempt >= 3 ? undefined : 20)
    }
    const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const proxy = yield* FaultProxy.make(Env.env().endpoint, [{ method: "HEAD", path: badPath, fault: FaultProxy.internalError }])
      const s3 = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
      const source = Memory.source({ name: "orders", partitions: 2, records: 5_000, recordBytes: 100, chunkRecords: 250 })
      const g = CommitGuard.guard(s3, source)
      const exit = yield* Effect.exit(Pipeline.run({
        source: g.source,
        sink: g.sink,
        config: { batch: { records: 1_000 }, concurrency: 2, tick: 20 },
        policies: Layer.succeed(RetryPolicy.CurrentRetryPolicy, threeAttempts)
      }))
      return { exit, g, source, hits: proxy.hits }
    })))
    const { exit, g, source, hits } = outcome
    // A 500 on HEAD has no body, so the SDK names it "Unknown": Transient (retried) by its status.
    const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    expect(error).toMatchObject({ _tag: "BatchFailed", key: bad, stage: "verify", code: "Unknown", failureClass: "Transient", attempts: 3 })
    // Each attempt failed at the HEAD. The object was PUT once if the uploader
    // resumes at the stage that failed (issue 10's uploader), or once per
    // attempt if every retry restarts at PUT: never any other count.
    // TODO(issue 10): tighten to 1 once the resuming uploader is committed.
    expect([1, 3]).toContain(hitsOn(hits, "PUT", badPath).length)
    expect(hitsOn(hits, "HEAD", badPath).map((h) => h.fault)).toEqual(["Error", "Error", "Error"])
    expect(g.violations).toEqual([])
    expect(g.verifiedKeys.has(bad)).toBe(false)
    expect(source.committed.get(0) ?? 0).toBeLessThanOrEqual(1_000)
  })
})
