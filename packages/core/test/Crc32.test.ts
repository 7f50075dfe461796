/**
 * `Crc32`: the CRC-32 of a body, a large pooled one half on the helper thread.
 * Checked from outside: every value against `zlib.crc32` of the same bytes,
 * the helper's share by the jobs posted to it (a wrapper around
 * `Worker#postMessage`), its failure by stopping the thread, and the process
 * exit in a child process.
 */
import { spawnSync } from "node:child_process"
import { Worker } from "node:worker_threads"
import type { Transferable } from "node:worker_threads"
import { crc32 } from "node:zlib"
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Effect, Logger } from "effect"
import fc from "fast-check"
import { Crc32 } from "../src/index.ts"
import * as CrcHelper from "../src/internal/crcHelper.ts"
import { sharedBytes } from "./support.ts"

/** Waits until the helper thread takes jobs (it starts on the first large shared body). */
const helperOnline = async (): Promise<void> => {
  Crc32.of(sharedBytes(Crc32.SPLIT_FROM_BYTES, 1))
  for (let i = 0; i < 200 && !CrcHelper.isOnline(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  expect(CrcHelper.isOnline()).toBe(true)
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("Crc32.of", () => {
  it("is zlib's CRC-32 (the check value of \"123456789\" is 0xcbf43926)", () => {
    expect(Crc32.of(new TextEncoder().encode("123456789"))).toBe(0xcbf43926)
    expect(Crc32.of(new Uint8Array(0))).toBe(0)
  })

  it("equals zlib.crc32 for any bytes, unshared or shared, at any offset and length around the split size", async () => {
    expect(Crc32.split).toBe(true) // this machine has 2 cores: the split path is the one under test
    await helperOnline()
    const big = sharedBytes(Crc32.SPLIT_FROM_BYTES * 3, 7)
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Crc32.SPLIT_FROM_BYTES }),
        fc.integer({ min: 0, max: 2 * Crc32.SPLIT_FROM_BYTES }),
        fc.boolean(),
        (from, length, shared) => {
          const view = big.subarray(from, from + length)
          const data = shared ? view : view.slice() // slice(): a copy in unshared memory
          expect(Crc32.of(data)).toBe(crc32(data))
        }
      ),
      { numRuns: 60 }
    )
  })

  it("hands the second half of a large shared body to the helper, and only that", async () => {
    await helperOnline()
    const posted: Array<{ readonly offset: number; readonly length: number }> = []
    const post = Worker.prototype.postMessage
    vi.spyOn(Worker.prototype, "postMessage").mockImplementation(function(this: Worker, message: unknown, transfer?: ReadonlyArray<Transferable>) {
      const job = message as { readonly offset: number; readonly length: number }
      posted.push({ offset: job.offset, length: job.length })
      return post.call(this, message, transfer)
    })
    const body = sharedBytes(3 * Crc32.SPLIT_FROM_BYTES + 5, 11).subarray(3) // odd offset and length
    expect(Crc32.of(body)).toBe(crc32(body))
    const half = body.byteLength >>> 1
    expect(posted).toEqual([{ offset: body.byteOffset + half, length: body.byteLength - half }])

    posted.length = 0
    Crc32.of(sharedBytes(Crc32.SPLIT_FROM_BYTES - 1, 3)) // below the split size
    Crc32.of(new Uint8Array(2 * Crc32.SPLIT_FROM_BYTES)) // unshared memory
    expect(posted).toEqual([])
  })
})

describe("Crc32's helper: at most one job", () => {
  it("no job is posted while the last is unanswered: a late or stalled helper holds one body, not one per checksum", async () => {
    await helperOnline()
    const long = sharedBytes(64 * Crc32.SPLIT_FROM_BYTES, 13) // tens of milliseconds of CRC on the helper
    const first = CrcHelper.start(long)
    expect(first).toBeDefined()
    const body = sharedBytes(2 * Crc32.SPLIT_FROM_BYTES, 17)
    expect(CrcHelper.start(body)).toBeUndefined() // refused: the helper is busy
    expect(Crc32.of(body)).toBe(crc32(body)) // and the checksum is computed here instead
    expect(CrcHelper.finish(first ?? 0, 10_000)).toBe(crc32(long))
    const next = CrcHelper.start(body)
    expect(next).toBeDefined()
    expect(CrcHelper.finish(next ?? 0, 10_000)).toBe(crc32(body))
  })
})

describe("Crc32.combine", () => {
  it("is the CRC of the concatenation, from the two CRCs and the second length", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.uint8Array({ maxLength: 3000 }), (a, b) => {
        const both = new Uint8Array(a.length + b.length)
        both.set(a)
        both.set(b, a.length)
        expect(Crc32.combine(crc32(a), crc32(b), b.length)).toBe(crc32(both))
      }),
      { numRuns: 300 }
    )
  })
})

describe("Crc32: the helper is a help, never a dependency", () => {
  // Last in the file: the helper stays out of service for the rest of the process.
  it("stopped mid-job, the answer is still right and comes within the wait bound; one warning, then in place", async () => {
    await helperOnline()
    const body = sharedBytes(8 * Crc32.SPLIT_FROM_BYTES, 5)
    const helper = CrcHelper.current()
    expect(helper).toBeDefined()
    const exited = new Promise((resolve) => helper?.once("exit", resolve))
    void helper?.terminate()
    // Still "running" until its exit event: the job goes to a dying thread, and the wait ends at its bound.
    const t0 = performance.now()
    expect(Crc32.of(body)).toBe(crc32(body))
    expect(performance.now() - t0).toBeLessThan(2_000)
    await exited

    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
    })
    const run = (data: Uint8Array) => Effect.runSync(Crc32.compute(data).pipe(Effect.provide(Logger.layer([capture]))))
    expect(run(body)).toBe(crc32(body))
    expect(run(body)).toBe(crc32(body))
    expect(warnings).toEqual(["CRC-32 helper thread out of service; checksums are computed on the event loop alone from now on"])
    expect(CrcHelper.isOnline()).toBe(false)
  })
})

describe("Crc32 and the process", () => {
  it("the helper never holds the process open: a script that checksummed a large body exits by itself", () => {
    // Run as an ES module from the command line (`--input-type=module`), which the helper must not inherit.
    const script = [
      "import { Crc32 } from '@sluice/core'",
      "import * as CrcHelper from './src/internal/crcHelper.ts'",
      "const body = new Uint8Array(new SharedArrayBuffer(4 << 20))",
      "Crc32.of(body)",
      "setTimeout(() => { const crc = Crc32.of(body); console.log(CrcHelper.isOnline() ? 'helped' : 'alone', crc) }, 500)"
    ].join("\n")
    const child = spawnSync(process.execPath, ["--conditions=@sluice/source", "--input-type=module", "-e", script], {
      cwd: new URL("..", import.meta.url),
      encoding: "utf8",
      timeout: 20_000
    })
    expect(child.error).toBeUndefined()
    expect(child.stdout.trim()).toBe(`helped ${crc32(new Uint8Array(4 << 20))}`)
    expect(child.status).toBe(0)
  })
})
