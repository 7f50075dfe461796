/**
 * bench:peer — Sluice against a real peer archiver, Quix Streams (its
 * `S3FileSink`), on the same topic, the same broker and the same S3 server, in
 * one run.
 *
 * ```sh
 * npm run bench:peer [-- --records 1000000 --partitions 8 --rounds 3 --json]
 * npm run bench:peer -- --peer-defaults    # Quix with its default commit settings
 * npm run bench:peer -- --peer camel       # the second peer: an Apache Camel route (peer/camel)
 * npm run bench:peer -- --trouble slowdown,slower [--json]   # through a minute of store trouble (trouble.ts)
 * ```
 *
 * `npm run bench:peer` goes through `scripts/bench-peer.sh`, which starts the
 * broker and the S3 server (as `bench:e2e` does), installs the peer once into
 * a cached virtualenv (`scripts/lib/peer-venv.sh`: `quixstreams[s3]==3.28.1`
 * under `~/.cache/sluice/`), and runs this file with `SLUICE_PEER_PYTHON` set
 * to the venv's interpreter (not for `--help` and `--completions`, which
 * need neither). The command line is read with `effect/cli` ({@link command}):
 * an unknown flag, a bad value, or a flag of the other mode (the throughput
 * rounds' `--records`, `--partitions`, `--rounds`, `--peer-defaults`; the
 * trouble run's, `trouble.ts`) stops it before anything starts (exit 2).
 *
 * 1. One topic of `--records` records of 150 B over `--partitions` partitions
 *    is produced once (`services.ts`, as `bench:e2e` produces it).
 * 2. Each of `--rounds` rounds archives the whole topic with Sluice and with
 *    the peer (the order alternates), each with its own consumer group and
 *    its own bucket. Sluice is `bench:e2e`'s contender (`e2e.ts --role
 *    sluice`: `KafkaSource` → `Composition.defaults()` → `S3Sink`), run from
 *    its one-file build (`examples/bundle/build.ts`, `dist/bundle/bench-e2e.mjs`,
 *    which `scripts/bench-peer.sh` builds first), as an archiver that starts
 *    often would be deployed: the start is counted, and on the sources it
 *    costs ~1 s of CPU more (loading ~1 000 module files, and the Kafka
 *    client compiling its option schemas at import, which the build defers).
 *    `--sluice-from sources` runs it on the workspace's sources instead. The peer
 *    is `peer/quix_s3_archiver.py`, tuned as measured before (a checkpoint
 *    every 250 000 records or 60 s), or with Quix's defaults with
 *    `--peer-defaults`; it stops itself after the topic's records
 *    (`app.run(count=N)`). With `--peer camel` the peer is instead the Camel
 *    route of `peer/camel` (camel-kafka → aggregator → camel-aws2-s3, Camel
 *    4.14.0, built by `scripts/lib/peer-camel.sh` into the cache and given
 *    here as `SLUICE_PEER_CAMEL_CLASSPATH`), which stops itself once the
 *    topic's records are stored.
 * 3. Each archiver runs as a measured process tree (`process-tree.ts`): CPU
 *    seconds of the whole tree from spawn to exit, start-up included, and its
 *    peak RSS. Its time is from spawn to the moment the group's committed
 *    offsets are the topic's end offsets (for the Camel route, or the last
 *    record stored if that came later: {@link runSeconds}), polled every
 *    {@link COMMIT_POLL_MILLIS} ms through the Kafka admin API. An archiver
 *    still running {@link EXIT_GRACE_MILLIS} ms after that gets SIGTERM, and
 *    SIGKILL {@link TERM_GRACE_MILLIS} ms later; every run is killed after
 *    {@link RUN_BASE_MILLIS} ms + {@link RUN_MILLIS_PER_RECORD} ms per record,
 *    and the bench fails then.
 * 4. After each run the bucket is read back from outside: Sluice's with
 *    `archive.ts` (which throws at the first fault), the peer's with
 *    `peer-archive.ts` (which counts lost, duplicated and corrupt records).
 *    Lost records, a failed or killed run, or commits short of the end fail
 *    the bench (exit 1) once the report is written.
 *
 * With `--json` the report goes to stderr and stdout's last line is
 * `{ sluiceRecordsPerSecond, peerRecordsPerSecond, ratio,
 * sluiceCpuMicrosPerRecord, peerCpuMicrosPerRecord, cpuRatio, peer, lost, … }`:
 * medians over the rounds; `ratio` is Sluice's records/s over the peer's,
 * `cpuRatio` the peer's CPU per record over Sluice's (above 1: Sluice spends
 * less; both ratios read "times better"); `lost` is `{ sluice, peer }` (the most any round lost; `null` when
 * Sluice's archive failed its check, which names the fault).
 */
