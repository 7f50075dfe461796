/**
 * Scale-out on a real consumer group (issue 30): N example archivers
 * (`examples/kafka-to-s3/main.ts`, child processes, each a static member with
 * its own `--instance-id`) in one group on the local broker, a topic of 24
 * partitions, a producer running throughout (`producer.ts`, paced), and the
 * steps an operator takes:
 *
 * 1. scale 1 → N, one instance at a time;
 * 2. a rolling restart of every instance (SIGTERM: it drains and leaves the
 *    group; then started again with the same instance id);
 * 3. a SIGKILL of one instance, restarted at once with its instance id;
 * 4. scale N → 1 (SIGTERM, one at a time).
 *
 * Then the producer stops, the last instance catches up (every committed
 * offset at the end offset) and drains, and the bucket is audited from
 * outside (`sluice audit --committed`): every produced offset in a verified
 * object (`lost` is what is not), and every record archived twice
 * (`duplicates`, records) must lie in the uncommitted window of a partition
 * that changed hands during a step: at or above its committed offset when the
 * step began, below its committed offset when the step ended
 * (`duplicatesBounded`). And every duplicate must be named by the archiver
 * that left it: each prints a `left on revoke` line (the pipeline's
 * `LeftOnRevoke` signal) with the offset ranges a revoke left stored and not
 * committed; every duplicated range must be announced (`duplicatesNamed`),
 * but in the SIGKILL step, whose victim cannot speak
 * (`duplicatesUnnamedKilled`). The other way is reported, not required
 * (`announcedNotDuplicated`): keys are deterministic, so a next owner whose
 * batch has the same first and last offsets overwrites the object, and the
 * bucket holds the record once.
 *
 * Measured from outside (the admin API, every 500 ms): lag (records not yet
 * committed), partitions per instance, the time from each action to a
 * settled assignment (the group `STABLE` with exactly the expected instances,
 * every partition held); per instance, records/s committed (its progress
 * lines). `restartRecoverySeconds` is the slowest restart (rolling and kill):
 * from the restarted process's spawn to the settled assignment.
 *
 *   npm run scaleout -- [--instances 3] [--rate 20000] [--hold-seconds 10] [--json]
 *
 * Capacity (`--capacity`, default on): after the steps, the topic as it then
 * is (everything produced, the producer stopped) is archived again from its
 * start by 1, 2, … N instances at once in a fresh group each (into a bucket of
 * its own): records/s from the settled assignment until every end offset is
 * committed, per instance records/s and Jain's fairness index over them. The
 * machine's cores bound it (`os.availableParallelism()` is in the result).
 *
 * Writes `reports/scaleout-<time>/` (`scaleout.svg`: lag and partitions per
 * instance over time, `result.json`, `summary.md`); with `--json` the last
 * stdout line is the result. Every wait is bounded (`--timeout-seconds` per
 * wait, default 120; each archiver ends itself after the run's bound). The
 * flags, their defaults and ranges: `ScaleoutOptions.ts` (`npm run scaleout --
 * --help`); bad options exit 2.
 */
import { spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { availableParallelism, homedir } from "node:os"
import { join } from "node:path"
import { Admin } from "@platformatic/kafka"
import * as CommandLine from "@sluice/core/CommandLine"
import { endOffsets } from "../bench/services.ts"
import { createBucket } from "../kafka-to-s3/produce.ts"
import { committedOffsets, exited, servicesFromEnv, sleep, startArchiver } from "./KillRuns.ts"
import { attribute, name as nameDuplicates, parseLeftOnRevoke, size } from "./Duplicates.ts"
import * as ConsumerGroupDescribe from "./ConsumerGroupDescribe.ts"
import type { AnnouncedRange } from "./Duplicates.ts"
import * as ProducerChild from "./ProducerChild.ts"
import * as ScaleoutOptions from "./ScaleoutOptions.ts"
import * as Svg from "./Svg.ts"

const options = CommandLine.settle(ScaleoutOptions.fromArgv(process.argv.slice(2)), ScaleoutOptions.command.help)
if (options === undefined) process.exit()

const log = (line: string) => process.stderr.write(`scaleout: ${line}\n`)
const services = servicesFromEnv("scaleout")
const { brokers, s3 } = services
const id = `${process.pid}-${Date.now().toString(36)}`
const topic = `scaleout-${id}`
const bucket = topic.toLowerCase()
/** The group of the steps; each capacity run has its own (`${group}-capacity-<k>`). */
let group = `${topic}-archiver`
/** The bucket the instances write to (each capacity run has its own). */
let target = bucket
const dir = join("reports", `scaleout-${new Date().toISOString().replace(/[:.]/g, "-")}`)
mkdirSync(dir, { recursive: true })
/** Each archiver ends itself after this long, whatever happens to this process. */
const ARCHIVER_MAX_SECONDS = 3600
/**
 * Node's compile cache for the archivers (unless the environment sets one), as
 * a deployment would keep it: a start loads ~0.7 s of modules instead of
 * ~1.1 s here, which is most of a restart's time to rejoin.
 */
const COMPILE_CACHE = join(process.env["SLUICE_CACHE"] ?? join(homedir(), ".cache", "sluice"), "node-compile-cache")
const started = Date.now()
const seconds = () => (Date.now() - started) / 1000

// ---------------------------------------------------------------- instances

/** One archiver process: its instance id, and what its progress lines said. */
interface Instance {
  readonly name: string
  readonly child: ChildProcess
  readonly spawnedAt: number
  /** (ms since the run's start, records committed by this process) from its progress lines: one a second, for the process's life (each ends itself after ARCHIVER_MAX_SECONDS). */
  readonly progress: ReadonlyArray<{ readonly at: number; readonly committed: number }>
  /** The last bytes of its stderr. */
  readonly tail: () => string
}

const live = new Map<string, Instance>()
/** The ranges the archivers announced as left on revoke, during the steps (the capacity runs' own groups are not audited). */
const announced: Array<AnnouncedRange> = []
let announcing = true

const startInstance = (name: string): Instance => {
  const progress: Array<{ readonly at: number; readonly committed: number }> = []
  const { child, tail } = startArchiver(
    topic,
    target,
    ["--group", group, "--group-protocol", options.protocol, "--instance-id", name, "--name", name, "--prometheus-port", "0", "--progress-seconds", "1", "--max-seconds", String(ARCHIVER_MAX_SECONDS)],
    {
      env: { NODE_COMPILE_CACHE: COMPILE_CACHE, ...process.env },
      onLine: (line) => {
        const left = parseLeftOnRevoke(name, line)
        if (left !== undefined && announcing) announced.push(...left)
        const m = /committed (\d+),/.exec(line)
        if (m !== null && line.startsWith("kafka-to-s3: ")) progress.push({ at: Date.now() - started, committed: Number(m[1]) })
      }
    }
  )
  const instance: Instance = { name, child, spawnedAt: Date.now(), progress, tail }
  live.set(name, instance)
  return instance
}

/** SIGTERM (a drain) or SIGKILL; waits for the exit (bounded), returns its code. */
const stopInstance = async (name: string, signal: "SIGTERM" | "SIGKILL"): Promise<number | null | "timeout"> => {
  const instance = live.get(name)
  if (instance === undefined) throw new Error(`no live instance ${name}`)
  live.delete(name)
  instance.child.kill(signal)
  const code = await exited(instance.child, options.timeoutMillis)
  if (code === "timeout") {
    instance.child.kill("SIGKILL")
    await exited(instance.child, 10_000)
  }
  if (signal === "SIGTERM" && code !== 0) log(`${name}: drain ended with ${String(code)}:\n${instance.tail()}`)
  return code
}

/** An instance that exited on its own: the run failed. */
const checkAlive = () => {
  for (const instance of live.values()) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
      throw new Error(`${instance.name} exited on its own (code ${instance.child.exitCode}, signal ${instance.child.signalCode}):\n${instance.tail()}`)
    }
  }
}

// ---------------------------------------------------------------- the group from outside

const admin = new Admin({ clientId: "sluice-scaleout", bootstrapBrokers: [...brokers] })

