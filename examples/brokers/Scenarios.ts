/**
 * brokers — the four broker-side scenarios of issue 13 item 6, on the 3-node
 * cluster and the local S3 server. Each creates its own topic (replication
 * factor 3) and buckets, runs the real archiver (`ArchiverChild`: Kafka source
 * → default policies → S3 sink) against a producer child (`soak/ProducerChild`),
 * samples once a second from outside, then lets every group reach the
 * topic's end, stops the archivers with SIGTERM (drain) and audits every
 * bucket against the committed offsets. Its verdict comes from `Verdict.ts`.
 *
 * Every wait is bounded; every sample array holds one row a second of a run
 * whose length is bounded by the options (≤ 3600 s).
 */
import type { Admin } from "@platformatic/kafka"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Net from "node:net"
import * as Tls from "node:tls"
import { linear } from "../soak/Fit.ts"
import * as ProducerChild from "../soak/ProducerChild.ts"
import * as ArchiverChild from "./ArchiverChild.ts"
import * as Cluster from "./Cluster.ts"
import type { ScenarioName } from "./Options.ts"
import * as Run from "./Run.ts"
import * as Verdict from "./Verdict.ts"

/** One row a second of a scenario: its phase and named figures. */
export type Row = { readonly t: number; readonly phase: string } & Readonly<Record<string, number | string>>

/** Per second of a column between the first and the last row (0 with fewer than one row). */
const rateOf = (rs: ReadonlyArray<Row>, column: string): number => {
  const a = rs[0]
  const b = rs.at(-1)
  return a === undefined || b === undefined ? 0 : Run.rate({ t: a.t, value: Number(a[column]) }, { t: b.t, value: Number(b[column]) })
}

/** Produced and archived (committed) records per second over the rows. */
const rates = (rs: ReadonlyArray<Row>) => ({ producedPerSecond: rateOf(rs, "produced"), archivedPerSecond: rateOf(rs, "committed") })

/** A scenario's outcome. */
export interface Outcome {
  readonly name: ScenarioName
  readonly verdict: Verdict.Verdict
  readonly figures: Readonly<Record<string, unknown>>
  readonly rows: ReadonlyArray<Row>
  /** What the summary says about the setup. */
  readonly notes: ReadonlyArray<string>
}

/** What a scenario runs with. */
export interface Context {
  readonly cluster: Cluster.ClusterEnv
  readonly s3: Run.S3
  readonly admin: Admin
  readonly phaseSeconds: number
  readonly durationSeconds: number
  /** A unique suffix for topic, group and bucket names. */
  readonly id: string
}

const RECORD_BYTES = 150
/** Partition p's replicas, preferred leaders rotating over the three nodes. */
const rotating = (partitions: number) => Array.from({ length: partitions }, (_, p) => [1, 2, 3].map((_, i) => ((p + i) % 3) + 1))
const s3Env = (s3: Run.S3): NodeJS.ProcessEnv => ({
  ...process.env,
  SLUICE_S3_ENDPOINT: s3.endpoint,
  SLUICE_S3_REGION: s3.region,
  SLUICE_S3_ACCESS_KEY: s3.accessKeyId,
  SLUICE_S3_SECRET_KEY: s3.secretAccessKey
})
const sum = (xs: ReadonlyArray<number>) => xs.reduce((s, x) => s + Math.max(0, x), 0)
const mib = (b: number) => (b / 2 ** 20).toFixed(1)

/** The slow archiver's settings: one object upload started per `perSecond` s, objects ≤ `objectBytes` (AdaptiveBatch may not grow them past it). */
const slowSettings = (perSecond: number, objectBytes: string, memoryBudget = "256 MiB") => ({
  pipeline: { memoryBudget, rate: perSecond, batch: { bytes: objectBytes } },
  policies: { batch: { minBytes: "128 KiB", initialBytes: objectBytes, maxObjectBytes: objectBytes } }
})

/**
 * Stops the load, waits until `group` committed the topic's end (≤ `withinMs`),
 * stops the archiver (drain) and audits its bucket.
 */
