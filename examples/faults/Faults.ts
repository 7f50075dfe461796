/**
 * The faults of `npm run faults` (issue 27): each takes a real dependency
 * away from the example archiver in one way — killed, stalled, reset, full —
 * and returns its report row, read from outside (the bucket's audit, the
 * group's committed offsets, the archiver's exit status).
 *
 * Every fault archives its own topic into its own bucket. The archiver runs
 * on a settings file of the fault's: small objects (2 000 records) started at
 * a bounded rate, so that a run lasts long enough for the injections to land
 * while batches upload, verify and commit, and a 5 s request timeout (the
 * shipped 60 s would make a stalled request wait a minute).
 */
import { closeSync, openSync, readFileSync, rmSync, statfsSync, writeSync } from "node:fs"
import { join } from "node:path"
import { runAuthFaults } from "./Auth.ts"
import type { FaultRow } from "./FaultRow.ts"
import * as Run from "./Run.ts"
import * as Services from "./Services.ts"

/** How big a run is: `smoke` (seconds, in `npm test`) or `full` (`npm run faults`). */
export type Scale = "smoke" | "full"

export interface Context {
  readonly endpoints: Run.Endpoints
  readonly reportDir: string
  readonly scale: Scale
  readonly log: (line: string) => void
}

export interface Fault {
  readonly name: string
  /** The class of `npm test`'s smoke run it stands for (one fault per class there). */
  readonly smoke: boolean
  /** Its row, or rows (the authentication faults report one per mechanism). */
  readonly run: (context: Context) => Promise<FaultRow | ReadonlyArray<FaultRow>>
}

/** Uploads started per second: 4 objects of 2 000 records, so 8 000 records/s — runs of tens of seconds. */
const RATE = 4
/** The request timeout of the fault runs: a stalled request fails after this, and its batch retries. */
const REQUEST_TIMEOUT = "5 seconds"
/** Bound on a run's end: every record committed within this after the last injection. */
const FINISH_MS = 180_000
/** Bound on the first commit of a fresh archiver (a consumer group join, then a batch). */
const FIRST_COMMIT_MS = 60_000
/** A fault ended, the wait for the archiver's next commit (beyond it: no recovery seen). */
const RECOVER_MS = 60_000
/**
 * A fault ended, the archiver must commit again within this: twice the request
 * timeout — a request stalled on a broken connection at the fault's end times
 * out (one request timeout), and its retry goes first (one more request). A
 * broker back (its client's backoff ≤ 2 s) and an S3 server back (the retry
 * woken by the first batch verified) take less.
 */
const RECOVERED_SECONDS = 10

const settings = (extra: { readonly pipeline?: Record<string, unknown>; readonly batch?: Record<string, unknown>; readonly s3?: Record<string, unknown> } = {}): Run.ArchiverSettings => ({
  pipeline: { batch: { maxAge: "1 second" }, rate: RATE, memoryBudget: "256 MiB", ...extra.pipeline },
  // The adaptive batch policy sets the batch target: its record cap is what keeps objects small.
  policies: { batch: { records: 2_000, ...extra.batch } },
  s3: { requestTimeout: REQUEST_TIMEOUT, ...extra.s3 }
})

const count = (context: Context, smoke: number, full: number) => context.scale === "smoke" ? smoke : full

const maxRecovery = (values: ReadonlyArray<number | null>): number | null =>
  values.some((v) => v === null) || values.length === 0 ? null : Math.max(...values.map((v) => v ?? 0))

/** The archiver must stay up through every injection: it exits only when stopped. */
const alive = Run.running

/**
 * Kill-and-restart of a service under a running archiver, `times` times: each
 * time the service is down `downMs`, and the next injection waits for the
 * archiver's next commit (recovery), then `gapMs`.
 */
