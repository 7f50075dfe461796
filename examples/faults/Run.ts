/**
 * One fault run's machinery, all of it outside the archiver: a fresh topic
 * and bucket, records produced, the example archiver
 * (`examples/kafka-to-s3/main.ts`) started as a child process on a settings
 * file of the fault's, the consumer group's committed offsets polled through
 * the Kafka admin API (a timeline of commits, to time recovery), and at the
 * end `sluice audit` over the bucket against those committed offsets.
 */
import { spawn, spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Admin, Connection, FindCoordinatorKeyTypes, findCoordinatorV6 } from "@platformatic/kafka"
import { committedOffsets, endOffsets } from "../bench/services.ts"
import { exited, sleep } from "../soak/KillRuns.ts"
import { createBucket, produce } from "../kafka-to-s3/produce.ts"
import type { FaultRow } from "./FaultRow.ts"

/** Where the services are (the environment `scripts/faults.sh` exports). */
export interface Endpoints {
  readonly brokers: readonly [string, ...Array<string>]
  readonly s3: { readonly endpoint: string; readonly region: string; readonly accessKeyId: string; readonly secretAccessKey: string }
  readonly toxiproxyUrl: string
}

/** How often the committed offsets are read from outside (the recovery times' resolution). */
const POLL_MS = 100
/** How long a stopped (SIGTERM) archiver may take to drain and exit: its drain deadline (30 s) and some. */
const STOP_MS = 45_000
/** What is kept of one archiver's output (its log file gets the same): a fault run's is ~100 KB. */
export const OUTPUT_BOUND = 16 << 20

export { exited, sleep } from "../soak/KillRuns.ts"

/** A running archiver child: its process and the tail of what it wrote to stderr. */
export interface ArchiverChild {
  readonly process: ChildProcess
  readonly stderr: () => string
  /** Everything it wrote (stdout and stderr), up to {@link OUTPUT_BOUND} characters. */
  readonly output: () => string
  /** Waits for it to exit (bounded); the exit code, `null` for a signal, `"timeout"`. */
  readonly exit: (within: number) => Promise<number | null | "timeout">
}

/** Whether the child is still running (exited neither by itself nor by a signal). */
export const running = (child: ArchiverChild): boolean => child.process.exitCode === null && child.process.signalCode === null

/** The knobs of one fault's archiver, as `archiver.json` takes them (`examples/kafka-to-s3/Settings.ts`). */
export interface ArchiverSettings {
  readonly pipeline?: Record<string, unknown>
  readonly policies?: Record<string, unknown>
  readonly s3?: Record<string, unknown>
}

/** Commits seen from outside: when the committed total rose, and to what. */
export interface Commit {
  readonly at: number
  readonly total: number
}

/**
 * A fault's world: its topic and bucket, produced; the commit timeline polled
 * from the start; archivers started on it; and the audit at the end.
 */
