/**
 * Quorum replication over in-memory sinks (the S3 adapter's tests run it over
 * three real buckets, one behind a slow proxy).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit } from "effect"
import { Batch, Failure, Memory, Replicated } from "../src/index.ts"
import { runVirtual } from "./support.ts"

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
})

