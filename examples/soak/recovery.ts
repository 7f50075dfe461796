/**
 * Restart recovery (issue 13, hypothesis 3: "recovery time after a restart
 * degrades with the backlog"; issue 30: restarts that do not wait out the
 * session timeout). For each backlog size N and each restart mode: a fresh
 * topic holds N records (150 B, 8 partitions); the Kafka → S3 archiver
 * (`examples/kafka-to-s3/main.ts`, a child process) starts on it and is
 * stopped once a quarter of them is committed, then restarted on the same
 * consumer group. The modes (`--modes`):
 *
 * - `term`: SIGTERM — the archiver drains (its uploads in flight finish and
 *   commit everything it has read, which at these backlogs is all of them)
 *   and its source closes, leaving the group; then the rest of the backlog
 *   (all but the kill fraction) is produced, as records that arrive during
 *   the restart;
 * - `kill-static`: SIGKILL — mid-run, uploads in flight — with static
 *   membership: both runs with the same `--instance-id`, so the restart
 *   rejoins as the member it replaces;
 * - `kill`: SIGKILL without an instance id: the dead member stays in the
 *   group until the broker's session timeout expires it.
 * So that the kill lands mid-way
 * whatever the machine's speed, the first run commits in small steps: batches
 * of a twentieth of the backlog, at most 4 uploads started per second
 * (`archiver.json` with `pipeline.rate` 4 and the batch record targets set;
 * a 50 ms poll then sees a quarter committed with 3/4 still to go). The
 * restart runs on `archiver.json` as shipped: it is what is measured.
 * Measured from outside (the group's committed offsets, polled every 50 ms
 * through the Kafka admin API): the time from the restart to its first
 * commit, and until everything is committed (lag 0), against the backlog left
 * at the restart. The restarted process is then stopped with SIGTERM (it
 * drains).
 *
 *   npm run recovery [-- --backlogs 50000,100000,200000,400000] [--modes term,kill-static,kill] [--json]
 *
 * Writes `reports/recovery-<time>/` (`recovery.svg`, `result.json`,
 * `summary.md`); with `--json` the last stdout line is the result. Every wait
 * is bounded (`--timeout-seconds`, default 300 per archiver run). The flags,
 * their defaults and ranges: `RecoveryOptions.ts` (`npm run recovery --
 * --help`); bad options exit 2.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Admin } from "@platformatic/kafka"
import * as CommandLine from "@sluice/core/CommandLine"
import { createBucket, produce } from "../kafka-to-s3/produce.ts"
import { committedOffsets, committedRecords, exited, servicesFromEnv, sleep, startArchiver } from "./KillRuns.ts"
import type { ArchiverChild } from "./KillRuns.ts"
import * as RecoveryOptions from "./RecoveryOptions.ts"
import type { Mode } from "./RecoveryOptions.ts"
import * as Svg from "./Svg.ts"

const options = CommandLine.settle(RecoveryOptions.fromArgv(process.argv.slice(2)), RecoveryOptions.command.help)
if (options === undefined) process.exit()

const services = servicesFromEnv("recovery")
const { brokers } = services
const partitions = 8
const log = (line: string) => process.stderr.write(`recovery: ${line}\n`)

/** Records committed by `group` on `topic`, summed over partitions. */
const committed = async (admin: Admin, group: string, topic: string): Promise<number> =>
  committedRecords(await committedOffsets(admin, group, topic, partitions))

const shipped = "examples/kafka-to-s3/archiver.json"

/**
 * `archiver.json` with small, paced batches (a twentieth of `backlog` per
 * batch, at most 4 uploads started per second), written under `dir`: the
 * first run's settings, so it is still committing when it is killed.
 */
const pacedSettings = (dir: string, backlog: number): string => {
  const settings = JSON.parse(readFileSync(shipped, "utf8")) as {
    pipeline: { rate: number | null; batch: Record<string, unknown> }
    policies: { batch: Record<string, unknown> }
  }
  const records = Math.ceil(backlog / 20)
  settings.pipeline.rate = 4
  settings.pipeline.batch = { ...settings.pipeline.batch, records }
  settings.policies.batch = { ...settings.policies.batch, records }
  const file = join(dir, `first-run-${backlog}.json`)
  writeFileSync(file, JSON.stringify(settings, null, 2))
  return file
}