import { existsSync } from "node:fs"
import * as Os from "node:os"
import { performance } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import { fileURLToPath } from "node:url"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { Admin } from "@platformatic/kafka"
import * as CommandLine from "@sluice/core/CommandLine"
import { Option, Result } from "effect"
import { Flag } from "effect/cli"
import { benchE2eBundle } from "../bundle/build.ts"
import * as Archive from "./archive.ts"
import { countFlag, k, mb, median, readLine, round3, sec } from "./cli.ts"
import type { Job } from "./contender.ts"
import { RESULT } from "./contender.ts"
import * as PeerArchive from "./peer-archive.ts"
import type { PeerName } from "./peers.ts"
import { peerProgram } from "./peers.ts"
import * as ProcessTree from "./process-tree.ts"
import * as Services from "./services.ts"
import * as Trouble from "./trouble.ts"

/** How often the group's commits are polled: the resolution of a run's time (runs last seconds). */
export const COMMIT_POLL_MILLIS = 50
/** A run's bound, fixed part: start-up of either archiver (Python imports, group join) with room to spare. */
export const RUN_BASE_MILLIS = 120_000
/** A run's bound, per record: 0.5 ms is 2 000 records/s, far under either archiver's rate here. */
export const RUN_MILLIS_PER_RECORD = 0.5
/** Once everything is committed, how long an archiver may take to exit on its own (Quix closes its consumer, leaving the group). */
export const EXIT_GRACE_MILLIS = 30_000
/** After SIGTERM, how long before SIGKILL. */
export const TERM_GRACE_MILLIS = 30_000

type Contender = "sluice" | "peer"

/** What Sluice's archiver runs from (`--sluice-from`). */
const SLUICE_FROM = ["bundle", "sources"] as const
export type SluiceFrom = typeof SLUICE_FROM[number]

// --- the command line ---------------------------------------------------------

/** `bench:peer`'s command line: the throughput rounds' flags, and the trouble run's (`trouble.ts`). */
export const command = CommandLine.script("bench:peer", {
  records: countFlag("records", 1_000_000, "records of 150 B produced once into the topic"),
  partitions: countFlag("partitions", 8, "partitions of the topic"),
  rounds: countFlag("rounds", 3, "rounds, each archiving the whole topic with Sluice and with the peer"),
  peer: Flag.Literals("peer", ["quix", "camel"]).pipe(
    Flag.withDescription("the peer of the throughput rounds: quix (Quix Streams' S3FileSink, the default) or camel (an Apache Camel route: camel-kafka, camel-aws2-s3)"),
    Flag.optional
  ),
  peerDefaults: CommandLine.switchFlag("peer-defaults", "the peer with Quix's default commit settings (commit_interval=5, commit_every=0), not tuned"),
  sluiceFrom: Flag.Literals("sluice-from", SLUICE_FROM).pipe(
    Flag.withDescription("what Sluice's archiver runs from: bundle (one file built by npm run bundle -w @sluice/examples, the default) or sources (the workspace's module files)"),
    Flag.optional
  ),
  ...Trouble.flags,
  json: CommandLine.switchFlag("json", "the report on stderr, and on stdout's last line one JSON object: the summary")
}, "Sluice against a real peer archiver, Quix Streams' S3FileSink, on the same topic, local broker and S3 server (scripts/bench-peer.sh starts them and installs the peer): records/s and CPU per record over rounds, or, with --trouble, through a minute of store trouble.", { invocation: "npm run bench:peer --" })

