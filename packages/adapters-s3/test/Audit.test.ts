/**
 * `sluice audit` against the real local S3 server: an archive written by the
 * real S3Sink (put → manifest → verify) audits clean; a deleted object is a
 * hole with its offsets; an object whose bytes changed (same size) is a
 * checksum failure; an incomplete multipart upload is an orphan, which
 * `--abort-orphans` aborts only when it is older than `--older-than`, and an
 * abort the store refuses is reported with exit 1.
 */
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { Batch } from "@sluice/core"
import { Effect } from "effect"
import type { Scope } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import type * as Audit from "../src/Audit.ts"
import * as AuditCli from "../src/AuditCli.ts"
import * as AuditS3 from "../src/AuditS3.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf, bigBatch } from "./support/Batches.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

/** Put → manifest → verify, as the pipeline does before it commits. */
const archive = (sink: S3Sink.S3Sink, batch: Batch.SealedBatch) =>
  Effect.gen(function*() {
    const receipt = yield* sink.putObject(batch)
    yield* sink.putManifest(Batch.manifestOf(batch, receipt.checksum))
    yield* sink.verify(receipt)
  })

/** What `--abort-orphans` adds to the JSON report. */
interface Aborts {
  readonly aborted: ReadonlyArray<Audit.PendingUpload>
  readonly gone: ReadonlyArray<Audit.PendingUpload>
  readonly kept: ReadonlyArray<Audit.PendingUpload>
  readonly failed: ReadonlyArray<{ readonly key: string; readonly uploadId: string; readonly code: string; readonly status: number | undefined }>
  readonly truncated: boolean
}

/** Runs `sluice audit --json` in process; the exit code, the text and the report (the last line). */
const audit = (bucket: string, ...flags: Array<string>) => auditAt(Env.env().endpoint, bucket, ...flags)

/** {@link audit} through `endpoint` (a fault proxy). */
const auditAt = async (endpoint: string, bucket: string, ...flags: Array<string>) => {
  const e = Env.env()
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await AuditCli.main(
    ["audit", "--bucket", bucket, "--endpoint", endpoint, "--json", ...flags],
    (l) => out.push(l),
    (l) => err.push(l),
    { SLUICE_S3_ACCESS_KEY: e.accessKeyId, SLUICE_S3_SECRET_KEY: e.secretAccessKey, SLUICE_S3_REGION: e.region }
  )
  const last = out.at(-1) ?? ""
  const report = JSON.parse(last.startsWith("{") ? last : "{}") as Audit.Report & { readonly aborts?: Aborts }
  return { code, text: out.join("\n"), err: err.join("\n"), report }
}

/** The incomplete multipart uploads of `bucket`, listed from outside the CLI. */
const pendingUploads = async (bucket: string) => {
  const c = Env.client()
  try {
    const page = await c.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
    return (page.Uploads ?? []).map((u) => ({ key: u.Key, uploadId: u.UploadId }))
  } finally {
    c.destroy()
  }
}

/** Starts a multipart upload of `key` with one part and never completes it (as a SIGKILL mid-upload leaves it); its id. */
const orphan = async (bucket: string, key: string): Promise<string> => {
  const c = Env.client()
  try {
    const created = await c.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
    await c.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, PartNumber: 1, Body: new Uint8Array(1024) }))
    return created.UploadId ?? ""
  } finally {
    c.destroy()
  }
}

beforeEach(Env.requireServer)

