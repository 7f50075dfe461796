/**
 * The record envelope: exact layout, round trips (fixed cases and a property),
 * malformed input rejected with the typed error.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as RecordEnvelope from "../src/RecordEnvelope.ts"

const text = new TextEncoder()
const bytes = (s: string) => text.encode(s)

/** Plain arrays, so that views and copies compare equal. */
const plain = (e: RecordEnvelope.Envelope) => ({
  timestamp: e.timestamp,
  key: e.key === null ? null : [...e.key],
  headers: e.headers.map(([k, v]) => [[...k], v === null ? null : [...v]]),
  value: e.value === null ? null : [...e.value]
})

const malformed = (payload: Uint8Array): RecordEnvelope.MalformedEnvelope | undefined => {
  try {
    RecordEnvelope.decode(payload)
    return undefined
  } catch (error) {
    if (error instanceof RecordEnvelope.MalformedEnvelope) return error
    throw error
  }
}

describe("RecordEnvelope", () => {
  it("writes the documented layout", () => {
    const payload = RecordEnvelope.encode({
      timestamp: 0x0102030405,
      key: bytes("k"),
      headers: [[bytes("h"), null]],
      value: bytes("vv")
    })
    expect([...payload]).toEqual([
      1, // magic
      0, 0, 0, 1, 2, 3, 4, 5, // timestamp
      0, 0, 0, 1, 0x6b, // key
      0, 0, 0, 1, // header count
      0, 0, 0, 1, 0x68, 0xff, 0xff, 0xff, 0xff, // header "h" = null
      0, 0, 0, 2, 0x76, 0x76 // value
    ])
    expect(RecordEnvelope.encodedSize({ key: null, headers: [], value: bytes("abc") })).toBe(21 + 3)
  })

  it("round-trips a full record, a null key, a null value, empty and binary headers", () => {
    const cases: Array<RecordEnvelope.EnvelopeInput> = [
      { timestamp: 1_735_689_600_123, key: bytes("order-17"), headers: [[bytes("trace"), bytes("abc")]], value: bytes("{\"a\":1}") },
      { timestamp: 5, key: null, headers: [], value: bytes("no key") },
      { timestamp: 6, key: bytes("tombstone"), headers: [], value: null },
      { timestamp: 7, key: null, headers: [], value: null },
      { timestamp: 8, key: new Uint8Array(0), headers: [[new Uint8Array(0), new Uint8Array(0)]], value: new Uint8Array(0) },
      {
        timestamp: 9,
        key: Uint8Array.of(0, 255, 128),
        headers: [[Uint8Array.of(0, 1, 2), Uint8Array.of(255, 0)], [Uint8Array.of(0, 1, 2), null], [bytes("x"), Uint8Array.of(0)]],
        value: Uint8Array.of(0, 0, 0, 0, 255)
      },
      { timestamp: -1, key: null, headers: [], value: bytes("no timestamp (-1)") },
      { timestamp: Number.MAX_SAFE_INTEGER, key: null, headers: [], value: null },
      { timestamp: Number.MIN_SAFE_INTEGER, key: null, headers: [], value: null }
    ]
    for (const input of cases) {
      const payload = RecordEnvelope.encode(input)
      expect(payload.byteLength).toBe(RecordEnvelope.encodedSize(input))
      expect(plain(RecordEnvelope.decode(payload))).toEqual(plain({ ...input, headers: input.headers.map(([k, v]) => [k ?? new Uint8Array(0), v] as const) }))
    }
  })

  it("decodes a payload that is a view into a larger buffer, returning views", () => {
    const payload = RecordEnvelope.encode({ timestamp: 42, key: bytes("k"), headers: [], value: bytes("value") })
    const body = new Uint8Array(payload.byteLength + 10)
    body.set(payload, 7)
    const view = body.subarray(7, 7 + payload.byteLength)
    const decoded = RecordEnvelope.decode(view)
    expect(decoded.timestamp).toBe(42)
    expect(new TextDecoder().decode(decoded.value ?? undefined)).toBe("value")
    expect(decoded.value?.buffer).toBe(body.buffer)
  })

  it("writes a null header key as an empty key", () => {
    const decoded = RecordEnvelope.decode(RecordEnvelope.encode({ timestamp: 1, key: null, headers: [[null, bytes("v")]], value: null }))
    expect(plain(decoded).headers).toEqual([[[], [...bytes("v")]]])
  })

  it("rejects a timestamp that is not a safe integer", () => {
    expect(() => RecordEnvelope.encode({ timestamp: 1.5, key: null, headers: [], value: null })).toThrow(RangeError)
    expect(() => RecordEnvelope.encode({ timestamp: 2 ** 60, key: null, headers: [], value: null })).toThrow(RangeError)
  })

  it("round-trips any record (property)", () => {
    const data = fc.uint8Array({ maxLength: 64 })
    const record = fc.record({
      timestamp: fc.maxSafeInteger().chain((n) => fc.constantFrom(n, -n, n % 4_102_444_800_000)).map((t) => t + 0), // no -0: it encodes as 0
      key: fc.option(data, { nil: null }),
      headers: fc.array(fc.tuple(data, fc.option(data, { nil: null })), { maxLength: 6 }),
      value: fc.option(fc.uint8Array({ maxLength: 512 }), { nil: null })
    })
    fc.assert(fc.property(record, (input) => {
      const payload = RecordEnvelope.encode(input)
      expect(payload.byteLength).toBe(RecordEnvelope.encodedSize(input))
      expect(plain(RecordEnvelope.decode(payload))).toEqual(plain(input))
    }), { numRuns: 500 })
  })

  it("rejects malformed input with MalformedEnvelope", () => {
    const good = RecordEnvelope.encode({ timestamp: 1, key: bytes("key"), headers: [[bytes("h"), bytes("v")]], value: bytes("value") })
    const patched = (at: number, int32: number) => {
      const copy = good.slice()
      new DataView(copy.buffer).setInt32(at, int32)
      return copy
    }
    // Offsets in `good`: key length at 9, header count at 16, header key length at 20, header value length at 25, value length at 30.
    const cases: Array<[string, Uint8Array, RegExp]> = [
      ["empty", new Uint8Array(0), /shorter than the 21-byte minimum/],
      ["a raw value (recordFormat \"value\")", bytes("orders/0/12......................"), /magic byte 111/],
      ["wrong magic", Uint8Array.of(2, ...good.subarray(1)), /magic byte 2/],
      ["truncated", good.subarray(0, good.byteLength - 1), /value of 5 bytes past the end/],
      ["trailing bytes", Uint8Array.of(...good, 0), /1 bytes after the value/],
      ["key past the end", patched(9, 1000), /key of 1000 bytes past the end/],
      ["negative key length", patched(9, -2), /key length -2/],
      ["negative header count", patched(16, -1), /header count -1/],
      ["huge header count", patched(16, 0x7fffffff), /header count 2147483647/],
      ["null header key", patched(20, -1), /header 0 key length -1/],
      ["negative header value length", patched(25, -5), /header 0 value length -5/],
      ["timestamp out of range", (() => {
        const copy = good.slice()
        new DataView(copy.buffer).setInt32(1, 0x7fffffff)
        return copy
      })(), /timestamp outside the safe integer range/]
    ]
    for (const [label, payload, message] of cases) {
      const error = malformed(payload)
      expect(error, label).toBeInstanceOf(RecordEnvelope.MalformedEnvelope)
      expect(error?._tag).toBe("MalformedEnvelope")
      expect(error?.message, label).toMatch(message)
      expect(error?.byteLength).toBe(payload.byteLength)
    }
  })

  it("rejects every truncation of a valid envelope", () => {
    const good = RecordEnvelope.encode({ timestamp: 99, key: bytes("key"), headers: [[bytes("a"), null], [bytes("b"), bytes("c")]], value: bytes("v") })
    for (let n = 0; n < good.byteLength; n++) expect(malformed(good.subarray(0, n)), `${n} bytes`).toBeInstanceOf(RecordEnvelope.MalformedEnvelope)
  })
})