/** What the throughput rounds run with. */
export interface Rounds {
  readonly _tag: "Rounds"
  readonly records: number
  readonly partitions: number
  readonly rounds: number
  /** The peer archiver: Quix Streams' S3FileSink, or the Camel route. */
  readonly peer: PeerName
  /** The peer with Quix's default commit settings. */
  readonly peerDefaults: boolean
  /** Sluice's archiver from its one-file build, or from the workspace's sources. */
  readonly sluiceFrom: SluiceFrom
  readonly json: boolean
}

/** What a run through trouble runs with (`--trouble`). */
export interface ThroughTrouble extends Trouble.Options {
  readonly _tag: "Trouble"
}

/**
 * Reads `bench:peer`'s argument list: the throughput rounds' options, a run
 * through trouble's (with `--trouble`), the help, a completion script, or
 * what is wrong (a count that is not a whole number ≥ 1, a trouble option out
 * of bounds, a flag of the other mode).
 */
export const decode = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Rounds | ThroughTrouble> =>
  readLine(command, argv, (flags) => {
    const given = (names: Record<string, boolean>) => Object.keys(names).filter((name) => names[name])
    const roundsOnly = given({
      "--records": flags.records.given,
      "--partitions": flags.partitions.given,
      "--rounds": flags.rounds.given,
      "--peer": Option.isSome(flags.peer),
      "--peer-defaults": flags.peerDefaults,
      "--sluice-from": Option.isSome(flags.sluiceFrom)
    })
    const troubleOnly = given({
      "--contenders": Option.isSome(flags.contenders),
      "--rate": Option.isSome(flags.rate),
      "--seconds": Option.isSome(flags.seconds),
      "--trouble-at": Option.isSome(flags.troubleAt),
      "--trouble-seconds": Option.isSome(flags.troubleSeconds)
    })
    if (Option.isSome(flags.trouble)) {
      if (roundsOnly.length > 0) return Result.fail(`${command.name}: ${roundsOnly.join(", ")} not with --trouble (the throughput rounds' flags)`)
      return Result.map(Trouble.check({ ...flags, trouble: flags.trouble.value }, flags.json), (options): Rounds | ThroughTrouble => ({ _tag: "Trouble", ...options }))
    }
    if (troubleOnly.length > 0) return Result.fail(`${command.name}: ${troubleOnly.join(", ")} only with --trouble`)
    const peer = Option.getOrElse(flags.peer, (): PeerName => "quix")
    if (peer === "camel" && flags.peerDefaults) return Result.fail(`${command.name}: --peer-defaults is Quix's commit settings, not with --peer camel`)
    return Result.gen(function*() {
      const rounds: Rounds | ThroughTrouble = {
        _tag: "Rounds",
        records: yield* flags.records.value,
        partitions: yield* flags.partitions.value,
        rounds: yield* flags.rounds.value,
        peer,
        peerDefaults: flags.peerDefaults,
        sluiceFrom: Option.getOrElse(flags.sluiceFrom, (): SluiceFrom => "bundle"),
        json: flags.json
      }
      return rounds
    }).pipe(Result.mapError((message) => `${command.name}: ${message}`))
  })

/**
 * Node's arguments before `--role` for Sluice's archiver: the one-file build
 * (no loader flags: it holds the sources already), or `e2e.ts` on the
 * sources with this process's own flags (`--conditions=@sluice/source`).
 * Throws when the build is missing.
 */
export const sluiceCommand = (from: SluiceFrom): ReadonlyArray<string> => {
  if (from === "sources") return [...process.execArgv, fileURLToPath(new URL("./e2e.ts", import.meta.url))]
  if (!existsSync(benchE2eBundle)) throw new Error(`${benchE2eBundle} is missing: build it with \`npm run bundle -w @sluice/examples\` (scripts/bench-peer.sh does), or pass --sluice-from sources`)
  return [benchE2eBundle]
}

