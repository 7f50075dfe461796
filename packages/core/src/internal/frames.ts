/**
 * Framed records: per record a big-endian uint32 length, then its bytes, the
 * layout of a batch body and of a framed chunk (`Record.RecordChunk.framed`).
 *
 * @internal
 */

/** Bytes of the length before each record (a big-endian uint32, as in a batch body). */
export const FRAME_HEADER_BYTES = 4

/**
 * How many leading records of a framed buffer fit in `roomBytes` of payload,
 * at most `count`, and where they end in the buffer.
 */
export const framedPrefix = (framed: Uint8Array, count: number, roomBytes: number): { readonly records: number; readonly end: number } => {
  const view = new DataView(framed.buffer, framed.byteOffset, framed.byteLength)
  let used = 0
  let at = 0
  let i = 0
  for (; i < count; i++) {
    const size = view.getUint32(at)
    if (used + size > roomBytes) break
    used += size
    at += FRAME_HEADER_BYTES + size
  }
  return { records: i, end: at }
}