/** Starts the archiver on `topic` (its own metrics port, bounded in time; a static member when `instanceId` is given). */
const archiver = (topic: string, bucket: string, group: string, maxSeconds: number, config: string, instanceId: string | undefined): ArchiverChild =>
  startArchiver(topic, bucket, [
    "--group",
    group,
    "--config",
    config,
    "--prometheus-port",
    "0",
    "--max-seconds",
    String(maxSeconds),
    ...(instanceId === undefined ? [] : ["--instance-id", instanceId])
  ])

/** The archiver ended on its own, before what was waited for: a failed run, with its last words. */
class ArchiverExited extends Error {
  readonly topic: string
  readonly code: number | null
  constructor(topic: string, code: number | null, signal: string | null, tail: string) {
    super(`${topic}: the archiver exited (code ${code}, signal ${signal}) before what was waited for; its stderr ended with:\n${tail}`)
    this.topic = topic
    this.code = code
  }
}

/**
 * Polls until `done(committed)` or `timeoutMillis`; returns the elapsed ms, or
 * null on timeout. Throws `ArchiverExited` as soon as the archiver ends on its
 * own (a config it refuses, a crash): nothing waits out the timeout for a
 * process that is gone.
 */
const until = async (
  admin: Admin,
  group: string,
  topic: string,
  done: (n: number) => boolean,
  started: number,
  timeoutMillis: number,
  running: ArchiverChild
) => {
  for (;;) {
    const n = await committed(admin, group, topic).catch(() => -1)
    if (n >= 0 && done(n)) return { elapsedMillis: Date.now() - started, committed: n }
    const { exitCode, signalCode } = running.child
    if (exitCode !== null || signalCode !== null) throw new ArchiverExited(topic, exitCode, signalCode, running.tail())
    if (Date.now() - started > timeoutMillis) return null
    await sleep(50)
  }
}

/** The id of the group's one member (undefined: none, or several). */
const onlyMember = async (admin: Admin, group: string): Promise<string | undefined> => {
  const described = (await admin.describeGroups({ groups: [group] })).get(group)
  const members = [...(described?.members.values() ?? [])]
  return members.length === 1 ? members[0]?.id : undefined
}

/**
 * Polls the group's description until it is `STABLE` with one member, not
 * `previous`, that holds all `partitions` partitions; returns the ms from
 * `started`, or null on timeout. Throws `ArchiverExited` as `until` does.
 */
const settledOnNewMember = async (
  admin: Admin,
  group: string,
  previous: string | undefined,
  started: number,
  timeoutMillis: number,
  running: ArchiverChild
): Promise<number | null> => {
  for (;;) {
    const described = await admin.describeGroups({ groups: [group] }).then((m) => m.get(group), () => undefined)
    const members = [...(described?.members.values() ?? [])]
    const member = members[0]
    const held = member?.assignments === undefined ? 0 : [...member.assignments.values()].reduce((n, a) => n + a.partitions.length, 0)
    if (String(described?.state).toUpperCase() === "STABLE" && members.length === 1 && member !== undefined && member.id !== previous && held === partitions) {
      return Date.now() - started
    }
    const { exitCode, signalCode } = running.child
    if (exitCode !== null || signalCode !== null) throw new ArchiverExited(group, exitCode, signalCode, running.tail())
    if (Date.now() - started > timeoutMillis) return null
    await sleep(50)
  }
}

interface Row {
  readonly mode: Mode
  readonly backlog: number
  readonly committedAtKill: number
  readonly backlogAtRestart: number
  /** From the restart until the group is stable with the restarted member alone, holding every partition (from outside: the group's description). */
  readonly assignedSeconds: number | null
  readonly firstCommitSeconds: number | null
  readonly caughtUpSeconds: number | null
  readonly drainExit: number | null
}

