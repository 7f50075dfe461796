import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Batch, Memory, Pipeline, Source } from "../src/index.ts"

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