/** One archiving run, measured. */
interface Run {
  readonly usage: ProcessTree.Usage
  /** Seconds from spawn to the group's commits at the end offsets; undefined if never. */
  readonly commitSeconds: number | undefined
  /**
   * Seconds from spawn to the last record stored, for an archiver that says
   * when (the Camel route's RESULT line, `storedAtEpochMillis`): its commits
   * run ahead of its uploads, so its run ends at the later of the two.
   */
  readonly storedSeconds: number | undefined
  /** The bench had to stop it (SIGTERM after the grace, or SIGKILL at the bound). */
  readonly stopped: "no" | "sigterm" | "killed"
  readonly committed: ReadonlyArray<number>
}

interface Stored {
  readonly objects: number
  readonly objectBytes: number
  /** Records found (duplicates included). */
  readonly records: number
  /** `null`: Sluice's archive failed its check (the failure says why). */
  readonly lost: number | null
  readonly duplicates: number | null
}

interface Row {
  readonly round: number
  readonly contender: Contender
  readonly run: Run
  readonly stored: Stored
  readonly failures: ReadonlyArray<string>
  readonly cpu: { readonly s3: number | undefined; readonly kafka: number | undefined }
}

/** Every tree started and not yet ended, killed if the bench itself is stopped. */
const live = new Set<ProcessTree.Tree>()

/**
 * Runs one archiver to its end: polls the group's commits until they are the
 * topic's `ends` and the tree has exited, stopping it when it overstays.
 */
const runTree = async (
  tree: ProcessTree.Tree,
  admin: Admin,
  job: { readonly groupId: string; readonly topic: string; readonly partitions: number },
  ends: ReadonlyArray<number>,
  boundMillis: number
): Promise<Run> => {
  const started = tree.startedAt
  live.add(tree)
  let exited = false
  // A rejection (the wrapper could not start) is thrown by the `await tree.done` below.
  void tree.done.then(() => (exited = true), () => (exited = true))
  let commitSeconds: number | undefined
  let committed: ReadonlyArray<number> = []
  let stopped: Run["stopped"] = "no"
  let termAt = 0
  // Bounded by `boundMillis` (then SIGKILL, which ends the tree); one poll per COMMIT_POLL_MILLIS.
  for (let polls = 0; polls <= boundMillis / COMMIT_POLL_MILLIS + 1; polls++) {
    const now = performance.now()
    if (commitSeconds === undefined) {
      committed = await Services.committedOffsets(admin, job.groupId, job.topic, job.partitions)
      if (committed.every((offset, p) => offset === ends[p])) commitSeconds = (performance.now() - started) / 1000
    }
    if (exited) break
    if (now - started > boundMillis || (stopped === "sigterm" && now - termAt > TERM_GRACE_MILLIS)) {
      stopped = "killed"
      tree.kill()
      break
    }
    if (stopped === "no" && commitSeconds !== undefined && now - started - commitSeconds * 1000 > EXIT_GRACE_MILLIS) {
      stopped = "sigterm"
      termAt = now
      tree.signal("SIGTERM")
    }
    await sleep(COMMIT_POLL_MILLIS)
  }
  if (!exited && stopped !== "killed") {
    stopped = "killed"
    tree.kill()
  }
  const usage = await tree.done
  live.delete(tree)
  return { usage, commitSeconds, storedSeconds: storedSecondsOf(usage.stdout, performance.timeOrigin + started), stopped, committed }
}

/**
 * Seconds from `spawnedAtEpochMillis` to the `storedAtEpochMillis` of the
 * last `RESULT` line on `stdout`, if one says it.
 */
export const storedSecondsOf = (stdout: ReadonlyArray<string>, spawnedAtEpochMillis: number): number | undefined => {
  const line = stdout.findLast((l) => l.startsWith(RESULT))
  if (line === undefined) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(line.slice(RESULT.length))
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null || !("storedAtEpochMillis" in parsed) || typeof parsed.storedAtEpochMillis !== "number") return undefined
  return (parsed.storedAtEpochMillis - spawnedAtEpochMillis) / 1000
}

/** Seconds a run took: to its commits at the end, or to its last record stored when that came later. */
export const runSeconds = (run: Pick<Run, "commitSeconds" | "storedSeconds">): number | undefined =>
  run.commitSeconds === undefined ? undefined : Math.max(run.commitSeconds, run.storedSeconds ?? 0)

