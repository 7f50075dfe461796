/**
 * bench:e2e — checking an archive from outside: every object in a bucket is
 * listed and read back, every record decoded (`Batch.decodeObject` with its
 * manifest, which decompresses per its `compression`, or `Batch.decodeBody`
 * for the plain contender's manifest-less objects; then
 * `RecordEnvelope.decode`), and each partition must hold every offset from 0
 * to its end exactly once, each record the one produced there; Sluice's
 * manifests must match their objects. The group's committed offsets must be
 * the end offsets. Anything else throws.
 */
import { DeleteBucketCommand, DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import type { S3Client } from "@aws-sdk/client-s3"
import { RecordEnvelope } from "@sluice/adapter-kafka"
import { Batch } from "@sluice/core"
import { Schema } from "effect"
import { RECORD_BYTES, valuePrefix } from "./services.ts"

/** What a checked archive holds. */
export interface Archive {
  readonly objects: number
  readonly objectBytes: number
  readonly records: number
  /** Median records of the objects sealed on fill (manifests' `sealReason` "records" or "bytes"); 0 without manifests. */
  readonly filledRecords: number
  /** Median body bytes of those objects; 0 without manifests. */
  readonly filledBytes: number
}

const OBJECT_KEY = /(?:^|\/)p=(\d+)\/(\d+)-(\d+)\.rec$/
const decodeManifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))

/** Every key of `bucket` with its size, all pages. */
export const listKeys = async (client: S3Client, bucket: string): Promise<Array<{ readonly key: string; readonly size: number }>> => {
  const out: Array<{ key: string; size: number }> = []
  let token: string | undefined
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
    for (const o of page.Contents ?? []) out.push({ key: o.Key ?? "", size: o.Size ?? 0 })
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined
  } while (token !== undefined)
  return out
}

/** The body of `bucket/key`. */
export const getBytes = async (client: S3Client, bucket: string, key: string): Promise<Uint8Array> => {
  const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  return (await answer.Body?.transformToByteArray()) ?? new Uint8Array(0)
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : (s[Math.floor((s.length - 1) / 2)] ?? 0)
}

/**
 * Reads the whole archive in `bucket` back and checks it against the topic's
 * `ends` (end offset of every partition). `withManifests`: every object must
 * have its manifest (Sluice), and none may be present otherwise.
 */
export const check = async (
  client: S3Client,
  bucket: string,
  ends: ReadonlyArray<number>,
  withManifests: boolean
): Promise<Archive> => {
  const listed = await listKeys(client, bucket)
  const manifestKeys = new Set(listed.filter((o) => o.key.endsWith(".manifest.json")).map((o) => o.key))
  const objects = listed.filter((o) => o.key.endsWith(".rec"))
  const stray = listed.filter((o) => !o.key.endsWith(".rec") && !manifestKeys.has(o.key))
  if (stray.length > 0) throw new Error(`${bucket}: unexpected keys ${stray.slice(0, 3).map((o) => o.key).join(", ")}`)
  if (!withManifests && manifestKeys.size > 0) throw new Error(`${bucket}: ${manifestKeys.size} manifests where none were written`)
  if (withManifests && manifestKeys.size !== objects.length) {
    throw new Error(`${bucket}: ${objects.length} objects but ${manifestKeys.size} manifests`)
  }
  // Offset ranges per partition, to prove each offset is held exactly once.
  const ranges = ends.map(() => new Array<readonly [number, number]>())
  const filled: Array<{ records: number; bytes: number }> = []
  const decoder = new TextDecoder()
  let records = 0
  let objectBytes = 0
  for (const { key, size } of objects) {
    const m = OBJECT_KEY.exec(key)
    const partition = Number(m?.[1] ?? NaN)
    const first = Number(m?.[2] ?? NaN)
    const last = Number(m?.[3] ?? NaN)
    const partitionRanges = ranges[partition]
    if (m === null || partitionRanges === undefined) throw new Error(`${bucket}: key ${key} names no partition of the topic`)
    const body = await getBytes(client, bucket, key)
    if (body.byteLength !== size) throw new Error(`${bucket}/${key}: listed ${size} bytes, read ${body.byteLength}`)
    const manifestKey = key.replace(/\.rec$/, ".manifest.json")
    if (withManifests && !manifestKeys.has(manifestKey)) throw new Error(`${bucket}/${key}: no manifest`)
    const manifest = withManifests ? decodeManifest(decoder.decode(await getBytes(client, bucket, manifestKey))) : undefined
    // Decompressed as the manifest says (a plain archive has none: not compressed).
    const payloads = manifest === undefined ? Batch.decodeBody(body) : Batch.decodeObject(manifest, body)
    if (payloads.length !== last - first + 1) throw new Error(`${bucket}/${key}: ${payloads.length} records for offsets ${first}..${last}`)
    payloads.forEach((payload, i) => {
      const value = RecordEnvelope.decode(payload).value
      const expected = valuePrefix(partition, first + i)
      if (value === null || value.byteLength !== RECORD_BYTES || !decoder.decode(value.subarray(0, expected.length)).startsWith(expected)) {
        throw new Error(`${bucket}/${key}: record ${i} is not the record produced at ${partition}/${first + i}`)
      }
    })
    if (manifest !== undefined) {
      if (manifest.partition !== partition || manifest.firstOffset !== first || manifest.lastOffset !== last ||
        manifest.records !== payloads.length || manifest.objectBytes !== body.byteLength || manifest.checksum.algorithm !== "CRC32") {
        throw new Error(`${bucket}/${key}: manifest does not match the object (${JSON.stringify(manifest)})`)
      }
      if (manifest.sealReason === "records" || manifest.sealReason === "bytes") filled.push({ records: manifest.records, bytes: body.byteLength })
    }
    partitionRanges.push([first, last])
    records += payloads.length
    objectBytes += body.byteLength
  }
  ranges.forEach((list, partition) => {
    const sorted = [...list].sort((a, b) => a[0] - b[0])
    let next = 0
    for (const [first, last] of sorted) {
      if (first !== next) throw new Error(`${bucket}: partition ${partition} ${first < next ? "holds offset " + first + " twice" : "misses offsets " + next + ".." + (first - 1)}`)
      next = last + 1
    }
    if (next !== ends[partition]) throw new Error(`${bucket}: partition ${partition} archived up to ${next}, topic ends at ${ends[partition]}`)
  })
  return {
    objects: objects.length,
    objectBytes,
    records,
    filledRecords: median(filled.map((f) => f.records)),
    filledBytes: median(filled.map((f) => f.bytes))
  }
}

/** Deletes every object of `bucket`, then the bucket. */
export const removeBucket = async (client: S3Client, bucket: string): Promise<void> => {
  const keys = (await listKeys(client, bucket)).map((o) => o.key)
  for (let i = 0; i < keys.length; i += 1000) {
    await client.send(new DeleteObjectsCommand({
      Bucket: bucket,
      Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true }
    }))
  }
  await client.send(new DeleteBucketCommand({ Bucket: bucket }))
}
