/** Sealed batches for tests, built from real payloads. */
import { Batch } from "@sluice/core"

export const payload = (source: string, partition: number, offset: number, bytes: number): Uint8Array =>
  new TextEncoder().encode(`${source}/${partition}/${offset}`.padEnd(bytes, "."))

/** A batch of `count` records of `recordBytes` from `firstOffset`. */
export const batchOf = (options: {
  readonly source?: string
  readonly partition?: number
  readonly firstOffset?: number
  readonly count: number
  readonly recordBytes: number
  readonly prefix?: string
}): Batch.SealedBatch => {
  const source = options.source ?? "orders"
  const partition = options.partition ?? 0
  const firstOffset = options.firstOffset ?? 0
  const payloads: Array<Uint8Array> = []
  for (let i = 0; i < options.count; i++) payloads.push(payload(source, partition, firstOffset + i, options.recordBytes))
  return Batch.make({ source, partition, firstOffset, payloads, prefix: options.prefix })
}

/** A batch whose body is about `mib` MiB (records of 64 KiB). */
export const bigBatch = (mib: number, firstOffset = 0): Batch.SealedBatch =>
  batchOf({ firstOffset, count: Math.ceil((mib * 1024 * 1024) / (64 * 1024 + 4)), recordBytes: 64 * 1024 })