const finish = async (ctx: Context, topic: string, partitions: number, group: string, bucket: string, archiver: ArchiverChild.ArchiverChild, withinMs: number, earlierExit = 0) => {
  const started = Date.now()
  const caught = await Run.caughtUp(ctx.admin, group, topic, partitions, withinMs)
  Run.log(`${group}: ${caught.done ? "caught up" : "NOT caught up"} after ${((Date.now() - started) / 1000).toFixed(1)} s (committed ${sum(caught.committed)} of ${sum(caught.ends)}); stopping the archiver (drain)`)
  const exit = await archiver.stop(120_000)
  if (exit !== 0) Run.log(`${group}: archiver exit ${String(exit)} (signal ${String(archiver.child.signalCode)}):\n${archiver.stderrTail()}`)
  const final = await Run.caughtUp(ctx.admin, group, topic, partitions, 0)
  return Run.audit(ctx.s3, bucket, topic, final.ends, final.committed, earlierExit !== 0 ? earlierExit : exit)
}

/**
 * After a slow archiver drained (exit `slowExit`): when its group is not at
 * the topic's end yet, an archiver with the default settings finishes the
 * backlog on the same group and bucket; then the audit. (One that drained to
 * the end needs no finisher: an archiver SIGTERMed while it is still starting
 * dies before its drain handler is installed.)
 */
const finishBacklog = async (ctx: Context, topic: string, partitions: number, group: string, bucket: string, slowExit: number | null, notes: Array<string>) => {
  const now = await Run.caughtUp(ctx.admin, group, topic, partitions, 0)
  if (now.done) {
    notes.push(`group ${group}: the slow archiver's drain committed the whole backlog; no finisher needed`)
    return Run.audit(ctx.s3, bucket, topic, now.ends, now.committed, slowExit)
  }
  notes.push(`group ${group}: ${sum(now.ends) - sum(now.committed)} records left after the slow archiver's drain, finished by an archiver with the default settings`)
  const finisher = await ArchiverChild.start({ topic, bucket, group, settings: {}, brokers: ctx.cluster.brokers, env: s3Env(ctx.s3) })
  try {
    return await finish(ctx, topic, partitions, group, bucket, finisher, 300_000, slowExit ?? -1)
  } finally {
    await finisher.stop(60_000)
  }
}

/** The group's name, chosen so that its coordinator is not `avoid` (≤ 20 tries): a paused node must not hold the group. */
const groupAvoiding = async (admin: Admin, base: string, avoid: number): Promise<string> => {
  for (let k = 0; k < 20; k++) {
    const group = k === 0 ? base : `${base}-${k}`
    if (await Cluster.coordinatorOf(admin, group) !== avoid) return group
  }
  return base
}

/**
 * replication-throttle: RF 3, min.insync.replicas 2, node 3 a follower of
 * every partition (never a leader). Phases: baseline (no throttle); the
 * throttle set at 512 KiB/s and node 3 stopped (controlled shutdown: out of
 * every ISR) for a phase, then restarted on its data; throttled (Kafka
 * throttles replicas out of the ISR only: node 3 catches up at the throttle
 * rate, the ISR stays at 2); released (throttle removed: time until node 3 is
 * back in every ISR). Produce with acks=all at 20 000 records/s throughout.
 */