describe("sluice audit against the real server", () => {
  let bucket: string
  const first = batchOf({ firstOffset: 0, count: 100, recordBytes: 50 })
  const second = batchOf({ firstOffset: 100, count: 100, recordBytes: 50 })
  const third = batchOf({ firstOffset: 200, count: 100, recordBytes: 50 })
  // a crash replayed offsets 150..249 with other batch boundaries: same records, another key
  const replay = batchOf({ firstOffset: 150, count: 100, recordBytes: 50 })
  // partition 1: a retention gap (offsets 50..99 deleted unread) recorded in the manifest after it; gzip bodies
  const p1a: Batch.SealedBatch = { ...batchOf({ partition: 1, firstOffset: 0, count: 50, recordBytes: 80 }), compression: { codec: "gzip" } }
  const p1b: Batch.SealedBatch = {
    ...batchOf({ partition: 1, firstOffset: 100, count: 40, recordBytes: 80 }),
    compression: { codec: "gzip" },
    gap: { expected: 50, logStart: 100, lostRecords: 50 }
  }
  // partition 2: one SHA256 multipart object (COMPOSITE checksum over 5 MiB parts)
  const twelve = bigBatch(12)
  const big: Batch.SealedBatch = { ...twelve, partition: 2, key: twelve.key.replace("p=00000", "p=00002") }

  it("an archive written by the S3 sink audits clean: every offset covered, a replay's overlaps reported as harmless duplicates, the retention gap listed", async () => {
    bucket = await Env.newBucket("audit")
    await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      for (const b of [first, second, third, replay, p1a, p1b]) yield* archive(sink, b)
      const sha = yield* S3Sink.make(Env.sinkConfig(bucket, { checksumAlgorithm: "SHA256", multipartThreshold: "5 MiB", partSize: "5 MiB" }))
      yield* archive(sha, big)
    }))
    const { code, text, report } = await audit(bucket)
    expect(report).toMatchObject({
      ok: true,
      partitions: 3,
      objects: 7,
      records: 300 + 90 + big.records,
      holes: [],
      duplicates: 2,
      conflicts: 0,
      checksumFailures: 0,
      objectFailures: [],
      orphanedUploads: [],
      lostRecords: 50
    })
    // key order decides: the replay (150..249) sorts between second and third, so it loses 150..199 to
    // second and wins 200..249, which third then duplicates
    expect(report.overlaps).toMatchObject([
      { key: replay.key, from: 150, to: 199, kind: "duplicate", winners: [second.key] },
      { key: third.key, from: 200, to: 249, kind: "duplicate", winners: [replay.key] }
    ])
    expect(report.retentionGaps).toMatchObject([{ source: "orders", partition: 1, expected: 50, logStart: 100, lostRecords: 50, key: p1b.key }])
    expect(code).toBe(0)
    expect(text).toContain("CLEAN")
    expect(text).toContain("orders:1  offsets 0..139")
    // --prefix audits only the keys under it
    const one = await audit(bucket, "--prefix", "orders/p=00001/")
    expect(one.report).toMatchObject({ ok: true, partitions: 1, objects: 2, records: 90, lostRecords: 50 })
    // committed at the end of partition 0 is clean; committed past it is a hole up to the committed offset
    expect((await audit(bucket, "--committed", "orders:0=300,orders:1=140")).code).toBe(0)
    const ahead = await audit(bucket, "--committed", "orders:0=320")
    expect(ahead.code).toBe(1)
    expect(ahead.report.holes).toMatchObject([{ partition: 0, from: 300, to: 319, count: 20, where: "committed" }])
  }, 120_000)

  it("a deleted object is a hole with its offsets (exit 1)", async () => {
    const c = Env.client()
    try {
      await c.send(new DeleteObjectCommand({ Bucket: bucket, Key: second.key }))
    } finally {
      c.destroy()
    }
    const { code, text, report } = await audit(bucket)
    expect(code).toBe(1)
    expect(report.ok).toBe(false)
    // offsets 150..199 are still held by the replayed object
    expect(report.holes).toEqual([{ prefix: "", source: "orders", partition: 0, from: 100, to: 149, count: 50, where: "archive" }])
    expect(report.missingObjects).toEqual([second.key])
    expect(text).toContain("HOLE orders:0 offsets 100..149 (50 records)")
  }, 60_000)

  it("an object whose bytes changed (same size) is a checksum failure", async () => {
    const c = Env.client()
    try {
      const got = await c.send(new GetObjectCommand({ Bucket: bucket, Key: third.key }))
      const bytes = await got.Body!.transformToByteArray()
      const last = bytes.length - 1
      bytes[last] = (bytes[last] ?? 0) ^ 0xff
      await c.send(new PutObjectCommand({ Bucket: bucket, Key: third.key, Body: bytes }))
    } finally {
      c.destroy()
    }
    const { code, report } = await audit(bucket)
    expect(code).toBe(1)
    expect(report.checksumFailures).toBe(1)
    expect(report.objectFailures).toMatchObject([{ key: third.key, kind: "ChecksumMismatch" }])
    // the replay still covers 200..249; 250..299 were only in the corrupt object
    expect(report.holes.map((h) => [h.from, h.to])).toEqual([[100, 149], [250, 299]])
  }, 60_000)

  it("an incomplete multipart upload is reported as orphaned", async () => {
    const bucket = await Env.newBucket("audit-mpu")
    await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      yield* archive(sink, first)
    }))
    expect((await audit(bucket)).code).toBe(0)
    const c = Env.client()
    const key = second.key
    try {
      const created = await c.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
      await c.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId, PartNumber: 1, Body: new Uint8Array(1024) }))
      const { code, text, report } = await audit(bucket)
      expect(code).toBe(1)
      expect(report.orphanedUploads).toMatchObject([{ key, uploadId: created.UploadId }])
      expect(text).toContain(`ORPHANED multipart upload ${key}`)
      await c.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: created.UploadId }))
      expect((await audit(bucket)).code).toBe(0)
    } finally {
      c.destroy()
    }
  }, 60_000)

  it("a bucket that does not exist is bad usage naming --bucket (exit 2)", async () => {
    const { code, err } = await audit("no-such-bucket-for-sluice-audit")
    expect(code).toBe(2)
    expect(err).toContain("--bucket no-such-bucket-for-sluice-audit: no such bucket")
  })
})

