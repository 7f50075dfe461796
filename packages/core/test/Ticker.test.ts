import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Fixed, Memory, Pipeline, Record } from "../src/index.ts"
import type { Source } from "../src/index.ts"
import { runVirtual } from "./support.ts"

describe("Ticker", () => {
  it.effect("a slow source.lag never delays ticks: they keep their period and carry the latest lag known", () =>
    Effect.gen(function*() {
      const memory = Memory.source({ name: "t", partitions: 1, records: 1_000_000, recordBytes: 16, intervalMillis: 1_000 })
      let calls = 0
      // Every lag call takes 10 s (a broker that does not answer).
      const source: Source.Source = {
        ...memory,
        lag: Effect.suspend(() => Effect.as(Effect.sleep(10_000), new Map([[0, ++calls]])))
      }
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({ source, sink: Memory.sink(), config: { tick: 100 } }).pipe(Scope.provide(scope))
      const ticks: Array<number> = []
      const lags: Array<number> = []
      const signals = yield* handle.bus.subscribe.pipe(Scope.provide(scope))
      yield* Stream.fromSubscription(signals).pipe(
        Stream.runForEach((s) =>
          Effect.sync(() => {
            if (s._tag === "Tick") ticks.push(s.at)
            if (s._tag === "Lag") lags.push(s.totalRecords)
          })
        ),
        Effect.forkIn(scope)
      )
      for (let t = 0; t < 25_000; t += 50) yield* TestClock.adjust(50)
      yield* Scope.close(scope, Exit.void)
      // 25 s at 100 ms: ~250 ticks, although each lag call takes 10 s.
      expect(ticks.length).toBeGreaterThanOrEqual(240)
      for (let i = 1; i < ticks.length; i++) expect((ticks[i] ?? 0) - (ticks[i - 1] ?? 0)).toBe(100)
      // The lag published is the latest answer (calls 1 and 2 answered by 25 s).
      expect(lags[lags.length - 1]).toBe(2)
    }))

  it.effect("Inflight carries the median running object upload: one stuck upload does not move it", () =>
    Effect.gen(function*() {
      // The first object put takes 10 s, every other one 2 s; 40 batches of 100 records.
      let puts = 0
      const sink = Memory.sink({ latencyMillis: (op) => (op !== "putObject" ? 10 : puts++ === 0 ? 10_000 : 2_000) })
      const source = Memory.source({ name: "t", partitions: 4, records: 1_000, recordBytes: 16 })
      const scope = yield* Scope.make()
      const handle = yield* Pipeline.start({
        source,
        sink,
        config: { tick: 100, batch: { records: 100, bytes: "1 MiB", maxAge: "1 second" } }
      }).pipe(Scope.provide(scope))
      const medians: Array<{ readonly at: number; readonly startedAt: number | undefined }> = []
      const signals = yield* handle.bus.subscribe.pipe(Scope.provide(scope))
      yield* Stream.fromSubscription(signals).pipe(
        Stream.runForEach((s) => Effect.sync(() => void (s._tag === "Inflight" && medians.push({ at: s.at, startedAt: s.medianUpload?.startedAt })))),
        Effect.forkIn(scope)
      )
      for (let t = 0; t < 60_000; t += 100) yield* TestClock.adjust(100)
      yield* handle.await
      // While the stuck upload (begun at 0) runs, the median is one of the
      // uploads begun within the last 2 s, not it.
      const during = medians.filter((m) => m.at >= 4_000 && m.at <= 9_000)
      expect(during.length).toBeGreaterThan(40)
      for (const m of during) expect(m.startedAt ?? -1, `at ${m.at}`).toBeGreaterThanOrEqual(m.at - 2_000)
      // All verified: nothing running, no median.
      expect(medians[medians.length - 1]?.startedAt).toBeUndefined()
      yield* Scope.close(scope, Exit.void)
    }))

  // 10 partitions × 100 records/s for 10 s; one permit, every object put
  // takes 1 s; maxAge 0.5 s. Sealed at their age, 20 batches a second queue
  // for a store that takes one a second: ~200 objects, the last committed
  // ~200 s in. Held open while the uploader holds two, they fill, and each
  // object carries what arrived meanwhile.
  const slowStore = (ageSealWaits: boolean) =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 10, records: 1_000, recordBytes: 100, chunkRecords: 10, intervalMillis: 100, payloads: false })
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 1_000 : 10) })
      const timed = Effect.gen(function*() {
        yield* Pipeline.run({
          source,
          sink,
          config: { tick: 100, batch: { records: 1_000_000, bytes: "64 MiB", maxAge: "500 millis", ageSealWaits } },
          policies: Fixed.layer({ concurrency: 1 })
        })
        return yield* Clock.currentTimeMillis
      })
      const exit = yield* runVirtual(timed, { stepMillis: 50, maxMillis: 400_000 })
      expect(Exit.isSuccess(exit)).toBe(true)
      // From the outside: every record committed once, in the sink's objects.
      for (let p = 0; p < 10; p++) expect(source.committed.get(p)).toBe(1_000)
      let stored = 0
      for (const manifest of sink.manifests.values()) stored += manifest.records
      expect(stored).toBe(10_000)
      expect(sink.peak.maxUploading).toBe(1)
      return { objects: sink.objects.size, endedAt: Exit.isSuccess(exit) ? exit.value : Infinity }
    })

  it.effect("age seals wait while two sealed batches per permit are outstanding: the batches held open fill up, and the inflow is carried", () =>
    Effect.gen(function*() {
      const run = yield* slowStore(true)
      // Few, large objects; the run ends soon after the inflow does.
      expect(run.objects).toBeLessThanOrEqual(40)
      expect(run.endedAt).toBeLessThanOrEqual(30_000)
    }))

  it.effect("with ageSealWaits false every batch seals at maxAge, and they queue for the store", () =>
    Effect.gen(function*() {
      const run = yield* slowStore(false)
      expect(run.objects).toBeGreaterThanOrEqual(150)
      expect(run.endedAt).toBeGreaterThanOrEqual(150_000)
    }))

  it.effect("a trickle partition beside a hot one is not held behind it: the hot batches sealed on their target take its held batch along", () =>
    Effect.gen(function*() {
      // Partition 0 fills a 100 kB target every 500 ms; the store takes 1 s a
      // put, so its sealed batches keep the one permit's two places full and
      // no age seal finds room. Partition 1 gets one record a second (maxAge
      // 1 s). Were its batch held until room came, it would go only with the
      // drain at the end (60 s); a hot batch opened after it takes it along.
      const rounds = 600
      let hotOffset = 0
      let trickleOffset = 0
      const commits: Array<{ readonly partition: number; readonly at: number }> = []
      const events: Stream.Stream<Source.SourceEvent> = Stream.fromEffectRepeat(
        Effect.flatMap(Effect.andThen(Effect.sleep(100), Clock.currentTimeMillis), (now) =>
          Effect.sync(() => {
            const round = now / 100
            if (round > rounds) return []
            const out: Array<Source.SourceEvent> = [Record.syntheticChunk("t", 0, hotOffset, 200, 100, now)]
            hotOffset += 200
            if (round % 10 === 0) out.push(Record.syntheticChunk("t", 1, trickleOffset++, 1, 100, now))
            return out
          }))
      ).pipe(Stream.takeWhile((chunks) => chunks.length > 0), Stream.flattenIterable)
      const source: Source.Source = {
        name: "t",
        events,
        commit: (partition) => Effect.map(Clock.currentTimeMillis, (at) => void commits.push({ partition, at })),
        pause: Effect.void,
        resume: Effect.void,
        lag: Effect.succeed(new Map())
      }
      const sink = Memory.sink({ latencyMillis: (op) => (op === "putObject" ? 1_000 : 10) })
      const exit = yield* runVirtual(
        Pipeline.run({
          source,
          sink,
          config: { tick: 100, memoryBudget: "1 GiB", batch: { records: 1_000_000, bytes: 100_000, maxAge: "1 second" } },
          policies: Fixed.layer({ concurrency: 1 })
        }),
        { stepMillis: 50, maxMillis: 600_000 }
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      // The hot partition is behind for the whole run (its last commit long after 60 s) …
      const hot = commits.filter((c) => c.partition === 0)
      expect(hot.at(-1)?.at ?? 0).toBeGreaterThan(90_000)
      // … and the trickle's records are committed among its batches, from the first seconds.
      const trickle = commits.filter((c) => c.partition === 1)
      expect(trickle[0]?.at ?? Infinity).toBeLessThanOrEqual(10_000)
      expect(trickle.filter((c) => c.at <= 60_000).length).toBeGreaterThanOrEqual(5)
    }))
})