/**
 * The owner of each partition in the last description that assigned it, and
 * the partitions whose owner changed since `step` last cleared the set: every
 * description (the sampler's and the settle polls', 50 ms apart) feeds them,
 * so a partition that moves away and back within a step is counted as moved.
 */
const lastOwner = new Array<string | undefined>(options.partitions).fill(undefined)
const movedSince = new Set<number>()

/** The group's state, and each instance's partitions and member id (by instance id). */
const describe = async (): Promise<{
  readonly state: string
  readonly held: Map<string, ReadonlyArray<number>>
  readonly memberIds: Map<string, string>
}> => {
  const described = await describeGroup()
  const held = new Map<string, ReadonlyArray<number>>()
  const memberIds = new Map<string, string>()
  for (const member of described.members) {
    const name = member.instanceId ?? member.id
    const partitions = member.partitions
    held.set(name, partitions)
    memberIds.set(name, member.id)
    for (const p of partitions) {
      if (lastOwner[p] !== undefined && lastOwner[p] !== name) movedSince.add(p)
      lastOwner[p] = name
    }
  }
  return { state: described.state.toUpperCase(), held, memberIds }
}

/**
 * The group's state and members, from the API of its protocol: DescribeGroups
 * (classic), or ConsumerGroupDescribe (the consumer protocol: DescribeGroups
 * answers such a group as Dead).
 */
const describeGroup = async (): Promise<ConsumerGroupDescribe.Described> => {
  if (options.protocol === "consumer") return ConsumerGroupDescribe.describe(admin, group, topic)
  const described = (await admin.describeGroups({ groups: [group] })).get(group)
  return {
    state: String(described?.state),
    members: [...(described?.members.values() ?? [])].map((m) => ({
      instanceId: m.groupInstanceId ?? null,
      id: m.id,
      partitions: [...(m.assignments?.values() ?? [])].flatMap((a) => a.partitions)
    }))
  }
}

interface Sample {
  readonly t: number
  readonly lag: number
  readonly held: Record<string, number>
}
const samples: Array<Sample> = []

const sample = async (): Promise<void> => {
  const [committed, ends, described] = await Promise.all([
    committedOffsets(admin, group, topic, options.partitions),
    endOffsets(admin, topic, options.partitions),
    describe()
  ])
  const lag = ends.reduce((s, e, p) => s + Math.max(0, e - Math.max(0, committed[p] ?? 0)), 0)
  const held: Record<string, number> = {}
  for (const [name, partitions] of described.held) held[name] = partitions.length
  samples.push({ t: seconds(), lag, held })
}
let sampling = true
/** Samples every 500 ms until `sampling` is cleared (started once the topic exists). */
const sampleLoop = async (): Promise<void> => {
  while (sampling) {
    await sample().catch((error: unknown) => log(`sample failed: ${error instanceof Error ? error.message : String(error)}`))
    await sleep(500)
  }
}

/**
 * Polls until the group is stable with exactly `expected` holding every
 * partition (each at least one), and none of `replaced` (instance → the member
 * id it had before a restart) still the old member; ms from `since`. Each
 * change of the group's state is kept in `trace` (ms from `since`).
 */
const settled = async (
  expected: ReadonlyArray<string>,
  since: number,
  replaced: ReadonlyMap<string, string>,
  trace: Array<string>,
  joined: { at: number | undefined } = { at: undefined }
): Promise<number> => {
  let last = ""
  for (;;) {
    checkAlive()
    const described = await describe().catch(() => undefined)
    const seen = described === undefined ? "unknown" : `${described.state} ${[...described.held].map(([n, ps]) => `${n}:${ps.length}`).join(" ")}`
    if (seen !== last) trace.push(`${Date.now() - since} ms ${seen}`)
    last = seen
    const stale = described === undefined || [...replaced].some(([name, memberId]) => described.memberIds.get(name) === memberId)
    if (joined.at === undefined && !stale && expected.every((name) => described.memberIds.has(name))) joined.at = Date.now() - since
    if (described !== undefined && described.state === "STABLE" && !stale) {
      const names = [...described.held.keys()].sort()
      const total = [...described.held.values()].reduce((n, ps) => n + ps.length, 0)
      const everyoneHolds = [...described.held.values()].every((ps) => ps.length > 0)
      if (names.join() === [...expected].sort().join() && total === options.partitions && everyoneHolds) return Date.now() - since
    }
    if (Date.now() - since > options.timeoutMillis) throw new Error(`the group did not settle on ${expected.join(", ")} within ${options.timeoutMillis} ms`)
    await sleep(50)
  }
}