export const replicationThrottle = async (ctx: Context): Promise<Outcome> => {
  const partitions = 4
  const follower = 3
  const throttleBytesPerSecond = 512 * 1024
  // Above the in-sync follower's replication traffic (~1.6 MiB/s per leader here), which counts against it too.
  const leaderThrottleBytesPerSecond = 8 * 2 ** 20
  const rateOffered = 20_000
  const replicas = Array.from({ length: partitions }, (_, p) => (p % 2 === 0 ? [1, 2, 3] : [2, 1, 3]))
  const topic = `brokers-throttle-${ctx.id}`
  const group = await groupAvoiding(ctx.admin, `${topic}-archiver`, follower)
  await Cluster.createTopic(ctx.admin, topic, replicas, { "min.insync.replicas": "2" })
  const bucket = await Run.bucket(ctx.s3, topic)
  const archiver = await ArchiverChild.start({ topic, bucket, group, settings: {}, brokers: ctx.cluster.brokers, env: s3Env(ctx.s3) })
  const load = ProducerChild.start({ brokers: ctx.cluster.brokers, topic, partitions, rate: rateOffered, recordBytes: RECORD_BYTES, acks: "all" })
  const rows: Array<Row> = []
  let minIsr = 3
  // While node 3 is paused, a request routed to it (DescribeLogDirs asks every broker) times out:
  // such a sample keeps the last sizes seen (the row says so: sizesFresh 0).
  let lastBytes = new Map<number, number>()
  const look = async (phase: string, t: number) => {
    const [states, bytesOrError, ends, committed] = await Promise.all([
      Cluster.partitions(ctx.admin, topic),
      Cluster.replicaBytes(ctx.admin, topic, partitions).catch(() => undefined),
      Cluster.ends(ctx.admin, topic, partitions),
      Cluster.committed(ctx.admin, group, topic, partitions)
    ])
    const bytes = bytesOrError ?? lastBytes
    lastBytes = bytes
    for (const s of states) minIsr = Math.min(minIsr, s.isr.length)
    const row: Row = {
      t,
      phase,
      produced: load.state.produced,
      committed: sum(committed),
      lag: Cluster.lagOf(ends, committed),
      isrMin: Math.min(...states.map((s) => s.isr.length)),
      followerOutOfIsr: states.every((s) => !s.isr.includes(follower)) ? 1 : 0,
      followerBytes: bytes.get(follower) ?? -1,
      leaderBytes: bytes.get(1) ?? -1,
      sizesFresh: bytesOrError === undefined ? 0 : 1
    }
    rows.push(row)
    return row
  }
  const phase = async (name: string, seconds: number) => {
    const first = rows.length
    await Run.everySecond(seconds, async (t) => void await look(name, t))
    return rows.slice(first)
  }
  const notes: Array<string> = []
  try {
    await phase("warm-up", 5)
    const baseline = await phase("baseline", ctx.phaseSeconds)
    await Cluster.setThrottle(ctx.admin, topic, replicas, follower, throttleBytesPerSecond, leaderThrottleBytesPerSecond)
    // Out of the ISR the throttle applies: a controlled shutdown takes node 3 out of every ISR at
    // once (a paused broker would stall acks=all produces and group commits until it is fenced),
    // producing goes on for a phase without it, then it restarts on its data and catches up,
    // throttled.
    const stopped = await clusterCommand(["stop-node", String(follower)])
    if (!stopped.ok) throw new Error(`stop-node ${follower} failed: ${stopped.output}`)
    await phase("follower down", ctx.phaseSeconds)
    const restartedAt = Date.now()
    const restart = clusterCommand(["start-node", String(follower)])
    let restarted: { readonly ok: boolean; readonly output: string } | undefined
    void restart.then((r) => {
      restarted = r
    })
    await Run.everySecond(180, async (t) => {
      await look("follower restarting", t)
      if (restarted !== undefined) throw new OutOfIsr()
    }).catch((e: unknown) => {
      if (!(e instanceof OutOfIsr)) throw e
    })
    const r = restarted ?? await restart
    if (!r.ok) throw new Error(`start-node ${follower} failed: ${r.output}`)
    notes.push(`node ${follower} stopped (controlled shutdown) for ${ctx.phaseSeconds} s of producing, then restarted on its data (${((Date.now() - restartedAt) / 1000).toFixed(0)} s to serve) with the throttle in place`)
    const throttled = await phase("throttled", ctx.phaseSeconds)
    await Cluster.clearThrottle(ctx.admin, topic, [1, 2, 3])
    const clearedAt = Date.now()
    let rejoinSeconds: number | undefined
    await Run.everySecond(Math.max(60, 3 * ctx.phaseSeconds), async (t) => {
      const row = await look("released", t)
      if (rejoinSeconds === undefined && row["isrMin"] === 3) rejoinSeconds = (Date.now() - clearedAt) / 1000
      if (rejoinSeconds !== undefined) throw new OutOfIsr()
    }).catch((e: unknown) => {
      if (!(e instanceof OutOfIsr)) throw e
    })
    await load.stop()
    const archive = await finish(ctx, topic, partitions, group, bucket, archiver, 180_000)
    // Replica growth from the first to the last sample with fresh sizes from both brokers.
    const sized = throttled.filter((r) => r["sizesFresh"] === 1 && Number(r["followerBytes"]) >= 0 && Number(r["leaderBytes"]) >= 0)
    const first = sized[0]
    const last = sized.at(-1)
    const dt = first !== undefined && last !== undefined ? Math.max(1e-3, last.t - first.t) : 1
    const figures: Verdict.ThrottleFigures = {
      baseline: rates(baseline),
      throttled: {
        ...rates(throttled),
        followerOutOfIsrShare: throttled.length === 0 ? 0 : throttled.filter((r) => r["followerOutOfIsr"] === 1).length / throttled.length,
        followerBytesPerSecond: first !== undefined && last !== undefined ? (Number(last["followerBytes"]) - Number(first["followerBytes"])) / dt : 0,
        leaderBytesPerSecond: first !== undefined && last !== undefined ? (Number(last["leaderBytes"]) - Number(first["leaderBytes"])) / dt : 0
      },
      throttleBytesPerSecond,
      minIsr,
      minInsyncReplicas: 2,
      rejoinSeconds,
      archive
    }
    notes.unshift(
      `topic ${topic}: ${partitions} partitions, replicas ${JSON.stringify(replicas)} (node ${follower} never leads), min.insync.replicas 2; producer acks=all at ${rateOffered} records/s of ${RECORD_BYTES} B`,
      `throttle: follower.replication.throttled.replicas = p:${follower} for every partition, leader.replication.throttled.replicas = the other replicas, follower.replication.throttled.rate = ${throttleBytesPerSecond} B/s on node ${follower}, leader.replication.throttled.rate = ${leaderThrottleBytesPerSecond} B/s on the others; archiver group ${group} (coordinator not on node ${follower}), default settings`
    )
    return { name: "replication-throttle", verdict: Verdict.replicationThrottle(figures), figures: { ...figures, objects: archive.objects, duplicates: archive.duplicates }, rows, notes }
  } finally {
    await load.stop()
    await archiver.stop(60_000)
    await Cluster.clearThrottle(ctx.admin, topic, [1, 2, 3]).catch(() => undefined)
    await clusterCommand(["start-node", String(follower)]) // a no-op unless the scenario failed while node 3 was down
  }
}