export const prepare = async (
  endpoints: Endpoints,
  reportDir: string,
  name: string,
  options: { readonly records: number; readonly partitions: number; readonly recordBytes: number; readonly settings: ArchiverSettings }
) => {
  const id = `${name}-${Date.now().toString(36)}`
  const topic = `fault-${id}`
  const bucket = `fault-${id}`
  const group = `${topic}-archiver`
  const dir = join(reportDir, name)
  mkdirSync(dir, { recursive: true })
  const settingsFile = join(dir, "archiver.json")
  writeFileSync(settingsFile, JSON.stringify(options.settings, null, 2))
  await createBucket(endpoints, bucket)
  const ends = await produce(endpoints, topic, { records: options.records, partitions: options.partitions, recordBytes: options.recordBytes })
  const admin = new Admin({ clientId: "sluice-faults", bootstrapBrokers: [...endpoints.brokers], retries: 2 })
  const commits: Array<Commit> = [{ at: Date.now(), total: 0 }]
  let offsets: Array<number> = new Array<number>(options.partitions).fill(-1)
  let polling = true
  let logs = 0
  // The poller rides through broker kills: a failed read is a gap in the timeline, retried next tick.
  const poller = (async () => {
    while (polling) {
      try {
        offsets = await committedOffsets(admin, group, topic, options.partitions)
        const total = offsets.reduce((s, o) => s + Math.max(0, o), 0)
        const last = commits[commits.length - 1]
        if (last !== undefined && total > last.total) commits.push({ at: Date.now(), total })
      } catch {
        // broker down: the next poll tries again
      }
      await sleep(POLL_MS)
    }
  })()

  const committed = () => commits[commits.length - 1]?.total ?? 0

  return {
    topic,
    bucket,
    group,
    dir,
    records: options.records,
    ends,
    commits,
    committed,
    offsets: () => offsets,
    /** Starts the archiver on this fault's settings; `env` adds to (or overrides) the services' environment. */
    archiver: (env: Record<string, string> = {}): ArchiverChild => {
      logs++
      const child = spawn(process.execPath, [
        "--conditions=@sluice/source",
        "examples/kafka-to-s3/main.ts",
        topic,
        bucket,
        "--config",
        settingsFile,
        "--prometheus-port",
        "0",
        "--progress-seconds",
        "1"
      ], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } })
      let tail = ""
      const log = join(dir, `archiver-${logs}.log`)
      const chunks: Array<string> = []
      let kept = 0
      const onData = (d: Buffer) => {
        const text = d.toString()
        if (kept + text.length <= OUTPUT_BOUND) {
          chunks.push(text)
          kept += text.length
        }
        tail = (tail + text).slice(-8000)
      }
      child.stderr?.on("data", onData)
      child.stdout?.on("data", onData)
      child.once("exit", () => writeFileSync(log, chunks.join("")))
      return { process: child, stderr: () => tail, output: () => chunks.join(""), exit: (within) => exited(child, within) }
    },
    /** Waits until the group has committed every partition's end, `within` ms pass, or `child` exits; whether it did. */
    allCommitted: async (within: number, child?: ArchiverChild): Promise<boolean> => {
      const deadline = Date.now() + within
      while (Date.now() < deadline) {
        if (offsets.length === ends.length && offsets.every((o, p) => o === ends[p])) return true
        if (child !== undefined && !running(child)) return false
        await sleep(POLL_MS)
      }
      return false
    },
    /** Waits until the committed total exceeds `total`, `within` ms pass, or `child` exits; whether it did. */
    committedBeyond: async (total: number, within: number, child?: ArchiverChild): Promise<boolean> => {
      const deadline = Date.now() + within
      while (Date.now() < deadline) {
        if (committed() > total) return true
        if (child !== undefined && !running(child)) return false
        await sleep(POLL_MS / 2)
      }
      return false
    },
    /** Seconds from `since` to the first commit after it (`null`: none seen). */
    recoverySeconds: (since: number): number | null => {
      const next = commits.find((c) => c.at > since && c.total > (commits.filter((d) => d.at <= since).pop()?.total ?? 0))
      return next === undefined ? null : (next.at - since) / 1000
    },
    /** SIGTERM (the archiver drains), then its exit code within the drain bound; SIGKILL if it overstays. */
    stop: async (child: ArchiverChild): Promise<number | null | "timeout"> => {
      if (child.process.exitCode !== null || child.process.signalCode !== null) return child.process.exitCode
      child.process.kill("SIGTERM")
      const code = await child.exit(STOP_MS)
      if (code === "timeout") child.process.kill("SIGKILL")
      return code
    },
    /** `sluice audit` over the bucket against the group's committed offsets (read now, from outside). */
    audit: async (extra: ReadonlyArray<string> = []) => {
      const final = await committedOffsets(admin, group, topic, options.partitions)
      const high = await endOffsets(admin, topic, options.partitions)
      const committedFlag = final.map((o, p) => `${topic}:${p}=${Math.max(0, o)}`).join(",")
      const result = spawnSync("npx", [
        "sluice",
        "audit",
        "--bucket",
        bucket,
        "--endpoint",
        endpoints.s3.endpoint,
        "--region",
        endpoints.s3.region,
        "--committed",
        committedFlag,
        "--json",
        ...extra
      ], {
        encoding: "utf8",
        timeout: 300_000,
        env: { ...process.env, AWS_ACCESS_KEY_ID: endpoints.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: endpoints.s3.secretAccessKey }
      })
      writeFileSync(join(dir, `audit${extra.length > 0 ? "-" + extra.join("").replace(/[^a-z]/g, "") : ""}.txt`), `${result.stdout}\n${result.stderr}`)
      const report = JSON.parse(result.stdout.trim().split("\n").pop() ?? "{}") as {
        readonly ok?: boolean
        readonly records?: number
        readonly holes?: ReadonlyArray<{ readonly count?: number }>
        readonly duplicates?: number
        readonly overlaps?: ReadonlyArray<{ readonly from?: number; readonly to?: number; readonly kind?: string }>
        readonly conflicts?: number
        readonly checksumFailures?: number
        readonly orphanedUploads?: ReadonlyArray<unknown>
        readonly unarchived?: ReadonlyArray<{ readonly committed?: number }>
      }
      return {
        ok: report.ok === true,
        exit: result.status,
        found: report.records ?? 0,
        holes: report.holes?.length ?? 0,
        // Offsets below the committed ones that no verified object holds: gone from the archive and
        // never read again — the audit's holes, and the partitions committed with no object at all.
        holeRecords: (report.holes ?? []).reduce((sum, h) => sum + (h.count ?? 0), 0) +
          (report.unarchived ?? []).reduce((sum, u) => sum + (u.committed ?? 0), 0),
        duplicateObjects: report.duplicates ?? 0,
        // Records of the objects that overlap earlier ones with equal content (an upper bound: an overlap may be partial).
        duplicates: (report.overlaps ?? []).filter((o) => o.kind === "duplicate").reduce((sum, o) => sum + (o.to ?? 0) - (o.from ?? 0) + 1, 0),
        conflicts: report.conflicts ?? 0,
        checksumFailures: report.checksumFailures ?? 0,
        orphanedUploads: report.orphanedUploads?.length ?? 0,
        committed: final,
        ends: high,
        atEnd: final.every((o, p) => o === high[p])
      }
    },
    /** The node that coordinates the group, asked of a broker (FindCoordinator), or `undefined` when none answers. */
    coordinatorNode: async (): Promise<number | undefined> => {
      for (const broker of endpoints.brokers) {
        const [host = "127.0.0.1", port = "0"] = broker.split(":")
        const connection = new Connection("sluice-faults-coordinator")
        try {
          await connection.connect(host, Number(port))
          const answer = await findCoordinatorV6.api.async(connection, FindCoordinatorKeyTypes.GROUP, [group])
          const node = answer.coordinators[0]
          if (node !== undefined && node.errorCode === 0) return node.nodeId
        } catch {
          // that broker is down or not ready: ask the next
        } finally {
          await connection.close().catch(() => undefined)
        }
      }
      return undefined
    },
    close: async () => {
      polling = false
      await poller
      await admin.close().catch(() => undefined)
    }
  }
}
export type World = Awaited<ReturnType<typeof prepare>>
export type AuditResult = Awaited<ReturnType<World["audit"]>>