// ---------------------------------------------------------------- steps

interface Step {
  readonly step: string
  readonly startedAt: number
  endedAt: number
  readonly instances: ReadonlyArray<string>
  /** From the action (a restart: the new process's spawn) to the settled assignment. */
  settleSeconds: number
  /** From the action until every expected instance is a member (a restart: its new member id), settled or not. */
  joinedSeconds: number | null
  /** Committed offsets when the step began and when it ended, per partition. */
  readonly committedBefore: ReadonlyArray<number>
  committedAfter: ReadonlyArray<number>
  /** Partitions whose owner changed from before the step to its end. */
  moved: ReadonlyArray<number>
  /** Whether the step restarted a process (its settle time is a restart's). */
  readonly restart: boolean
  /** The group's states until it settled (ms from the action). */
  readonly trace: ReadonlyArray<string>
  lagAtEnd: number
  /** Records/s committed per instance over the step's hold (its progress lines). */
  ratePerInstance: Record<string, number>
  duplicates: number
  /** Of `duplicates`, those inside a range an archiver announced as left on revoke. */
  named: number
}
const steps: Array<Step> = []

const rateOver = (instance: Instance, from: number, to: number): number => {
  const inWindow = instance.progress.filter((p) => p.at >= from && p.at <= to)
  const first = inWindow[0]
  const last = inWindow.at(-1)
  if (first === undefined || last === undefined || last.at === first.at) return 0
  return Math.round((last.committed - first.committed) / ((last.at - first.at) / 1000))
}

/**
 * Runs one step: `action` returns the moment its settle time counts from (a
 * restart: the new process's spawn; a stop: the signal); then hold and
 * measure. `restarted` names the instance a restart replaces.
 */
const step = async (name: string, restarted: string | undefined, action: () => Promise<number>): Promise<void> => {
  const committedBefore = await committedOffsets(admin, group, topic, options.partitions)
  const before = await describe()
  movedSince.clear()
  const oldMember = restarted === undefined ? undefined : before.memberIds.get(restarted)
  const replaced = new Map(restarted === undefined || oldMember === undefined ? [] : [[restarted, oldMember]])
  const startedAt = Date.now() - started
  log(`${seconds().toFixed(1)} s: ${name}`)
  const since = await action()
  const expected = [...live.keys()]
  const trace: Array<string> = []
  const joined: { at: number | undefined } = { at: undefined }
  const settleMillis = await settled(expected, since, replaced, trace, joined)
  const holdFrom = Date.now() - started
  await sleep(options.holdMillis)
  checkAlive()
  await sample()
  const committedAfter = await committedOffsets(admin, group, topic, options.partitions)
  const endedAt = Date.now() - started
  const ratePerInstance: Record<string, number> = {}
  for (const instance of live.values()) ratePerInstance[instance.name] = rateOver(instance, holdFrom, endedAt)
  const moved = [...movedSince].sort((a, b) => a - b)
  const s: Step = {
    step: name,
    startedAt,
    endedAt,
    instances: expected,
    settleSeconds: settleMillis / 1000,
    joinedSeconds: joined.at === undefined ? null : joined.at / 1000,
    committedBefore,
    committedAfter,
    moved,
    restart: restarted !== undefined,
    trace,
    lagAtEnd: samples.at(-1)?.lag ?? -1,
    ratePerInstance,
    duplicates: 0,
    named: 0
  }
  steps.push(s)
  log(`  ${trace.join(" → ")}`)
  log(`  joined after ${s.joinedSeconds} s, settled in ${s.settleSeconds} s on ${expected.join(", ")}; moved ${moved.length} partitions; lag ${s.lagAtEnd}; records/s ${JSON.stringify(ratePerInstance)}`)
}