const clusterScript = fileURLToPath(new URL("../../scripts/kafka-cluster.sh", import.meta.url))

/** Runs `scripts/kafka-cluster.sh <args>` (bounded: 240 s); whether it exited 0, and its output. */
const clusterCommand = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly ok: boolean; readonly output: string }>((resolve) => {
    execFile("bash", [clusterScript, ...args], { timeout: 240_000, encoding: "utf8" }, (error, stdout, stderr) =>
      resolve({ ok: error === null, output: `${stdout}${stderr}`.trim().slice(-2000) }))
  })

/** Ends a bounded wait early. */
class OutOfIsr extends Error {
  readonly _tag = "OutOfIsr"
}

/**
 * producer-flood: a producer as fast as it goes (acks=leader) against an
 * archiver held to one object upload a second, objects ≤ 1 MiB, with a
 * 64 MiB memory budget. Sampled from outside each second: the archiver's
 * held bytes (its gauge), RSS, lag. After the flood the slow archiver drains,
 * and an archiver with the default settings finishes the backlog on the same
 * group; then the audit.
 */
export const producerFlood = async (ctx: Context): Promise<Outcome> => {
  const partitions = 8
  const budget = 64 * 2 ** 20
  const topic = `brokers-flood-${ctx.id}`
  const group = `${topic}-archiver`
  await Cluster.createTopic(ctx.admin, topic, rotating(partitions))
  const bucket = await Run.bucket(ctx.s3, topic)
  const settings = slowSettings(1, "1 MiB", "64 MiB")
  const slow = await ArchiverChild.start({ topic, bucket, group, settings, brokers: ctx.cluster.brokers, env: s3Env(ctx.s3), drainSeconds: 150 })
  const load = ProducerChild.start({ brokers: ctx.cluster.brokers, topic, partitions, rate: 1e9, recordBytes: RECORD_BYTES })
  const rows: Array<Row> = []
  try {
    const floodSeconds = 2 * ctx.phaseSeconds
    await Run.everySecond(floodSeconds, async (t) => {
      const [ends, committed, seen] = await Promise.all([
        Cluster.ends(ctx.admin, topic, partitions),
        Cluster.committed(ctx.admin, group, topic, partitions),
        slow.sample()
      ])
      rows.push({ t, phase: "flood", produced: load.state.produced, committed: sum(committed), lag: Cluster.lagOf(ends, committed), heldBytes: seen.heldBytes ?? -1, rssBytes: seen.rssBytes })
    })
    await load.stop()
    Run.log(`${topic}: flood over; the slow archiver drains (it may upload what it holds for up to 150 s)`)
    const slowExit = await slow.stop(180_000)
    if (slowExit !== 0) Run.log(`slow archiver exit ${String(slowExit)} (signal ${String(slow.child.signalCode)}):\n${slow.stderrTail()}`)
    const backlogNotes: Array<string> = []
    const archive = await finishBacklog(ctx, topic, partitions, group, bucket, slowExit, backlogNotes)
    const held = rows.map((r) => Number(r["heldBytes"])).filter((b) => b >= 0)
    const first = rows[0]
    const last = rows.at(-1)
    const lagFit = linear(rows.map((r) => r.t), rows.map((r) => Number(r["lag"])))
    const figures: Verdict.FloodFigures = {
      budgetBytes: budget,
      heldSamples: held.length,
      heldMaxBytes: Math.max(0, ...held),
      rssMaxBytes: Math.max(0, ...rows.map((r) => Number(r["rssBytes"]))),
      lagFirst: first === undefined ? 0 : Number(first["lag"]),
      lagLast: last === undefined ? 0 : Number(last["lag"]),
      lagSlope: lagFit.slope,
      rates: rates(rows),
      archive
    }
    const notes = [
      `topic ${topic}: ${partitions} partitions, RF 3, producer acks=leader as fast as it goes (4 sends of ≤ 10 000 records in flight), ${floodSeconds} s`,
      `slow archiver: memoryBudget 64 MiB, pipeline.rate 1 object upload/s, objects ≤ 1 MiB (pipeline.batch.bytes, policies.batch.initialBytes/maxObjectBytes), drain deadline 150 s`,
      ...backlogNotes,
      `held bytes: the archiver's sluice_inflight_bytes gauge scraped from its Prometheus endpoint; RSS from /proc/<pid>/status (median ${mib(median(rows.map((r) => Number(r["rssBytes"]))))} MiB)`
    ]
    return { name: "producer-flood", verdict: Verdict.producerFlood(figures), figures: { ...figures, lagFitR2: lagFit.r2, objects: archive.objects, duplicates: archive.duplicates }, rows, notes }
  } finally {
    await load.stop()
    await slow.stop(60_000)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : (s[Math.floor(s.length / 2)] ?? 0)
}

/**
 * slow-beside-fast: one topic, two archivers in two consumer groups (two
 * buckets): one with the default settings, one held to one object upload a
 * second of ≤ 512 KiB. The producer offers 10 000 records/s for twice the
 * phase. Each group's lag from outside, once a second. Then the fast group
 * finishes, the slow one drains and an archiver with the default settings
 * finishes its backlog; both buckets are audited.
 */
export const slowBesideFast = async (ctx: Context): Promise<Outcome> => {
  const partitions = 8
  const rateOffered = 10_000
  const topic = `brokers-slowfast-${ctx.id}`
  const fastGroup = `${topic}-fast`
  const slowGroup = `${topic}-slow`
  await Cluster.createTopic(ctx.admin, topic, rotating(partitions))
  const fastBucket = await Run.bucket(ctx.s3, `${topic}-fast`)
  const slowBucket = await Run.bucket(ctx.s3, `${topic}-slow`)
  const env = s3Env(ctx.s3)
  const fast = await ArchiverChild.start({ topic, bucket: fastBucket, group: fastGroup, settings: {}, brokers: ctx.cluster.brokers, env })
  const slow = await ArchiverChild.start({ topic, bucket: slowBucket, group: slowGroup, settings: slowSettings(1, "512 KiB"), brokers: ctx.cluster.brokers, env, drainSeconds: 150 })
  const load = ProducerChild.start({ brokers: ctx.cluster.brokers, topic, partitions, rate: rateOffered, recordBytes: RECORD_BYTES })
  const rows: Array<Row> = []
  try {
    const seconds = 2 * ctx.phaseSeconds
    await Run.everySecond(seconds, async (t) => {
      const [ends, f, s] = await Promise.all([
        Cluster.ends(ctx.admin, topic, partitions),
        Cluster.committed(ctx.admin, fastGroup, topic, partitions),
        Cluster.committed(ctx.admin, slowGroup, topic, partitions)
      ])
      rows.push({ t, phase: "producing", produced: load.state.produced, fastCommitted: sum(f), slowCommitted: sum(s), fastLag: Cluster.lagOf(ends, f), slowLag: Cluster.lagOf(ends, s) })
    })
    await load.stop()
    const fastArchive = await finish(ctx, topic, partitions, fastGroup, fastBucket, fast, 120_000)
    const slowExit = await slow.stop(180_000)
    if (slowExit !== 0) Run.log(`slow archiver exit ${String(slowExit)} (signal ${String(slow.child.signalCode)}):\n${slow.stderrTail()}`)
    const backlogNotes: Array<string> = []
    const slowArchive = await finishBacklog(ctx, topic, partitions, slowGroup, slowBucket, slowExit, backlogNotes)
    // Rates and the slope over the second phase (the first covers the group joins and the first seals); the lag bound over both.
    const measured = rows.filter((r) => r.t > ctx.phaseSeconds)
    const group = (k: "fast" | "slow"): Verdict.GroupFigures => {
      const lags = rows.map((r) => Number(r[`${k}Lag`]))
      return {
        archivedPerSecond: rateOf(measured, `${k}Committed`),
        lagMax: Math.max(0, ...lags),
        lagLast: lags.at(-1) ?? 0,
        lagSlope: linear(measured.map((r) => r.t), measured.map((r) => Number(r[`${k}Lag`]))).slope
      }
    }
    const figures: Verdict.SlowFastFigures = {
      producedPerSecond: rateOf(measured, "produced"),
      fast: group("fast"),
      slow: group("slow"),
      fastArchive,
      slowArchive
    }
    const notes = [
      `topic ${topic}: ${partitions} partitions, RF 3, producer acks=leader at ${rateOffered} records/s for ${seconds} s`,
      `fast group ${fastGroup}: default settings → bucket ${fastBucket}; slow group ${slowGroup}: pipeline.rate 1 object upload/s, objects ≤ 512 KiB, drain deadline 150 s → bucket ${slowBucket}`,
      `rates and lag slopes over the second half (t > ${ctx.phaseSeconds} s); the fast group's lag bound over the whole run`,
      ...backlogNotes
    ]
    return { name: "slow-beside-fast", verdict: Verdict.slowBesideFast(figures), figures: { ...figures }, rows, notes }
  } finally {
    await load.stop()
    await fast.stop(60_000)
    await slow.stop(60_000)
  }
}

/** How a TLS client with the CA and no certificate fares against `broker` (host:port): the error it gets (bounded 10 s). */
const tlsWithoutCertificate = (broker: string, ca: string): Promise<string> =>
  new Promise((resolve) => {
    const [host = "127.0.0.1", port = "0"] = broker.split(":")
    const socket = Tls.connect({ host, port: Number(port), ca, servername: "localhost" })
    const done = (what: string) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(what)
    }
    const timer = setTimeout(() => done("no answer within 10 s"), 10_000)
    // TLS 1.3: the handshake completes on the client's side, the server's alert comes with the first read.
    socket.once("secureConnect", () => socket.write(Buffer.from([0, 0, 0, 0])))
    socket.once("error", (e: NodeJS.ErrnoException) => {
      // OpenSSL's text names the alert ("ssl/tls alert bad certificate … SSL alert number 42"); keep that part.
      const alert = /alert ([a-z ]+?):.*(SSL alert number \d+)/.exec(e.message)
      done(`${e.code ?? "error"}${alert === null ? `: ${e.message.trim()}` : ` (${alert[1]}, ${alert[2]})`}`)
    })
    socket.once("close", () => done("closed by the broker without an error"))
    socket.on("data", () => undefined)
  })