const killRestart = (
  name: string,
  options: {
    readonly smokeTimes: number
    readonly fullTimes: number
    readonly downMs: number
    readonly gapMs: number
    readonly kill: () => void
    readonly start: () => void
    /** Records of the full run: enough for every injection to land mid-run (8 000 records/s). */
    readonly fullRecords: number
  }
): Fault["run"] =>
async (context) => {
  const times = count(context, options.smokeTimes, options.fullTimes)
  const records = count(context, 60_000, options.fullRecords)
  const world = await Run.prepare(context.endpoints, context.reportDir, name, { records, partitions: 4, recordBytes: 150, settings: settings() })
  try {
    const archiver = world.archiver()
    const firstCommit = await world.committedBeyond(0, FIRST_COMMIT_MS, archiver)
    const recoveries: Array<number | null> = []
    let injected = 0
    for (let k = 0; k < times && firstCommit && alive(archiver) && world.committed() < records; k++) {
      options.kill()
      injected++
      await Run.sleep(options.downMs)
      options.start()
      const back = Date.now()
      await world.committedBeyond(world.committed(), RECOVER_MS, archiver)
      recoveries.push(world.recoverySeconds(back))
      context.log(`${name} #${injected}: down ${options.downMs} ms; next commit ${String(recoveries[recoveries.length - 1])} s after it was back`)
      await Run.sleep(options.gapMs)
    }
    const survived = alive(archiver)
    const done = await world.allCommitted(FINISH_MS, archiver)
    const exit = await world.stop(archiver)
    const audit = await world.audit()
    return Run.row(world, name, {
      injected,
      audit,
      recoverySeconds: maxRecovery(recoveries),
      exit,
      checks: [
        [`${times} injections landed mid-run`, injected === times],
        ["archiver rode through every injection", survived],
        ["committed again after each", recoveries.every((r) => r !== null)],
        [`each time within ${RECOVERED_SECONDS} s`, recoveries.every((r) => r !== null && r <= RECOVERED_SECONDS)],
        ["finished within bound", done]
      ]
    })
  } finally {
    await world.close()
  }
}

/**
 * The S3 server stopped for longer than the retry budget: the archiver must
 * end with `BatchFailed` and a non-zero exit, having committed nothing past
 * the last verified object (the audit then); restarted on the server brought
 * back, it resumes and finishes.
 */
const s3Outage: Fault["run"] = async (context) => {
  const name = "s3-outage"
  const world = await Run.prepare(context.endpoints, context.reportDir, name, { records: count(context, 40_000, 200_000), partitions: 4, recordBytes: 150, settings: settings() })
  try {
    const first = world.archiver()
    await world.committedBeyond(0, FIRST_COMMIT_MS, first)
    Services.s3.kill()
    const down = Date.now()
    // The budget: `retry.unreachableAttempts` refused connections of one batch in a row
    // (or `retry.maxElapsed`); bounded here by the elapsed budget of the shipped settings.
    const firstExit = await first.exit(16 * 60_000)
    const failedAfter = (Date.now() - down) / 1000
    const failedWith = /store unreachable|retry budget spent/.exec(first.output())?.[0]
    Services.s3.start()
    const atFailure = await world.audit()
    const back = Date.now()
    const second = world.archiver()
    const done = await world.allCommitted(FINISH_MS, second)
    const exit = await world.stop(second)
    const audit = await world.audit()
    context.log(`${name}: first run exited ${String(firstExit)} ${failedAfter.toFixed(1)} s after the server went down (${failedWith ?? "no BatchFailed"})`)
    return Run.row(world, name, {
      injected: 1,
      audit,
      recoverySeconds: world.recoverySeconds(back),
      exit,
      checks: [
        ["first run failed non-zero", typeof firstExit === "number" && firstExit !== 0],
        ["with BatchFailed (retry budget spent)", failedWith !== undefined],
        ["nothing committed past the verified objects at the failure", atFailure.ok && atFailure.holes === 0],
        ["restarted, it finished", done]
      ]
    })
  } finally {
    await world.close()
  }
}

/**
 * One node of the 3-node cluster SIGKILLed mid-run, then started again: a node
 * that leads partitions of the topic but does not coordinate the group (its
 * leaderships move), or the group's coordinator (the group moves). With
 * `@platformatic/kafka` 1.35 the second failed: the client cached the
 * coordinator and never looked it up again, so every commit went to the dead
 * node until the budget ended the run (platformatic/kafka#290, fixed in 2.x by
 * #291; the source is on 2.12).
 */
