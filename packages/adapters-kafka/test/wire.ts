/**
 * Record batches (magic 2) as a broker sends them, written from the client's
 * `RecordsBatch` objects: the input of `decodePartition`, written here
 * independently of the reader under test (CRC left 0: it is not read).
 */
import type { RecordsBatch } from "@platformatic/kafka"

const zigzag = (n: bigint): bigint => (n << 1n) ^ (n >> 63n)

const varint = (out: Array<number>, value: number | bigint): void => {
  let n = BigInt.asUintN(64, zigzag(BigInt(value)))
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80)
    n >>= 7n
  }
  out.push(Number(n))
}

const bytesField = (out: Array<number>, bytes: Uint8Array | null | undefined): void => {
  if (bytes === null || bytes === undefined) {
    varint(out, -1)
    return
  }
  varint(out, bytes.byteLength)
  for (const b of bytes) out.push(b)
}

/** The records of a batch as bytes (uncompressed). */
export const recordBytes = (batch: RecordsBatch): Buffer => {
  const out: Array<number> = []
  for (const record of batch.records) {
    const body: Array<number> = [record.attributes]
    varint(body, record.timestampDelta)
    varint(body, record.offsetDelta)
    bytesField(body, record.key)
    bytesField(body, record.value)
    varint(body, record.headers.length)
    for (const [k, v] of record.headers) {
      bytesField(body, k)
      bytesField(body, v)
    }
    varint(out, body.length)
    out.push(...body)
  }
  return Buffer.from(out)
}

/**
 * One batch on the wire. `records` replaces the records' bytes (a compressed
 * block, or bytes made malformed on purpose); `magic` and `count` override the
 * header's.
 */
export const batchBytes = (
  batch: RecordsBatch,
  options: { readonly records?: Buffer; readonly magic?: number; readonly count?: number } = {}
): Buffer => {
  const records = options.records ?? recordBytes(batch)
  const head = Buffer.alloc(61)
  head.writeBigInt64BE(batch.firstOffset, 0)
  head.writeInt32BE(61 - 12 + records.byteLength, 8)
  head.writeInt32BE(batch.partitionLeaderEpoch, 12)
  head.writeInt8(options.magic ?? 2, 16)
  head.writeUInt32BE(0, 17)
  head.writeInt16BE(batch.attributes, 21)
  head.writeInt32BE(batch.lastOffsetDelta, 23)
  head.writeBigInt64BE(batch.firstTimestamp, 27)
  head.writeBigInt64BE(batch.maxTimestamp, 35)
  head.writeBigInt64BE(batch.producerId, 43)
  head.writeInt16BE(batch.producerEpoch, 51)
  head.writeInt32BE(batch.firstSequence, 53)
  head.writeInt32BE(options.count ?? batch.records.length, 57)
  return Buffer.concat([head, records])
}

/** Batches one after another, as one partition's records in a fetch response. */
export const wire = (batches: ReadonlyArray<RecordsBatch>): Buffer => Buffer.concat(batches.map((b) => batchBytes(b)))
