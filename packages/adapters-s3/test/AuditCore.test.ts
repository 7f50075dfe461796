/**
 * The audit's decisions on plain data (no server): coverage and holes,
 * overlap resolution, retention-gap accounting, checksum and record-count
 * checks, orphaned uploads and which of them `--abort-orphans` may abort; and
 * the command line's usage errors.
 */
import { Batch, ObjectKey } from "@sluice/core"
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import * as Audit from "../src/Audit.ts"
import * as AuditCli from "../src/AuditCli.ts"

interface Stored {
  readonly key: string
  readonly manifest: Batch.Manifest
  content: Audit.ContentRead
  size: number
  withManifest: boolean
  withObject: boolean
}

/** An archived object of `count` records from `first`; record at offset o has content `value(o)`. */
const stored = (options: {
  readonly first: number
  readonly count: number
  readonly source?: string
  readonly partition?: number
  readonly prefix?: string
  readonly value?: (offset: number) => number
  readonly gap?: Batch.GapRecord
  readonly offsets?: ReadonlyArray<number>
}): Stored => {
  const source = options.source ?? "orders"
  const partition = options.partition ?? 0
  const value = options.value ?? ((o: number) => o)
  const offsets = options.offsets ?? Array.from({ length: options.count }, (_, i) => options.first + i)
  const batch = Batch.make({
    source,
    partition,
    firstOffset: options.first,
    payloads: offsets.map(() => new Uint8Array(8)),
    prefix: options.prefix
  })
  const last = offsets[offsets.length - 1] ?? options.first
  const key = ObjectKey.make({ prefix: options.prefix, source, partition, firstOffset: options.first, lastOffset: last })
  const base = Batch.manifestOf(batch, { algorithm: "CRC32", value: `crc-${key}` })
  const contiguous = last - options.first + 1 === offsets.length
  const manifest: Batch.Manifest = {
    ...base,
    key,
    lastOffset: last,
    ...(options.gap !== undefined ? { gap: options.gap } : {}),
    ...(contiguous ? {} : { offsetRuns: offsets.map((o) => [o, 1] as const) })
  }
  return {
    key,
    manifest,
    size: manifest.objectBytes,
    withManifest: true,
    withObject: true,
    content: {
      _tag: "Content",
      bytes: manifest.objectBytes,
      checksum: manifest.checksum,
      records: manifest.records,
      digests: offsets.map(value)
    }
  }
}

const input = (
  objects: ReadonlyArray<Stored>,
  extra: { readonly uploads?: ReadonlyArray<Audit.PendingUpload>; readonly committed?: ReadonlyArray<Audit.Committed> } = {}
): Audit.Input => {
  const listed: Array<Audit.Listed> = []
  const manifests = new Map<string, Audit.ManifestRead>()
  const contents = new Map<string, Audit.ContentRead>()
  for (const o of objects) {
    if (o.withObject) listed.push({ key: o.key, size: o.size })
    if (o.withManifest) {
      listed.push({ key: ObjectKey.manifestKey(o.key), size: 300 })
      if (o.withObject) {
        manifests.set(o.key, { _tag: "Manifest", manifest: o.manifest })
        contents.set(o.key, o.content)
      }
    }
  }
  return { listed, manifests, contents, uploads: extra.uploads ?? [], committed: extra.committed }
}

describe("Audit.parseKey", () => {
  it("reads prefix, percent-decoded source, partition and offsets from a key; refuses others", () => {
    const key = ObjectKey.make({ prefix: "prod/eu", source: "orders v2", partition: 7, firstOffset: 100, lastOffset: 199 })
    expect(Audit.parseKey(`archive/${key}`)).toEqual({
      prefix: "archive/prod/eu/",
      source: "orders v2",
      partition: 7,
      firstOffset: 100,
      lastOffset: 199
    })
    expect(Audit.parseKey("orders/p=00000/00000000000000000009-00000000000000000000.rec")).toBeUndefined()
    expect(Audit.parseKey("orders/p=00000/9-10.rec")).toBeUndefined()
    expect(Audit.parseKey("README.txt")).toBeUndefined()
  })
})

