/**
 * Kafka's record batch format (magic 2), read straight from the bytes of a
 * fetch response: batch headers, the records' layout (varints, key, value,
 * headers) as positions into the bytes, compressed batches inflated with the
 * client's codecs, aborted transactions filtered as the Java consumer does.
 *
 * **Why not the client's parser**
 *
 * `@platformatic/kafka` turns every record into an object with a BigInt
 * timestamp delta, one `Buffer` per key and value and an array of headers:
 * over half of the read path's CPU and most of its garbage (a V8 profile of
 * `KafkaSource.events`, 150-byte records). Reading positions out of the bytes
 * allocates nothing per record.
 *
 * Layout (Kafka's `DefaultRecordBatch` / `DefaultRecord`):
 *
 * | batch bytes | field |
 * |---|---|
 * | 8 | base offset |
 * | 4 | length (of what follows) |
 * | 4 | partition leader epoch |
 * | 1 | magic (2) |
 * | 4 | CRC-32C of attributes … end |
 * | 2 | attributes: codec (bits 0–2), log-append time (3), transactional (4), control (5) |
 * | 4 | last offset delta |
 * | 8 + 8 | first and max timestamp |
 * | 8 + 2 + 4 | producer id, epoch, base sequence |
 * | 4 | record count, then the records (compressed as one block when the codec is set) |
 *
 * A record: varint length, int8 attributes, varlong timestamp delta, varint
 * offset delta, varint key length (-1: null) and key, varint value length and
 * value, varint header count, per header varint key length and key, varint
 * value length and value. Varints are zig-zag encoded.
 *
 * The batch CRC is not checked (the client does not check it either; TCP and
 * the broker's own checks cover the wire).
 *
 * @internal
 */
import { compressionsAlgorithmsByBitmask } from "@platformatic/kafka"
import { TWO_32 } from "./Layout.ts"

/** Bytes before the records of a batch. */
const HEADER_BYTES = 61
/** Base offset and length: what must be there to know a batch's size. */
const LOG_OVERHEAD = 12
const MAGIC = 2
const CODEC_MASK = 0x07
/** Attribute bit: timestamps are the broker's append time (`maxTimestamp`). */
export const LOG_APPEND_TIME = 0x08
const TRANSACTIONAL = 0x10
/** Attribute bit of a control batch (transaction markers): no user records. */
const CONTROL = 0x20

/**
 * The bytes are not a well-formed record batch: a wrong magic, a record running
 * past its batch, an unknown codec.
 */
export class RecordBatchError extends Error {
  override readonly name = "RecordBatchError"
}

/** One whole batch of a fetch response. */
export interface WireBatch {
  readonly baseOffset: number
  /** One past the batch's last offset. */
  readonly end: number
  readonly attributes: number
  readonly firstTimestamp: number
  readonly maxTimestamp: number
  readonly count: number
  /** The records (inflated when the batch was compressed). */
  readonly records: Uint8Array
  /** Whether its records are dropped: a control batch, or an aborted transaction's. */
  readonly skip: boolean
}

/** An aborted transaction a read_committed fetch reports. */
export interface AbortedTransaction {
  readonly producerId: bigint
  readonly firstOffset: bigint
}

const plain = (bytes: Uint8Array): Uint8Array => new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)

const viewOf = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** int64 read as a number (offsets and timestamps are safe integers). */
const int64 = (view: DataView, at: number): number => view.getInt32(at) * TWO_32 + view.getUint32(at + 4)

/**
 * The whole batches in `bytes` (a partition's records in a fetch response), in
 * order. A trailing partial batch (the broker cuts a response at its size
 * limit) is left out. With `aborted` (read_committed), the batches of aborted
 * transactions are marked `skip`, as are control batches.
 */
export const readBatches = (response: Uint8Array, aborted: ReadonlyArray<AbortedTransaction> = []): Array<WireBatch> => {
  // Views of a plain Uint8Array: `Buffer#subarray` costs a `Buffer` object each.
  const bytes = plain(response)
  const view = viewOf(bytes)
  const out: Array<WireBatch> = []
  const pending = aborted.length === 0 ? aborted : [...aborted].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
  let nextAborted = 0
  const abortedProducers = new Set<bigint>()
  let at = 0
  while (bytes.byteLength - at >= LOG_OVERHEAD) {
    const length = view.getInt32(at + 8)
    const stop = at + LOG_OVERHEAD + length
    if (stop > bytes.byteLength) break
    if (length < HEADER_BYTES - LOG_OVERHEAD) throw new RecordBatchError(`record batch at byte ${at}: length ${length}`)
    const magic = view.getInt8(at + 16)
    if (magic !== MAGIC) throw new RecordBatchError(`record batch at byte ${at}: magic ${magic}, only 2 is read`)
    const baseOffset = int64(view, at)
    const attributes = view.getInt16(at + 21)
    const lastOffsetDelta = view.getInt32(at + 23)
    const producerId = view.getBigInt64(at + 43)
    const count = view.getInt32(at + 57)
    let records = bytes.subarray(at + HEADER_BYTES, stop)
    const codec = attributes & CODEC_MASK
    if (codec !== 0) {
      const algorithm = compressionsAlgorithmsByBitmask[codec]
      if (algorithm === undefined) throw new RecordBatchError(`record batch at offset ${baseOffset}: unknown codec ${codec}`)
      records = plain(algorithm.decompressSync(Buffer.from(records.buffer, records.byteOffset, records.byteLength)))
    }
    const end = baseOffset + lastOffsetDelta + 1
    // Aborted transactions that started at or before this batch's last offset.
    while (nextAborted < pending.length && Number(pending[nextAborted]?.firstOffset) < end) {
      abortedProducers.add(pending[nextAborted++]?.producerId ?? -1n)
    }
    let skip = false
    if ((attributes & CONTROL) !== 0) {
      skip = true
      if (abortedProducers.has(producerId) && controlType(records) === ABORT_MARKER) abortedProducers.delete(producerId)
    } else if ((attributes & TRANSACTIONAL) !== 0 && abortedProducers.has(producerId)) {
      skip = true
    }
    out.push({
      baseOffset,
      end,
      attributes,
      firstTimestamp: int64(view, at + 27),
      maxTimestamp: int64(view, at + 35),
      count,
      records,
      skip
    })
    at = stop
  }
  return out
}