const names = Array.from({ length: options.instances }, (_, i) => `archiver-${i}`)
let producer: ProducerChild.ProducerChild | undefined
let sampler: Promise<void> | undefined
let result: Record<string, unknown> = {}
let failure: unknown
try {
  await createBucket(services, bucket)
  await admin.createTopics({ topics: [topic], partitions: options.partitions, replicas: 1 })
  sampler = sampleLoop()
  producer = ProducerChild.start({ brokers, topic, partitions: options.partitions, rate: options.rate, recordBytes: 150 })

  // 1. Scale up, one at a time.
  for (const name of names) await step(`scale up: start ${name}`, undefined, async () => startInstance(name).spawnedAt)
  // 2. A rolling restart: each drains (SIGTERM) and starts again with its instance id.
  for (const name of names) {
    await step(`rolling restart: ${name}`, name, async () => {
      const code = await stopInstance(name, "SIGTERM")
      if (code !== 0) throw new Error(`${name} did not drain cleanly on SIGTERM (exit ${String(code)})`)
      return startInstance(name).spawnedAt
    })
  }
  // 3. A crash: SIGKILL one, restarted at once as the same static member.
  const victim = names[Math.floor(names.length / 2)] ?? "archiver-0"
  await step(`SIGKILL ${victim}, restart`, victim, async () => {
    await stopInstance(victim, "SIGKILL")
    return startInstance(victim).spawnedAt
  })
  // 4. Scale down to one, one at a time.
  for (const name of [...names].reverse().slice(0, -1)) {
    await step(`scale down: stop ${name}`, undefined, async () => {
      const signalled = Date.now()
      const code = await stopInstance(name, "SIGTERM")
      if (code !== 0) throw new Error(`${name} did not drain cleanly on SIGTERM (exit ${String(code)})`)
      return signalled
    })
  }

  // The end: the producer stops, the last instance catches up and drains.
  const produced = await producer.stop()
  const ends = await endOffsets(admin, topic, options.partitions)
  log(`${seconds().toFixed(1)} s: producer stopped after ${produced} records; waiting for the last instance to commit every end offset`)
  const catchUpFrom = Date.now()
  for (;;) {
    checkAlive()
    const committed = await committedOffsets(admin, group, topic, options.partitions)
    if (committed.every((c, p) => c === ends[p])) break
    if (Date.now() - catchUpFrom > options.timeoutMillis) throw new Error(`not caught up within ${options.timeoutMillis} ms: committed ${committed.join(",")}, ends ${ends.join(",")}`)
    await sleep(200)
  }
  for (const name of [...live.keys()]) await stopInstance(name, "SIGTERM")
  sampling = false
  await sampler
  sampler = undefined
  const committed = await committedOffsets(admin, group, topic, options.partitions)
  const totalProduced = ends.reduce((s, e) => s + e, 0)

  // The audit, from outside: the bucket against the committed offsets.
  const audit = spawnSync("npx", [
    "sluice",
    "audit",
    "--bucket",
    bucket,
    "--endpoint",
    s3.endpoint,
    "--region",
    s3.region,
    "--committed",
    committed.map((o, p) => `${topic}:${p}=${o}`).join(","),
    "--json"
  ], { encoding: "utf8", timeout: 300_000, env: { ...process.env, SLUICE_S3_ACCESS_KEY: s3.accessKeyId, SLUICE_S3_SECRET_KEY: s3.secretAccessKey } })
  const report = JSON.parse(audit.stdout.trim().split("\n").pop() ?? "{}") as {
    ok?: boolean
    records?: number
    holes?: ReadonlyArray<unknown>
    conflicts?: number
    overlaps?: ReadonlyArray<{ readonly partition: number; readonly from: number; readonly to: number; readonly kind: string }>
  }
  // Every duplicated range must lie in a moved partition's uncommitted window of one step (Duplicates.ts).
  const duplicated = (report.overlaps ?? []).filter((o) => o.kind === "duplicate")
  const attribution = attribute(steps, duplicated.map((o) => ({ partition: o.partition, from: o.from, to: o.to })))
  for (const s of steps) s.duplicates = attribution.byStep.get(s.step) ?? 0
  const duplicates = attribution.records
  const unexplained = attribution.unexplained
  announcing = false
  // Named: the duplicated ranges against the archivers' announcements. The SIGKILL victim cannot announce.
  const naming = nameDuplicates(duplicated, announced)
  const killStep = steps.find((s) => s.step.startsWith("SIGKILL"))
  const inKill = (r: { partition: number; from: number; to: number }) => killStep !== undefined && attribute([killStep], [r]).unexplained.length === 0
  const unnamed = naming.unnamed.filter((r) => !inKill(r))
  const unnamedKilled = size(naming.unnamed.filter(inKill))
  const unnamedByStep = attribute(steps, naming.unnamed).byStep
  for (const s of steps) s.named = s.duplicates - (unnamedByStep.get(s.step) ?? 0)
  log(`duplicates ${duplicates}: named ${naming.named} (announced ${naming.announced}), unnamed in the SIGKILL step ${unnamedKilled}, unnamed elsewhere ${JSON.stringify(unnamed)}, announced and not duplicated ${JSON.stringify(naming.notDuplicated)}`)
  // Capacity: the whole topic again, from its start, by 1 … N instances in fresh groups.
  const capacity: Array<Record<string, unknown>> = []
  if (options.capacity) {
    const stepsGroup = group
    for (let k = 1; k <= options.instances; k++) {
      group = `${stepsGroup}-capacity-${k}`
      target = `${bucket}-c${k}`
      await createBucket(services, target)
      const at = Date.now()
      const running = names.slice(0, k).map((name) => startInstance(name))
      const settleMillis = await settled(names.slice(0, k), at, new Map(), [])
      const from = Date.now() - started
      for (;;) {
        checkAlive()
        const committed = await committedOffsets(admin, group, topic, options.partitions)
        if (committed.every((c, p) => c === ends[p])) break
        if (Date.now() - at > options.timeoutMillis * 5) throw new Error(`capacity with ${k}: not caught up within ${options.timeoutMillis * 5} ms`)
        await sleep(100)
      }
      const to = Date.now() - started
      const perInstance = running.map((instance) => {
        const last = instance.progress.at(-1)
        return last === undefined ? 0 : Math.round(last.committed / (Math.max(1, last.at - from) / 1000))
      })
      for (const name of names.slice(0, k)) await stopInstance(name, "SIGTERM")
      const sum = perInstance.reduce((a, b) => a + b, 0)
      const row = {
        instances: k,
        settleSeconds: settleMillis / 1000,
        recordsPerSecond: Math.round(totalProduced / ((to - from) / 1000)),
        recordsPerSecondPerInstance: perInstance,
        jainFairness: sum === 0 ? null : Math.round((sum ** 2 / (k * perInstance.reduce((a, b) => a + b * b, 0))) * 1000) / 1000
      }
      capacity.push(row)
      log(`capacity with ${k}: ${JSON.stringify(row)}`)
    }
    group = stepsGroup
  }
  const restarts = steps.filter((s) => s.restart).map((s) => s.settleSeconds)
  const full = steps.filter((s) => s.instances.length === options.instances && !s.restart && s.step.startsWith("scale up"))
  const rates = Object.values(full.at(-1)?.ratePerInstance ?? {})
  const jain = rates.length === 0 ? null : rates.reduce((a, b) => a + b, 0) ** 2 / (rates.length * rates.reduce((a, b) => a + b * b, 0))
  result = {
    instances: options.instances,
    protocol: options.protocol,
    partitions: options.partitions,
    produced: totalProduced,
    lost: totalProduced - (report.records ?? 0),
    duplicates,
    duplicatesBounded: unexplained.length === 0,
    unexplainedDuplicates: unexplained,
    duplicatesNamed: unnamed.length === 0,
    duplicatesAnnounced: naming.announced,
    duplicatesNamedRecords: naming.named,
    duplicatesUnnamedKilled: unnamedKilled,
    unnamedDuplicates: unnamed,
    announcedNotDuplicated: naming.notDuplicated,
    conflicts: report.conflicts ?? null,
    holes: report.holes?.length ?? null,
    auditOk: report.ok === true,
    restartRecoverySeconds: restarts.length === 0 ? null : Math.max(...restarts),
    settleSeconds: Object.fromEntries(steps.map((s) => [s.step, s.settleSeconds])),
    jainFairness: jain === null ? null : Math.round(jain * 1000) / 1000,
    capacity,
    cores: availableParallelism(),
    steps,
    report: dir
  }
} catch (error) {
  failure = error
  log(`failed: ${error instanceof Error ? error.message : String(error)}`)
} finally {
  sampling = false
  await sampler
  for (const instance of live.values()) instance.child.kill("SIGKILL")
  await producer?.stop().catch(() => 0)
  await admin.close().catch(() => undefined)
}

