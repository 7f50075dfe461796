/**
 * Quorum replication over in-memory sinks (the S3 adapter's tests run it over
 * three real buckets, one behind a slow proxy).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit } from "effect"
import { Batch, Failure, Fixed, Memory, Pipeline, Replicated } from "../src/index.ts"
import type { Sink } from "../src/index.ts"
import * as Ledger from "../src/internal/replicated/Ledger.ts"
import { readableReplica, runVirtual } from "./support.ts"

const failure = (failureClass: Failure.FailureClass, code: string) =>
  new Failure.SinkFailure({ failureClass, code, status: undefined, stage: "object_upload", retryAfterMillis: undefined, message: code })

const named = (name: string, sink: Memory.MemorySink): Memory.MemorySink => ({ ...sink, name })

const batchOf = (options: { readonly count: number; readonly recordBytes: number }): Batch.SealedBatch =>
  Batch.make({
    source: "orders",
    partition: 0,
    firstOffset: 0,
    payloads: Array.from({ length: options.count }, (_, i) => new TextEncoder().encode(`orders/0/${i}`.padEnd(options.recordBytes, ".")))
  })

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

  /**
   * One put to two fast replicas and one that takes `slowMillis`, on virtual
   * time: when the put returned (quorum), when the slow replica settled, and
   * what it left behind.
   */
  const withSlowReplica = (slowMillis: number, lagTimeout: string) =>
    Effect.scoped(Effect.gen(function*() {
      const slow = named("slow", Memory.sink({ latencyMillis: (op) => (op === "putObject" ? slowMillis : 0) }))
      const sink = yield* Replicated.make([named("a", Memory.sink()), named("b", Memory.sink()), slow], { quorum: 2, lagTimeout })
      const start = yield* Clock.currentTimeMillis
      const batch = batchOf({ count: 10, recordBytes: 10 })
      yield* sink.putObject(batch)
      const quorumAt = (yield* Clock.currentTimeMillis) - start
      const lagging = sink.lagging()
      yield* sink.settled
      const settledAt = (yield* Clock.currentTimeMillis) - start
      return { quorumAt, lagging, settledAt, deficits: sink.deficits(), laggingAfter: sink.lagging(), slowHas: slow.objects.has(batch.key) }
    }))

  it.effect("does not wait for a slow replica past the quorum; the replica catches up within lagTimeout", () =>
    Effect.gen(function*() {
      const exit = yield* runVirtual(withSlowReplica(1_000, "3 seconds"))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      const out = exit.value
      // The put returned before the slow replica could have finished (virtual time: exact, not a measurement).
      expect(out.quorumAt).toBeLessThan(1_000)
      expect(out.lagging).toBe(1)
      expect(out.settledAt).toBeGreaterThanOrEqual(1_000)
      expect(out.laggingAfter).toBe(0)
      expect(out.slowHas).toBe(true)
      expect(out.deficits).toEqual([]) // it caught up within lagTimeout
    }))

  it.effect("a replica slower than lagTimeout is cut off there and recorded as a ReplicaTimeout deficit", () =>
    Effect.gen(function*() {
      const exit = yield* runVirtual(withSlowReplica(10_000, "3 seconds"))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      const out = exit.value
      expect(out.quorumAt).toBeLessThan(1_000)
      expect(out.lagging).toBe(1)
      // Settled at lagTimeout, not when the slow replica would have finished.
      expect(out.settledAt).toBeGreaterThanOrEqual(3_000)
      expect(out.settledAt).toBeLessThan(10_000)
      expect(out.laggingAfter).toBe(0)
      expect(out.slowHas).toBe(false)
      expect(out.deficits).toHaveLength(1)
      expect(out.deficits[0]?.missing.get("slow")).toBe("ReplicaTimeout")
      expect([...(out.deficits[0]?.have ?? [])].sort()).toEqual(["a", "b"])
    }))

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

  /**
   * The same put, then `verify` (after which the pipeline releases the
   * batch's bytes): when verify returned, and whether the slow replica was
   * still writing then.
   */
  const verifyWithSlowReplica = (slowMillis: number, lagTimeout: string, release: "all-replicas" | "quorum" = "all-replicas") =>
    Effect.scoped(Effect.gen(function*() {
      const slow = named("slow", Memory.sink({ latencyMillis: (op) => (op === "putObject" ? slowMillis : 0) }))
      const sink = yield* Replicated.make([named("a", Memory.sink()), named("b", Memory.sink()), slow], { quorum: 2, lagTimeout, release })
      const start = yield* Clock.currentTimeMillis
      const batch = batchOf({ count: 10, recordBytes: 10 })
      const receipt = yield* sink.putObject(batch)
      const quorumAt = (yield* Clock.currentTimeMillis) - start
      yield* sink.verify(receipt)
      const verifiedAt = (yield* Clock.currentTimeMillis) - start
      return { quorumAt, verifiedAt, laggingAtVerify: sink.lagging(), stats: sink.stats(), deficits: sink.deficits() }
    }))

  it.effect("verify completes only when every replica finished: the put returns at quorum, verify when the slow replica is done", () =>
    Effect.gen(function*() {
      const exit = yield* runVirtual(verifyWithSlowReplica(1_000, "3 seconds"))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      expect(exit.value.quorumAt).toBeLessThan(1_000)
      expect(exit.value.verifiedAt).toBeGreaterThanOrEqual(1_000)
      expect(exit.value.laggingAtVerify).toBe(0)
      expect(exit.value.stats).toMatchObject({ pending: 0, lagging: 0, deficits: 0 })
    }))

  it.effect("release quorum: verify completes at quorum too, the slow replica lagging behind", () =>
    Effect.gen(function*() {
      const exit = yield* runVirtual(verifyWithSlowReplica(1_000, "3 seconds", "quorum"))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      expect(exit.value.verifiedAt).toBeLessThan(1_000)
      expect(exit.value.laggingAtVerify).toBe(1)
    }))

  it.effect("verify of a batch whose replica hangs completes at lagTimeout, with the deficit recorded", () =>
    Effect.gen(function*() {
      const exit = yield* runVirtual(verifyWithSlowReplica(10_000, "3 seconds"))
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      expect(exit.value.verifiedAt).toBeGreaterThanOrEqual(3_000)
      expect(exit.value.verifiedAt).toBeLessThan(10_000)
      expect(exit.value.laggingAtVerify).toBe(0)
      expect(exit.value.deficits.map((d) => d.missing.get("slow"))).toEqual(["ReplicaTimeout"])
    }))

  it.effect("through the pipeline, no replica still holds a batch whose bytes the pipeline released (observed outside)", () =>
    Effect.gen(function*() {
      // Outside meter: which batches each replica holds (from its putObject until its verify ends,
      // it fails, or it is cut off), and the bytes held past the pipeline's release (its verify).
      const holding = new Map<string, Set<string>>()
      const violations: Array<string> = []
      let maxBytesPastRelease = 0
      const metered = (name: string, latency: number): Replicated.Replica => {
        const inner = named(name, Memory.sink({ latencyMillis: (op) => (op === "putObject" ? latency : 0) }))
        const held = new Set<string>()
        holding.set(name, held)
        const release = (key: string) => Effect.sync(() => held.delete(key))
        return {
          ...inner,
          putObject: (batch) =>
            Effect.suspend(() => {
              held.add(batch.key)
              return inner.putObject(batch).pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : release(batch.key))))
            }),
          putManifest: (manifest) =>
            inner.putManifest(manifest).pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : release(manifest.key)))),
          verify: (receipt) => inner.verify(receipt).pipe(Effect.ensuring(release(receipt.key)))
        }
      }
      const program = Effect.scoped(Effect.gen(function*() {
        const replicated = yield* Replicated.make([metered("a", 0), metered("b", 5), metered("slow", 400)], {
          quorum: 2,
          lagTimeout: "1 second"
        })
        const sink: Sink.Sink = {
          ...replicated,
          verify: (receipt) =>
            replicated.verify(receipt).pipe(Effect.tap(() =>
              Effect.sync(() => {
                const still = [...holding].filter(([, keys]) => keys.has(receipt.key)).map(([name]) => name)
                if (still.length > 0) {
                  violations.push(`${receipt.key} released while ${still.join(",")} still wrote it`)
                  maxBytesPastRelease = Math.max(maxBytesPastRelease, receipt.objectBytes * still.length)
                }
              })
            ))
        }
        return yield* Pipeline.run({
          source: Memory.source({ name: "orders", partitions: 2, records: 2_000, recordBytes: 50, chunkRecords: 100 }),
          sink,
          config: { batch: { records: 200, maxAge: "100 millis" }, memoryBudget: "64 KiB", tick: 20 },
          policies: Fixed.layer({ concurrency: 4 })
        })
      }))
      const exit = yield* runVirtual(program)
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) expect(exit.value.recordsCommitted).toBe(4_000)
      expect(violations).toEqual([])
      expect(maxBytesPastRelease).toBe(0)
    }))

  it("a later put that reaches a missing replica resolves its deficit", async () => {
    let down = true
    const c = named("c", Memory.sink({ fault: () => (down ? failure("Transient", "InternalError") : undefined) }))
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([named("a", Memory.sink()), named("b", Memory.sink()), c], { quorum: 2 })
      const batch = batchOf({ count: 10, recordBytes: 10 })
      yield* sink.verify(yield* sink.putObject(batch))
      const before = sink.deficits().length
      down = false
      yield* sink.verify(yield* sink.putObject(batch))
      return { before, after: sink.deficits().length, stats: sink.stats() }
    })))
    expect(out.before).toBe(1)
    expect(out.after).toBe(0)
    expect(out.stats).toMatchObject({ pending: 0, deficits: 0 })
  })
})

