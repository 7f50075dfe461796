/**
 * The bucket audit's decision logic, pure: from what a bucket holds (the
 * listing, the manifests, what each object's bytes turned out to be) to the
 * findings that prove, per partition, that every offset from the first
 * archived to the last (or to the committed one) is in a verified object.
 *
 * **Why pure**
 *
 * Reading the bucket (`AuditS3`) and deciding what the bytes mean (here) are
 * separate, so every rule (coverage, overlap resolution, retention-gap
 * accounting, checksum and record-count checks) is tested on plain data with
 * no server, and the S3 shell stays a loop of requests.
 *
 * **The rules**
 *
 * - An object counts (covers offsets) only when its manifest decodes, agrees
 *   with its key (source, partition, first and last offset), its size equals
 *   the manifest's `objectBytes`, the checksum recomputed from its bytes with
 *   the manifest's algorithm equals the manifest's, and its body decodes to
 *   the manifest's record count. Anything else is an {@link ObjectFailure}.
 * - A `.rec` object without a manifest was never verified by the pipeline
 *   (put → manifest → verify → commit), so it covers nothing; it is listed as
 *   `unmanifested` (a crash leftover) and fails nothing by itself.
 * - A manifest without its object extends the partition's range (the object
 *   was there once), so a deleted object is a hole even when it was the last.
 * - Overlaps: a partition's objects are taken in key order (keys zero-pad the
 *   offsets, so key order is offset order); the first object covering an
 *   offset wins it. A later object overlapping winners is compared with them
 *   record by record (digests of the payloads): equal content is a harmless
 *   `duplicate` (a crash replayed a batch with other boundaries), different
 *   content a `conflict` (a failure).
 * - A hole is a run of offsets in the partition's range no valid object
 *   covers, less the offsets a manifest records as deleted by the source's
 *   retention (`gap`: `expected .. logStart-1`); those are listed as
 *   retention gaps with their counts instead.
 * - The range runs from the first archived offset to the last (or, with a
 *   committed offset for the partition, to `committed - 1`: Kafka's committed
 *   offset is the next one to read). A committed offset past the archive is a
 *   hole up to it: something was committed that no verified object holds.
 * - Every incomplete multipart upload under the prefix is a finding: the sink
 *   aborts its uploads on any failure, so one left behind is an orphan (a
 *   SIGKILL mid-upload leaves one). {@link planAborts} decides which of them
 *   an operator's `sluice audit --abort-orphans` may abort: only those
 *   initiated longer ago than a live upload can last.
 *
 * **Limits**
 *
 * A manifest records the offsets of its records, not the offsets the source
 * skipped after them (transaction markers, compacted-away records between two
 * batches), so on such topics an offset range between two objects that held
 * only markers is reported as a hole.
 *
 * @since 0.3.0
 */
import { Batch } from "@sluice/core"

/**
 * Where a `.rec` key says its object belongs: the key's prefix (before the
 * source segment, `""` when none), the source (percent-decoded, as
 * `ObjectKey.make` encoded it; the topic for the Kafka source), the partition
 * and the offsets.
 *
 * @since 0.3.0
 */
export interface ObjectLocation {
  readonly prefix: string
  readonly source: string
  readonly partition: number
  readonly firstOffset: number
  readonly lastOffset: number
}

const OBJECT_KEY = /^(.*?)([^/]+)\/p=(\d+)\/(\d{20})-(\d{20})\.rec$/
const MANIFEST_SUFFIX = ".manifest.json"

/**
 * Parses an object key written by `ObjectKey.make` (with any bucket key prefix
 * before it); `undefined` for any other key.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 *
 * Audit.parseKey("prod/orders/p=00003/00000000000000000100-00000000000000000199.rec")
 * // { prefix: "prod/", source: "orders", partition: 3, firstOffset: 100, lastOffset: 199 }
 * Audit.parseKey("notes.txt") // undefined
 * ```
 *
 * @since 0.3.0
 */
