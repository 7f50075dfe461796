/**
 * CRC arithmetic beyond computing a CRC: the CRC of two adjacent byte ranges
 * from the CRCs of each and the length of the second (zlib's `crc32_combine`,
 * in its `x2nmodp` / `multmodp` form since zlib 1.2.12, for any reflected CRC
 * whose initial value equals its final xor: CRC-32, CRC-32C, CRC-64/NVME).
 *
 * Why: a `FULL_OBJECT` multipart upload needs the CRC of the whole body, and
 * the parts' CRCs are computed anyway; combining them costs microseconds per
 * part instead of a second pass over the body.
 *
 * The arithmetic is on `bigint` so one implementation serves 32- and 64-bit
 * CRCs; it runs once per part, never per byte.
 *
 * @internal
 */

/** A reflected CRC: its width and its polynomial in reflected (LSB-first) form. */
export interface CrcSpec {
  readonly width: 32 | 64
  readonly poly: bigint
}

/** CRC-32 (zlib, S3 `CRC32`). */
export const CRC32: CrcSpec = { width: 32, poly: 0xedb88320n }
/** CRC-32C (Castagnoli, S3 `CRC32C`). */
export const CRC32C: CrcSpec = { width: 32, poly: 0x82f63b78n }
/** CRC-64/NVME (S3 `CRC64NVME`). */
export const CRC64NVME: CrcSpec = { width: 64, poly: 0x9a6c9329ac4bc9b5n }

interface Arithmetic {
  /** `a(x) * b(x) mod p(x)`, both reflected. */
  readonly multiply: (a: bigint, b: bigint) => bigint
  /** `x^(8 * bytes) mod p(x)`: the operator that shifts a CRC past `bytes` zero bytes. */
  readonly shift: (bytes: number) => bigint
}

/** Distinct lengths whose shift operator is kept (parts share one length but the last). */
const SHIFT_CACHE_SIZE = 16

const arithmetic = (spec: CrcSpec): Arithmetic => {
  const top = 1n << BigInt(spec.width - 1)
  const multiply = (a: bigint, b: bigint): bigint => {
    if (a === 0n) return 0n
    let m = top
    let p = 0n
    let bb = b
    for (;;) {
      if ((a & m) !== 0n) {
        p ^= bb
        if ((a & (m - 1n)) === 0n) return p
      }
      m >>= 1n
      bb = (bb & 1n) !== 0n ? (bb >> 1n) ^ spec.poly : bb >> 1n
    }
  }
  // powers[k] = x^(2^k) mod p, grown on demand. zlib keeps 32 and indexes them
  // `k & 31`, which relies on the period of x modulo CRC-32's polynomial; other
  // polynomials (CRC-32C's) have another period, so none is assumed here.
  const powers: Array<bigint> = [top >> 1n]
  const power = (k: number): bigint => {
    while (powers.length <= k) {
      const last = powers[powers.length - 1] ?? 0n
      powers.push(multiply(last, last))
    }
    return powers[k] ?? 0n
  }
  const shifts = new Map<number, bigint>()
  const shift = (bytes: number): bigint => {
    const cached = shifts.get(bytes)
    if (cached !== undefined) return cached
    let p = top // x^0
    let n = BigInt(bytes)
    for (let k = 3; n > 0n; k++, n >>= 1n) {
      if ((n & 1n) !== 0n) p = multiply(power(k), p)
    }
    if (shifts.size >= SHIFT_CACHE_SIZE) shifts.clear()
    shifts.set(bytes, p)
    return p
  }
  return { multiply, shift }
}

const arithmetics = new Map<CrcSpec, Arithmetic>()
const arithmeticOf = (spec: CrcSpec): Arithmetic => {
  let a = arithmetics.get(spec)
  if (a === undefined) {
    a = arithmetic(spec)
    arithmetics.set(spec, a)
  }
  return a
}

/**
 * The CRC of `A ‖ B` from `crcA`, `crcB` and the byte length of `B`.
 *
 * **Example**
 *
 * ```ts
 * import { crc32 } from "node:zlib"
 * import { combine, CRC32 } from "./internal/Crc.ts"
 *
 * const a = Buffer.from("1234"), b = Buffer.from("56789")
 * combine(CRC32, BigInt(crc32(a)), BigInt(crc32(b)), b.length) === BigInt(crc32(Buffer.concat([a, b]))) // true
 * ```
 */
export const combine = (spec: CrcSpec, crcA: bigint, crcB: bigint, bytesB: number): bigint => {
  const { multiply, shift } = arithmeticOf(spec)
  return multiply(shift(bytesB), crcA) ^ crcB
}

/** A big-endian CRC digest (as S3 prints it, before base64) as a number. */
export const fromDigest = (raw: Uint8Array): bigint => {
  let v = 0n
  for (const byte of raw) v = (v << 8n) | BigInt(byte)
  return v
}

/** A CRC of `spec` as its big-endian digest. */
export const toDigest = (spec: CrcSpec, value: bigint): Uint8Array => {
  const bytes = spec.width / 8
  const out = new Uint8Array(bytes)
  let v = value
  for (let i = bytes - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}