/**
 * What went wrong with a run, from outside: its exit, its commits, a kill. A
 * SIGTERM after the grace is not a fault (the figures stand: everything was
 * committed), only reported: the archiver did not stop by itself.
 */
const runFailures = (run: Run, ends: ReadonlyArray<number>, boundMillis: number): Array<string> => {
  const out: Array<string> = []
  if (run.stopped === "killed") out.push(`killed by the bench (bound ${(boundMillis / 1000).toFixed(0)} s, or no exit after SIGTERM)`)
  if (run.usage.code !== 0) out.push(`exited with ${run.usage.code ?? run.usage.signal}`)
  if (run.commitSeconds === undefined) out.push(`group committed ${run.committed.join(",")}, topic ends at ${ends.join(",")}`)
  return out
}

async function main({ json, records, partitions, rounds, peer: peerName, peerDefaults, sluiceFrom }: Rounds): Promise<void> {
  const program = peerProgram(peerName, peerDefaults)
  const peer = program.label
  const peerSettings = program.settings
  const say = (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`)
  const services = Services.fromEnv()
  const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
  const sluiceEntry = sluiceCommand(sluiceFrom)
  const client = Services.s3Client(services)
  const admin = new Admin({ clientId: "bench-peer-admin", bootstrapBrokers: services.brokers })
  const id = `${Date.now().toString(36)}-${process.pid}`
  const topic = `sluice-bench-peer-${id}`
  const buckets = new Set<string>()
  const boundMillis = RUN_BASE_MILLIS + records * RUN_MILLIS_PER_RECORD

  say(`bench:peer — ${records.toLocaleString("en-US")} records × ${Services.RECORD_BYTES} B over ${partitions} partitions, ${rounds} rounds`)
  say(`machine: ${Os.cpus().length} cores, ${(Os.totalmem() / 2 ** 30).toFixed(0)} GiB, load ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")}, Node ${process.version}`)
  say(`Kafka ${services.brokers.join(",")}, S3 ${services.s3.endpoint}; Sluice: default policies, from its ${sluiceFrom === "bundle" ? "one-file build" : "sources"}; peer: ${peer}${peerName === "quix" ? " S3FileSink" : ""}, ${peerSettings}`)
  say(`each run bounded to ${(boundMillis / 1000).toFixed(0)} s`)
  const rows: Array<Row> = []
  try {
    const t0 = performance.now()
    const ends = await Services.produceTopic(services, topic, partitions, records)
    const produceSeconds = (performance.now() - t0) / 1000
    say(`produced ${topic} in ${produceSeconds.toFixed(1)} s (${k(records / produceSeconds)} records/s)`)

    for (let round = 1; round <= rounds; round++) {
      const order: ReadonlyArray<Contender> = round % 2 === 1 ? ["sluice", "peer"] : ["peer", "sluice"]
      for (const contender of order) {
        const bucket = `bench-peer-${id}-${contender}-${round}`
        await client.send(new CreateBucketCommand({ Bucket: bucket }))
        buckets.add(bucket)
        const groupId = `${topic}-${contender}-${round}`
        const job: Job = { topic, partitions, records, groupId, bucket, recordsPerObject: 0, policies: "default" }
        const before = Services.serviceCpu(repoRoot)
        const tree = contender === "sluice"
          ? ProcessTree.start("sluice", process.execPath, [...sluiceEntry, "--role", "sluice", "--job", JSON.stringify(job)])
          : ProcessTree.start("peer", program.command, [...program.args({ brokers: services.brokers.join(","), topic, group: groupId, bucket, records })])
        const run = await runTree(tree, admin, job, ends, boundMillis)
        const after = Services.serviceCpu(repoRoot)
        for (const line of run.usage.stdout) if (!line.startsWith(RESULT)) process.stderr.write(`  [${contender}] ${line}\n`)
        const failures = runFailures(run, ends, boundMillis)
        let stored: Stored
        if (contender === "sluice") {
          try {
            const a = await Archive.check(client, bucket, ends, true)
            stored = { objects: a.objects, objectBytes: a.objectBytes, records: a.records, lost: 0, duplicates: 0 }
          } catch (error) {
            failures.push(`archive check: ${error instanceof Error ? error.message : String(error)}`)
            stored = { objects: 0, objectBytes: 0, records: 0, lost: null, duplicates: null }
          }
        } else {
          const a = await PeerArchive.check(client, bucket, topic, ends)
          stored = a
          if (a.lost > 0 || a.duplicates > 0 || a.corrupt > 0 || a.stray > 0) {
            const faults = `lost ${a.lost}, duplicates ${a.duplicates}, corrupt ${a.corrupt}, stray ${a.stray}`
            if (a.lost > 0 || a.corrupt > 0 || a.stray > 0) failures.push(`archive: ${faults}`)
            else say(`round ${round} peer: archive holds ${a.duplicates} duplicates (at-least-once), nothing lost`)
          }
        }
        await Archive.removeBucket(client, bucket)
        buckets.delete(bucket)
        const row: Row = { round, contender, run, stored, failures, cpu: { s3: delta(after.s3, before.s3), kafka: delta(after.kafka, before.kafka) } }
        rows.push(row)
        const t = runSeconds(run)
        const storedLater = run.storedSeconds !== undefined && run.commitSeconds !== undefined && run.storedSeconds > run.commitSeconds
        say(
          `round ${round} ${contender.padEnd(6)} ${t === undefined ? "never committed the end" : `${t.toFixed(2)} s  ${k(records / t)} records/s`}` +
            `${storedLater ? ` (committed the end at ${run.commitSeconds?.toFixed(2)} s, stored the last record at ${run.storedSeconds?.toFixed(2)} s)` : ""}  ` +
            `CPU ${run.usage.cpuSeconds.toFixed(2)} s (${((run.usage.cpuSeconds * 1e6) / records).toFixed(2)} µs/record)  peak RSS ${mb(run.usage.peakRssBytes)}  ` +
            `${stored.objects} objects, ${mb(stored.objectBytes)}${failures.length === 0 ? " (verified)" : `  FAILED: ${failures.join("; ")}`}`
        )
      }
    }
  } finally {
    for (const tree of live) tree.kill()
    for (const bucket of buckets) await Archive.removeBucket(client, bucket).catch(() => undefined)
    await Services.deleteTopic(services, topic)
    await admin.close().catch(() => undefined)
    client.destroy()
  }

  const of = (c: Contender) => rows.filter((r) => r.contender === c)
  const ok = (c: Contender) => of(c).filter((r) => r.failures.length === 0 && r.run.commitSeconds !== undefined)
  const rate = (c: Contender) => median(ok(c).map((r) => records / (runSeconds(r.run) ?? Infinity)))
  const cpuMicros = (c: Contender) => median(ok(c).map((r) => (r.run.usage.cpuSeconds * 1e6) / records))
  const worst = (c: Contender, pick: (s: Stored) => number | null): number | null =>
    of(c).reduce<number | null>((acc, r) => (acc === null || pick(r.stored) === null ? null : Math.max(acc, pick(r.stored) ?? 0)), 0)
  const sluiceRecordsPerSecond = rate("sluice")
  const peerRecordsPerSecond = rate("peer")
  const sluiceCpuMicrosPerRecord = cpuMicros("sluice")
  const peerCpuMicrosPerRecord = cpuMicros("peer")
  const summary = {
    sluiceRecordsPerSecond: Math.round(sluiceRecordsPerSecond),
    peerRecordsPerSecond: Math.round(peerRecordsPerSecond),
    ratio: peerRecordsPerSecond > 0 ? round3(sluiceRecordsPerSecond / peerRecordsPerSecond) : null,
    sluiceCpuMicrosPerRecord: round3(sluiceCpuMicrosPerRecord),
    peerCpuMicrosPerRecord: round3(peerCpuMicrosPerRecord),
    cpuRatio: sluiceCpuMicrosPerRecord > 0 ? round3(peerCpuMicrosPerRecord / sluiceCpuMicrosPerRecord) : null,
    peer,
    lost: { sluice: worst("sluice", (s) => s.lost), peer: worst("peer", (s) => s.lost) },
    duplicates: { sluice: worst("sluice", (s) => s.duplicates), peer: worst("peer", (s) => s.duplicates) },
    peerSettings,
    sluiceFrom,
    records,
    partitions,
    rounds,
    sluicePeakRssBytes: Math.max(0, ...of("sluice").map((r) => r.run.usage.peakRssBytes)),
    peerPeakRssBytes: Math.max(0, ...of("peer").map((r) => r.run.usage.peakRssBytes)),
    sluiceObjects: median(of("sluice").map((r) => r.stored.objects)),
    peerObjects: median(of("peer").map((r) => r.stored.objects)),
    sluiceObjectBytes: median(of("sluice").map((r) => r.stored.objectBytes)),
    peerObjectBytes: median(of("peer").map((r) => r.stored.objectBytes)),
    failedRuns: rows.filter((r) => r.failures.length > 0).length
  }

  say("")
  say("| round | archiver | s to last commit | s to last record stored | records/s | s to exit | CPU s | CPU µs/record | peak RSS | objects | stored | S3 CPU | Kafka CPU |")
  say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
  for (const r of rows) {
    const t = runSeconds(r.run)
    say(
      `| ${r.round} | ${r.contender} | ${sec(r.run.commitSeconds)} | ${r.run.storedSeconds === undefined ? "-" : sec(r.run.storedSeconds)} | ${t === undefined ? "?" : k(records / t)} | ${sec(r.run.usage.exitSeconds)} | ` +
        `${r.run.usage.cpuSeconds.toFixed(2)} | ${((r.run.usage.cpuSeconds * 1e6) / records).toFixed(2)} | ${mb(r.run.usage.peakRssBytes)} | ` +
        `${r.stored.objects}${r.contender === "sluice" ? ` (+${r.stored.objects} manifests)` : ""} | ${mb(r.stored.objectBytes)} | ${sec(r.cpu.s3)} | ${sec(r.cpu.kafka)} |`
    )
  }
  say("")
  for (const r of rows) {
    if (r.run.stopped === "sigterm") say(`round ${r.round} ${r.contender}: still running ${EXIT_GRACE_MILLIS / 1000} s after its last commit, stopped with SIGTERM`)
    if (r.run.usage.cpuSource === "sampled") say(`round ${r.round} ${r.contender}: CPU from the last /proc sample (the tree did not end normally)`)
    for (const f of r.failures) say(`round ${r.round} ${r.contender} FAILED: ${f}`)
  }
  say(
    `median: Sluice ${k(sluiceRecordsPerSecond)} records/s, ${sluiceCpuMicrosPerRecord.toFixed(2)} µs CPU/record; ` +
      `${peer} ${k(peerRecordsPerSecond)} records/s, ${peerCpuMicrosPerRecord.toFixed(2)} µs CPU/record; ratio ${summary.ratio}, cpuRatio ${summary.cpuRatio}`
  )
  say(`load at the end: ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")}`)
  if (json) process.stdout.write(`${JSON.stringify(summary)}\n`)
  const lost = (summary.lost.sluice ?? 1) + (summary.lost.peer ?? 1)
  if (summary.failedRuns > 0 || lost > 0) {
    console.error(`bench:peer FAILED: ${summary.failedRuns} failed runs, lost ${JSON.stringify(summary.lost)}`)
    process.exitCode = 1
  }
}

const delta = (after: number | undefined, before: number | undefined): number | undefined =>
  after === undefined || before === undefined ? undefined : after - before

// --- entry ------------------------------------------------------------------

if (import.meta.main) {
  const options = CommandLine.settle(decode(process.argv.slice(2)), command.help)
  if (options !== undefined) {
    // Stopped from outside (run_source's bound, Ctrl-C): the archivers go too.
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        for (const tree of live) tree.kill()
        process.exit(1)
      })
    }
    // `--trouble`: the comparison through trouble (trouble.ts), not the throughput rounds.
    const run = options._tag === "Trouble" ? Trouble.main(options) : main(options)
    run.catch((error: unknown) => {
      for (const tree of live) tree.kill()
      console.error("bench:peer FAILED:", error instanceof Error ? error.message : error)
      process.exitCode = 1
    })
  }
}
