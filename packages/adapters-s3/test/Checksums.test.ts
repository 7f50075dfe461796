/**
 * Checksums without a server: each algorithm against its published check
 * value, and the whole-object CRC combined from random parts against the CRC
 * of the whole body computed in one pass (`node:zlib` for CRC-32, the SDK for
 * CRC-32C and CRC-64/NVME). The combine is what a `FULL_OBJECT` multipart
 * upload sends at completion, so a wrong one is a `BadDigest` at best.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { crc32 } from "node:zlib"
import { Crc32c, Crc32Js, Crc64Nvme } from "@aws-sdk/checksums/crc"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Checksums from "../src/Checksums.ts"
import * as Request from "../src/internal/Request.ts"
import * as SimdCrc from "../src/internal/SimdCrc.ts"

const ascii = (s: string) => new TextEncoder().encode(s)
const hex = (raw: Uint8Array) => Buffer.from(raw).toString("hex")
const CRCS = ["CRC32", "CRC32C", "CRC64NVME"] as const

/** The CRC of `data` by an implementation the sink does not use for it (or not this way). */
const reference = async (algorithm: Checksums.CrcAlgorithm, data: Uint8Array): Promise<string> => {
  switch (algorithm) {
    case "CRC32":
      return crc32(data).toString(16).padStart(8, "0")
    case "CRC32C": {
      const c = new Crc32c()
      c.update(data)
      return hex(await c.digest())
    }
    case "CRC64NVME": {
      const c = new Crc64Nvme()
      c.update(data)
      return hex(await c.digest())
    }
  }
}

/** Deterministic bytes (a seeded xorshift), so a failing case can be replayed. */
const bytesOf = (length: number, seed: number): Uint8Array => {
  const out = new Uint8Array(length)
  let x = seed | 1
  for (let i = 0; i < length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 0xff
  }
  return out
}

/** `data` cut at `cuts` (sorted, deduplicated, within bounds): the parts in order. */
const split = (data: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const at = [...new Set(cuts.map((c) => Math.min(data.byteLength, c)))].sort((a, b) => a - b)
  const parts: Array<Uint8Array> = []
  let start = 0
  for (const end of [...at, data.byteLength]) {
    parts.push(data.subarray(start, end))
    start = end
  }
  return parts
}

const partDigests = (algorithm: Checksums.CrcAlgorithm, parts: ReadonlyArray<Uint8Array>) =>
  Promise.all(parts.map(async (p) => ({ raw: await Checksums.digest(algorithm, p), bytes: p.byteLength })))

describe("check values (\"123456789\")", () => {
  it.each([
    ["CRC32", "cbf43926"],
    ["CRC32C", "e3069283"],
    ["CRC64NVME", "ae8b14860a799888"],
    ["SHA256", "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"]
  ] as const)("%s → %s", async (algorithm, expected) => {
    expect(hex(await Checksums.digest(algorithm, ascii("123456789")))).toBe(expected)
  })

  it("CRC32 as S3 prints it: base64 of the 4 big-endian bytes", async () => {
    expect(await Checksums.objectChecksum("CRC32", ascii("123456789"), undefined)).toBe("y/Q5Jg==")
    expect(await Checksums.objectChecksum("CRC32", new Uint8Array(0), undefined)).toBe("AAAAAA==")
    // The value zlib reports, which S3 documents as its CRC32.
    expect(Buffer.from(await Checksums.digest("CRC32", ascii("123456789"))).readUInt32BE(0)).toBe(0xcbf43926)
  })

  it("CRC32: the SDK's pure-JS stand-in (Node without zlib.crc32) gives the same digest", async () => {
    const data = bytesOf(100_003, 21)
    const js = new Crc32Js()
    js.update(data)
    expect(hex(await js.digest())).toBe(hex(await Checksums.digest("CRC32", data)))
  })

  it("SHA256 is node:crypto's", async () => {
    const data = bytesOf(1000, 7)
    expect(hex(await Checksums.digest("SHA256", data))).toBe(createHash("sha256").update(data).digest("hex"))
  })
})