const brokerNodeKill = (name: string, target: "leader" | "coordinator"): Fault["run"] => async (context) => {
  Services.cluster.up()
  try {
    const brokers = clusterBrokers().split(",")
    const endpoints: Run.Endpoints = { ...context.endpoints, brokers: [brokers[0] ?? "", ...brokers.slice(1)] }
    const world = await Run.prepare(endpoints, context.reportDir, name, { records: count(context, 60_000, 200_000), partitions: 6, recordBytes: 150, settings: settings() })
    try {
      const archiver = world.archiver({ SLUICE_KAFKA_BROKERS: brokers.join(",") })
      const firstCommit = await world.committedBeyond(0, FIRST_COMMIT_MS, archiver)
      const coordinator = await world.coordinatorNode()
      const node = target === "coordinator" ? coordinator : [1, 2, 3].find((n) => n !== coordinator)
      if (node === undefined) throw new Services.ServiceCommandFailed(`${name}: no node to kill (coordinator ${String(coordinator)})`)
      Services.cluster.killNode(node)
      const killed = Date.now()
      await world.committedBeyond(world.committed(), RECOVER_MS, archiver)
      const recovery = world.recoverySeconds(killed)
      const survived = alive(archiver)
      Services.cluster.startNode(node)
      let done = await world.allCommitted(FINISH_MS, archiver)
      let exit = await world.stop(archiver)
      let restarted = false
      if (!done) {
        // It died of the fault: restarted, it must resume and finish, nothing lost.
        const again = world.archiver({ SLUICE_KAFKA_BROKERS: brokers.join(",") })
        restarted = true
        done = await world.allCommitted(FINISH_MS, again)
        exit = await world.stop(again)
      }
      const audit = await world.audit()
      context.log(`${name}: killed node ${node} (the group's coordinator: node ${String(coordinator)}); next commit ${String(recovery)} s after; ${restarted ? "restarted after it failed" : "rode through"}`)
      return Run.row(world, name, {
        injected: firstCommit ? 1 : 0,
        audit,
        recoverySeconds: recovery,
        exit,
        checks: [["archiver rode through the node's death", survived], ["committed while the node was down", recovery !== null], ["finished within bound", done]]
      })
    } finally {
      await world.close()
    }
  } finally {
    Services.cluster.down()
  }
}

/** The cluster's plaintext listeners, from the env file `kafka-cluster.sh up` writes. */
const clusterBrokers = (): string => {
  const file = join(process.env["SLUICE_SERVICES_DIR"] ?? ".services", "kafka-cluster.env")
  const line = readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("SLUICE_KAFKA_CLUSTER_BROKERS="))
  if (line === undefined) throw new Services.ServiceCommandFailed(`${file}: no SLUICE_KAFKA_CLUSTER_BROKERS`)
  return line.slice("SLUICE_KAFKA_CLUSTER_BROKERS=".length).trim()
}

/** Port of the toxiproxy proxy in front of the S3 server (the archiver's endpoint in the network faults). */
const PROXY_PORT = Number(process.env["SLUICE_FAULTS_PROXY_PORT"] ?? "18580")

/**
 * A network fault through toxiproxy: the archiver's S3 endpoint is a proxy;
 * after its first commit the toxic is on for `forMs`, then removed. The
 * archiver must stay up, and commit again after it.
 */