export const parseKey = (key: string): ObjectLocation | undefined => {
  const m = OBJECT_KEY.exec(key)
  if (m === null) return undefined
  const [, prefix = "", segment = "", partition = "", first = "", last = ""] = m
  let source: string
  try {
    source = decodeURIComponent(segment)
  } catch {
    return undefined
  }
  const firstOffset = Number(first)
  const lastOffset = Number(last)
  if (!Number.isSafeInteger(firstOffset) || !Number.isSafeInteger(lastOffset) || lastOffset < firstOffset) return undefined
  return { prefix, source, partition: Number(partition), firstOffset, lastOffset }
}

/**
 * The object key a manifest key belongs to (`undefined` when `key` is not a
 * manifest key): the inverse of `ObjectKey.manifestKey`.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 *
 * Audit.objectKeyOf("orders/p=00000/00000000000000000000-00000000000000000009.manifest.json")
 * // "orders/p=00000/00000000000000000000-00000000000000000009.rec"
 * ```
 *
 * @since 0.3.0
 */
export const objectKeyOf = (key: string): string | undefined =>
  key.endsWith(MANIFEST_SUFFIX) ? `${key.slice(0, -MANIFEST_SUFFIX.length)}.rec` : undefined

/**
 * One listed key and its size (`ListObjectsV2`'s `Key` and `Size`).
 *
 * @since 0.3.0
 */
export interface Listed {
  readonly key: string
  readonly size: number
}

/**
 * A listing sorted into what the audit reads: the `.rec` objects (with their
 * location and whether a manifest sits beside them), the manifests whose
 * object is missing, and keys that are neither.
 *
 * @since 0.3.0
 */
export interface Classified {
  readonly objects: ReadonlyArray<Listed & { readonly location: ObjectLocation; readonly hasManifest: boolean }>
  /** Object keys (`.rec`) whose manifest is listed but whose object is not. */
  readonly missingObjects: ReadonlyArray<Listed & { readonly location: ObjectLocation }>
  readonly unrecognized: ReadonlyArray<string>
}

/**
 * Sorts a listing (see {@link Classified}); objects in key order.
 *
 * **When to use**
 *
 * Before reading a bucket: it says which manifests and bodies to fetch.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 *
 * const { objects } = Audit.classify([
 *   { key: "orders/p=00000/00000000000000000000-00000000000000000009.rec", size: 140 },
 *   { key: "orders/p=00000/00000000000000000000-00000000000000000009.manifest.json", size: 400 }
 * ])
 * objects[0]?.hasManifest // true
 * ```
 *
 * @since 0.3.0
 */
export const classify = (listed: ReadonlyArray<Listed>): Classified => {
  const keys = new Set(listed.map((l) => l.key))
  const objects: Array<Listed & { location: ObjectLocation; hasManifest: boolean }> = []
  const missingObjects: Array<Listed & { location: ObjectLocation }> = []
  const unrecognized: Array<string> = []
  for (const l of listed) {
    const location = parseKey(l.key)
    if (location !== undefined) {
      objects.push({ ...l, location, hasManifest: keys.has(manifestKeyOf(l.key)) })
      continue
    }
    const objectKey = objectKeyOf(l.key)
    const owner = objectKey === undefined ? undefined : parseKey(objectKey)
    if (objectKey !== undefined && owner !== undefined) {
      if (!keys.has(objectKey)) missingObjects.push({ key: objectKey, size: 0, location: owner })
      continue
    }
    unrecognized.push(l.key)
  }
  objects.sort((a, b) => compareKeys(a.key, b.key))
  missingObjects.sort((a, b) => compareKeys(a.key, b.key))
  unrecognized.sort(compareKeys)
  return { objects, missingObjects, unrecognized }
}

const manifestKeyOf = (objectKey: string): string => objectKey.replace(/\.rec$/, "") + MANIFEST_SUFFIX
const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * What reading an object's manifest gave.
 *
 * @since 0.3.0
 */
export type ManifestRead =
  | { readonly _tag: "Manifest"; readonly manifest: Batch.Manifest }
  | { readonly _tag: "Invalid"; readonly message: string }

/**
 * What reading an object's bytes gave: its size, the checksum recomputed from
 * them with the manifest's algorithm, and its records (count and one digest
 * per record payload, in body order, to compare overlapping objects).
 * `records` is `undefined` when the body does not decode (`decodeError`).
 *
 * @since 0.3.0
 */