describe("combine", () => {
  it.each(CRCS)("%s: two halves of \"123456789\" combine to its check value", async (algorithm) => {
    const a = ascii("1234")
    const b = ascii("56789")
    const [da, db] = [await Checksums.digest(algorithm, a), await Checksums.digest(algorithm, b)]
    const combined = Checksums.combine(algorithm, da, db, b.byteLength)
    expect(hex(combined)).toBe(await reference(algorithm, ascii("123456789")))
  })

  it.each(CRCS)("%s: an empty part on either side changes nothing", async (algorithm) => {
    const data = bytesOf(777, 3)
    const whole = await Checksums.digest(algorithm, data)
    const empty = await Checksums.digest(algorithm, new Uint8Array(0))
    expect(hex(Checksums.combine(algorithm, whole, empty, 0))).toBe(hex(whole))
    expect(hex(Checksums.combine(algorithm, empty, whole, data.byteLength))).toBe(hex(whole))
  })

  it.each(CRCS)("%s: random bodies cut into random parts: the parts combine to the whole body's CRC", async (algorithm) => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer(),
        fc.array(fc.nat({ max: 200_000 }), { maxLength: 12 }),
        async (length, seed, cuts) => {
          const data = bytesOf(length, seed)
          const parts = split(data, cuts)
          const value = Checksums.fullObjectOf(algorithm, await partDigests(algorithm, parts))
          expect(Buffer.from(value, "base64").toString("hex")).toBe(await reference(algorithm, data))
        }
      ),
      { seed: 12, numRuns: 60 }
    )
  })

  it("CRC32: S3-sized parts (5 MiB parts of a 23 MiB body, last one short) combine to zlib's CRC of the body", async () => {
    const data = bytesOf(23 * 1024 * 1024 + 12_345, 99)
    const ranges = Checksums.partRanges(data.byteLength, 5 * 1024 * 1024)
    const parts = ranges.map((r) => data.subarray(r.start, r.end))
    expect(parts.length).toBe(5)
    const value = Checksums.fullObjectOf("CRC32", await partDigests("CRC32", parts))
    expect(Buffer.from(value, "base64").readUInt32BE(0)).toBe(crc32(data))
    // The same as zlib's own incremental form, crc32(part, previous).
    expect(Buffer.from(value, "base64").readUInt32BE(0)).toBe(parts.reduce((prev, p) => crc32(p, prev), 0))
  })

  it("objectChecksum of a CRC multipart body is the whole-body CRC (FULL_OBJECT), of SHA256 the composite", async () => {
    const data = bytesOf(12 * 1024 * 1024, 5)
    expect(await Checksums.objectChecksum("CRC32", data, 5 * 1024 * 1024)).toBe(
      await Checksums.objectChecksum("CRC32", data, undefined)
    )
    expect(await Checksums.objectChecksum("SHA256", data, 5 * 1024 * 1024)).toMatch(/-3$/)
  })
})

describe("Request.compute", () => {
  it("returns the value and the time the computation held the event loop", async () => {
    const data = bytesOf(4 * 1024 * 1024, 11)
    const timed = await Effect.runPromise(Request.compute(() => Checksums.digest("SHA256", data)))
    expect(hex(timed.value)).toBe(createHash("sha256").update(data).digest("hex"))
    expect(timed.millis).toBeGreaterThan(0)
    expect(timed.millis).toBeLessThan(10_000)
  })
})

describe("CRC-32 and CRC-32C with the CPU's CRC instructions (@node-rs/crc32)", () => {
  it("the native module loads on this platform (a broken install would silently cost 5–15× in checksum time)", () => {
    expect(SimdCrc.loadFailure).toBeUndefined()
    expect(SimdCrc.crc32).toBeTypeOf("function")
  })

  it("CRC32 and CRC32C of any bytes, at any offset of shared or unshared memory, equal zlib's and the SDK's", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 7 }), fc.boolean(), fc.integer(), async (length, offset, shared, seed) => {
        const bytes = bytesOf(length, seed)
        const memory = new Uint8Array(shared ? new SharedArrayBuffer(length + offset) : new ArrayBuffer(length + offset))
        memory.set(bytes, offset)
        const view = memory.subarray(offset)
        expect(hex(await Checksums.digest("CRC32", view))).toBe(await reference("CRC32", bytes))
        expect(hex(await Checksums.digest("CRC32C", view))).toBe(await reference("CRC32C", bytes))
      }),
      { numRuns: 60 }
    )
  })

  it("where the module does not load: the same checksums, and one warning", async () => {
    // A child process in which resolving `@node-rs/crc32` fails, as on a platform without a prebuilt binary.
    const script = `
      import { registerHooks } from "node:module"
      registerHooks({ resolve(specifier, context, next) { if (specifier === "@node-rs/crc32") throw new Error("no binary for this platform"); return next(specifier, context) } })
      const { crc32 } = await import("node:zlib")
      const { Effect } = await import("effect")
      const Checksums = await import(${JSON.stringify(new URL("../src/Checksums.ts", import.meta.url).href)})
      const Request = await import(${JSON.stringify(new URL("../src/internal/Request.ts", import.meta.url).href)})
      const data = new TextEncoder().encode("123456789".repeat(1000))
      const hex = (raw) => Buffer.from(raw).toString("hex")
      const values = []
      for (let i = 0; i < 3; i++) {
        values.push(hex((await Effect.runPromise(Request.compute(() => Checksums.digest("CRC32", data)))).value))
        values.push(hex((await Effect.runPromise(Request.compute(() => Checksums.digest("CRC32C", data)))).value))
      }
      console.log(JSON.stringify({ values, zlib: crc32(data).toString(16).padStart(8, "0") }))
    `
    const child = spawnSync(process.execPath, ["--conditions=@sluice/source", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 60_000
    })
    expect(child.status, child.stderr).toBe(0)
    const lines = child.stdout.trim().split("\n")
    const { values, zlib } = JSON.parse(lines[lines.length - 1] ?? "") as { values: Array<string>; zlib: string }
    const crc32c = new Crc32c()
    crc32c.update(new TextEncoder().encode("123456789".repeat(1000)))
    const sdk = hex(await crc32c.digest())
    expect(values).toEqual([zlib, sdk, zlib, sdk, zlib, sdk])
    const output = `${child.stdout}${child.stderr}`
    expect(output.split("without the CPU's CRC instructions").length - 1).toBe(1)
    expect(output).toContain("no binary for this platform")
  })
})