/** Control record type of an abort marker (key: int16 version, int16 type). */
const ABORT_MARKER = 0

/** The type of a control batch's first record (its key's second int16). */
const controlType = (records: Uint8Array): number => {
  const cursor = new RecordCursor(records)
  if (!cursor.next() || cursor.keyLength < 4) throw new RecordBatchError("control batch without a marker key")
  return viewOf(records).getInt16(cursor.keyStart + 2)
}

/**
 * Reads the records of one batch in place. After {@link next} returns true,
 * the fields describe the record just read; they are overwritten by the next
 * call (nothing is allocated per record).
 */
export class RecordCursor {
  private pos = 0
  timestampDelta = 0
  offsetDelta = 0
  keyStart = 0
  /** -1: a null key. */
  keyLength = -1
  valueStart = 0
  /** -1: a null value (a tombstone). */
  valueLength = -1
  headersStart = 0
  headerCount = 0
  /** Key and value bytes of all headers (nulls count 0). */
  headerBytes = 0

  readonly bytes: Uint8Array

  constructor(bytes: Uint8Array) {
    this.bytes = bytes
  }

  /** Reads the next record: false at the end of the bytes. */
  next(): boolean {
    const bytes = this.bytes
    if (this.pos >= bytes.byteLength) return false
    const length = this.varint()
    const stop = this.pos + length
    if (length < 0 || stop > bytes.byteLength) this.fail(`record length ${length}`)
    this.pos += 1 // attributes (unused)
    this.timestampDelta = this.varlong()
    this.offsetDelta = this.varint()
    this.keyLength = this.varint()
    this.keyStart = this.pos
    if (this.keyLength < -1) this.fail(`key length ${this.keyLength}`)
    if (this.keyLength > 0) this.pos += this.keyLength
    this.valueLength = this.varint()
    this.valueStart = this.pos
    if (this.valueLength < -1) this.fail(`value length ${this.valueLength}`)
    if (this.valueLength > 0) this.pos += this.valueLength
    this.headerCount = this.varint()
    if (this.headerCount < 0) this.fail(`header count ${this.headerCount}`)
    this.headersStart = this.pos
    let headerBytes = 0
    for (let i = 0; i < this.headerCount && this.pos <= stop; i++) {
      const keyLength = this.varint()
      if (keyLength > 0) this.pos += keyLength
      const valueLength = this.varint()
      if (valueLength > 0) this.pos += valueLength
      if (keyLength < -1 || valueLength < -1) this.fail(`header ${i} lengths ${keyLength}, ${valueLength}`)
      headerBytes += Math.max(0, keyLength) + Math.max(0, valueLength)
    }
    this.headerBytes = headerBytes
    if (this.pos !== stop) this.fail(`record of ${length} bytes holds ${this.pos - stop + length}`)
    return true
  }

  /**
   * Calls `f` with each header of the record just read: key start and length,
   * value start and length (-1: null), positions in {@link bytes}.
   */
  forEachHeader(f: (keyStart: number, keyLength: number, valueStart: number, valueLength: number) => void): void {
    const resume = this.pos
    this.pos = this.headersStart
    for (let i = 0; i < this.headerCount; i++) {
      const keyLength = this.varint()
      const keyStart = this.pos
      if (keyLength > 0) this.pos += keyLength
      const valueLength = this.varint()
      const valueStart = this.pos
      if (valueLength > 0) this.pos += valueLength
      f(keyStart, keyLength, valueStart, valueLength)
    }
    this.pos = resume
  }

  private fail(what: string): never {
    throw new RecordBatchError(`malformed record at byte ${this.pos} of ${this.bytes.byteLength}: ${what}`)
  }

  /** A zig-zag varint (int32). */
  private varint(): number {
    const bytes = this.bytes
    let result = 0
    let shift = 0
    let byte = 0
    do {
      if (shift > 28 || this.pos >= bytes.byteLength) this.fail("varint past the end or over 5 bytes")
      byte = bytes[this.pos++] ?? 0
      result |= (byte & 0x7f) << shift
      shift += 7
    } while ((byte & 0x80) !== 0)
    return (result >>> 1) ^ -(result & 1)
  }

  /** A zig-zag varlong, as a number (timestamp deltas are far below 2^53). */
  private varlong(): number {
    const bytes = this.bytes
    let result = 0
    let scale = 1
    let byte = 0
    do {
      if (scale > 2 ** 63 || this.pos >= bytes.byteLength) this.fail("varlong past the end or over 10 bytes")
      byte = bytes[this.pos++] ?? 0
      result += (byte & 0x7f) * scale
      scale *= 128
    } while ((byte & 0x80) !== 0)
    return result % 2 === 0 ? result / 2 : -(result + 1) / 2
  }
}