export type ContentRead =
  | {
    readonly _tag: "Content"
    readonly bytes: number
    /** `undefined` when the manifest's algorithm is not one the audit computes. */
    readonly checksum: { readonly algorithm: string; readonly value: string } | undefined
    readonly records: number | undefined
    readonly digests: ArrayLike<number>
    readonly decodeError?: string | undefined
  }
  | { readonly _tag: "Unreadable"; readonly message: string }

/**
 * A committed offset: the next offset the source would read for a partition
 * (Kafka's convention), so offsets up to `offset - 1` must be archived.
 * `source` matches a key's source, or its prefix and source (`prod/orders`).
 *
 * @since 0.3.0
 */
export interface Committed {
  readonly source: string
  readonly partition: number
  readonly offset: number
}

/**
 * An incomplete multipart upload (`ListMultipartUploads`).
 *
 * @since 0.3.0
 */
export interface PendingUpload {
  readonly key: string
  readonly uploadId: string
  /** ISO time the upload was created, when the store says. */
  readonly initiated: string | undefined
}

/**
 * Everything the audit decides from.
 *
 * @since 0.3.0
 */
export interface Input {
  readonly listed: ReadonlyArray<Listed>
  /** By object key (`.rec`); an object with a manifest but no entry here counts as unread. */
  readonly manifests: ReadonlyMap<string, ManifestRead>
  /** By object key; an object with a manifest but no entry here counts as unread. */
  readonly contents: ReadonlyMap<string, ContentRead>
  readonly uploads: ReadonlyArray<PendingUpload>
  /** The upload listing stopped at its bound (`AuditS3.MAX_UPLOADS_LISTED`): more may exist. */
  readonly uploadsTruncated?: boolean | undefined
  readonly committed?: ReadonlyArray<Committed> | undefined
}

/**
 * Why an object does not count.
 *
 * @since 0.3.0
 */
export type FailureKind =
  | "ChecksumMismatch"
  | "SizeMismatch"
  | "RecordCountMismatch"
  | "ManifestMismatch"
  | "ManifestInvalid"
  | "Unreadable"
  | "Undecodable"
  | "UnknownChecksumAlgorithm"

/**
 * An object that does not count toward coverage, and why.
 *
 * @since 0.3.0
 */
export interface ObjectFailure {
  readonly key: string
  readonly kind: FailureKind
  readonly expected: string
  readonly actual: string
}

/**
 * Offsets `from .. to` (inclusive, `count` of them) of a partition that no
 * valid object covers.
 *
 * @since 0.3.0
 */
export interface Hole {
  readonly prefix: string
  readonly source: string
  readonly partition: number
  readonly from: number
  readonly to: number
  readonly count: number
  /** `archive`: between or inside archived objects; `committed`: past the last archived, up to the committed offset. */
  readonly where: "archive" | "committed"
}

/**
 * An object overlapping objects earlier in key order, which won the
 * overlapping offsets.
 *
 * @since 0.3.0
 */
export interface Overlap {
  readonly prefix: string
  readonly source: string
  readonly partition: number
  /** The later object (it loses the overlapping offsets). */
  readonly key: string
  /** The winners it overlaps. */
  readonly winners: ReadonlyArray<string>
  readonly from: number
  readonly to: number
  /** `duplicate`: the overlapping records are equal (harmless); `conflict`: they differ. */
  readonly kind: "duplicate" | "conflict"
  /** The first offset whose records differ (or that only one object holds), for a conflict. */
  readonly firstDifference: number | undefined
}

/**
 * A retention gap a manifest records: offsets `expected .. logStart-1` were
 * deleted by the source's retention before they were read.
 *
 * @since 0.3.0
 */
export interface RetentionGap {
  readonly prefix: string
  readonly source: string
  readonly partition: number
  /** The object whose manifest records it (the first in key order when several do). */
  readonly key: string
  readonly expected: number
  readonly logStart: number
  readonly lostRecords: number
}