describe("Audit.audit: coverage", () => {
  it("contiguous verified objects are clean; each partition accounted separately", () => {
    const report = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 100, count: 50 }),
      stored({ first: 0, count: 10, partition: 1 }),
      stored({ first: 5, count: 10, source: "payments" })
    ]))
    expect(report).toMatchObject({ ok: true, partitions: 3, objects: 4, records: 170, holes: [], overlaps: [], checksumFailures: 0 })
    expect(report.byPartition.map((p) => [p.source, p.partition, p.from, p.to, p.records])).toEqual([
      ["orders", 0, 0, 149, 150],
      ["orders", 1, 0, 9, 10],
      ["payments", 0, 5, 14, 10]
    ])
  })

  it("a missing range between objects is a hole with its offsets and count", () => {
    const report = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 150, count: 50 }),
      stored({ first: 200, count: 10 })
    ]))
    expect(report.ok).toBe(false)
    expect(report.holes).toEqual([{ prefix: "", source: "orders", partition: 0, from: 100, to: 149, count: 50, where: "archive" }])
    expect(report.records).toBe(160)
  })

  it("a deleted object whose manifest remains is a hole and a missing object, even when it was the last", () => {
    const last = stored({ first: 100, count: 50 })
    last.withObject = false
    const report = Audit.audit(input([stored({ first: 0, count: 100 }), last]))
    expect(report.ok).toBe(false)
    expect(report.missingObjects).toEqual([last.key])
    expect(report.holes).toMatchObject([{ from: 100, to: 149, count: 50 }])
  })

  it("an object without a manifest covers nothing (never verified) and is listed, not failed", () => {
    const leftover = stored({ first: 100, count: 50 })
    leftover.withManifest = false
    const clean = Audit.audit(input([stored({ first: 0, count: 100 }), leftover]))
    expect(clean.ok).toBe(true)
    expect(clean.unmanifested).toEqual([leftover.key])
    // ...but if offsets were committed past it, they are a hole
    const committed = Audit.audit(input([stored({ first: 0, count: 100 }), leftover], {
      committed: [{ source: "orders", partition: 0, offset: 150 }]
    }))
    expect(committed.ok).toBe(false)
    expect(committed.holes).toMatchObject([{ from: 100, to: 149, where: "committed" }])
  })

  it("a committed offset bounds the range: past the archive it is a hole, below it later holes are not required", () => {
    const objects = [stored({ first: 0, count: 100 }), stored({ first: 150, count: 50 })]
    const behind = Audit.audit(input(objects, { committed: [{ source: "orders", partition: 0, offset: 100 }] }))
    expect(behind.ok).toBe(true)
    expect(behind.byPartition[0]).toMatchObject({ from: 0, to: 99, committed: 100 })
    const ahead = Audit.audit(input(objects, { committed: [{ source: "orders", partition: 0, offset: 260 }] }))
    expect(ahead.holes).toEqual([
      { prefix: "", source: "orders", partition: 0, from: 100, to: 149, count: 50, where: "archive" },
      { prefix: "", source: "orders", partition: 0, from: 200, to: 259, count: 60, where: "committed" }
    ])
    const unarchived = Audit.audit(input(objects, { committed: [{ source: "orders", partition: 4, offset: 10 }] }))
    expect(unarchived.unarchived).toEqual([{ source: "orders", partition: 4, committed: 10 }])
    expect(unarchived.ok).toBe(false)
  })

  it("compacted objects (offsetRuns) cover their whole range", () => {
    const report = Audit.audit(input([
      stored({ first: 0, count: 3, offsets: [0, 4, 9] }),
      stored({ first: 10, count: 2, offsets: [10, 12] })
    ]))
    expect(report).toMatchObject({ ok: true, records: 5, holes: [] })
  })
})

describe("Audit.audit: overlaps", () => {
  it("an overlap with equal records is a harmless duplicate; the first by key order wins, records counted once", () => {
    const report = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 50, count: 100 }), // a replay with other boundaries
      stored({ first: 60, count: 10 }) // fully inside
    ]))
    expect(report.ok).toBe(true)
    expect(report.records).toBe(150)
    expect(report.duplicates).toBe(2)
    expect(report.overlaps.map((o) => [o.key.slice(-45), o.from, o.to, o.kind, o.winners.length])).toEqual([
      ["00000000000000000050-00000000000000000149.rec", 50, 99, "duplicate", 1],
      ["00000000000000000060-00000000000000000069.rec", 60, 69, "duplicate", 1]
    ])
  })

  it("an overlap with different records is a conflict naming the first differing offset", () => {
    const report = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 90, count: 20, value: (o) => (o === 95 ? -1 : o) })
    ]))
    expect(report.ok).toBe(false)
    expect(report.conflicts).toBe(1)
    expect(report.overlaps[0]).toMatchObject({ from: 90, to: 99, kind: "conflict", firstDifference: 95 })
  })
})

