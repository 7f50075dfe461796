import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { Batch, Knob, Memory, Pipeline, Source } from "../src/index.ts"

describe("Source.fromAsyncIterable", () => {
  it.live("archives a plain async iterable and reports each commit", () =>
    Effect.gen(function*() {
      const encoder = new TextEncoder()
      async function* lines() {
        for (let i = 0; i < 2_500; i++) {
          if (i % 700 === 0) await new Promise((r) => setTimeout(r, 1))
          yield encoder.encode(`line ${i}`)
        }
      }
      const commits: Array<number> = []
      const source = Source.fromAsyncIterable({ name: "log", records: lines(), startOffset: 10, onCommit: (n) => void commits.push(n) })
      const sink = Memory.sink()
      const stats = yield* Pipeline.run({ source, sink, config: { batch: { records: 1_000 } } })
      expect(stats.recordsCommitted).toBe(2_500)
      expect(commits.at(-1)).toBe(2_510)
      const decoder = new TextDecoder()
      const all = [...sink.objects.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .flatMap(([, o]) => Batch.decodeBody(o.body).map((p) => decoder.decode(p)))
      expect(all).toEqual(Array.from({ length: 2_500 }, (_, i) => `line ${i}`))
    }))
})

describe("Source.fromStream", () => {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder()
  const archived = (sink: ReturnType<typeof Memory.sink>) =>
    [...sink.objects.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([, o]) => Batch.decodeBody(o.body).map((p) => decoder.decode(p)))

  it.live("archives an Effect Stream of records, committing through its Effect, offsets from startOffset", () =>
    Effect.gen(function*() {
      const commits: Array<number> = []
      const records = Stream.range(0, 2_499).pipe(Stream.map((i) => encoder.encode(`event ${i}`)))
      const source = Source.fromStream(records, {
        name: "events",
        startOffset: 10,
        commit: (next) => Effect.sync(() => void commits.push(next)),
        lag: Effect.succeed(7)
      })
      expect(yield* source.lag).toEqual(new Map([[0, 7]]))
      const sink = Memory.sink()
      const stats = yield* Pipeline.run({ source, sink, config: { batch: { records: 1_000 } } })
      expect(stats.recordsCommitted).toBe(2_500)
      expect(commits.at(-1)).toBe(2_510)
      expect(archived(sink)).toEqual(Array.from({ length: 2_500 }, (_, i) => `event ${i}`))
    }))

  it.live("a failing stream or commit ends the run with a SourceError naming the source and the operation", () =>
    Effect.gen(function*() {
      const failing = Source.fromStream(Stream.concat(Stream.make(encoder.encode("a")), Stream.fail("disk gone")), {
        name: "broken",
        commit: () => Effect.void
      })
      const read = yield* Effect.flip(Pipeline.run({ source: failing, sink: Memory.sink() }))
      expect(read).toMatchObject({ _tag: "SourceError", source: "broken", operation: "read", message: "disk gone" })
      const refusing = Source.fromStream(Stream.make(encoder.encode("a")), {
        name: "refusing",
        commit: () => Effect.fail(new Error("offset store down"))
      })
      const commit = yield* Effect.flip(Pipeline.run({ source: refusing, sink: Memory.sink() }))
      expect(commit).toMatchObject({ _tag: "SourceError", source: "refusing", operation: "commit", message: "offset store down" })
    }))

  it.live("a paused pipeline stops pulling: a pull-based stream is not run ahead while the read gate is closed", () =>
    Effect.gen(function*() {
      let pulled = 0
      const records = Stream.range(0, 99_999, 100).pipe(Stream.map((i) => {
        pulled = i + 1
        return encoder.encode(`event ${i}`)
      }))
      const source = Source.fromStream(records, { name: "gated", commit: () => Effect.void, chunkRecords: 100 })
      const handle = yield* Pipeline.start({
        source,
        sink: Memory.sink(),
        config: { batch: { records: 100 } },
        policies: Layer.effectDiscard(Effect.gen(function*() {
          const knobs = yield* Knob.Knobs
          yield* knobs.propose("gate", { readGate: "paused" })
        }))
      })
      yield* Effect.sleep("200 millis")
      // Paused from the start: of the 100 000 records, at most the stream's chunk
      // being grouped and the one the pipeline looks ahead (100 records each here).
      expect(pulled).toBeLessThanOrEqual(300)
      expect(handle.stats().readGate).toBe("paused")
    }).pipe(Effect.scoped))
})
