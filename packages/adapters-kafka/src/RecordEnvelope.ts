/**
 * The record envelope: how the Kafka source archives a whole record (timestamp,
 * key, headers, value) as one payload when `recordFormat` is `"envelope"`.
 *
 * **Details**
 *
 * A small self-describing binary layout, all integers big-endian:
 *
 * | bytes | field |
 * |---|---|
 * | 1 | magic, {@link MAGIC} (`1`) |
 * | 8 | timestamp, signed int64, ms since the epoch |
 * | 4 + n | key: int32 length (`-1` for a null key), then the bytes |
 * | 4 | header count, int32 |
 * | per header: 4 + n | header key: int32 length, then the bytes |
 * | per header: 4 + n | header value: int32 length (`-1` for null), then the bytes |
 * | 4 + n | value: int32 length (`-1` for a null value, a tombstone), then the bytes |
 *
 * The envelope holds only offset-independent data: the partition and offset of
 * a record are given by the batch manifest and the record's index in the object
 * (`Batch.decodeObject`). A record with a null key, no headers and a `v`-byte
 * value takes `21 + v` bytes.
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * import { RecordEnvelope } from "@sluice/adapter-kafka"
 *
 * declare const manifest: Batch.Manifest // its manifest (`<key>.manifest.json`)
 * declare const body: Uint8Array // an archived object
 * for (const payload of Batch.decodeObject(manifest, body)) {
 *   const { timestamp, key, headers, value } = RecordEnvelope.decode(payload)
 *   console.log(new Date(timestamp), key, headers.length, value?.byteLength)
 * }
 * ```
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ENVELOPE_FIXED_BYTES, ENVELOPE_HEADER_BYTES, TWO_32 } from "./internal/Layout.ts"

/**
 * The first byte of every envelope (the format version).
 *
 * @since 0.1.0
 */
export const MAGIC = 1

const EMPTY = new Uint8Array(0)

/**
 * A decoded record: what {@link decode} returns. `key`, header values and
 * `value` may be null (a tombstone has a null value). Byte arrays are views into
 * the decoded payload (no copy).
 *
 * @since 0.1.0
 */
export interface Envelope {
  /** ms since the epoch: the record's create time, or the broker's append time on a `LogAppendTime` topic. */
  readonly timestamp: number
  readonly key: Uint8Array | null
  /** In record order; a key may repeat. */
  readonly headers: ReadonlyArray<readonly [Uint8Array, Uint8Array | null]>
  readonly value: Uint8Array | null
}

/**
 * What {@link encode} and {@link encodeInto} write: a record's key, headers and
 * value. A `@platformatic/kafka` record has this shape.
 *
 * **Details**
 *
 * Kafka defines header keys as non-null strings, so a null header key (which
 * the broker rejects) is written as an empty key.
 *
 * @since 0.1.0
 */
export interface EnvelopeFields {
  readonly key: Uint8Array | null
  readonly headers: ReadonlyArray<readonly [Uint8Array | null, Uint8Array | null]>
  readonly value: Uint8Array | null
}

/**
 * {@link EnvelopeFields} plus the timestamp: the input of {@link encode}. Every
 * {@link Envelope} is one.
 *
 * @since 0.1.0
 */
export interface EnvelopeInput extends EnvelopeFields {
  /** ms since the epoch; a safe integer. */
  readonly timestamp: number
}

/**
 * A payload is not a valid envelope: wrong magic byte, a length running past
 * the end, a negative count, or bytes left over. `position` is the byte at
 * which decoding stopped.
 *
 * @since 0.1.0
 */
export class MalformedEnvelope extends Schema.TaggedError<MalformedEnvelope>()("MalformedEnvelope", {
  message: Schema.String,
  position: Schema.Number,
  byteLength: Schema.Number
}) {}

/**
 * The size in bytes of the envelope of `fields`.
 *
 * @since 0.1.0
 */
export const encodedSize = (fields: EnvelopeFields): number => {
  let size = ENVELOPE_FIXED_BYTES
  if (fields.key !== null) size += fields.key.byteLength
  if (fields.value !== null) size += fields.value.byteLength
  const headers = fields.headers
  for (let i = 0; i < headers.length; i++) {
    const header = headers[i]
    if (header === undefined) continue
    size += ENVELOPE_HEADER_BYTES
    if (header[0] !== null) size += header[0].byteLength
    if (header[1] !== null) size += header[1].byteLength
  }
  return size
}

/**
 * Writes one envelope into `bytes` at `at` and returns the position after it.
 *
 * **When to use**
 *
 * To write many envelopes into one buffer (the source does this for a whole
 * fetch answer): compute the total with {@link encodedSize}, allocate once, then
 * hand out `bytes.subarray(at, next)` per record. For one record, use
 * {@link encode}.
 *
 * **Details**
 *
 * `view` must cover the same memory as `bytes` (`new DataView(bytes.buffer,
 * bytes.byteOffset, bytes.byteLength)`). The space must have been checked with
 * {@link encodedSize}: nothing is checked here. `timestamp` must be a safe
 * integer.
 *
 * @since 0.1.0
 */