/**
 * One partition's account.
 *
 * @since 0.3.0
 */
export interface PartitionReport {
  readonly prefix: string
  readonly source: string
  readonly partition: number
  /** First archived offset. */
  readonly from: number
  /** Last offset the range must cover (the last archived, or committed - 1). */
  readonly to: number
  readonly committed: number | undefined
  readonly objects: number
  /** Records in valid objects, each offset counted once. */
  readonly records: number
  readonly holes: number
  readonly lostRecords: number
}

/**
 * A committed offset for a partition of which the bucket holds nothing.
 *
 * @since 0.3.0
 */
export interface Unarchived {
  readonly source: string
  readonly partition: number
  readonly committed: number
}

/**
 * The audit's findings. `ok` is true when there is no hole, no object
 * failure (`checksumFailures` among them), no missing object, no conflicting
 * overlap, no unarchived committed partition and no orphaned upload.
 *
 * @since 0.3.0
 */
export interface Report {
  readonly ok: boolean
  readonly partitions: number
  /** `.rec` objects listed. */
  readonly objects: number
  /** Records in valid objects, each offset counted once. */
  readonly records: number
  readonly holes: ReadonlyArray<Hole>
  readonly overlaps: ReadonlyArray<Overlap>
  readonly duplicates: number
  readonly conflicts: number
  readonly checksumFailures: number
  readonly objectFailures: ReadonlyArray<ObjectFailure>
  /** Objects whose manifest is in the bucket but which are not. */
  readonly missingObjects: ReadonlyArray<string>
  /** Objects without a manifest (never verified; they cover nothing). */
  readonly unmanifested: ReadonlyArray<string>
  readonly retentionGaps: ReadonlyArray<RetentionGap>
  /** Sum of the retention gaps' `lostRecords`. */
  readonly lostRecords: number
  readonly orphanedUploads: ReadonlyArray<PendingUpload>
  /** The upload listing stopped at its bound: `orphanedUploads` are the first ones, more may exist. */
  readonly orphanedUploadsTruncated: boolean
  readonly unarchived: ReadonlyArray<Unarchived>
  readonly unrecognized: ReadonlyArray<string>
  readonly byPartition: ReadonlyArray<PartitionReport>
}

/** A `.rec` object as the coverage walk sees it. */
interface Candidate {
  readonly key: string
  readonly location: ObjectLocation
  /** The manifest and digests of a valid object; undefined for one that does not count. */
  readonly valid: { readonly manifest: Batch.Manifest; readonly digests: ArrayLike<number> } | undefined
}

/** The offsets `from .. to` an object won in the coverage walk. */
interface Segment {
  readonly from: number
  readonly to: number
  readonly object: Candidate
}

/**
 * Checks one object against its manifest and bytes; the failures (empty when
 * it counts).
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 * declare const manifest: import("@sluice/core").Batch.Manifest
 *
 * const failures = Audit.checkObject(
 *   { key: manifest.key, size: manifest.objectBytes },
 *   { _tag: "Manifest", manifest },
 *   { _tag: "Content", bytes: manifest.objectBytes, checksum: manifest.checksum, records: manifest.records, digests: [] }
 * ) // []
 * ```
 *
 * @since 0.3.0
 */