describe("Audit.audit: retention gaps", () => {
  it("lists recorded gaps with counts; the offsets they explain are not holes, the rest are", () => {
    const explained = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 300, count: 10, gap: { expected: 100, logStart: 300, lostRecords: 200 } })
    ]))
    expect(explained.ok).toBe(true)
    expect(explained.retentionGaps).toMatchObject([{ source: "orders", partition: 0, expected: 100, logStart: 300, lostRecords: 200 }])
    expect(explained.lostRecords).toBe(200)
    expect(explained.byPartition[0]?.lostRecords).toBe(200)
    const partly = Audit.audit(input([
      stored({ first: 0, count: 100 }),
      stored({ first: 300, count: 10, gap: { expected: 150, logStart: 300, lostRecords: 150 } })
    ]))
    expect(partly.ok).toBe(false)
    expect(partly.holes).toMatchObject([{ from: 100, to: 149, count: 50 }])
  })
})

describe("Audit.audit: object checks", () => {
  it("a recomputed checksum that differs from the manifest's fails the object, and its range is a hole", () => {
    const bad = stored({ first: 100, count: 50 })
    bad.content = { ...bad.content, checksum: { algorithm: "CRC32", value: "different" } } as Audit.ContentRead
    const report = Audit.audit(input([stored({ first: 0, count: 100 }), bad, stored({ first: 150, count: 5 })]))
    expect(report.ok).toBe(false)
    expect(report.checksumFailures).toBe(1)
    expect(report.objectFailures).toEqual([
      { key: bad.key, kind: "ChecksumMismatch", expected: `CRC32:crc-${bad.key}`, actual: "CRC32:different" }
    ])
    expect(report.holes).toMatchObject([{ from: 100, to: 149 }])
  })

  it("a corrupt duplicate fails the audit even though a valid object covers its range", () => {
    const dup = stored({ first: 0, count: 10 })
    const corrupt = stored({ first: 0, count: 20 })
    corrupt.content = { ...corrupt.content, checksum: { algorithm: "CRC32", value: "x" } } as Audit.ContentRead
    const report = Audit.audit(input([dup, corrupt, stored({ first: 10, count: 10 })]))
    expect(report.holes).toEqual([])
    expect(report.checksumFailures).toBe(1)
    expect(report.ok).toBe(false)
  })

  it("record count, size and key disagreements with the manifest fail the object", () => {
    const fewer = stored({ first: 0, count: 10 })
    fewer.content = { ...fewer.content, records: 9 } as Audit.ContentRead
    const shorter = stored({ first: 10, count: 10 })
    shorter.size = shorter.size - 1
    const moved = stored({ first: 20, count: 10 })
    const wrong: Batch.Manifest = { ...moved.manifest, firstOffset: 21 }
    const i = input([fewer, shorter, moved])
    const manifests = new Map(i.manifests)
    manifests.set(moved.key, { _tag: "Manifest", manifest: wrong })
    const report = Audit.audit({ ...i, manifests })
    expect(report.objectFailures.map((f) => f.kind).sort()).toEqual(
      ["ManifestMismatch", "ManifestMismatch", "RecordCountMismatch", "SizeMismatch"]
    )
    expect(report.holes).toMatchObject([{ from: 0, to: 29 }])
  })

  it("an invalid manifest or an unreadable body fails the object", () => {
    const a = stored({ first: 0, count: 10 })
    const b = stored({ first: 10, count: 10 })
    b.content = { _tag: "Unreadable", message: "NoSuchKey" }
    const i = input([a, b])
    const manifests = new Map(i.manifests)
    manifests.set(a.key, { _tag: "Invalid", message: "manifest does not decode" })
    const report = Audit.audit({ ...i, manifests })
    expect(report.objectFailures.map((f) => f.kind)).toEqual(["ManifestInvalid", "Unreadable"])
    expect(report.ok).toBe(false)
  })

  it("an incomplete multipart upload is an orphan and fails the audit", () => {
    const report = Audit.audit(input([stored({ first: 0, count: 10 })], {
      uploads: [{ key: "orders/p=00000/x.rec", uploadId: "u1", initiated: undefined }]
    }))
    expect(report.ok).toBe(false)
    expect(report.orphanedUploads).toHaveLength(1)
    expect(report.orphanedUploadsTruncated).toBe(false)
    expect(Audit.audit({ ...input([]), uploads: report.orphanedUploads, uploadsTruncated: true }).orphanedUploadsTruncated).toBe(true)
  })
})