export const encodeInto = (
  bytes: Uint8Array,
  view: DataView,
  at: number,
  timestamp: number,
  fields: EnvelopeFields
): number => {
  view.setUint8(at, MAGIC)
  // int64 as two halves: no BigInt per record. floor keeps negative values right.
  const high = Math.floor(timestamp / TWO_32)
  view.setInt32(at + 1, high)
  view.setUint32(at + 5, timestamp - high * TWO_32)
  let p = writeBytes(bytes, view, at + 9, fields.key)
  const headers = fields.headers
  view.setInt32(p, headers.length)
  p += 4
  for (let i = 0; i < headers.length; i++) {
    const header = headers[i]
    if (header === undefined) continue
    p = writeBytes(bytes, view, p, header[0] ?? EMPTY)
    p = writeBytes(bytes, view, p, header[1])
  }
  return writeBytes(bytes, view, p, fields.value)
}

const writeBytes = (bytes: Uint8Array, view: DataView, at: number, data: Uint8Array | null): number => {
  if (data === null) {
    view.setInt32(at, -1)
    return at + 4
  }
  view.setInt32(at, data.byteLength)
  bytes.set(data, at + 4)
  return at + 4 + data.byteLength
}

/**
 * Encodes one record as an envelope (one allocation, sized first).
 *
 * **Details**
 *
 * Throws a `RangeError` when `timestamp` is not a safe integer.
 *
 * **Example**
 *
 * ```ts
 * import { RecordEnvelope } from "@sluice/adapter-kafka"
 *
 * const text = new TextEncoder()
 * const payload = RecordEnvelope.encode({
 *   timestamp: Date.UTC(2025, 0, 1),
 *   key: text.encode("order-17"),
 *   headers: [[text.encode("trace-id"), text.encode("abc")]],
 *   value: text.encode("{\"total\":12}")
 * })
 * RecordEnvelope.decode(payload).timestamp // 1735689600000
 * ```
 *
 * @since 0.1.0
 */
export const encode = (record: EnvelopeInput): Uint8Array => {
  if (!Number.isSafeInteger(record.timestamp)) {
    throw new RangeError(`envelope timestamp must be a safe integer (ms), got ${record.timestamp}`)
  }
  const bytes = new Uint8Array(encodedSize(record))
  encodeInto(bytes, new DataView(bytes.buffer), 0, record.timestamp, record)
  return bytes
}

/**
 * Decodes an envelope. The byte arrays returned are views into `payload`
 * (copy them to keep them past the payload's buffer).
 *
 * **Details**
 *
 * Throws {@link MalformedEnvelope} when `payload` is not exactly one valid
 * envelope (wrong magic, truncated, negative or oversized length or count,
 * trailing bytes, or a timestamp outside the safe integer range).
 *
 * **Example**
 *
 * ```ts
 * import { Batch } from "@sluice/core"
 * import { RecordEnvelope } from "@sluice/adapter-kafka"
 *
 * declare const manifest: Batch.Manifest // its manifest (`<key>.manifest.json`)
 * declare const body: Uint8Array // an archived object (recordFormat "envelope")
 * const text = new TextDecoder()
 * for (const payload of Batch.decodeObject(manifest, body)) {
 *   const record = RecordEnvelope.decode(payload)
 *   const key = record.key === null ? null : text.decode(record.key)
 *   const headers = record.headers.map(([k, v]) => [text.decode(k), v === null ? null : text.decode(v)])
 *   console.log(new Date(record.timestamp).toISOString(), key, headers, record.value)
 * }
 * ```
 *
 * @since 0.1.0
 */
export const decode = (payload: Uint8Array): Envelope => {
  const length = payload.byteLength
  const fail = (message: string, position: number): never => {
    throw new MalformedEnvelope({ message: `malformed record envelope: ${message} at byte ${position} of ${length}`, position, byteLength: length })
  }
  if (length < ENVELOPE_FIXED_BYTES) fail(`${length} bytes, shorter than the ${ENVELOPE_FIXED_BYTES}-byte minimum`, 0)
  const view = new DataView(payload.buffer, payload.byteOffset, length)
  const magic = view.getUint8(0)
  if (magic !== MAGIC) fail(`magic byte ${magic}, expected ${MAGIC}`, 0)
  const high = view.getInt32(1)
  const timestamp = high * TWO_32 + view.getUint32(5)
  if (!Number.isSafeInteger(timestamp)) fail("timestamp outside the safe integer range", 1)
  let p = 9
  /** Reads a length-prefixed field; `-1` is null when `nullable`. */
  const field = (what: string, nullable: boolean): Uint8Array | null => {
    if (p + 4 > length) return fail(`${what} length past the end`, p)
    const size = view.getInt32(p)
    if (size === -1 && nullable) {
      p += 4
      return null
    }
    if (size < 0) return fail(`${what} length ${size}`, p)
    if (p + 4 + size > length) return fail(`${what} of ${size} bytes past the end`, p)
    const out = payload.subarray(p + 4, p + 4 + size)
    p += 4 + size
    return out
  }
  const key = field("key", true)
  if (p + 4 > length) fail("header count past the end", p)
  const count = view.getInt32(p)
  // Each header takes at least 8 bytes: this bounds the array before allocating it.
  if (count < 0 || p + 4 + count * 8 > length) fail(`header count ${count}`, p)
  p += 4
  const headers = new Array<readonly [Uint8Array, Uint8Array | null]>(count)
  for (let i = 0; i < count; i++) {
    const headerKey = field(`header ${i} key`, false) ?? EMPTY
    headers[i] = [headerKey, field(`header ${i} value`, true)]
  }
  const value = field("value", true)
  if (p !== length) fail(`${length - p} bytes after the value`, p)
  return { timestamp, key, headers, value }
}