export const checkObject = (
  listed: Listed,
  manifestRead: ManifestRead | undefined,
  content: ContentRead | undefined
): Array<ObjectFailure> => {
  const key = listed.key
  if (manifestRead === undefined) return [{ key, kind: "Unreadable", expected: "a manifest", actual: "not read" }]
  if (manifestRead._tag === "Invalid") return [{ key, kind: "ManifestInvalid", expected: "a manifest", actual: manifestRead.message }]
  const manifest = manifestRead.manifest
  const location = parseKey(key)
  const failures: Array<ObjectFailure> = []
  const mismatch = (field: string, expected: string | number, actual: string | number) => {
    if (String(expected) !== String(actual)) {
      failures.push({ key, kind: "ManifestMismatch", expected: `${field}=${expected}`, actual: `${field}=${actual}` })
    }
  }
  if (!key.endsWith(manifest.key)) mismatch("key", key, manifest.key)
  if (location !== undefined) {
    mismatch("source", location.source, manifest.source)
    mismatch("partition", location.partition, manifest.partition)
    mismatch("firstOffset", location.firstOffset, manifest.firstOffset)
    mismatch("lastOffset", location.lastOffset, manifest.lastOffset)
  }
  const runsProblem = offsetRunsProblem(manifest)
  if (runsProblem !== undefined) {
    failures.push({ key, kind: "ManifestMismatch", expected: "offsets within firstOffset..lastOffset", actual: runsProblem })
  }
  if (listed.size !== manifest.objectBytes) {
    failures.push({ key, kind: "SizeMismatch", expected: String(manifest.objectBytes), actual: String(listed.size) })
  }
  if (content === undefined) {
    failures.push({ key, kind: "Unreadable", expected: "the object's bytes", actual: "not read" })
    return failures
  }
  if (content._tag === "Unreadable") {
    failures.push({ key, kind: "Unreadable", expected: "the object's bytes", actual: content.message })
    return failures
  }
  if (content.bytes !== listed.size && listed.size === manifest.objectBytes) {
    failures.push({ key, kind: "SizeMismatch", expected: String(manifest.objectBytes), actual: String(content.bytes) })
  }
  const expected = `${manifest.checksum.algorithm}:${manifest.checksum.value}`
  if (content.checksum === undefined) {
    failures.push({ key, kind: "UnknownChecksumAlgorithm", expected, actual: "(not computed)" })
  } else if (content.checksum.algorithm !== manifest.checksum.algorithm || content.checksum.value !== manifest.checksum.value) {
    failures.push({ key, kind: "ChecksumMismatch", expected, actual: `${content.checksum.algorithm}:${content.checksum.value}` })
  }
  if (content.records === undefined) {
    failures.push({ key, kind: "Undecodable", expected: `${manifest.records} records`, actual: content.decodeError ?? "does not decode" })
  } else if (content.records !== manifest.records) {
    failures.push({ key, kind: "RecordCountMismatch", expected: String(manifest.records), actual: String(content.records) })
  }
  return failures
}

/** Why the manifest's offsets do not fit its range (`undefined` when they do). */
const offsetRunsProblem = (manifest: Batch.Manifest): string | undefined => {
  if (manifest.offsetRuns === undefined) {
    const span = manifest.lastOffset - manifest.firstOffset + 1
    return span === manifest.records ? undefined : `${manifest.records} records over ${span} offsets without offsetRuns`
  }
  let next = manifest.firstOffset
  let count = 0
  for (const [first, n] of manifest.offsetRuns) {
    if (first < next || n < 1) return `run [${first}, ${n}] out of order`
    next = first + n
    count += n
  }
  const first = manifest.offsetRuns[0]
  if (first === undefined || first[0] !== manifest.firstOffset || next - 1 !== manifest.lastOffset) {
    return `runs do not span ${manifest.firstOffset}..${manifest.lastOffset}`
  }
  return count === manifest.records ? undefined : `runs hold ${count} records, manifest says ${manifest.records}`
}

/** A partition's identity: prefix, source and partition. */
const streamId = (l: { readonly prefix: string; readonly source: string; readonly partition: number }): string =>
  `${l.prefix}\u0000${l.source}\u0000${l.partition}`

/**
 * The record digest at `offset` in a valid object (`undefined` when the
 * object holds no record there).
 */
const digestAt = (() => {
  const indexes = new WeakMap<Batch.Manifest, Map<number, number>>()
  return (object: NonNullable<Candidate["valid"]>, offset: number): number | undefined => {
    const { manifest, digests } = object
    if (offset < manifest.firstOffset || offset > manifest.lastOffset) return undefined
    if (manifest.offsetRuns === undefined) return digests[offset - manifest.firstOffset]
    let index = indexes.get(manifest)
    if (index === undefined) {
      index = new Map(Batch.recordOffsets(manifest).map((o, i) => [o, i] as const))
      indexes.set(manifest, index)
    }
    const i = index.get(offset)
    return i === undefined ? undefined : digests[i]
  }
})()

