/**
 * bench:peer — reading a peer's archive back from outside. Quix Streams'
 * `S3FileSink` (3.28.1, JSON format, its default) writes, at each checkpoint,
 * one object per topic partition it holds records of:
 *
 * - key `<topic>/<partition>/<first offset, 19 digits>.jsonl`, the topic with
 *   every character outside `[a-zA-Z0-9 ._/]` replaced by `_`
 *   (`FileSink._directory`, `_filename`);
 * - body: one compact JSON object per record, in offset order,
 *   `{"_timestamp": …, "_key": …, "_value": …}` (`JSONFormat.serialize`). No
 *   offsets are stored: line `i` of the object is offset `first + i`, which
 *   holds because the bench's topic has no gaps (no transactions, no
 *   compaction). A record without a key gets the text of Quix's `SinkItem`
 *   object as its `_key` (what 3.28.1 writes; ignored here).
 *
 * The Camel route (`peer/camel`) names its objects the same way with `.txt`
 * for `.jsonl`, and writes the values themselves, one a line.
 *
 * Unlike `archive.ts`, which throws at the first fault, this counts: every
 * produced offset held exactly once is fine; one held by no object is `lost`,
 * one held more than once adds to `duplicates`, a line that is not the record
 * produced at its offset is `corrupt` (and its offset, unless held elsewhere,
 * lost), a line past the topic's end or a key naming no partition is `stray`.
 */
import type { S3Client } from "@aws-sdk/client-s3"
import { getBytes, listKeys } from "./archive.ts"
import { RECORD_BYTES, valuePrefix } from "./services.ts"

/** What a checked peer archive holds. */
export interface PeerArchive {
  readonly objects: number
  readonly objectBytes: number
  /** Lines read (records stored, duplicates and faults included). */
  readonly records: number
  /** Offsets below the topic's end that no object holds. */
  readonly lost: number
  /** Of those, the ones below the group's committed offset (0 without `committed`): committed, not archived. */
  readonly lostCommitted: number
  readonly duplicates: number
  readonly corrupt: number
  readonly stray: number
}

/** The topic as `FileSink` names its directory. */
export const sanitizeTopic = (topic: string): string => topic.replace(/[^a-zA-Z0-9 ._/]/g, "_")

/** How an object holds its records: Quix's JSON lines, or the Camel route's values one a line. */
export type LineFormat = "jsonl" | "txt"

/** Partition, first offset and line format of an object key of `topic`; undefined for any other key. */
export const parseKey = (topic: string, key: string): { readonly partition: number; readonly first: number; readonly format: LineFormat } | undefined => {
  const prefix = `${sanitizeTopic(topic)}/`
  if (!key.startsWith(prefix)) return undefined
  const m = /^(\d+)\/(\d{19})\.(jsonl|txt)$/.exec(key.slice(prefix.length))
  return m === null ? undefined : { partition: Number(m[1]), first: Number(m[2]), format: m[3] === "txt" ? "txt" : "jsonl" }
}

/** The value produced at `partition`/`offset` (services.ts: the prefix, padded with `x`). */
export const expectedValue = (partition: number, offset: number): string => valuePrefix(partition, offset).padEnd(RECORD_BYTES, "x")

/** The `_value` of one JSON line, if it is an object with a text `_value`. */
const valueOf = (line: string): string | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null || !("_value" in parsed)) return undefined
  return typeof parsed._value === "string" ? parsed._value : undefined
}

/** Per partition, how many times each offset below the end was found. */
export interface Tally {
  readonly seen: ReadonlyArray<Uint32Array>
  records: number
  corrupt: number
  stray: number
}

/** An empty tally for a topic ending at `ends`. */
export const tally = (ends: ReadonlyArray<number>): Tally => ({
  seen: ends.map((end) => new Uint32Array(Math.max(0, end))),
  records: 0,
  corrupt: 0,
  stray: 0
})

/** Counts the lines of one object of `partition` starting at offset `first` (JSON lines unless `format` says otherwise). */
export const countObject = (t: Tally, partition: number, first: number, body: string, format: LineFormat = "jsonl"): void => {
  const seen = t.seen[partition]
  const lines = body.split("\n")
  // Every line ends with a newline: the last split piece is empty.
  if (lines.at(-1) === "") lines.pop()
  lines.forEach((line, i) => {
    t.records++
    const offset = first + i
    if (seen === undefined || offset >= seen.length) {
      t.stray++
    } else if ((format === "txt" ? line : valueOf(line)) !== expectedValue(partition, offset)) {
      t.corrupt++
    } else {
      seen[offset] = (seen[offset] ?? 0) + 1
    }
  })
}

/**
 * Lost and duplicated offsets of a tally; with `committed` (the group's
 * committed offset per partition), also the offsets below it that no object
 * holds (`lostCommitted`: committed but not archived, which the source will
 * not deliver again).
 */
export const totals = (t: Tally, committed?: ReadonlyArray<number>): { readonly lost: number; readonly duplicates: number; readonly lostCommitted: number } => {
  let lost = 0
  let duplicates = 0
  let lostCommitted = 0
  t.seen.forEach((seen, p) => {
    const below = Math.max(0, committed?.[p] ?? 0)
    seen.forEach((n, offset) => {
      if (n === 0) {
        lost++
        if (offset < below) lostCommitted++
      } else duplicates += n - 1
    })
  })
  return { lost, duplicates, lostCommitted }
}

/** Reads the peer's archive of `topic` in `bucket` back and counts it against the topic's `ends` (and the group's `committed` offsets). */
export const check = async (client: S3Client, bucket: string, topic: string, ends: ReadonlyArray<number>, committed?: ReadonlyArray<number>): Promise<PeerArchive> => {
  const t = tally(ends)
  const decoder = new TextDecoder()
  let objectBytes = 0
  const listed = await listKeys(client, bucket)
  for (const { key, size } of listed) {
    const at = parseKey(topic, key)
    objectBytes += size
    if (at === undefined || at.partition >= ends.length) {
      t.stray++
      continue
    }
    countObject(t, at.partition, at.first, decoder.decode(await getBytes(client, bucket, key)), at.format)
  }
  return { objects: listed.length, objectBytes, records: t.records, ...totals(t, committed), corrupt: t.corrupt, stray: t.stray }
}