const network = (
  name: string,
  toxics: ReadonlyArray<Services.Toxic>,
  options: {
    readonly smokeMs: number
    readonly fullMs: number
    /** A code the archiver's log must show a retry of (the fault reached it), e.g. the request timeout's. */
    readonly retriedWith?: RegExp
  }
): Fault["run"] =>
async (context) => {
  const toxi = Services.toxiproxy(context.endpoints.toxiproxyUrl)
  const upstream = new URL(context.endpoints.s3.endpoint).host
  const proxied = await toxi.proxy(`faults-${name}`, PROXY_PORT, upstream)
  // A run twice as long as the fault window or more (8 000 records/s), so it lands mid-run and the run goes on after it.
  const world = await Run.prepare(context.endpoints, context.reportDir, name, { records: count(context, 120_000, 400_000), partitions: 4, recordBytes: 150, settings: settings() })
  try {
    const archiver = world.archiver({ SLUICE_S3_ENDPOINT: `http://${proxied}` })
    const firstCommit = await world.committedBeyond(0, FIRST_COMMIT_MS, archiver)
    const forMs = count(context, options.smokeMs, options.fullMs)
    const before = world.committed()
    for (const toxic of toxics) await toxi.add(`faults-${name}`, toxic)
    await Run.sleep(forMs)
    const during = world.committed() - before
    // Last added first: the toxic nearest the client goes before the ones behind it.
    for (const toxic of [...toxics].reverse()) await toxi.remove(`faults-${name}`, toxic.name)
    const removed = Date.now()
    await world.committedBeyond(world.committed(), RECOVER_MS, archiver)
    const recovery = world.recoverySeconds(removed)
    const survived = alive(archiver)
    const done = await world.allCommitted(FINISH_MS, archiver)
    const exit = await world.stop(archiver)
    const audit = await world.audit()
    const codes = [...archiver.output().matchAll(/code: '([^']+)'/g)].reduce((m, c) => m.set(c[1] ?? "", (m.get(c[1] ?? "") ?? 0) + 1), new Map<string, number>())
    context.log(`${name}: ${toxics.map((t) => t.type).join(" + ")} for ${forMs} ms; ${during} records committed during it; next commit ${String(recovery)} s after; retries by code ${JSON.stringify(Object.fromEntries(codes))}`)
    const row = Run.row(world, name, {
      injected: firstCommit ? 1 : 0,
      audit,
      recoverySeconds: recovery,
      exit,
      checks: [
        ["archiver rode through", survived],
        ["committed again after", recovery !== null],
        [`within ${RECOVERED_SECONDS} s`, recovery !== null && recovery <= RECOVERED_SECONDS],
        ...(options.retriedWith === undefined ? [] : [[`a batch retried with ${options.retriedWith.source}`, options.retriedWith.test(archiver.output())] as const]),
        ["finished within bound", done]
      ]
    })
    return { ...row, detail: `${row.detail}; ${during} records committed during it; retries by code ${JSON.stringify(Object.fromEntries(codes))}` }
  } finally {
    await world.close()
    await toxi.drop(`faults-${name}`)
  }
}

/**
 * Kills aimed at a gap (`SLUICE_TEST_KILL_AT`, `examples/kafka-to-s3/KillHook.ts`):
 * `times` runs each SIGKILLed by the hook at the n-th pass of the gap (n
 * cycling 1..3), then one run left to finish. Mid-multipart runs upload
 * objects above the multipart threshold and leave open uploads, which the
 * audit lists and `sluice audit --abort-orphans` aborts.
 */
const aimedKill = (gap: "after-put" | "after-manifest" | "after-verify" | "mid-multipart"): Fault["run"] => async (context) => {
  const name = `kill-${gap}`
  const multipart = gap === "mid-multipart"
  const times = count(context, 1, 5)
  const world = await Run.prepare(context.endpoints, context.reportDir, name, {
    records: multipart ? count(context, 40_000, 120_000) : count(context, 30_000, 100_000),
    partitions: 4,
    recordBytes: multipart ? 1_000 : 150,
    settings: multipart
      ? settings({
        // 12 MiB objects, above a 5 MiB threshold: 3 parts of 5 MiB each (S3's smallest part).
        pipeline: { batch: { maxAge: "2 seconds" }, rate: RATE },
        batch: { records: 100_000, minBytes: "12 MiB", initialBytes: "12 MiB", maxObjectBytes: "12 MiB" },
        s3: { multipartThreshold: "5 MiB", partSize: "5 MiB", partConcurrency: 1 }
      })
      : settings()
  })
  try {
    let injected = 0
    const hooked: Array<boolean> = []
    for (let k = 0; k < times; k++) {
      const nth = 1 + (k % 3)
      const child = world.archiver({ SLUICE_TEST_KILL_AT: `${gap}:${nth}` })
      const code = await child.exit(FIRST_COMMIT_MS + 60_000)
      if (code === "timeout") child.process.kill("SIGKILL")
      const byHook = child.process.signalCode === "SIGKILL" && child.stderr().includes(`SIGKILL at ${gap} #${nth}`)
      hooked.push(byHook)
      if (byHook) injected++
      context.log(`${name} #${k + 1}: ${byHook ? `killed by the hook at pass ${nth}` : `ended otherwise (${String(code)}, ${String(child.process.signalCode)})`}; committed ${world.committed()}`)
    }
    const back = Date.now()
    const last = world.archiver()
    const done = await world.allCommitted(FINISH_MS, last)
    const exit = await world.stop(last)
    let audit = await world.audit()
    const orphans = audit.orphanedUploads
    const checks: Array<readonly [string, boolean]> = [
      [`${times} kills by the hook at ${gap}`, injected === times],
      ["restarted, it finished", done]
    ]
    if (multipart) {
      checks.push(["the killed multipart uploads listed as orphans", orphans > 0])
      audit = await world.audit(["--abort-orphans", "--older-than", "0s"])
      checks.push(["aborted by sluice audit --abort-orphans", audit.orphanedUploads === 0])
      context.log(`${name}: ${orphans} orphaned multipart uploads listed; after --abort-orphans: ${audit.orphanedUploads}`)
    }
    return Run.row(world, name, { injected, audit, recoverySeconds: world.recoverySeconds(back), exit, checks })
  } finally {
    await world.close()
  }
}