/** Whether the plain TCP port answers (to tell "refused by TLS" from "nothing listens"). */
const listening = (broker: string): Promise<boolean> =>
  new Promise((resolve) => {
    const [host = "127.0.0.1", port = "0"] = broker.split(":")
    const s = Net.connect({ host, port: Number(port) })
    s.once("connect", () => {
      s.destroy()
      resolve(true)
    })
    s.once("error", () => resolve(false))
  })

/**
 * mtls-long: the archiver connects to the brokers' SSL listeners with a
 * client certificate (mTLS) and archives for `--duration` while the producer
 * offers 5 000 records/s (over PLAINTEXT: the producer is not under test);
 * then the audit. First, a client with the CA but no certificate must be
 * refused (and one with the certificate let in, so the refusal is the
 * certificate's).
 */
export const mtlsLong = async (ctx: Context): Promise<Outcome> => {
  const partitions = 4
  const rateOffered = 5_000
  const topic = `brokers-mtls-${ctx.id}`
  const group = `${topic}-archiver`
  const tlsBroker = ctx.cluster.tlsBrokers[0]
  const withCert = Cluster.tlsOf(ctx.cluster, true)
  const withoutCert = Cluster.tlsOf(ctx.cluster, false)
  const { Admin } = await import("@platformatic/kafka")
  const probe = async (tls: object) => {
    const a = new Admin({ clientId: "sluice-brokers-mtls-probe", bootstrapBrokers: [...ctx.cluster.tlsBrokers], tls, retries: 0, timeout: 5_000 })
    try {
      const m = await a.metadata({ topics: [] })
      return { ok: true, text: `metadata: ${m.brokers.size} brokers` }
    } catch (error) {
      return { ok: false, text: error instanceof Error ? error.message : String(error) }
    } finally {
      await a.close().catch(() => undefined)
    }
  }
  const good = await probe(withCert)
  const bad = await probe(withoutCert)
  const alert = await tlsWithoutCertificate(tlsBroker, withoutCert.ca)
  const noCertRefused = good.ok && !bad.ok && (await listening(tlsBroker))
  const noCertError = `with the certificate: ${good.text}; without: Kafka client "${bad.text}", TLS socket "${alert}"`
  Run.log(`mtls probe: ${noCertError}`)

  await Cluster.createTopic(ctx.admin, topic, rotating(partitions))
  const bucket = await Run.bucket(ctx.s3, topic)
  const certs = ctx.cluster.certs
  const archiver = await ArchiverChild.start({
    topic,
    bucket,
    group,
    settings: {},
    brokers: ctx.cluster.tlsBrokers,
    tls: { ca: `${certs}/ca.pem`, cert: `${certs}/client.pem`, key: `${certs}/client.key` },
    env: s3Env(ctx.s3)
  })
  const load = ProducerChild.start({ brokers: ctx.cluster.brokers, topic, partitions, rate: rateOffered, recordBytes: RECORD_BYTES })
  const rows: Array<Row> = []
  try {
    await Run.everySecond(ctx.durationSeconds, async (t) => {
      const [ends, committed, seen] = await Promise.all([
        Cluster.ends(ctx.admin, topic, partitions),
        Cluster.committed(ctx.admin, group, topic, partitions),
        archiver.sample()
      ])
      rows.push({ t, phase: "producing", produced: load.state.produced, committed: sum(committed), lag: Cluster.lagOf(ends, committed), heldBytes: seen.heldBytes ?? -1, rssBytes: seen.rssBytes })
      if (Math.round(t) % 30 === 0) Run.log(`mtls-long ${t.toFixed(0)} s: produced ${load.state.produced}, committed ${sum(committed)}`)
    })
    await load.stop()
    const archive = await finish(ctx, topic, partitions, group, bucket, archiver, 120_000)
    const figures: Verdict.MtlsFigures = {
      durationSeconds: ctx.durationSeconds,
      noCertRefused,
      noCertError,
      rates: rates(rows),
      archive
    }
    const notes = [
      `SSL listeners ${ctx.cluster.tlsBrokers.join(",")} with ssl.client.auth=required; certificates from scripts/kafka-certs.sh (openssl: a CA, the brokers' PKCS12 keystore, a PEM truststore, a client certificate CN=sluice-archiver)`,
      `topic ${topic}: ${partitions} partitions, RF 3; producer (PLAINTEXT) at ${rateOffered} records/s for ${ctx.durationSeconds} s; archiver (kafka-to-s3/main.ts --tls-ca --tls-cert --tls-key) on the SSL listeners only`
    ]
    return { name: "mtls-long", verdict: Verdict.mtlsLong(figures), figures: { ...figures, objects: archive.objects, duplicates: archive.duplicates, heldMaxBytes: Math.max(0, ...rows.map((r) => Number(r["heldBytes"]))), rssMaxBytes: Math.max(0, ...rows.map((r) => Number(r["rssBytes"]))) }, rows, notes }
  } finally {
    await load.stop()
    await archiver.stop(60_000)
  }
}

/** The scenarios by name. */
export const byName: Readonly<Record<ScenarioName, (ctx: Context) => Promise<Outcome>>> = {
  "replication-throttle": replicationThrottle,
  "producer-flood": producerFlood,
  "slow-beside-fast": slowBesideFast,
  "mtls-long": mtlsLong
}