const rows: Array<Row> = []
const dir = join("reports", `recovery-${new Date().toISOString().replace(/[:.]/g, "-")}`)
mkdirSync(dir, { recursive: true })
const admin = new Admin({ clientId: "sluice-recovery", bootstrapBrokers: [...brokers] })
const id = `${process.pid}-${Date.now().toString(36)}`
try {
  for (const backlog of options.backlogs) {
    for (const mode of options.modes) {
      const topic = `recovery-${id}-${backlog}-${mode}`
      const bucket = topic.toLowerCase()
      const group = `${topic}-archiver`
      const instanceId = mode === "kill-static" ? `${topic}-instance-0` : undefined
      await createBucket(services, bucket)
      log(`${topic}: producing ${backlog} records`)
      const ends = await produce(services, topic, { records: backlog, partitions, recordBytes: 150 })
      let total = backlog
      const maxSeconds = Math.ceil(options.timeoutMillis / 1000)

      // 1. The first run, stopped mid-way: SIGTERM (it drains) or SIGKILL (no drain, uploads in flight).
      const first = archiver(topic, bucket, group, maxSeconds, pacedSettings(dir, backlog), instanceId)
      const startedFirst = Date.now()
      const before = await until(admin, group, topic, (n) => n >= options.killFraction * backlog, startedFirst, options.timeoutMillis, first)
      first.child.kill(mode === "term" ? "SIGTERM" : "SIGKILL")
      const firstEnded = await exited(first.child, 60_000)
      if (firstEnded === "timeout") {
        first.child.kill("SIGKILL")
        await exited(first.child, 10_000)
        log(`${topic}: the first run did not drain within 60 s of its SIGTERM; killed`)
      }
      const memberBefore = await onlyMember(admin, group)
      if (mode === "term") {
        const more = Math.round(backlog * (1 - options.killFraction))
        await produce(services, topic, { records: more, partitions, recordBytes: 150, appendAfter: ends })
        total += more
      }
      const committedAtKill = await committed(admin, group, topic)
      if (before === null) log(`${topic}: the first run did not commit ${options.killFraction} of the backlog in time; stopped anyway`)
      log(`${topic}: ${mode}: stopped after ${committedAtKill} of ${backlog} committed; restarting`)

      if (committedAtKill >= total) {
        log(`${topic}: everything was committed before the stop (commits come a batch at a time): no backlog to recover (a failed run)`)
        rows.push({ mode, backlog, committedAtKill, backlogAtRestart: 0, assignedSeconds: null, firstCommitSeconds: null, caughtUpSeconds: null, drainExit: null })
        continue
      }

      // 2. The restart, timed from its spawn.
      const restarted = Date.now()
      const second = archiver(topic, bucket, group, maxSeconds, shipped, instanceId)
      const assigned = await settledOnNewMember(admin, group, memberBefore, restarted, options.timeoutMillis, second)
      const firstCommit = await until(admin, group, topic, (n) => n > committedAtKill, restarted, options.timeoutMillis, second)
      const caughtUp = firstCommit === null ? null : await until(admin, group, topic, (n) => n >= total, restarted, options.timeoutMillis, second)
      second.child.kill("SIGTERM")
      const ended = await exited(second.child, 60_000)
      const drainExit = ended === "timeout" ? null : ended
      if (second.child.exitCode === null) second.child.kill("SIGKILL")
      const row: Row = {
        mode,
        backlog,
        committedAtKill,
        backlogAtRestart: total - committedAtKill,
        assignedSeconds: assigned === null ? null : assigned / 1000,
        firstCommitSeconds: firstCommit === null ? null : firstCommit.elapsedMillis / 1000,
        caughtUpSeconds: caughtUp === null ? null : caughtUp.elapsedMillis / 1000,
        drainExit
      }
      rows.push(row)
      log(`${topic}: ${mode}: backlog at restart ${row.backlogAtRestart}, assigned ${row.assignedSeconds} s, first commit ${row.firstCommitSeconds} s, caught up ${row.caughtUpSeconds} s, drain exit ${drainExit}`)
    }
  }
} finally {
  await admin.close().catch(() => undefined)
}

