/**
 * In-memory source and sink: for the demo, examples and unit tests.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Clock, Effect, Stream } from "effect"
import * as Batch from "./Batch.ts"
import type { Manifest, SealedBatch } from "./Batch.ts"
import { SinkFailure, VerificationFailed } from "./Failure.ts"
import type { RecordChunk } from "./Record.ts"
import { chunkOf, syntheticChunk } from "./Record.ts"
import type { PutReceipt, Sink, VerifiedReceipt } from "./Sink.ts"
import type { Source } from "./Source.ts"

/**
 * An in-memory source with its commit log, for inspection.
 *
 * @since 0.1.0
 */
export interface MemorySource extends Source {
  /** Next offset committed per partition. */
  readonly committed: Map<number, number>
  /** Every commit call, in order. */
  readonly commits: Array<{ readonly partition: number; readonly nextOffset: number }>
  /** Whether the source is paused now, and how often it was paused. */
  readonly pauses: { paused: boolean; count: number }
}

/**
 * An in-memory source: `partitions` partitions of `records` records each, of
 * `recordBytes` bytes, delivered in chunks of `chunkRecords`, partitions
 * interleaved. Starts each partition at `startOffsets[p]` (the committed offset
 * of an earlier run) or 0.
 *
 * **Details**
 *
 * With `payloads: true` (the default) every record is a real byte array whose
 * content encodes its position (`<name>/<partition>/<offset>` padded with `.`),
 * so an archive can be checked record by record. With `payloads: false` chunks
 * are size-only.
 *
 * **Example**
 *
 * ```ts
 * import { Memory } from "@sluice/core"
 *
 * const source = Memory.source({ name: "orders", partitions: 2, records: 1000, recordBytes: 64 })
 * ```
 *
 * @since 0.1.0
 */
export const source = (options: {
  readonly name: string
  readonly partitions: number
  readonly records: number
  readonly recordBytes: number
  readonly chunkRecords?: number
  readonly payloads?: boolean
  readonly startOffsets?: ReadonlyMap<number, number>
  /** Virtual or real ms between rounds of chunks (one chunk per partition per round); 0 by default. */
  readonly intervalMillis?: number
}): MemorySource => {
  const chunkRecords = options.chunkRecords ?? 1000
  const withPayloads = options.payloads ?? true
  const delivered = new Map<number, number>()
  for (let p = 0; p < options.partitions; p++) delivered.set(p, options.startOffsets?.get(p) ?? 0)
  const committed = new Map<number, number>()
  const commits: Array<{ partition: number; nextOffset: number }> = []
  const pauses = { paused: false, count: 0 }
  const encoder = new TextEncoder()

  const nextChunk = (partition: number, now: number): RecordChunk | undefined => {
    const from = delivered.get(partition) ?? 0
    const count = Math.min(chunkRecords, options.records - from)
    if (count <= 0) return undefined
    delivered.set(partition, from + count)
    if (!withPayloads) return syntheticChunk(options.name, partition, from, count, options.recordBytes, now)
    const payloads: Array<Uint8Array> = new Array(count)
    for (let i = 0; i < count; i++) payloads[i] = recordPayload(encoder, options.name, partition, from + i, options.recordBytes)
    return chunkOf(options.name, partition, from, payloads, now)
  }

  const interval = options.intervalMillis ?? 0
  const events: Stream.Stream<RecordChunk> = Stream.fromEffectRepeat(
    Effect.flatMap(interval > 0 ? Effect.andThen(Effect.sleep(interval), Clock.currentTimeMillis) : Clock.currentTimeMillis, (now) =>
      Effect.sync(() => {
        const out: Array<RecordChunk> = []
        for (let p = 0; p < options.partitions; p++) {
          const chunk = nextChunk(p, now)
          if (chunk !== undefined) out.push(chunk)
        }
        return out
      }))
  ).pipe(
    Stream.takeWhile((chunks) => chunks.length > 0),
    Stream.flattenIterable
  )

  return {
    name: options.name,
    events,
    commit: (partition, nextOffset) =>
      Effect.sync(() => {
        committed.set(partition, nextOffset)
        commits.push({ partition, nextOffset })
      }),
    pause: Effect.sync(() => {
      if (!pauses.paused) pauses.count++
      pauses.paused = true
    }),
    resume: Effect.sync(() => {
      pauses.paused = false
    }),
    lag: Effect.sync(() => {
      const lag = new Map<number, number>()
      for (const [p, d] of delivered) lag.set(p, options.records - d)
      return lag
    }),
    committed,
    commits,
    pauses
  }
}

/**
 * The payload `source.ts` gives the record at a position.
 *
 * @since 0.1.0
 */
export const recordPayload = (
  encoder: { encode(text: string): Uint8Array },
  name: string,
  partition: number,
  offset: number,
  recordBytes: number
): Uint8Array => {
  const text = `${name}/${partition}/${offset}`.padEnd(recordBytes, ".").slice(0, recordBytes)
  return encoder.encode(text)
}

/**
 * What the in-memory sink does on one request: succeed, fail with a classified
 * failure, or store a corrupted body (so that verification catches it).
 *
 * @since 0.1.0
 */
export type Fault = SinkFailure | "corrupt" | undefined

