/**
 * The policies react to real throttles from the real SDK: a SlowDown storm from
 * the fault proxy cuts upload concurrency and sets a client-side request rate,
 * retries of a throttled object are spaced out (never re-sent at the rate that was
 * throttled), and nothing is committed before it is verified. After the storm,
 * the cut is restored only when the pipeline's batches fill it (`RESTORE_BUSY_SHARE`):
 * a trickle that never does keeps the cut, a steady flow gets the old limit back.
 */
import { Fixed, Memory, Pipeline } from "@sluice/core"
import type { Config, Knob } from "@sluice/core"
import { Throttle } from "@sluice/policies"
import { CommitGuard } from "@sluice/testkit"
import { Effect, Layer, Stream } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import * as S3Sink from "../src/S3Sink.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

beforeEach(Env.requireServer)

/**
 * One pipeline through the fault proxy, whose `rule` answers SlowDown to some
 * object PUTs: a fixed 8 uploads under the Throttle policy (`throttle`), fed by
 * `source`. Returns its stats, every knob change (with the wall time it was
 * seen), the proxy's hits and the commit guard's violations.
 */
const throttledRun = (
  bucketPrefix: string,
  rule: { readonly skip: number; readonly times: number },
  source: Memory.MemorySource,
  throttle: Config.Input<typeof Throttle.ThrottleConfig>
) =>
  Effect.scoped(Effect.gen(function*() {
    const bucket = yield* Effect.promise(() => Env.newBucket(bucketPrefix))
    const proxy = yield* FaultProxy.make(Env.env().endpoint, [
      { method: "PUT", path: /\.rec$/, ...rule, fault: FaultProxy.slowDown() }
    ])
    const s3 = yield* S3Sink.make(Env.sinkConfig(bucket, {}, proxy.endpoint))
    const g = CommitGuard.guard(s3, source)
    const handle = yield* Pipeline.start({
      source: g.source,
      sink: g.sink,
      config: { batch: { records: 500 }, tick: 20 },
      policies: Layer.mergeAll(Fixed.layer({ concurrency: 8 }), Throttle.layer(throttle))
    })
    const seen: Array<Knob.KnobValues & { readonly at: number }> = []
    yield* handle.knobs.changes.pipe(
      Stream.runForEach((v) => Effect.sync(() => void seen.push({ ...v, at: Date.now() }))),
      Effect.forkScoped
    )
    const stats = yield* handle.await
    return { stats, seen, end: Date.now(), hits: proxy.hits, violations: g.violations }
  }))

describe("policy reaction to real throttles", () => {
  it("a SlowDown storm cuts concurrency, limits the rate and spaces retries; all records land once", async () => {
    const partitions = 4
    const records = 4_000
    const source = Memory.source({ name: "orders", partitions, records, recordBytes: 100, chunkRecords: 250 })
    const { stats, seen, hits, violations } = await Effect.runPromise(
      throttledRun("reaction", { skip: 2, times: 6 }, source, { throttleRetryBaseMillis: 200, restoreAfterMillis: "60 seconds" })
    )
    expect(stats.throttles).toBe(6)
    // Concurrency cut below the fixed 8, and a client-side rate set.
    expect(seen[0]?.concurrency).toBe(8)
    expect(Math.min(...seen.map((v) => v.concurrency))).toBeLessThan(8)
    expect(seen.some((v) => v.rate !== null)).toBe(true)
    // Every throttled object was re-sent only after a spaced-out delay (≥ half the
    // 200 ms base, the jitter's lower bound), never immediately.
    const puts = hits.filter((h) => h.method === "PUT" && /\.rec(\?|$)/.test(h.path))
    const throttled = puts.filter((h) => h.fault === "Error")
    expect(throttled).toHaveLength(6)
    for (const t of throttled) {
      const retry = puts.find((h) => h.path === t.path && h.at >= t.at && h !== t && h.fault === undefined)
      expect(retry).toBeDefined()
      expect((retry?.at ?? 0) - t.at).toBeGreaterThanOrEqual(100)
    }
    // All records committed, none past what was verified.
    expect(stats.recordsCommitted).toBe(partitions * records)
    expect(violations).toEqual([])
    for (let p = 0; p < partitions; p++) expect(source.committed.get(p)).toBe(records)
  })

  // Two SlowDowns early on, then the same pipeline fed two ways for ~5 s: a trickle
  // (one partition, a 500-record batch every 800 ms: uploads are idle most of the
  // time, even one at a time) and a steady flow (four partitions, a batch each
  // every 20 ms: the cut limit is full). Throttle's timed restore comes after 1 s
  // without a throttle, only where the cut costs. (Four partitions sealing together
  // every 500 ms did fill a limit of 1 a third of the time: three batches waited
  // behind each upload, and the cut was rightly restored.)
  const stormThen = async (partitions: number, intervalMillis: number, rounds: number) => {
    const records = 500 * rounds
    const source = Memory.source({ name: "orders", partitions, records, recordBytes: 100, chunkRecords: 500, intervalMillis })
    const run = await Effect.runPromise(
      throttledRun("busy", { skip: 1, times: 2 }, source, { throttleRetryBaseMillis: 50, restoreAfterMillis: "1 second" })
    )
    const throttledAt = run.hits.filter((h) => h.fault === "Error").map((h) => h.at)
    return { ...run, source, partitions, records, lastThrottle: Math.max(...throttledAt), throttles: throttledAt.length }
  }

  it("after a storm, a cut the pipeline never fills is kept past restoreAfterMillis; one it fills is restored (RESTORE_BUSY_SHARE)", async () => {
    const trickle = await stormThen(1, 800, 8)
    const flow = await stormThen(4, 20, 250)
    for (const run of [trickle, flow]) {
      expect(run.throttles).toBe(2)
      expect(run.stats.recordsCommitted).toBe(run.partitions * run.records)
      for (let p = 0; p < run.partitions; p++) expect(run.source.committed.get(p)).toBe(run.records)
      expect(run.violations).toEqual([])
      expect(Math.min(...run.seen.map((v) => v.concurrency))).toBeLessThan(8)
      // The run went on for > 3 restore windows after the last throttle.
      expect(run.end - run.lastThrottle).toBeGreaterThan(3_000)
    }
    // The trickle: still cut at the end, > 3 s after the last throttle.
    expect(trickle.seen.at(-1)?.concurrency).toBeLessThan(8)
    // The steady flow: 8 again by the end of the third 1 s window after the last
    // throttle. Restores are decided only when a window ends, so on wall-clock
    // time it lands just past a boundary: 3 003 ms was seen on a loaded CI
    // machine (the third window's end plus the signal that carried it), hence
    // 250 ms of slack past 3 s rather than a bound on the boundary itself.
    const back = flow.seen.find((v) => v.at > flow.lastThrottle && v.concurrency === 8)
    expect(back).toBeDefined()
    expect((back?.at ?? Infinity) - flow.lastThrottle).toBeLessThan(3_250)
  }, 60_000)
})