describe("which orphans --abort-orphans aborts", () => {
  const now = Date.parse("2026-12-01T12:00:00.000Z")
  const at = (id: string, initiated: string | undefined): Audit.PendingUpload => ({ key: `orders/p=00000/${id}.rec`, uploadId: id, initiated })
  const uploads = [
    at("old", "2026-12-01T10:59:59.000Z"), // 1 h 1 s old
    at("hour", "2026-12-01T11:00:00.000Z"), // exactly 1 h: not longer ago than 1 h
    at("young", "2026-12-01T11:59:30.000Z"),
    at("ahead", "2026-12-01T12:00:05.000Z"), // the store's clock ahead of ours
    at("unknown", undefined),
    at("garbled", "yesterday")
  ]
  const ids = (list: ReadonlyArray<Audit.PendingUpload>) => list.map((u) => u.uploadId)

  it("only uploads initiated longer ago than olderThan are aborted; an unknown age is kept", () => {
    const plan = Audit.planAborts(uploads, { now, olderThanMillis: 3_600_000 })
    expect(ids(plan.abort)).toEqual(["old"])
    expect(ids(plan.keep)).toEqual(["hour", "young", "ahead", "unknown", "garbled"])
    expect(ids(Audit.planAborts(uploads, { now, olderThanMillis: 20_000 }).abort)).toEqual(["old", "hour", "young"])
  })

  it("olderThan 0 aborts every upload, whatever its age", () => {
    const plan = Audit.planAborts(uploads, { now, olderThanMillis: 0 })
    expect(ids(plan.abort)).toEqual(ids(uploads))
    expect(plan.keep).toEqual([])
  })
})

