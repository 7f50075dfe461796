import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Batch, Memory, Pipeline, Record } from "../src/index.ts"
import { listSource } from "./support.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("Batch", () => {
  it.effect("manifests list offset runs when offsets have holes, and recordOffsets recovers them", () =>
    Effect.gen(function*() {
      const chunk: Record.RecordChunk = {
        ...Record.chunkOf("s", 0, 10, ["a", "b", "c", "d"].map(bytes)),
        offsets: [10, 11, 15, 16]
      }
      const next = Record.chunkOf("s", 0, 17, ["e"].map(bytes))
      const { source, committed } = listSource([chunk, next])
      const sink = Memory.sink()
      yield* Pipeline.run({ source, sink })
      const [manifest] = [...sink.manifests.values()]
      expect(manifest?.offsetRuns).toEqual([[10, 2], [15, 3]])
      expect(manifest?.firstOffset).toBe(10)
      expect(manifest?.lastOffset).toBe(17)
      expect(manifest === undefined ? [] : Batch.recordOffsets(manifest)).toEqual([10, 11, 15, 16, 17])
      expect(committed.get(0)).toBe(18)
    }))

  it.effect("contiguous batches carry no offset runs", () =>
    Effect.gen(function*() {
      const { source } = listSource([Record.chunkOf("s", 0, 0, ["a", "b"].map(bytes))])
      const sink = Memory.sink()
      yield* Pipeline.run({ source, sink })
      const [manifest] = [...sink.manifests.values()]
      expect(manifest?.offsetRuns).toBeUndefined()
      expect(manifest === undefined ? [] : Batch.recordOffsets(manifest)).toEqual([0, 1])
    }))

  it.effect("a retention gap seals the batch before it; the next batch records the gap", () =>
    Effect.gen(function*() {
      const { source, committed } = listSource([
        Record.chunkOf("s", 0, 0, ["a", "b"].map(bytes)),
        { _tag: "RetentionGap", source: "s", partition: 0, expected: 2, logStart: 50, lostRecords: 48 },
        Record.chunkOf("s", 0, 50, ["c", "d"].map(bytes))
      ])
      const sink = Memory.sink()
      const stats = yield* Pipeline.run({ source, sink })
      const manifests = [...sink.manifests.values()].sort((a, b) => a.firstOffset - b.firstOffset)
      expect(manifests.map((m) => [m.firstOffset, m.lastOffset, m.sealReason])).toEqual([[0, 1, "gap"], [50, 51, "drain"]])
      expect(manifests[0]?.gap).toBeUndefined()
      expect(manifests[1]?.gap).toEqual({ expected: 2, logStart: 50, lostRecords: 48 })
      expect(stats.retentionGapRecords).toBe(48)
      expect(committed.get(0)).toBe(52)
    }))
})
