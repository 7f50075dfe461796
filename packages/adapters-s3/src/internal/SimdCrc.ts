/**
 * CRC-32 and CRC-32C with the CPU's CRC instructions (PCLMULQDQ, SSE 4.2, ARM
 * CRC): `@node-rs/crc32`, a prebuilt native module (napi-rs, Rust's
 * `crc32fast` and `crc32c`) for the common platforms.
 *
 * Why: `npm run bench:checksum` (16 MiB buffers, one core, here): CRC-32 8.2
 * GB/s against 2.9 for `zlib.crc32`, CRC-32C 6.2 GB/s against 0.39 for the
 * AWS SDK's pure-JS `Crc32c`. The sink computes its checksum on the event
 * loop, inside the upload the concurrency policies time.
 *
 * Both are `undefined` where the module does not load (no prebuilt binary for
 * the platform, or a broken install): {@link loadFailure} says why, and the
 * checksums fall back to `Crc32.of` of `@sluice/core`, `zlib.crc32` or the
 * SDK's JavaScript, which compute the same values.
 *
 * @internal
 */
import { createRequire } from "node:module"
import { Effect } from "effect"

interface NodeRsCrc32 {
  readonly crc32: (input: Uint8Array, initialState?: number) => number
  readonly crc32c: (input: Uint8Array, initialState?: number) => number
}

const loaded = ((): { readonly module: NodeRsCrc32 } | { readonly failure: string } => {
  try {
    const module: NodeRsCrc32 = createRequire(import.meta.url)("@node-rs/crc32")
    // One check against the standard check values: a binary that loads but computes wrongly is not used.
    const check = new TextEncoder().encode("123456789")
    if (module.crc32(check) !== 0xcbf43926 || module.crc32c(check) !== 0xe3069283) return { failure: "@node-rs/crc32 computed wrong check values" }
    return { module }
  } catch (error) {
    return { failure: `@node-rs/crc32 did not load: ${error instanceof Error ? error.message : String(error)}` }
  }
})()

/** CRC-32 (S3 `CRC32`) of `data`, or `undefined` where the native module did not load. */
export const crc32: ((data: Uint8Array) => number) | undefined = "module" in loaded ? (data) => loaded.module.crc32(data) : undefined

/** CRC-32C (S3 `CRC32C`) of `data`, or `undefined` where the native module did not load. */
export const crc32c: ((data: Uint8Array) => number) | undefined = "module" in loaded ? (data) => loaded.module.crc32c(data) : undefined

/** Why the native module is not used, or `undefined` when it is. */
export const loadFailure: string | undefined = "failure" in loaded ? loaded.failure : undefined

let failureLogged = false

/**
 * Logs {@link loadFailure} once per process, as a warning (the checksums are
 * still right, only slower); nothing when the module loaded.
 */
export const logLoadFailure: Effect.Effect<void> = Effect.suspend(() => {
  if (loadFailure === undefined || failureLogged) return Effect.void
  failureLogged = true
  return Effect.logWarning(`CRC-32 and CRC-32C computed without the CPU's CRC instructions (slower, same values): ${loadFailure}`)
})