// After the first commit: how long the rest of the backlog took (the part that can grow with it).
const afterFirst = rows.map((r) => (r.caughtUpSeconds === null || r.firstCommitSeconds === null ? null : Math.round((r.caughtUpSeconds - r.firstCommitSeconds) * 1000) / 1000))
// The report: recovery time against the backlog left at the restart, one series per mode.
const COLORS: Record<Mode, string> = { term: "#2ca02c", "kill-static": "#1f77b4", kill: "#d62728" }
const backlogs = [...new Set(rows.map((r) => r.backlog))]
const x = backlogs.map((b) => b / 1000)
const seriesOf = (pick: (r: Row) => number | null) =>
  options.modes.map((mode) => ({
    name: mode,
    color: COLORS[mode],
    values: backlogs.map((b) => {
      const r = rows.find((row) => row.mode === mode && row.backlog === b)
      return r === undefined ? null : pick(r)
    })
  }))
writeFileSync(
  join(dir, "recovery.svg"),
  Svg.chart("restart recovery: seconds from the restart, by backlog and restart mode", x, [
    { title: "assigned: the restarted member holds every partition (s from the restart)", series: seriesOf((r) => r.assignedSeconds) },
    { title: "first commit (s from the restart)", series: seriesOf((r) => r.firstCommitSeconds) },
    { title: "caught up, lag 0 (s from the restart)", series: seriesOf((r) => r.caughtUpSeconds) }
  ], "backlog (thousand records)")
)
/** The slowest first commit after a restart, per mode (null: a restart that did not commit in time). */
const firstCommitMaxSeconds = Object.fromEntries(options.modes.map((mode) => {
  const times = rows.filter((r) => r.mode === mode).map((r) => r.firstCommitSeconds)
  return [mode, times.some((t) => t === null) ? null : Math.max(...(times as Array<number>))]
}))
const result = { rows, secondsFromFirstCommitToCaughtUp: afterFirst, firstCommitMaxSeconds, report: dir }
writeFileSync(join(dir, "result.json"), JSON.stringify(result, null, 2))
writeFileSync(
  join(dir, "summary.md"),
  [
    "# Restart recovery",
    "",
    `The archiver stopped once ${options.killFraction} of each backlog was committed (its first run paced: batches of a twentieth`,
    "of the backlog, at most 4 uploads started per second, so the stop lands mid-way), then restarted on the same group with",
    "`archiver.json` as shipped. Modes: `term` — SIGTERM, the archiver drains and leaves the group; `kill-static` — SIGKILL,",
    "both runs one static member (`--instance-id`); `kill` — SIGKILL, no instance id.",
    "",
    "| mode | backlog | committed at the stop | backlog at restart | assigned (s) | first commit (s) | caught up (s) | first commit → caught up (s) | drain exit |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r, i) => `| ${r.mode} | ${r.backlog} | ${r.committedAtKill} | ${r.backlogAtRestart} | ${r.assignedSeconds ?? "timeout"} | ${r.firstCommitSeconds ?? "timeout"} | ${r.caughtUpSeconds ?? "timeout"} | ${afterFirst[i] ?? "-"} | ${r.drainExit ?? "-"} |`),
    "",
    "Hypothesis 3 (recovery degrades with the backlog) holds if the time to the first commit grows with the backlog, or the",
    "catch-up rate falls as the backlog grows; a constant first-commit time and a flat rate refute it. After a SIGKILL without",
    "an instance id the dead consumer stays a member of the group until the broker's session timeout (the Kafka source's",
    "`sessionTimeout`, 30 s by default) expires it, so the restarted archiver gets its partitions only then: that wait is in",
    "every `kill` first-commit time. A static member's restart replaces the dead member at once; a drained member has left.",
    ""
  ].join("\n")
)
log(`report: ${dir}`)
if (options.json) console.log(JSON.stringify(result))
// A run whose kill found nothing left to recover measured nothing: that fails too.
process.exitCode = rows.every((r) => r.backlogAtRestart > 0 && r.caughtUpSeconds !== null) ? 0 : 1