/**
 * The row of a fault whose archiver must end with every record committed:
 * `ok` when the audit is clean, every partition is committed to its end,
 * nothing is lost, the last run exited 0, and the fault's own checks hold.
 */
export const row = (
  world: World,
  name: string,
  fields: {
    readonly injected: number
    readonly audit: AuditResult
    readonly recoverySeconds: number | null
    readonly exit: number | null | "timeout"
    readonly checks: ReadonlyArray<readonly [string, boolean]>
  }
): FaultRow => {
  const { audit } = fields
  // Lost: committed and not in the bucket (the audit's holes). Records past the committed
  // offsets are not lost — the topic still holds them; "committed to the end" checks those.
  const lost = audit.holeRecords
  const checks: ReadonlyArray<readonly [string, boolean]> = [
    ["audit clean", audit.ok],
    ["committed to the end", audit.atEnd],
    ["nothing lost", lost === 0],
    ["last run exited 0", fields.exit === 0],
    ...fields.checks
  ]
  const failed = checks.filter(([, holds]) => !holds).map(([what]) => what)
  return {
    name,
    injected: fields.injected,
    records: world.records,
    found: audit.found,
    lost,
    duplicates: audit.duplicates,
    recoverySeconds: fields.recoverySeconds,
    exit: fields.exit === "timeout" ? null : fields.exit,
    ok: failed.length === 0,
    detail: failed.length === 0
      ? `${checks.map(([what]) => what).join(", ")}`
      : `FAILED: ${failed.join(", ")} (audit: ${audit.holes} holes, ${audit.conflicts} conflicts, ${audit.checksumFailures} checksum failures, ${audit.orphanedUploads} orphaned uploads)`
  }
}
