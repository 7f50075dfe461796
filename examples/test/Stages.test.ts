/**
 * The per-stage CPU table (`bench/stages.ts`): a sample's time goes to the
 * nearest frame up the stack that names a stage, idle time is left out, and
 * µs per record divide by the records archived.
 */
import { describe, expect, it } from "vitest"
import { byStage, table } from "../bench/stages.ts"
import type { Profile } from "../bench/stages.ts"

const frame = (functionName: string, url: string) => ({ functionName, url })
// root → encode (core Batch) → set (native)   root → fetch (kafka) → (garbage collector)   root → (idle)
const profile: Profile = {
  nodes: [
    { id: 1, callFrame: frame("(root)", ""), children: [2, 4, 6, 7] },
    { id: 2, callFrame: frame("encode", "file:///x/packages/core/src/Batch.ts"), children: [3] },
    { id: 3, callFrame: frame("set", "") },
    { id: 4, callFrame: frame("fetch", "file:///x/node_modules/@platformatic/kafka/dist/clients/consumer.js"), children: [5] },
    { id: 5, callFrame: frame("decode", "node:internal/encoding") },
    { id: 6, callFrame: frame("(garbage collector)", "") },
    { id: 7, callFrame: frame("(idle)", "") }
  ],
  samples: [3, 3, 5, 6, 7, 7, 2],
  timeDeltas: [100, 100, 300, 200, 1000, 1000, 50]
}

describe("bench/stages: CPU per stage from a V8 profile", () => {
  it("gives a native frame's time to the stage that called it, and leaves idle time out", () => {
    const { busy, idleMicros } = byStage(profile)
    expect(busy.get("body encoding (framing, copy)")).toBe(250)
    expect(busy.get("Kafka read (fetch, decode, envelopes)")).toBe(300)
    expect(busy.get("garbage collection")).toBe(200)
    expect(idleMicros).toBe(2000)
  })

  it("prints µs per record over the busy time", () => {
    const out = table(profile, 100)
    expect(out).toContain("| body encoding (framing, copy) | 33.3 % | 2.500 |")
    expect(out).toContain("| **main thread, busy** | 100 % | **7.500** |")
  })
})
