import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Memory, Pipeline } from "../src/index.ts"
import type { Source } from "../src/index.ts"

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
})