/** Size of the S3 server's data tmpfs in the disk-full fault: room for the run's objects (~10 MB) and versitygw's metadata. */
const DISK_BYTES = "48m"
/** How long the disk stays full. */
const FULL_MS = { smoke: 6_000, full: 30_000 }

/**
 * The S3 server's disk full: its data folder is a tmpfs (`SLUICE_S3_DATA_SIZE`),
 * filled by a file of ours after the archiver's first commit and freed after
 * a while. Nothing may be committed past what was verified, and the archiver
 * must name the cause and resume once space is freed.
 */
const diskFull: Fault["run"] = async (context) => {
  const name = "disk-full"
  Services.script("s3-server.sh", "down")
  process.env["SLUICE_S3_DATA_SIZE"] = DISK_BYTES
  try {
    Services.script("s3-server.sh", "up")
  } finally {
    delete process.env["SLUICE_S3_DATA_SIZE"]
  }
  const data = Services.s3.dataDir()
  const world = await Run.prepare(context.endpoints, context.reportDir, name, { records: count(context, 40_000, 150_000), partitions: 4, recordBytes: 150, settings: settings() })
  const filler = join(data, ".sluice-filler")
  try {
    const archiver = world.archiver()
    const firstCommit = await world.committedBeyond(0, FIRST_COMMIT_MS, archiver)
    fill(data, filler)
    const free = statfsSync(data)
    const filledAt = world.committed()
    await Run.sleep(context.scale === "smoke" ? FULL_MS.smoke : FULL_MS.full)
    const duringFull = world.committed() - filledAt
    rmSync(filler)
    const freed = Date.now()
    await world.committedBeyond(world.committed(), RECOVER_MS, archiver)
    const recovery = world.recoverySeconds(freed)
    const survived = alive(archiver)
    const done = await world.allCommitted(FINISH_MS, archiver)
    const exit = await world.stop(archiver)
    const audit = await world.audit()
    const logText = archiver.output()
    // versitygw answers 507 InsufficientStorage (S3's own code for it); a server could say ENOSPC in a 500's message.
    const named = /InsufficientStorage|ENOSPC|no space left/i.exec(logText)?.[0]
    context.log(`${name}: disk full (${free.bavail * free.bsize} bytes free) for the window; ${duringFull} records committed during it; the log says ${named ?? "nothing naming it"}`)
    return Run.row(world, name, {
      injected: firstCommit ? 1 : 0,
      audit,
      recoverySeconds: recovery,
      exit,
      checks: [
        ["archiver rode through", survived],
        ["a log line names the cause", named !== undefined],
        ["resumed once space was freed", recovery !== null],
        ["finished within bound", done]
      ]
    })
  } finally {
    rmSync(filler, { force: true })
    await world.close()
    // The next faults get a server on an ordinary disk again.
    Services.script("s3-server.sh", "down")
    Services.script("s3-server.sh", "up")
  }
}

/** Writes zeros to `file` in `dir` until the file system is full (ENOSPC), bounded by its size. */
const fill = (dir: string, file: string): void => {
  const fd = openSync(file, "w")
  const chunk = Buffer.alloc(1 << 20)
  try {
    const total = statfsSync(dir)
    const bound = total.blocks * total.bsize
    for (let written = 0; written < bound;) {
      try {
        written += writeSync(fd, chunk)
      } catch (error) {
        if (error instanceof Error && "code" in error && error.code === "ENOSPC") break
        throw error
      }
    }
    // The last partial MiB: byte-sized writes would be slow; a 4 KiB chunk fills the rest.
    const small = Buffer.alloc(4096)
    for (;;) {
      try {
        writeSync(fd, small)
      } catch {
        break
      }
    }
  } finally {
    closeSync(fd)
  }
}

