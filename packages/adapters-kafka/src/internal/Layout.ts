/**
 * Byte-layout constants shared by the record envelope's encoder and decoder
 * (`RecordEnvelope.ts`), the fetch decoder that writes envelopes in place
 * (`decode.ts`) and the record-batch reader (`RecordBatch.ts`): each defined
 * once here.
 *
 * @internal
 */
import { Record } from "@sluice/core"

/** 2³²: 64-bit integers (timestamps, offsets) are written and read as two 32-bit halves, as numbers (DataView's 64-bit accessors take BigInt). */
export const TWO_32 = 4294967296

/** An envelope's fixed bytes: magic (1), timestamp (8), key length, header count, value length (4 each). */
export const ENVELOPE_FIXED_BYTES = 1 + 8 + 4 + 4 + 4

/** An envelope header's fixed bytes: key length, value length (4 each). */
export const ENVELOPE_HEADER_BYTES = 4 + 4

/** Bytes of the length before each payload of a framed chunk: the core's, read here so it is defined once. */
export const FRAME_HEADER_BYTES = Record.FRAME_HEADER_BYTES
