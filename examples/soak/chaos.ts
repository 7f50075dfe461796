/**
 * Chaos (issue 13 item 5): the Kafka → S3 archiver (`examples/src/KafkaToS3.ts`,
 * a child process reading the topic to its end) is SIGKILLed at seeded random
 * moments — while it reads, uploads, verifies or commits, whatever it is doing
 * then — and restarted on the same consumer group, `--runs` times; a last run
 * is left to finish. Then, from outside: the group's committed offsets must be
 * every partition's end, and `npx sluice audit` over the bucket (with those
 * committed offsets) must find every record (`records` = produced, no hole),
 * no checksum failure, no conflict and no orphaned multipart upload.
 *
 *   npm run chaos [-- --runs 20 --records 3000000 --seed 7 --json]
 *
 * Each run is killed a seeded random moment after its first commit (uniform
 * in [--min-ms, --max-ms], default 0–1000 ms), while the next batches upload,
 * verify and commit; the moments are not aimed at a stage. A run that reads
 * the whole topic before its kill moment exits on its own (`finishedEarly`);
 * if no kill landed at all, nothing was tested and the command exits 1 (use
 * more records, or a smaller `--max-ms`). With `--json` the last stdout line
 * is `{ runs, kills, recordsChecked, lost, orphanedUploads, … }`. Every wait
 * is bounded. The flags, their defaults and ranges: `ChaosOptions.ts`
 * (`npm run chaos -- --help`); bad options exit 2.
 */
import { spawn, spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { Admin } from "@platformatic/kafka"
import * as CommandLine from "@sluice/core/CommandLine"
import { createBucket, produce } from "../kafka-to-s3/produce.ts"
import * as ChaosOptions from "./ChaosOptions.ts"
import { committedOffsets, committedRecords, exited, servicesFromEnv, sleep } from "./KillRuns.ts"

const options = CommandLine.settle(ChaosOptions.fromArgv(process.argv.slice(2)), ChaosOptions.command.help)
if (options === undefined) process.exit()

/** mulberry32: a small seeded PRNG, so a run's kill moments can be replayed. */
const rng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const { brokers, s3 } = servicesFromEnv("chaos")
const log = (line: string) => process.stderr.write(`chaos: ${line}\n`)
const archiver = (topic: string, bucket: string): ChildProcess =>
  spawn(process.execPath, ["--conditions=@sluice/source", "examples/src/KafkaToS3.ts", topic, bucket], {
    stdio: ["ignore", "ignore", "pipe"],
    env: process.env
  })

const committed = (admin: Admin, group: string, topic: string) => committedOffsets(admin, group, topic, options.partitions)

const id = `${process.pid}-${Date.now().toString(36)}`
const topic = `chaos-${id}`
const bucket = `chaos-${id}`
const group = `${topic}-archiver`
const random = rng(options.seed)
const admin = new Admin({ clientId: "sluice-chaos", bootstrapBrokers: [...brokers] })
let kills = 0
let runs = 0
let finishedEarly = 0
const progress: Array<number> = []
let result: Record<string, unknown> = {}
try {
  await createBucket({ brokers, s3 }, bucket)
  log(`${topic}: producing ${options.records} records over ${options.partitions} partitions`)
  const ends = await produce({ brokers, s3 }, topic, { records: options.records, partitions: options.partitions, recordBytes: 150 })

  // The killed runs. A run is killed a random moment after its first commit
  // (uniform in [--min-ms, --max-ms] after it), so kills land while batches
  // are uploading, verifying and committing, not only during start-up; one
  // that commits nothing within 60 s is killed then.
  let before = 0
  for (let k = 0; k < options.runs; k++) {
    const extra = Math.round(options.minMs + random() * (options.maxMs - options.minMs))
    const child = archiver(topic, bucket)
    const started = Date.now()
    runs++
    let firstCommitAt: number | undefined
    while (firstCommitAt === undefined && child.exitCode === null && Date.now() - started < 60_000) {
      const n = committedRecords(await committed(admin, group, topic).catch(() => []))
      if (n > before) firstCommitAt = Date.now()
      else await sleep(50)
    }
    const ended = child.exitCode === null ? await exited(child, firstCommitAt === undefined ? 0 : extra) : child.exitCode
    if (ended === "timeout") {
      child.kill("SIGKILL")
      await exited(child, 10_000)
      kills++
    } else {
      finishedEarly++ // it caught up and exited before its kill moment
    }
    const now = await committed(admin, group, topic)
    before = committedRecords(now)
    progress.push(before)
    const when = firstCommitAt === undefined ? "no commit within 60 s" : `${extra} ms after its first commit (${firstCommitAt - started} ms after start)`
    log(`run ${runs}: ${ended === "timeout" ? `SIGKILL ${when}` : `exited ${String(ended)} before its kill`}; committed ${before} of ${options.records}`)
    if (before >= options.records) break
  }

  // The last run, left to finish (bounded).
  const last = archiver(topic, bucket)
  runs++
  let stderr = ""
  last.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000)
  })
  const code = await exited(last, 300_000)
  if (code === "timeout") last.kill("SIGKILL")
  const final = await committed(admin, group, topic)
  log(`last run: exit ${String(code)}; committed ${final.join(",")} (ends ${ends.join(",")})${code === 0 ? "" : `\n${stderr}`}`)

  // The audit, from outside: the bucket against the committed offsets.
  const committedFlag = final.map((o, p) => `${topic}:${p}=${o}`).join(",")
  const audit = spawnSync("npx", ["sluice", "audit", "--bucket", bucket, "--endpoint", s3.endpoint, "--region", s3.region, "--committed", committedFlag, "--json"], {
    encoding: "utf8",
    timeout: 300_000,
    env: { ...process.env, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey }
  })
  const lastLine = audit.stdout.trim().split("\n").pop() ?? "{}"
  const report = JSON.parse(lastLine) as {
    ok?: boolean
    records?: number
    holes?: ReadonlyArray<unknown>
    checksumFailures?: number
    conflicts?: number
    duplicates?: number
    orphanedUploads?: ReadonlyArray<unknown>
  }
  const atEnd = final.every((o, p) => o === ends[p])
  const recordsChecked = report.records ?? 0
  result = {
    runs,
    kills,
    finishedEarly,
    recordsProduced: options.records,
    recordsChecked,
    // Produced records the audit did not find in a verified object (holes are listed apart).
    lost: options.records - recordsChecked,
    committedAtEnd: atEnd,
    holes: report.holes?.length ?? null,
    duplicates: report.duplicates ?? null,
    conflicts: report.conflicts ?? null,
    checksumFailures: report.checksumFailures ?? null,
    orphanedUploads: report.orphanedUploads?.length ?? null,
    auditOk: report.ok === true,
    auditExit: audit.status,
    lastRunExit: code,
    seed: options.seed,
    committedAfterEachRun: progress
  }
  log(`audit: exit ${audit.status}, ${JSON.stringify({ ...result, committedAfterEachRun: undefined })}`)
} finally {
  await admin.close().catch(() => undefined)
}
if (options.json) console.log(JSON.stringify(result))
if (kills === 0) log("no kill landed: every killed run finished before its kill moment, so nothing was tested (a failed run); use more --records or a smaller --max-ms")
process.exitCode = kills > 0 && result["auditOk"] === true && result["committedAtEnd"] === true && result["lost"] === 0 && result["orphanedUploads"] === 0
  ? 0
  : 1
await sleep(0)