/** Records of `manifest` at offsets `>= from`. */
const recordsFrom = (manifest: Batch.Manifest, from: number): number => {
  if (from <= manifest.firstOffset) return manifest.records
  if (manifest.offsetRuns === undefined) return Math.max(0, manifest.lastOffset - from + 1)
  let n = 0
  for (const [first, count] of manifest.offsetRuns) {
    const end = first + count
    if (end > from) n += end - Math.max(first, from)
  }
  return n
}

/** `[from, to]` less the retention gaps' ranges, as inclusive runs. */
const subtractGaps = (from: number, to: number, gaps: ReadonlyArray<RetentionGap>): Array<readonly [number, number]> => {
  let runs: Array<readonly [number, number]> = [[from, to]]
  for (const gap of gaps) {
    const gFrom = gap.expected
    const gTo = gap.logStart - 1
    const next: Array<readonly [number, number]> = []
    for (const [a, b] of runs) {
      if (gTo < a || gFrom > b) {
        next.push([a, b])
        continue
      }
      if (a < gFrom) next.push([a, gFrom - 1])
      if (b > gTo) next.push([gTo + 1, b])
    }
    runs = next
  }
  return runs
}

/** Compares a later object with the winners of `[from, to]`. */
const compareOverlap = (
  object: Candidate,
  segments: ReadonlyArray<Segment>,
  from: number,
  to: number
): Overlap => {
  const winners: Array<string> = []
  let firstDifference: number | undefined
  const loser = object.valid
  for (const segment of segments) {
    if (segment.to < from || segment.from > to) continue
    if (!winners.includes(segment.object.key)) winners.push(segment.object.key)
    const winner = segment.object.valid
    if (firstDifference !== undefined || winner === undefined || loser === undefined) continue
    for (let offset = Math.max(from, segment.from); offset <= Math.min(to, segment.to); offset++) {
      if (digestAt(winner, offset) !== digestAt(loser, offset)) {
        firstDifference = offset
        break
      }
    }
  }
  const l = object.location
  return {
    prefix: l.prefix,
    source: l.source,
    partition: l.partition,
    key: object.key,
    winners,
    from,
    to,
    kind: firstDifference === undefined ? "duplicate" : "conflict",
    firstDifference
  }
}

/** Whether committed entry `c` names the partition of `l`. */
const names = (c: Committed, l: { readonly prefix: string; readonly source: string; readonly partition: number }): boolean =>
  c.partition === l.partition && (c.source === l.source || c.source === `${l.prefix}${l.source}`)

/** A partition's objects (in key order) and the offsets its manifests and keys span. */
interface Stream {
  readonly location: ObjectLocation
  readonly candidates: ReadonlyArray<Candidate>
  readonly extentFrom: number
  readonly extentTo: number
}

/**
 * The coverage walk of one partition: the first valid object in key order
 * wins each offset; a later one overlapping winners is compared with them; a
 * run no valid object covers, less the retention gaps, is a hole. The range
 * ends at the last offset the keys span, or at `committed - 1`.
 */
const walkPartition = (
  stream: Stream,
  gaps: ReadonlyArray<RetentionGap>,
  committed: number | undefined
): { readonly holes: Array<Hole>; readonly overlaps: Array<Overlap>; readonly report: PartitionReport } => {
  const { location } = stream
  const end = committed === undefined ? stream.extentTo : committed - 1
  const holes: Array<Hole> = []
  const overlaps: Array<Overlap> = []
  const addHole = (from: number, to: number, where: Hole["where"]) => {
    const bound = Math.min(to, end)
    if (bound < from) return
    for (const [a, b] of subtractGaps(from, bound, gaps)) {
      holes.push({ prefix: location.prefix, source: location.source, partition: location.partition, from: a, to: b, count: b - a + 1, where })
    }
  }
  const segments: Array<Segment> = []
  let coveredTo = stream.extentFrom // exclusive: every offset below is decided
  let records = 0
  for (const candidate of stream.candidates) {
    if (candidate.valid === undefined) continue
    const { firstOffset, lastOffset } = candidate.location
    if (firstOffset > coveredTo) addHole(coveredTo, firstOffset - 1, "archive")
    if (firstOffset < coveredTo) overlaps.push(compareOverlap(candidate, segments, firstOffset, Math.min(lastOffset, coveredTo - 1)))
    if (lastOffset >= coveredTo) {
      const from = Math.max(firstOffset, coveredTo)
      segments.push({ from, to: lastOffset, object: candidate })
      records += recordsFrom(candidate.valid.manifest, from)
      coveredTo = lastOffset + 1
    }
  }
  if (coveredTo <= stream.extentTo) addHole(coveredTo, stream.extentTo, "archive")
  if (end > stream.extentTo) addHole(Math.max(coveredTo, stream.extentTo + 1), end, "committed")
  const report: PartitionReport = {
    prefix: location.prefix,
    source: location.source,
    partition: location.partition,
    from: stream.extentFrom,
    to: end,
    committed,
    objects: stream.candidates.length,
    records,
    holes: holes.length,
    lostRecords: gaps.reduce((n, g) => n + g.lostRecords, 0)
  }
  return { holes, overlaps, report }
}