// ---------------------------------------------------------------- the report

const t = samples.map((s) => s.t)
const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
writeFileSync(
  join(dir, "scaleout.svg"),
  Svg.chart(`scale-out: ${options.instances} instances, ${options.partitions} partitions, ${options.rate} records/s produced`, t, [
    { title: "lag (records not committed)", series: [{ name: "lag", color: "#d62728", values: samples.map((s) => s.lag) }] },
    {
      // Equal counts would hide each other: each instance's line is lifted by a quarter partition more than the previous one's.
      title: "partitions per instance (each line lifted 0.25 × its index, so equal counts stay visible)",
      series: names.map((name, i) => ({ name, color: palette[i % palette.length] ?? "#000", values: samples.map((s) => (s.held[name] ?? 0) + 0.25 * i) }))
    }
  ])
)
writeFileSync(join(dir, "result.json"), JSON.stringify({ ...result, samples }, null, 2))
writeFileSync(
  join(dir, "summary.md"),
  [
    "# Scale-out on a consumer group",
    "",
    `${options.instances} archivers (static members) in one group (${options.protocol} protocol), ${options.partitions} partitions, ${options.rate} records/s produced throughout;`,
    `each step held ${options.holdMillis / 1000} s after the group settled.`,
    "",
    "| step | joined (s) | settled (s) | partitions moved | lag at the end | records/s per instance | duplicates | named by the archivers |",
    "|---|---:|---:|---:|---:|---|---:|---:|",
    ...steps.map((s) =>
      `| ${s.step} | ${s.joinedSeconds ?? "-"} | ${s.settleSeconds} | ${s.moved.length} | ${s.lagAtEnd} | ${Object.entries(s.ratePerInstance).map(([n, r]) => `${n} ${r}`).join(", ")} | ${s.duplicates} | ${s.named} |`
    ),
    "",
    `Lost ${String(result["lost"])}, duplicates ${String(result["duplicates"])} (bounded: ${String(result["duplicatesBounded"])}; named by the archivers: ${String(result["duplicatesNamed"])},`,
    `${String(result["duplicatesNamedRecords"])} named of ${String(result["duplicatesAnnounced"])} announced, ${String(result["duplicatesUnnamedKilled"])} unnamed in the SIGKILL step), audit ok ${String(result["auditOk"])},`,
    `slowest restart to a settled group ${String(result["restartRecoverySeconds"])} s, Jain fairness with ${options.instances} instances ${String(result["jainFairness"])}.`,
    "",
    `Capacity on ${availableParallelism()} cores (the topic from its start, ${String(result["produced"])} records, fresh groups):`,
    "",
    "| instances | records/s | records/s per instance | Jain | settled (s) |",
    "|---:|---:|---|---:|---:|",
    ...((result["capacity"] ?? []) as ReadonlyArray<Record<string, unknown>>).map((c) =>
      `| ${String(c["instances"])} | ${String(c["recordsPerSecond"])} | ${(c["recordsPerSecondPerInstance"] as ReadonlyArray<number>).join(", ")} | ${String(c["jainFairness"])} | ${String(c["settleSeconds"])} |`
    ),
    failure === undefined ? "" : `\nThe run failed: ${failure instanceof Error ? failure.message : String(failure)}`,
    ""
  ].join("\n")
)
log(`report: ${dir}`)
if (options.json) console.log(JSON.stringify({ ...result, steps: undefined }))
process.exitCode = failure === undefined && result["lost"] === 0 && result["duplicatesBounded"] === true && result["duplicatesNamed"] === true && result["auditOk"] === true
  ? 0
  : 1
