/**
 * Repair: re-copies each deficit from a readable replica that holds the
 * object (its manifest and body read back, the batch rebuilt, written through
 * the ordinary `Sink` contract to each replica missing it, and checked against
 * the source manifest's checksum).
 *
 * @internal
 */
import * as Batch from "../../Batch.ts"
import * as Record from "../../Record.ts"
import { Effect } from "effect"
import * as Bodies from "../bodies.ts"
import type * as Ledger from "./Ledger.ts"
import * as Replica from "./Replica.ts"

/** What one repair run did. */
export interface Report {
  readonly repaired: ReadonlyArray<{ readonly key: string; readonly replica: string }>
  readonly failed: ReadonlyArray<{ readonly key: string; readonly replica: string; readonly reason: string }>
}

/** Deficits repaired at once. */
export const REPAIR_CONCURRENCY = 4

/**
 * Rebuilds the batch an object holds from its manifest and stored body, so it
 * can be written to another replica through the ordinary `Sink` contract.
 * A compressed object is decompressed to rebuild the records, and the stored
 * bytes themselves become the batch's body: the copy is byte for byte the
 * source's, whatever level compressed it. Throws
 * `Compression.DecompressionFailed` when the body does not decompress.
 */
export const batchFromObject = (manifest: Batch.Manifest, body: Uint8Array): Batch.SealedBatch => {
  const payloads = Batch.decodeObject(manifest, body)
  const batch: Batch.SealedBatch = {
    key: manifest.key,
    source: manifest.source,
    partition: manifest.partition,
    sequence: 0,
    firstOffset: manifest.firstOffset,
    lastOffset: manifest.lastOffset,
    records: payloads.length,
    bytes: manifest.payloadBytes,
    sealReason: manifest.sealReason,
    openedAt: manifest.openedAt,
    sealedAt: manifest.sealedAt,
    chunks: [Record.chunkOf(manifest.source, manifest.partition, manifest.firstOffset, payloads)],
    ...(manifest.gap !== undefined ? { gap: manifest.gap } : {}),
    ...(manifest.compression !== "none" ? { compression: { codec: manifest.compression } } : {})
  }
  if (manifest.compression !== "none") Bodies.remember(batch, body)
  return batch
}

const allFailed = (deficit: Ledger.DeficitView, reason: string): Report => ({
  repaired: [],
  failed: [...deficit.missing.keys()].map((replica) => ({ key: deficit.key, replica, reason }))
})

/** Reads the object and manifest of a deficit back from a readable replica that has it. */
const readSource = (replicas: ReadonlyArray<Replica.Replica>, deficit: Ledger.DeficitView) =>
  Effect.gen(function*() {
    const from = replicas.find((r) => deficit.have.includes(r.name) && r.readObject !== undefined && r.readManifest !== undefined)
    if (from === undefined || from.readObject === undefined || from.readManifest === undefined) {
      return { _tag: "Failed" as const, reason: "no readable replica holds the object" }
    }
    const read = yield* Effect.result(Effect.all([from.readManifest(deficit.key), from.readObject(deficit.key)]))
    if (read._tag === "Failure") return { _tag: "Failed" as const, reason: `read from ${from.name}: ${read.failure.code}` }
    const [manifest, body] = read.success
    const rebuilt = yield* Effect.result(Effect.try(() => batchFromObject(manifest, body)))
    if (rebuilt._tag === "Failure") return { _tag: "Failed" as const, reason: `${from.name} holds a body that does not decompress as ${manifest.compression}` }
    const batch = rebuilt.success
    if (
      body.byteLength !== manifest.objectBytes || Batch.bodyBytes(batch) !== (manifest.bodyBytes ?? manifest.objectBytes) ||
      batch.records !== manifest.records
    ) {
      return { _tag: "Failed" as const, reason: `${from.name} holds a body that does not match its manifest` }
    }
    return { _tag: "Read" as const, manifest, batch }
  })

/** Repairs one deficit on every replica missing it; resolved deficits leave the ledger. */
export const repairOne = (
  replicas: ReadonlyArray<Replica.Replica>,
  deficits: Ledger.Deficits,
  lagTimeout: number,
  deficit: Ledger.DeficitView
): Effect.Effect<Report> =>
  Effect.gen(function*() {
    const source = yield* readSource(replicas, deficit)
    if (source._tag === "Failed") return allFailed(deficit, source.reason)
    const { manifest, batch } = source
    const repaired: Array<{ key: string; replica: string }> = []
    const failed: Array<{ key: string; replica: string; reason: string }> = []
    for (const name of deficit.missing.keys()) {
      const replica = replicas.find((r) => r.name === name)
      if (replica === undefined) continue
      const result = yield* Effect.result(Replica.write(replica, batch, lagTimeout))
      if (result._tag === "Failure") {
        failed.push({ key: deficit.key, replica: name, reason: result.failure.code })
        continue
      }
      const same = result.success.checksum.algorithm !== manifest.checksum.algorithm ||
        result.success.checksum.value === manifest.checksum.value
      if (!same) {
        failed.push({ key: deficit.key, replica: name, reason: "checksum differs from the source manifest" })
        continue
      }
      deficits.resolve(deficit.key, name)
      repaired.push({ key: deficit.key, replica: name })
    }
    return { repaired, failed }
  })

/** Repairs every deficit listed now, {@link REPAIR_CONCURRENCY} at once. */
export const repairAll = (
  replicas: ReadonlyArray<Replica.Replica>,
  deficits: Ledger.Deficits,
  lagTimeout: number
): Effect.Effect<Report> =>
  Effect.suspend(() =>
    Effect.map(
      Effect.forEach(deficits.list(), (d) => repairOne(replicas, deficits, lagTimeout, d), { concurrency: REPAIR_CONCURRENCY }),
      (results) => ({ repaired: results.flatMap((r) => r.repaired), failed: results.flatMap((r) => r.failed) })
    )
  )