/**
 * An in-memory sink with its stored objects, for inspection.
 *
 * @since 0.1.0
 */
export interface MemorySink extends Sink {
  readonly objects: Map<string, { readonly body: Uint8Array; readonly checksum: string }>
  readonly manifests: Map<string, Manifest>
  /** Highest number of object uploads observed at once. */
  readonly peak: { uploading: number; maxUploading: number }
  /** Every request, in order. */
  readonly requests: Array<{ readonly op: "putObject" | "putManifest" | "verify"; readonly key: string }>
}

/**
 * An in-memory sink storing bodies and SHA-256 checksums.
 *
 * **Details**
 *
 * It stores what `Batch.encodeBody` returns: the compressed bytes when the
 * batch is compressed (the pipeline's `compression`), with their checksum and
 * size; read an object back with `Batch.decodeObject(manifests.get(key), body)`.
 *
 * `latencyMillis(op, bytes)` adds a sleep per request (on the Effect clock);
 * `fault(op, key)` injects failures: a `SinkFailure` fails the request, and
 * `"corrupt"` on `putObject` stores a body with one byte flipped.
 *
 * **Example**
 *
 * ```ts
 * import { Failure, Memory } from "@sluice/core"
 *
 * let n = 0
 * const sink = Memory.sink({
 *   latencyMillis: () => 5,
 *   fault: (op) => op === "putObject" && n++ % 10 === 0
 *     ? new Failure.SinkFailure({ failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined, message: "slow down" })
 *     : undefined
 * })
 * ```
 *
 * @since 0.1.0
 */
export const sink = (options: {
  readonly latencyMillis?: (op: "putObject" | "putManifest" | "verify", bytes: number) => number
  readonly fault?: (op: "putObject" | "putManifest" | "verify", key: string) => Fault
} = {}): MemorySink => {
  const objects = new Map<string, { body: Uint8Array; checksum: string }>()
  const manifests = new Map<string, Manifest>()
  const peak = { uploading: 0, maxUploading: 0 }
  const requests: Array<{ op: "putObject" | "putManifest" | "verify"; key: string }> = []
  const delay = (op: "putObject" | "putManifest" | "verify", bytes: number) => {
    const ms = options.latencyMillis?.(op, bytes) ?? 0
    return ms > 0 ? Effect.sleep(ms) : Effect.void
  }
  const faultOf = (op: "putObject" | "putManifest" | "verify", key: string) => options.fault?.(op, key)

  const putObject = (batch: SealedBatch): Effect.Effect<PutReceipt, SinkFailure> =>
    Effect.gen(function*() {
      requests.push({ op: "putObject", key: batch.key })
      peak.uploading++
      peak.maxUploading = Math.max(peak.maxUploading, peak.uploading)
      const body = Batch.encodeBody(batch)
      yield* delay("putObject", body.byteLength).pipe(Effect.ensuring(Effect.sync(() => peak.uploading--)))
      const fault = faultOf("putObject", batch.key)
      if (fault instanceof SinkFailure) return yield* fault
      const checksum = sha256(body)
      if (fault === "corrupt" && body.byteLength > 0) {
        const stored = body.slice()
        stored[0] = (stored[0] ?? 0) ^ 0xff
        objects.set(batch.key, { body: stored, checksum: sha256(stored) })
      } else {
        objects.set(batch.key, { body, checksum })
      }
      return { key: batch.key, objectBytes: body.byteLength, checksum: { algorithm: "SHA256", value: checksum } }
    })

  const putManifest = (manifest: Manifest): Effect.Effect<void, SinkFailure> =>
    Effect.gen(function*() {
      requests.push({ op: "putManifest", key: manifest.key })
      yield* delay("putManifest", 0)
      const fault = faultOf("putManifest", manifest.key)
      if (fault instanceof SinkFailure) return yield* fault
      manifests.set(manifest.key, manifest)
    })

  const verify = (receipt: PutReceipt): Effect.Effect<VerifiedReceipt, SinkFailure | VerificationFailed> =>
    Effect.gen(function*() {
      requests.push({ op: "verify", key: receipt.key })
      yield* delay("verify", 0)
      const fault = faultOf("verify", receipt.key)
      if (fault instanceof SinkFailure) return yield* fault
      const stored = objects.get(receipt.key)
      if (stored === undefined) {
        return yield* new VerificationFailed({ key: receipt.key, reason: "Missing", expected: receipt.checksum.value, actual: "" })
      }
      if (stored.body.byteLength !== receipt.objectBytes) {
        return yield* new VerificationFailed({
          key: receipt.key,
          reason: "SizeMismatch",
          expected: String(receipt.objectBytes),
          actual: String(stored.body.byteLength)
        })
      }
      if (stored.checksum !== receipt.checksum.value) {
        return yield* new VerificationFailed({
          key: receipt.key,
          reason: "ChecksumMismatch",
          expected: receipt.checksum.value,
          actual: stored.checksum
        })
      }
      return { key: receipt.key, objectBytes: stored.body.byteLength, checksum: { algorithm: "SHA256", value: stored.checksum } }
    })

  return { name: "memory", putObject, putManifest, verify, objects, manifests, peak, requests }
}

const sha256 = (body: Uint8Array): string => createHash("sha256").update(body).digest("base64")