/**
 * Audits a bucket's contents: see the module doc for the rules.
 *
 * **When to use**
 *
 * `AuditS3.run` reads a bucket into an {@link Input} and calls this; call it
 * yourself to audit another store or a listing you hold.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 *
 * const report = Audit.audit({ listed: [], manifests: new Map(), contents: new Map(), uploads: [] })
 * report.ok // true: an empty bucket proves nothing is missing
 * ```
 *
 * @since 0.3.0
 */
export const audit = (input: Input): Report => {
  const classified = classify(input.listed)
  const committed = input.committed ?? []
  const objectFailures: Array<ObjectFailure> = []
  const unmanifested: Array<string> = []

  // Each object: valid (counts) or not; grouped by partition, in key order.
  const streams = new Map<string, { location: ObjectLocation; candidates: Array<Candidate>; extentFrom: number; extentTo: number }>()
  const streamOf = (location: ObjectLocation) => {
    const id = streamId(location)
    let s = streams.get(id)
    if (s === undefined) {
      s = { location, candidates: [], extentFrom: location.firstOffset, extentTo: location.lastOffset }
      streams.set(id, s)
    }
    s.extentFrom = Math.min(s.extentFrom, location.firstOffset)
    s.extentTo = Math.max(s.extentTo, location.lastOffset)
    return s
  }
  const gapsByStream = new Map<string, Array<RetentionGap>>()
  for (const object of classified.objects) {
    if (!object.hasManifest) {
      unmanifested.push(object.key)
      continue
    }
    const stream = streamOf(object.location)
    const manifestRead = input.manifests.get(object.key)
    const content = input.contents.get(object.key)
    const failures = checkObject(object, manifestRead, content)
    objectFailures.push(...failures)
    if (manifestRead?._tag === "Manifest" && manifestRead.manifest.gap !== undefined) {
      const gap = manifestRead.manifest.gap
      const id = streamId(object.location)
      const list = gapsByStream.get(id) ?? []
      if (!list.some((g) => g.expected === gap.expected && g.logStart === gap.logStart)) {
        list.push({ ...object.location, key: object.key, ...gap })
      }
      gapsByStream.set(id, list)
    }
    const valid = failures.length === 0 && manifestRead?._tag === "Manifest" && content?._tag === "Content"
      ? { manifest: manifestRead.manifest, digests: content.digests }
      : undefined
    stream.candidates.push({ key: object.key, location: object.location, valid })
  }
  for (const missing of classified.missingObjects) streamOf(missing.location)

  const ids = [...streams.keys()].sort(compareKeys)
  const walks = ids.flatMap((id) => {
    const stream = streams.get(id)
    if (stream === undefined) return []
    const c = committed.find((entry) => names(entry, stream.location))
    return [walkPartition(stream, gapsByStream.get(id) ?? [], c?.offset)]
  })
  const holes = walks.flatMap((w) => w.holes)
  const overlaps = walks.flatMap((w) => w.overlaps)
  const byPartition = walks.map((w) => w.report)
  const records = byPartition.reduce((n, p) => n + p.records, 0)

  const streamList = [...streams.values()].map((s) => s.location)
  const unarchived = committed
    .filter((c) => c.offset > 0 && !streamList.some((l) => names(c, l)))
    .map((c) => ({ source: c.source, partition: c.partition, committed: c.offset }))
  const retentionGaps = ids.flatMap((id) => gapsByStream.get(id) ?? [])
  const conflicts = overlaps.filter((o) => o.kind === "conflict").length
  const missingObjects = classified.missingObjects.map((m) => m.key)
  const orphanedUploads = [...input.uploads].sort((a, b) => compareKeys(a.key, b.key))
  return {
    ok: holes.length === 0 && objectFailures.length === 0 && missingObjects.length === 0 && conflicts === 0 &&
      unarchived.length === 0 && orphanedUploads.length === 0,
    partitions: streams.size,
    objects: classified.objects.length,
    records,
    holes,
    overlaps,
    duplicates: overlaps.length - conflicts,
    conflicts,
    checksumFailures: objectFailures.filter((f) => f.kind === "ChecksumMismatch").length,
    objectFailures,
    missingObjects,
    unmanifested,
    retentionGaps,
    lostRecords: retentionGaps.reduce((n, g) => n + g.lostRecords, 0),
    orphanedUploads,
    orphanedUploadsTruncated: input.uploadsTruncated === true,
    unarchived,
    unrecognized: classified.unrecognized,
    byPartition
  }
}

