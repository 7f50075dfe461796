/**
 * The per-stage CPU table (`bench/stages.ts`): a sample's time goes to the
 * nearest frame up the stack that names a stage, idle time is left out, and
 * µs per record divide by the records archived; and its command line.
 */
import { describe, expect, it } from "vitest"
import { byStage, command, decode, stageOf, table } from "../bench/stages.ts"
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

  it("names the stage of each file that frames, copies or checksums a body (a frame of its own, or a native one called from it)", () => {
    const CRC = "CRC32 (@node-rs/crc32; node:zlib, core's Crc32 where it does not load)"
    expect(stageOf(frame("copyInto", "file:///x/packages/core/src/internal/frames.ts"))).toBe("body encoding (framing, copy)")
    expect(stageOf(frame("take", "file:///x/packages/core/dist/src/internal/bodies.js"))).toBe("body encoding (framing, copy)")
    expect(stageOf(frame("crc32", "file:///x/packages/adapters-s3/src/internal/SimdCrc.ts"))).toBe(CRC)
    expect(stageOf(frame("of", "file:///x/packages/core/src/Crc32.ts"))).toBe(CRC)
    expect(stageOf(frame("crc32", "node:zlib"))).toBe(CRC)
    expect(stageOf(frame("stepAll", "file:///x/packages/core/src/Policy.ts"))).toBe("pipeline stages (core: admission, sealer, limiter, uploader, committer)")
    // A native copy (Buffer#fill) called from the framing: the framing's stage.
    const copy: Profile = {
      nodes: [
        { id: 1, callFrame: frame("(root)", ""), children: [2] },
        { id: 2, callFrame: frame("copyInto", "file:///x/packages/core/src/internal/frames.ts"), children: [3] },
        { id: 3, callFrame: frame("fill", "") }
      ],
      samples: [3, 2],
      timeDeltas: [70, 30]
    }
    expect(byStage(copy).busy.get("body encoding (framing, copy)")).toBe(100)
  })

  it("prints µs per record over the busy time", () => {
    const out = table(profile, 100)
    expect(out).toContain("| body encoding (framing, copy) | 33.3 % | 2.500 |")
    expect(out).toContain("| **main thread, busy** | 100 % | **7.500** |")
  })
})

describe("bench/stages: the command line", () => {
  it("generates the help from the definition: the profile argument and --records", () => {
    expect(command.help).toContain("npm run bench:stages -- [flags] <profile>")
    expect(command.help).toMatch(/--records n +the records the profiled run archived/)
    expect(decode(["--help"])).toEqual({ _tag: "Help", text: command.help })
  })

  it("reads the profile and the records", () => {
    expect(decode(["/tmp/prof/a.cpuprofile", "--records", "1000000"])).toEqual({ _tag: "Run", flags: { profile: "/tmp/prof/a.cpuprofile", records: 1_000_000 } })
  })

  it("refuses a typo'd flag, a missing profile or --records in effect/cli's words", () => {
    const typo = decode(["a.cpuprofile", "--record", "5"])
    expect(typo._tag === "Invalid" && typo.message).toMatch(/^stages: Unrecognized flag: --record[\s\S]*--records/)
    const missing = decode(["a.cpuprofile"])
    expect(missing._tag === "Invalid" && missing.message).toBe("stages: Missing required flag: --records")
    const noProfile = decode(["--records", "5"])
    expect(noProfile._tag === "Invalid" && noProfile.message).toBe("stages: Missing required argument: profile")
  })

  it("keeps its usage line for records that are not > 0", () => {
    expect(decode(["a.cpuprofile", "--records", "0"])).toEqual({ _tag: "Invalid", message: "usage: npm run bench:stages -- PROFILE.cpuprofile --records N" })
  })
})
