import { describe, expect, it } from "@effect/vitest"
import { Effect, PubSub } from "effect"
import { SignalBus } from "../src/index.ts"
import type { Knob } from "../src/index.ts"

const knobs: Knob.KnobValues = { concurrency: 1, batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 }, readGate: "open", rate: null }
const tick = (at: number): SignalBus.Signal => ({ _tag: "Tick", at, knobs })
const lag = (at: number): SignalBus.Signal => ({ _tag: "Lag", at, lag: new Map(), totalRecords: at })
const inflight = (at: number): SignalBus.Signal => ({ _tag: "Inflight", at, batches: 0, bytes: at, openBytes: 0, budgetBytes: 1 })
const sample = (at: number): SignalBus.Signal => ({
  _tag: "UploadSample",
  at,
  stage: "verify",
  startedAt: at,
  latencyMillis: 1,
  bytes: 0,
  inflightAtStart: 1,
  limitAtStart: 1
})

describe("SignalBus", () => {
  it.effect("a subscriber that never reads holds at most `capacity` signals after a million publishes", () =>
    Effect.gen(function*() {
      const bus = yield* SignalBus.make
      const idle = yield* bus.subscribe
      for (let i = 0; i < 1_000_000; i++) bus.publishUnsafe(sample(i))
      expect(yield* PubSub.remaining(idle)).toBe(SignalBus.defaultCapacity)
      // Sliding: the newest are kept, the oldest dropped.
      const kept = yield* PubSub.takeAll(idle)
      expect(kept[0]?.at).toBe(1_000_000 - SignalBus.defaultCapacity)
      expect(kept[kept.length - 1]?.at).toBe(999_999)
    }).pipe(Effect.scoped))

  it.effect("ticks, in-flight and lag snapshots coalesce: a subscriber behind sees the latest, not a backlog", () =>
    Effect.gen(function*() {
      const bus = yield* SignalBus.makeWith({ capacity: 16 })
      const idle = yield* bus.subscribe
      for (let i = 0; i < 1_000_000; i++) {
        bus.publishUnsafe(lag(i))
        bus.publishUnsafe(inflight(i))
        bus.publishUnsafe(tick(i))
      }
      const kept = yield* PubSub.takeAll(idle)
      expect(kept.map((s) => `${s._tag}@${s.at}`)).toEqual(["Lag@999999", "Inflight@999999", "Tick@999999"])
    }).pipe(Effect.scoped))

  it.effect("coalescing never reorders around other signals: snapshots before an event stay before it", () =>
    Effect.gen(function*() {
      const bus = yield* SignalBus.makeWith({ capacity: 16 })
      const sub = yield* bus.subscribe
      bus.publishUnsafe(tick(1))
      bus.publishUnsafe(tick(2))
      bus.publishUnsafe(sample(3))
      bus.publishUnsafe(tick(4))
      bus.publishUnsafe(lag(5))
      bus.publishUnsafe(tick(6))
      const got = yield* PubSub.takeAll(sub)
      expect(got.map((s) => `${s._tag}@${s.at}`)).toEqual(["Tick@2", "UploadSample@3", "Lag@5", "Tick@6"])
    }).pipe(Effect.scoped))

  it.effect("a subscriber that keeps up sees every signal, in order", () =>
    Effect.gen(function*() {
      const bus = yield* SignalBus.makeWith({ capacity: 4 })
      const sub = yield* bus.subscribe
      const seen: Array<string> = []
      for (let i = 0; i < 100; i++) {
        bus.publishUnsafe(sample(i))
        bus.publishUnsafe(tick(i))
        for (const s of yield* PubSub.takeAll(sub)) seen.push(`${s._tag}@${s.at}`)
      }
      expect(seen.length).toBe(200)
      expect(seen.slice(0, 4)).toEqual(["UploadSample@0", "Tick@0", "UploadSample@1", "Tick@1"])
    }).pipe(Effect.scoped))
})
