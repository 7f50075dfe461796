/**
 * brokers — what every scenario does around its own part: the S3 server from
 * the environment, a fresh bucket, sampling once a second for a bounded time,
 * waiting (bounded) until a group has committed every partition's end, and
 * the closing audit of a bucket (`AuditS3`, the code behind
 * `npx sluice audit`) against the group's committed offsets.
 */
import type { Admin } from "@platformatic/kafka"
import { AuditS3 } from "@sluice/adapter-s3"
import { Effect } from "effect"
import { createBucket } from "../kafka-to-s3/produce.ts"
import { sleep } from "../soak/KillRuns.ts"
import { s3FromEnv } from "../src/KafkaToS3.ts"
import * as Cluster from "./Cluster.ts"
import type { Archived } from "./Verdict.ts"

/** The S3 server's endpoint and credentials (`SLUICE_S3_*`). */
export type S3 = ReturnType<typeof s3FromEnv>

/** The S3 server named by the environment; throws naming the missing variable. */
export const s3FromEnvironment = (): S3 =>
  s3FromEnv("unused", (name) => {
    const value = process.env[name]
    if (value === undefined || value.trim() === "") throw new Error(`${name} is not set: run \`npm run brokers\` (it starts the S3 server)`)
    return value.trim()
  })

/** A fresh bucket. */
export const bucket = async (s3: S3, name: string): Promise<string> => {
  await createBucket({ brokers: [], s3 }, name)
  return name
}

/** Writes a line to stderr, prefixed. */
export const log = (line: string) => process.stderr.write(`brokers: ${line}\n`)

/**
 * Calls `each(t)` once a second (t: seconds since the start) for `seconds`
 * seconds, on a grid (a slow call skips slots rather than drifting).
 */
export const everySecond = async (seconds: number, each: (t: number) => Promise<void>): Promise<void> => {
  const t0 = Date.now()
  for (let slot = 1; slot <= seconds; slot++) {
    slot = Math.max(slot, Math.ceil((Date.now() - t0) / 1000))
    if (slot > seconds) break
    const wait = t0 + slot * 1000 - Date.now()
    if (wait > 0) await sleep(wait)
    await each((Date.now() - t0) / 1000)
  }
}

/**
 * Waits until `group` committed every partition's end offset, polling every
 * 500 ms, at most `withinMs`; the ends and committed offsets last seen.
 */
export const caughtUp = async (admin: Admin, group: string, topic: string, partitions: number, withinMs: number) => {
  const deadline = Date.now() + withinMs
  for (;;) {
    const ends = await Cluster.ends(admin, topic, partitions)
    const committed = await Cluster.committed(admin, group, topic, partitions).catch(() => new Array<number>(partitions).fill(-1))
    const done = ends.every((e, p) => committed[p] === e)
    if (done || Date.now() >= deadline) return { done, ends, committed }
    await sleep(500)
  }
}

/**
 * Audits `bucketName` against the committed offsets (the topic is the
 * objects' source name) and returns what the verdicts check.
 */
export const audit = async (
  s3: S3,
  bucketName: string,
  topic: string,
  ends: ReadonlyArray<number>,
  committed: ReadonlyArray<number>,
  archiverExit: number | null
): Promise<Archived & { readonly objects: number; readonly duplicates: number }> => {
  const report = await Effect.runPromise(Effect.scoped(AuditS3.make(
    { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } },
    { bucket: bucketName, committed: committed.flatMap((offset, partition) => offset < 0 ? [] : [{ source: topic, partition, offset }]) }
  )))
  return {
    auditOk: report.ok,
    records: report.records,
    expected: ends.reduce((s, e) => s + Math.max(0, e), 0),
    holes: report.holes.length,
    conflicts: report.conflicts,
    checksumFailures: report.checksumFailures,
    orphanedUploads: report.orphanedUploads.length,
    committedAtEnd: ends.every((e, p) => committed[p] === e),
    archiverExit,
    objects: report.objects,
    duplicates: report.duplicates
  }
}

/** Per-second rate of a counter between two samples. */
export const rate = (from: { readonly t: number; readonly value: number }, to: { readonly t: number; readonly value: number }): number =>
  to.t > from.t ? (to.value - from.value) / (to.t - from.t) : 0