/** Every fault, in the order they run (disk-full restarts the S3 server, the cluster starts 3 JVMs: last). */
export const all: ReadonlyArray<Fault> = [
  {
    name: "s3-kill",
    smoke: true,
    run: killRestart("s3-kill", { smokeTimes: 3, fullTimes: 10, downMs: 1_000, gapMs: 1_500, kill: Services.s3.kill, start: Services.s3.start, fullRecords: 400_000 })
  },
  { name: "s3-outage", smoke: false, run: s3Outage },
  {
    name: "broker-kill",
    smoke: true,
    run: killRestart("broker-kill", { smokeTimes: 1, fullTimes: 5, downMs: 2_000, gapMs: 2_000, kill: Services.broker.kill, start: Services.broker.start, fullRecords: 1_000_000 })
  },
  {
    name: "stall",
    smoke: true,
    // Every connection stalls (data dropped, the socket left open) for the window: each request
    // times out (the 5 s request timeout) and its batch retries; after it, uploads go on.
    run: network("stall", [{ name: "stall", type: "timeout", stream: "upstream", toxicity: 1, attributes: { timeout: 0 } }], {
      smokeMs: 8_000,
      fullMs: 30_000,
      retriedWith: /code: 'TimeoutError'/
    })
  },
  {
    name: "reset",
    smoke: false,
    // Bodies slowed to 256 KB/s (a 300 KB object takes ~1.2 s) and every connection reset (RST)
    // 500 ms after it opens or the toxic lands: mid-body for every request in flight.
    run: network("reset", [
      { name: "slow", type: "bandwidth", stream: "upstream", toxicity: 1, attributes: { rate: 256 } },
      { name: "reset", type: "reset_peer", stream: "downstream", toxicity: 1, attributes: { timeout: 500 } }
    ], { smokeMs: 6_000, fullMs: 20_000, retriedWith: /code: '(ECONNRESET|EPIPE|TimeoutError)'/ })
  },
  {
    name: "cut-mid-body",
    smoke: false,
    // Each connection closed (FIN) once 64 KiB went up it: every body above that is cut short.
    run: network("cut-mid-body", [{ name: "cut", type: "limit_data", stream: "upstream", toxicity: 1, attributes: { bytes: 65_536 } }], {
      smokeMs: 6_000,
      fullMs: 20_000,
      retriedWith: /code: '(ECONNRESET|EPIPE|TimeoutError)'/
    })
  },
  {
    name: "slow-close",
    smoke: false,
    // A half-open close: each connection's answers stop after 16 KiB down it, and its close is
    // held back 10 s; the request waiting on it times out (5 s) and its batch retries.
    run: network("slow-close", [
      { name: "stop", type: "limit_data", stream: "downstream", toxicity: 1, attributes: { bytes: 16_384 } },
      { name: "slow", type: "slow_close", stream: "downstream", toxicity: 1, attributes: { delay: 10_000 } }
    ], { smokeMs: 6_000, fullMs: 20_000, retriedWith: /code: '(TimeoutError|ECONNRESET|EPIPE)'/ })
  },
  {
    name: "bandwidth-zero",
    smoke: false,
    // 1 KB/s up for 30 s: the store there, next to no bytes through (each request times out).
    run: network("bandwidth-zero", [{ name: "bw", type: "bandwidth", stream: "upstream", toxicity: 1, attributes: { rate: 1 } }], {
      smokeMs: 8_000,
      fullMs: 30_000,
      retriedWith: /code: 'TimeoutError'/
    })
  },
  { name: "kill-after-put", smoke: false, run: aimedKill("after-put") },
  { name: "kill-after-manifest", smoke: false, run: aimedKill("after-manifest") },
  { name: "kill-after-verify", smoke: true, run: aimedKill("after-verify") },
  { name: "kill-mid-multipart", smoke: false, run: aimedKill("mid-multipart") },
  { name: "disk-full", smoke: true, run: diskFull },
  { name: "broker-node-kill", smoke: false, run: brokerNodeKill("broker-node-kill", "leader") },
  { name: "coordinator-kill", smoke: false, run: brokerNodeKill("coordinator-kill", "coordinator") },
  // sasl-scram and tls-private-ca (Auth.ts): wrong credentials fail fast and typed, right ones archive.
  { name: "auth", smoke: false, run: () => runAuthFaults() }
]