describe("Replicated repair (in memory)", () => {

  it("re-copies a deficit from a readable replica once the missing one answers again; the deficit leaves the ledger", async () => {
    let down = true
    const a = Memory.sink()
    const c = Memory.sink({ fault: () => (down ? failure("Throttled", "SlowDown") : undefined) })
    const batch = batchOf({ count: 20, recordBytes: 30 })
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([readableReplica("a", a), named("b", Memory.sink()), named("c", c)], { quorum: 2 })
      yield* sink.verify(yield* sink.putObject(batch))
      const before = sink.deficits().map((d) => [d.key, d.missing.get("c")])
      down = false
      const report = yield* sink.repair
      return { before, report, after: sink.deficits() }
    })))
    expect(out.before).toEqual([[batch.key, "SlowDown"]])
    expect(out.report).toEqual({ repaired: [{ key: batch.key, replica: "c" }], failed: [] })
    expect(out.after).toEqual([])
    expect(c.objects.get(batch.key)?.body).toEqual(a.objects.get(batch.key)?.body)
  })
})

describe("Replicated state stays bounded", () => {
  /** A replica that stores nothing (so many batches cost no memory of their own). */
  const nullReplica = (name: string, fault?: Failure.SinkFailure): Replicated.Replica => ({
    name,
    putObject: (batch) =>
      fault !== undefined ? Effect.fail(fault) : Effect.succeed({ key: batch.key, objectBytes: 1, checksum: { algorithm: "SHA256", value: "x" } }),
    putManifest: () => Effect.void,
    verify: (receipt) => Effect.succeed(receipt)
  })

  it("the ledgers over a million batches: unverified puts, deficits and lagging counts stay within their bounds", () => {
    const batches = 1_000_000
    const puts = new Ledger.Puts()
    const deficits = new Ledger.Deficits(1_000)
    const behind = new Ledger.Behind()
    let maxPuts = 0
    for (let i = 0; i < batches; i++) {
      const entry = Ledger.entry(`orders/0/${i}`)
      puts.start(entry)
      behind.add("slow", 1)
      entry.have.add("a").add("b")
      entry.durable = true
      deficits.record(entry.key, entry.have, "down", "ServiceUnavailable", i)
      if (i % 3 === 1) deficits.resolve(entry.key, "down") // repaired or caught up
      behind.add("slow", -1)
      puts.settle(entry)
      if (i % 2 === 0) puts.forget(entry) // verified; every other put never is
      maxPuts = Math.max(maxPuts, puts.size)
    }
    expect(maxPuts).toBeLessThanOrEqual(Ledger.MAX_UNVERIFIED + 1)
    expect(puts.size).toBeLessThanOrEqual(Ledger.MAX_UNVERIFIED)
    const resolved = Math.floor((batches + 1) / 3)
    expect(deficits.size).toBe(1_000)
    expect(deficits.dropped).toBe(batches - resolved - 1_000)
    expect(deficits.list()[999]?.key).toBe(`orders/0/${batches - 1}`) // the newest are kept
    expect(behind.total()).toBe(0)
  }, 120_000)

  it("through the sink, 30 000 batches with one replica always down and half the puts never verified: every map stays bounded", async () => {
    const batches = 30_000
    const maxDeficits = 1_000
    const base = batchOf({ count: 1, recordBytes: 1 })
    const down = failure("Transient", "ServiceUnavailable")
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([nullReplica("a"), nullReplica("b"), nullReplica("down", down)], { quorum: 2, maxDeficits })
      let maxPending = 0
      let maxDeficitsSeen = 0
      for (let i = 0; i < batches; i++) {
        const receipt = yield* sink.putObject({ ...base, key: `orders/0/${i}` })
        if (i % 2 === 0) yield* sink.verify(receipt) // every other put is never verified (a caller that gave up)
        const s = sink.stats()
        maxPending = Math.max(maxPending, s.pending)
        maxDeficitsSeen = Math.max(maxDeficitsSeen, s.deficits)
      }
      yield* sink.settled
      return { maxPending, maxDeficitsSeen, stats: sink.stats(), oldest: sink.deficits()[0]?.key }
    })))
    expect(out.maxDeficitsSeen).toBeLessThanOrEqual(maxDeficits)
    expect(out.stats.deficits).toBe(maxDeficits)
    expect(out.stats.droppedDeficits).toBe(batches - maxDeficits)
    expect(out.oldest).toBe(`orders/0/${batches - maxDeficits}`)
    expect(out.maxPending).toBeLessThanOrEqual(Ledger.MAX_UNVERIFIED + 1)
    expect(out.stats).toMatchObject({ lagging: 0, background: 0 })
  }, 60_000)
})