describe("sluice audit: usage", () => {
  const capture = async (argv: ReadonlyArray<string>) => {
    const out: Array<string> = []
    const err: Array<string> = []
    const code = await AuditCli.main(argv, (l) => out.push(l), (l) => err.push(l), {})
    return { code, out: out.join("\n"), err: err.join("\n") }
  }

  it.each([
    [["audit"], "--bucket is required"],
    [["audit", "--bucket", "Bad_Bucket"], "--bucket: Expected a bucket name"],
    [["audit", "--bucket", "archive", "--concurrency", "0"], `--concurrency: Expected a value between 1 and 64 (got "0")`],
    [["audit", "--bucket", "archive", "--concurrency", "many"], "--concurrency:"],
    [["audit", "--bucket", "archive", "--endpoint", "localhost:9000"], "--endpoint: Expected an http:// or https:// URL"],
    [["audit", "--bucket", "archive", "--committed", "orders=5"], `--committed: "orders=5" is not <topic>:<partition>=<offset>`],
    [["audit", "--bucket", "archive", "--part-size", "eight"], "--part-size:"],
    [["audit", "--bucket", "archive", "--bucket", "other"], "--bucket is given twice"],
    [["audit", "--bucket", "archive", "--prefx", "p"], "unknown flag --prefx"],
    [["audit", "--bucket"], "--bucket needs a value"],
    [["audit", "--bucket", "archive", "--older-than", "1h"], "--older-than applies only with --abort-orphans"],
    [["audit", "--bucket", "archive", "--abort-orphans", "--older-than", "3600"], "--older-than:"],
    [["audit", "--bucket", "archive", "--abort-orphans", "--older-than", "-1h"], "--older-than: Expected a duration"],
    [["audit", "--bucket", "archive", "--abort-orphans=yes"], "--abort-orphans takes no value"],
    [["audti", "--bucket", "archive"], "unknown command audti"],
    [[], "a command is needed"]
  ])("%j exits 2: %s", async (argv, message) => {
    const { code, err } = await capture(argv)
    expect(code).toBe(2)
    expect(err).toContain(message)
  })

  it("--help prints the usage and exits 0; flags decode with defaults", async () => {
    const { code, out } = await capture(["--help"])
    expect(code).toBe(0)
    expect(out).toContain("sluice audit --bucket <bucket>")
    const parsed = AuditCli.parseArgs(["audit", "--bucket=archive", "--committed", "orders:0=10,orders:1=20", "--part-size", "5 MiB", "--json"], {})
    expect(Result.isSuccess(parsed) && parsed.success).toEqual({
      _tag: "Audit",
      config: {
        bucket: "archive",
        prefix: "",
        region: "us-east-1",
        committed: [{ source: "orders", partition: 0, offset: 10 }, { source: "orders", partition: 1, offset: 20 }],
        partSize: 5 * 1024 * 1024,
        concurrency: 4,
        abortOrphans: false,
        olderThan: 3_600_000,
        json: true
      }
    })
    const aborting = AuditCli.parseArgs(["audit", "--bucket", "archive", "--abort-orphans", "--older-than=0s"], {})
    expect(Result.isSuccess(aborting) && aborting.success._tag === "Audit" && aborting.success.config).toMatchObject({
      abortOrphans: true,
      olderThan: 0
    })
    const byDefault = AuditCli.parseArgs(["audit", "--bucket", "archive", "--abort-orphans"], {})
    expect(Result.isSuccess(byDefault) && byDefault.success._tag === "Audit" && byDefault.success.config).toMatchObject({
      abortOrphans: true,
      olderThan: 60 * 60_000
    })
    expect(out).toContain("--abort-orphans")
    expect(out).toContain("AbortIncompleteMultipartUpload")
  })

  it("help is generated from the effect/cli definition: the whole CLI, or one command's (issue 29)", async () => {
    const whole = await capture(["--help"])
    expect(whole).toMatchObject({ code: 0, err: "" })
    expect(whole.out).toContain("sluice audit --bucket <bucket> [--prefix <prefix>] [--endpoint <url>]")
    expect(whole.out).toContain("sluice calibrate --bucket <bucket> [--endpoint <url>]")
    const audit = await capture(["audit", "--bucket", "archive", "--help"])
    expect(audit).toMatchObject({ code: 0, err: "" })
    expect(audit.out).toBe(AuditCli.usage)
    expect(audit.out).not.toContain("--cell-seconds") // calibrate's flags are not audit's
    // help wins over everything else on the line, as before
    expect((await capture(["audit", "--nope", "-h"])).code).toBe(0)
    expect((await capture(["audti", "--help"])).out).toContain("sluice calibrate")
  })

  it("--completions <shell> prints a completion script of both commands, generated from the definition; exit 0 (issue 29)", async () => {
    for (const shell of ["bash", "zsh", "fish"] as const) {
      const { code, out, err } = await capture(["--completions", shell])
      expect(code).toBe(0)
      expect(err).toBe("")
      for (const word of ["sluice", "audit", "calibrate", "abort-orphans", "older-than", "cell-seconds"]) expect(out).toContain(word)
    }
    const sh = AuditCli.parseArgs(["--completions", "sh"], {})
    expect(Result.isSuccess(sh) && sh.success).toEqual({ _tag: "Completions", shell: "bash" })
    const bad = await capture(["audit", "--completions"])
    expect(bad.code).toBe(2)
    expect(bad.err.split("\n")[0]).toBe("sluice: --completions needs a value")
    expect((await capture(["--completions"])).err.split("\n")[0]).toBe("sluice: unknown command --completions") // as before
  })

  it.each([
    [["audit", "x", "--nope"], "unexpected argument x"],
    [["audit", "--bucket", "a", "--bucket", "b", "--nope"], "--bucket is given twice"],
    [["audit", "x", "--bucket", "a", "--bucket", "b"], "unexpected argument x"],
    [["audit", "--json=1", "--nope"], "--json takes no value"],
    [["audit", "--bucket", "b", "--prefix", "--json=1"], "--prefix needs a value"],
    [["audit", "--bucket", "b", "--", "x"], "unknown flag --"],
    [["audit", "--bucket", "b", "-xy"], "unknown flag -xy"],
    [["audit", "--bucket", "b", "-5"], "unknown flag -5"],
    [["audit", "--bucket", "Bad_Bucket", "--older-than", "1h"], "--older-than applies only with --abort-orphans"]
  ])("%j: of several problems the first on the line is named, as before effect/cli (issue 29): %s", async (argv, message) => {
    const { code, err } = await capture(argv)
    expect(code).toBe(2)
    expect(err.split("\n")[0]).toBe(`sluice: ${message}`)
  })
})