/**
 * Which orphaned uploads `sluice audit --abort-orphans` aborts and which it
 * keeps.
 *
 * @since 0.3.0
 */
export interface AbortPlan {
  /** Initiated longer ago than `olderThanMillis`: no live archiver is still uploading them. */
  readonly abort: ReadonlyArray<PendingUpload>
  /** Younger (or of unknown age): a live archiver may be mid-upload; left alone. */
  readonly keep: ReadonlyArray<PendingUpload>
}

/**
 * Splits incomplete multipart uploads into those old enough to abort and
 * those a live archiver may still be writing.
 *
 * **When to use**
 *
 * Before aborting orphans (`AuditS3.abortOrphans` calls it): an upload in the
 * listing may belong to an archiver that is uploading right now (another
 * member of the consumer group owns that partition), and aborting it would
 * fail that put.
 *
 * **Details**
 *
 * An upload is aborted when `now - initiated > olderThanMillis` (the
 * store's `Initiated`, which versitygw and AWS report to the second). With
 * `olderThanMillis` 0 every upload is aborted, whatever its age (also one
 * whose `initiated` is unknown, or ahead of `now` by clock skew); otherwise
 * an upload whose age is unknown is kept: nothing proves it is not live.
 *
 * **Example**
 *
 * ```ts
 * import { Audit } from "@sluice/adapter-s3"
 *
 * const plan = Audit.planAborts(
 *   [
 *     { key: "orders/p=00000/a.rec", uploadId: "u1", initiated: "2026-12-01T10:00:00.000Z" },
 *     { key: "orders/p=00001/b.rec", uploadId: "u2", initiated: "2026-12-01T11:59:30.000Z" }
 *   ],
 *   { now: Date.parse("2026-12-01T12:00:00.000Z"), olderThanMillis: 3_600_000 }
 * )
 * plan.abort.map((u) => u.uploadId) // ["u1"]
 * plan.keep.map((u) => u.uploadId)  // ["u2"]: 30 s old, maybe live
 * ```
 *
 * @since 0.3.0
 */
export const planAborts = (
  uploads: ReadonlyArray<PendingUpload>,
  options: { readonly now: number; readonly olderThanMillis: number }
): AbortPlan => {
  const abort: Array<PendingUpload> = []
  const keep: Array<PendingUpload> = []
  for (const upload of uploads) {
    const started = upload.initiated === undefined ? Number.NaN : Date.parse(upload.initiated)
    const old = options.olderThanMillis === 0 || (Number.isFinite(started) && options.now - started > options.olderThanMillis)
    if (old) abort.push(upload)
    else keep.push(upload)
  }
  return { abort, keep }
}