describe("sluice audit --abort-orphans against the real server", () => {
  const first = batchOf({ firstOffset: 0, count: 100, recordBytes: 50 })
  const second = batchOf({ firstOffset: 100, count: 100, recordBytes: 50 })
  const third = batchOf({ firstOffset: 200, count: 100, recordBytes: 50 })

  /** A bucket with one archived object (`first`) and an orphaned upload of `second`'s key. */
  const crashed = async (label: string) => {
    const bucket = await Env.newBucket(label)
    await run(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig(bucket))
      yield* archive(sink, first)
    }))
    const uploadId = await orphan(bucket, second.key)
    return { bucket, uploadId }
  }

  it("an orphan initiated within --older-than (1h, and the 1h default) is listed NOT CLEAN and not aborted", async () => {
    const { bucket, uploadId } = await crashed("orphan-young")
    const plain = await audit(bucket)
    expect(plain.code).toBe(1)
    expect(plain.text).toContain("NOT CLEAN")
    expect(plain.text).toContain(`ORPHANED multipart upload ${second.key} (upload ${uploadId}, started `)
    // versitygw reports Initiated (to the second), which the age guard reads
    expect(plain.report.orphanedUploads).toMatchObject([{ key: second.key, uploadId, initiated: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) }])
    for (const flags of [["--abort-orphans", "--older-than", "1h"], ["--abort-orphans"]]) {
      const { code, text, report } = await audit(bucket, ...flags)
      expect(code).toBe(1)
      expect(report.aborts).toMatchObject({ aborted: [], gone: [], failed: [], kept: [{ key: second.key, uploadId }], truncated: false })
      expect(text).toContain("kept 1 multipart uploads not initiated more than 1h ago (--older-than)")
      expect(text).not.toContain("ABORTED")
      expect(report.orphanedUploads).toMatchObject([{ uploadId }])
      expect(await pendingUploads(bucket)).toEqual([{ key: second.key, uploadId }])
    }
  }, 60_000)

  it("--older-than 0s aborts the orphan (one line), the audit after it is CLEAN (exit 0), and ListMultipartUploads shows none", async () => {
    const { bucket, uploadId } = await crashed("orphan-abort")
    expect((await audit(bucket)).code).toBe(1)
    const { code, text, report } = await audit(bucket, "--abort-orphans", "--older-than", "0s")
    expect(report.aborts).toMatchObject({ aborted: [{ key: second.key, uploadId }], gone: [], kept: [], failed: [] })
    expect(text.split("\n").filter((l) => l.startsWith("ABORTED"))).toEqual([
      expect.stringContaining(`ABORTED multipart upload ${second.key} (upload ${uploadId}, started `)
    ])
    expect(report).toMatchObject({ ok: true, objects: 1, records: 100, orphanedUploads: [] })
    expect(text).toContain("CLEAN: every offset covered")
    expect(code).toBe(0)
    expect(await pendingUploads(bucket)).toEqual([])
  }, 60_000)

  it("--older-than compares with the store's Initiated: an upload 4 s old is aborted at 3s, one just started is kept", async () => {
    const { bucket, uploadId: old } = await crashed("orphan-age")
    await new Promise((resolve) => setTimeout(resolve, 4_500))
    const young = await orphan(bucket, third.key)
    const { code, report } = await audit(bucket, "--abort-orphans", "--older-than", "3s")
    expect(report.aborts).toMatchObject({ aborted: [{ uploadId: old }], kept: [{ uploadId: young }], failed: [] })
    expect(code).toBe(1)
    expect(await pendingUploads(bucket)).toEqual([{ key: third.key, uploadId: young }])
  }, 60_000)

  it("an abort the store refuses is reported (stderr names the upload and the error code), the orphan stays, exit 1", async () => {
    const { bucket, uploadId } = await crashed("orphan-refused")
    // AbortMultipartUpload is DELETE /<bucket>/<key>?uploadId=…: refused; everything else reaches the server
    const proxy = await FaultProxy.start(Env.env().endpoint, [{ method: "DELETE", query: /uploadId=/, fault: FaultProxy.accessDenied }])
    try {
      const { code, err, text, report } = await auditAt(proxy.endpoint, bucket, "--abort-orphans", "--older-than", "0s")
      expect(proxy.hits.filter((h) => h.fault === "Error")).toHaveLength(1)
      expect(report.aborts).toMatchObject({ aborted: [], failed: [{ key: second.key, uploadId, code: "AccessDenied", status: 403 }] })
      expect(err).toContain(`sluice: FAILED abort of multipart upload ${second.key} (upload ${uploadId}) in s3://${bucket}: AccessDenied:`)
      expect(text).not.toContain("ABORTED")
      expect(report.orphanedUploads).toMatchObject([{ uploadId }])
      expect(code).toBe(1)
      expect(await pendingUploads(bucket)).toEqual([{ key: second.key, uploadId }])
    } finally {
      await proxy.close()
    }
  }, 60_000)

  it("a refused abort exits 1 even when the audit after it is clean (the upload removed meanwhile by someone else)", async () => {
    const { bucket, uploadId } = await crashed("orphan-refused-clean")
    const proxy = await FaultProxy.start(Env.env().endpoint, [
      { method: "DELETE", query: /uploadId=/, fault: FaultProxy.accessDenied },
      // the audit's first request after the aborts (ListObjectsV2) waits while the upload is aborted from outside
      { method: "GET", query: /list-type=2/, times: 1, fault: FaultProxy.hold }
    ])
    try {
      const running = auditAt(proxy.endpoint, bucket, "--abort-orphans", "--older-than", "0s")
      const deadline = Date.now() + 10_000
      while (proxy.held() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(proxy.held()).toBe(1)
      const c = Env.client()
      try {
        await c.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: second.key, UploadId: uploadId }))
      } finally {
        c.destroy()
      }
      proxy.release()
      const { code, err, text, report } = await running
      expect(report.aborts).toMatchObject({ aborted: [], failed: [{ uploadId, code: "AccessDenied" }] })
      expect(err).toContain(`FAILED abort of multipart upload ${second.key}`)
      expect(report.ok).toBe(true)
      expect(text).toContain("CLEAN: every offset covered")
      expect(code).toBe(1)
    } finally {
      await proxy.close()
    }
  }, 60_000)

  it("the aborts are printed even when the audit after them cannot read the bucket (exit 1)", async () => {
    const { bucket, uploadId } = await crashed("orphan-then-unreadable")
    const proxy = await FaultProxy.start(Env.env().endpoint, [{ method: "GET", query: /list-type=2/, fault: FaultProxy.accessDenied }])
    try {
      const { code, err, text } = await auditAt(proxy.endpoint, bucket, "--abort-orphans", "--older-than", "0s")
      expect(text).toContain(`ABORTED multipart upload ${second.key} (upload ${uploadId}`)
      expect(err).toContain(`sluice: cannot read s3://${bucket} (ListObjectsV2): AccessDenied`)
      expect(code).toBe(1)
      expect(await pendingUploads(bucket)).toEqual([])
    } finally {
      await proxy.close()
    }
  }, 60_000)

  it("a run lists and aborts at most MAX_UPLOADS_LISTED (1 000) uploads and says so; the next run takes the rest", async () => {
    const bucket = await Env.newBucket("orphan-bound")
    const c = Env.client()
    try {
      const keys = Array.from({ length: AuditS3.MAX_UPLOADS_LISTED + 1 }, (_, i) => `orders/p=00000/crash-${String(i).padStart(4, "0")}.rec`)
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((Key) => c.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }))))
      }
    } finally {
      c.destroy()
    }
    const listed = await audit(bucket)
    expect(listed.report.orphanedUploads).toHaveLength(1_000)
    expect(listed.report.orphanedUploadsTruncated).toBe(true)
    expect(listed.text).toContain("listing stopped at 1000 multipart uploads: more may exist")
    const once = await audit(bucket, "--abort-orphans", "--older-than", "0s", "--concurrency", "16")
    expect(once.report.aborts?.aborted).toHaveLength(1_000)
    expect(once.report.aborts?.truncated).toBe(true)
    expect(once.text).toContain("listing stopped at 1000 multipart uploads: run again for the rest")
    expect(once.report).toMatchObject({ ok: false, orphanedUploads: [{ key: "orders/p=00000/crash-1000.rec" }], orphanedUploadsTruncated: false })
    expect(once.code).toBe(1)
    const twice = await audit(bucket, "--abort-orphans", "--older-than", "0s")
    expect(twice.report.aborts?.aborted).toMatchObject([{ key: "orders/p=00000/crash-1000.rec" }])
    expect(twice.code).toBe(0)
    expect(await pendingUploads(bucket)).toEqual([])
  }, 120_000)
})
