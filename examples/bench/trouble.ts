/**
 * bench:peer through trouble (issue 28 item 2): Sluice's example archiver
 * (`kafka-to-s3/main.ts`, the default policies), the peer, Quix Streams'
 * `S3FileSink` (`peer/quix_s3_archiver.py`), and on request the second peer,
 * the Camel route (`peer/camel`, contender `camel`), each archiving a topic
 * that a producer keeps writing to, while the store is in trouble for a minute.
 *
 * ```sh
 * npm run bench:peer -- --trouble slowdown,slower [--contenders sluice,peer,camel] [--rate 20000] [--seconds 150] [--json]
 * ```
 *
 * Its flags ({@link flags}) are `bench:peer`'s (`peer.ts` reads the line),
 * checked here ({@link check}).
 *
 * The troubles, from `--trouble-at` (30 s after the archiver's spawn) for
 * `--trouble-seconds` (60 s):
 *
 * - `slowdown`: every request answered `503 SlowDown` (the replay's store
 *   proxy, `replay/store-proxy.ts`, refusing every request: `throttleAbove`
 *   0, probability 1);
 * - `slower`: the store about 10× slower — toxiproxy adds
 *   {@link SLOWER_LATENCY_MILLIS} ms to every answer and caps each
 *   connection's uploads at {@link SLOWER_KB_PER_SECOND} KB/s.
 *
 * Both archivers write through the same chain, toxiproxy → the store proxy →
 * the S3 server, each run with its own topic, group, bucket and proxies. The
 * producer (in this process, one request at a time so that offsets follow
 * the send order) writes `--rate` records/s of 150 B over 8 partitions for
 * `--seconds`, then stops; each record's value names its partition and
 * offset. The archiver is then given {@link CATCH_UP_MILLIS} ms to commit
 * every end offset, and SIGTERMed (both drain on it).
 *
 * Measured from outside, per archiver: the lag (records produced and not
 * committed, from the group's offsets every {@link SAMPLE_MILLIS} ms) — its
 * worst, and the seconds from the trouble's end until it is back under the
 * worst lag seen before the trouble (`catchUpSeconds`, null: never); the
 * exit status and when it exited; and the bucket read back: Sluice's with
 * `sluice audit` (every offset in a verified object; duplicates are
 * overlapping objects' records), the peer's with `peer-archive.ts` (every
 * value checked). `lost` is produced records in no object; `duplicates`
 * records held twice.
 *
 * The peer runs with Quix's default checkpointing (every 5 s, the archiver's
 * `maxAge` is 5 s too), so both are as fresh when nothing goes wrong.
 */
import { execFileSync, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { setTimeout as sleep } from "node:timers/promises"
import { fileURLToPath } from "node:url"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { Admin, Producer } from "@platformatic/kafka"
import { Option, Result } from "effect"
import { Flag } from "effect/cli"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as StoreProxy from "../replay/StoreProxy.ts"
import * as Svg from "../soak/Svg.ts"
import * as Faults from "../faults/Services.ts"
import * as PeerArchive from "./peer-archive.ts"
import * as Peers from "./peers.ts"
import * as Services from "./services.ts"

/** How often the lag is read (the resolution of the worst lag and the catch-up). */
export const SAMPLE_MILLIS = 500
/** After the producer stops, how long an archiver gets to commit every end offset. */
export const CATCH_UP_MILLIS = 180_000
/** After SIGTERM, how long before SIGKILL. */
export const TERM_GRACE_MILLIS = 30_000
/**
 * `slower`'s added latency per answer: the local S3 server answers an 8 MiB
 * PUT in ~50 ms; with the bandwidth cap below the same PUT takes ~0.5 s + this.
 */
export const SLOWER_LATENCY_MILLIS = 450
/** `slower`'s cap on each connection's uploads (toxiproxy's KB is 1 000 bytes): an 8 MiB body takes ~0.5 s. */
export const SLOWER_KB_PER_SECOND = 16_000
const PARTITIONS = 8
/** Records per send: one request at a time, 10 a second at the default rate. */
const SENDS_PER_SECOND = 10

/** The troubles `--trouble` names. */
export const TROUBLES = ["slowdown", "slower"] as const
/** A trouble. */
export type Trouble = (typeof TROUBLES)[number]
/** The archivers `--contenders` names: `peer` is Quix Streams' sink, `camel` the Camel route. */
export const CONTENDERS = ["sluice", "peer", "camel"] as const
/** An archiver. */
export type Contender = (typeof CONTENDERS)[number]

/** A number option's default and bounds (inclusive), checked by {@link check}. */
interface Bounded {
  readonly fallback: number
  readonly min: number
  readonly max: number
}

/**
 * The number options' defaults and bounds: a rate a single producer keeps up
 * with, and a run long enough for a trouble with time before and after it.
 */
const BOUNDS = {
  rate: { fallback: 20_000, min: 100, max: 200_000 },
  seconds: { fallback: 150, min: 20, max: 3600 },
  "trouble-at": { fallback: 30, min: 1, max: 3600 },
  "trouble-seconds": { fallback: 60, min: 1, max: 3600 }
} satisfies Record<string, Bounded>

const bounded = (name: keyof typeof BOUNDS, what: string): Flag.Flag<Option.Option<number>> => {
  const { fallback, min, max } = BOUNDS[name]
  return Flag.Finite(name).pipe(
    Flag.withMetavar("n"),
    Flag.withDescription(`with --trouble: ${what}, ${min} to ${max} (default ${fallback})`),
    Flag.optional
  )
}

/**
 * The flags of a run through trouble, on `bench:peer`'s command line; `--trouble`
 * asks for the run, the others apply only with it.
 */
export const flags = {
  trouble: Flag.String("trouble").pipe(
    Flag.withMetavar("list"),
    Flag.withDescription("instead of the throughput rounds, both archivers through a minute of store trouble: slowdown and/or slower, comma-separated (e.g. slowdown,slower)"),
    Flag.optional
  ),
  contenders: Flag.String("contenders").pipe(
    Flag.withMetavar("list"),
    Flag.withDescription("with --trouble: the archivers, in order: sluice, peer (Quix) and/or camel, comma-separated (default sluice,peer)"),
    Flag.optional
  ),
  rate: bounded("rate", "records/s the producer writes"),
  seconds: bounded("seconds", "seconds the producer writes"),
  troubleAt: bounded("trouble-at", "seconds from the archiver's spawn to the trouble"),
  troubleSeconds: bounded("trouble-seconds", "seconds the store stays in trouble")
}

/** The flags of a run through trouble as `effect/cli` read them (`--trouble` given). */
export interface Flags {
  readonly trouble: string
  readonly contenders: Option.Option<string>
  readonly rate: Option.Option<number>
  readonly seconds: Option.Option<number>
  readonly troubleAt: Option.Option<number>
  readonly troubleSeconds: Option.Option<number>
}

/** What a run through trouble runs with. */
export interface Options {
  readonly troubles: ReadonlyArray<Trouble>
  readonly contenders: ReadonlyArray<Contender>
  /** Records/s the producer writes. */
  readonly rate: number
  /** Seconds the producer writes. */
  readonly seconds: number
  /** Seconds from the archiver's spawn to the trouble. */
  readonly troubleAt: number
  /** Seconds the store stays in trouble. */
  readonly troubleSeconds: number
  /** The report on stderr, and on stdout one JSON line. */
  readonly json: boolean
}

const isOf = <const L extends ReadonlyArray<string>>(literals: L) => (x: string): x is L[number] => literals.includes(x)

const numberOf = (name: keyof typeof BOUNDS, given: Option.Option<number>): Result.Result<number, string> => {
  const { fallback, min, max } = BOUNDS[name]
  const n = Option.getOrElse(given, () => fallback)
  return n >= min && n <= max ? Result.succeed(n) : Result.fail(`bench:peer --trouble: --${name} expects a number in [${min}, ${max}]`)
}

/**
 * Checks the flags of a run through trouble: the troubles and archivers
 * named, the numbers in their bounds, the trouble over before the producer
 * stops; what is wrong otherwise.
 */
export const check = (given: Flags, json: boolean): Result.Result<Options, string> =>
  Result.gen(function*() {
    const named = given.trouble.split(",").map((t) => t.trim())
    const troubles = named.filter(isOf(TROUBLES))
    const bad = named.find((t) => !isOf(TROUBLES)(t))
    if (bad !== undefined) return yield* Result.fail(`bench:peer --trouble: slowdown or slower, got ${bad}`)
    const listed = Option.getOrElse(given.contenders, () => "sluice,peer").split(",").map((c) => c.trim())
    const contenders = listed.filter(isOf(CONTENDERS))
    const unknown = listed.find((c) => !isOf(CONTENDERS)(c))
    if (unknown !== undefined || contenders.length === 0) return yield* Result.fail(`bench:peer --contenders: sluice, peer and/or camel, got ${unknown ?? "nothing"}`)
    const rate = yield* numberOf("rate", given.rate)
    const seconds = yield* numberOf("seconds", given.seconds)
    const troubleAt = yield* numberOf("trouble-at", given.troubleAt)
    const troubleSeconds = yield* numberOf("trouble-seconds", given.troubleSeconds)
    if (troubleAt + troubleSeconds >= seconds) {
      return yield* Result.fail("bench:peer --trouble: the trouble must end before the producer stops (--trouble-at + --trouble-seconds < --seconds)")
    }
    return { troubles, contenders, rate, seconds, troubleAt, troubleSeconds, json }
  })

/** One run's figures. */
export interface Row {
  readonly trouble: Trouble
  readonly contender: Contender
  readonly produced: number
  /** Produced records no object holds at the end (still in Kafka above the committed offset, unless also `lost`). */
  readonly unarchived: number | null
  /** Records below the group's committed offset that no object holds: the source will not deliver them again. */
  readonly lost: number | null
  readonly duplicates: number | null
  readonly worstLagRecords: number
  readonly worstLagBeforeTrouble: number
  /** Seconds from the trouble's end until the lag is back under the worst seen before it; null: never. */
  readonly catchUpSeconds: number | null
  /** The archiver's exit: its code (0 drained), or the signal that ended it. */
  readonly exit: string
  /** Seconds from spawn at which it exited on its own (before the bench stopped it); null: it ran to the end. */
  readonly exitedOnItsOwnAt: number | null
  readonly committedAll: boolean
  readonly detail: string
  /** The lag as sampled: seconds from the archiver's spawn, records not committed. */
  readonly lags: ReadonlyArray<{ readonly t: number; readonly lag: number }>
}

/** A paced producer of `rate` records/s, values `<partition>/<offset>/x…`, one request at a time. */
const producing = (services: Services.Services, topic: string, rate: number) => {
  const producer = new Producer({ clientId: "bench-trouble-producer", bootstrapBrokers: services.brokers, idempotent: true, retries: 3 })
  const next = new Array<number>(PARTITIONS).fill(0)
  const padding = Buffer.alloc(Services.RECORD_BYTES, "x")
  let stopping = false
  let sent = 0
  const perSend = Math.max(PARTITIONS, Math.round(rate / SENDS_PER_SECOND))
  const loop = (async () => {
    const started = performance.now()
    for (let i = 0; !stopping; i++) {
      const messages = []
      for (let k = 0; k < perSend; k++) {
        const p = (sent + k) % PARTITIONS
        const value = Buffer.from(padding)
        value.write(Services.valuePrefix(p, next[p] ?? 0), 0, "latin1")
        next[p] = (next[p] ?? 0) + 1
        messages.push({ topic, partition: p, value })
      }
      await producer.send({ messages })
      sent += perSend
      const due = started + ((i + 1) * 1000) / SENDS_PER_SECOND
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
    }
  })()
  return {
    stop: async () => {
      stopping = true
      await loop
      await producer.close()
      return [...next]
    }
  }
}

/** Waits for `child` to exit, at most `ms`; its exit as text, or undefined. */
const exitOf = (child: ChildProcess, ms: number): Promise<string | undefined> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(String(child.exitCode ?? child.signalCode))
    const timer = setTimeout(() => resolve(undefined), ms)
    child.once("exit", (code, signal) => {
      clearTimeout(timer)
      resolve(String(code ?? signal))
    })
  })

const run = async (trouble: Trouble, contender: Contender, options: {
  readonly services: Services.Services
  readonly toxiproxyUrl: string
  /** How to start each peer among the contenders (`peers.ts`). */
  readonly peers: Partial<Record<Contender, Peers.PeerProgram>>
  readonly rate: number
  readonly seconds: number
  readonly troubleAt: number
  readonly troubleSeconds: number
  readonly say: (line: string) => void
}): Promise<Row> => {
  const { services, say } = options
  const id = `${Date.now().toString(36)}-${process.pid}`
  const topic = `sluice-trouble-${trouble}-${contender}-${id}`
  const bucket = topic.toLowerCase()
  const group = `${topic}-g`
  const admin = new Admin({ clientId: "bench-trouble-admin", bootstrapBrokers: services.brokers })
  const client = Services.s3Client(services)
  const toxiproxy = Faults.toxiproxy(options.toxiproxyUrl)
  const store = await StoreProxy.start(services.s3.endpoint, 1)
  const proxyName = `sluice-trouble-${process.pid}`
  let child: ChildProcess | undefined
  try {
    await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 })
    await client.send(new CreateBucketCommand({ Bucket: bucket }))
    await toxiproxy.drop(proxyName)
    const made = await fetch(`${options.toxiproxyUrl}/proxies`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: proxyName, listen: "127.0.0.1:0", upstream: new URL(store.endpoint).host, enabled: true })
    })
    if (!made.ok) throw new Error(`toxiproxy: ${made.status} ${await made.text()}`)
    const endpoint = `http://${((await made.json()) as { readonly listen: string }).listen}`
    const env = { ...process.env, SLUICE_S3_ENDPOINT: endpoint }
    const load = producing(services, topic, options.rate)
    const spawnedAt = performance.now()
    const peer = options.peers[contender]
    child = peer === undefined
      ? spawn(process.execPath, ["--conditions=@sluice/source", fileURLToPath(new URL("../kafka-to-s3/main.ts", import.meta.url)), topic, bucket, "--group", group, "--prometheus-port", "0", "--progress-seconds", "0", "--max-seconds", String(options.seconds * 4)], { env, stdio: ["ignore", "ignore", "pipe"] })
      // The peers' stop count is never reached: they run until the bench stops them, as Sluice's --max-seconds.
      : spawn(peer.command, peer.args({ brokers: services.brokers.join(","), topic, group, bucket, records: options.rate * options.seconds * 4 }), { env, stdio: ["ignore", "ignore", "pipe"] })
    let tail = ""
    child.stderr?.on("data", (d: Buffer) => {
      tail = (tail + d.toString("utf8")).slice(-4000)
    })
    let exitedAt: number | null = null
    let exit: string | undefined
    child.once("exit", (code, signal) => {
      exitedAt = (performance.now() - spawnedAt) / 1000
      exit = String(code ?? signal)
    })
    const lags: Array<{ readonly t: number; readonly lag: number }> = []
    let phase: "before" | "trouble" | "after" = "before"
    let ends: Array<number> | undefined
    let troubleEndAt = 0
    // Bounded: the run's seconds, then CATCH_UP_MILLIS; one sample per SAMPLE_MILLIS.
    for (;;) {
      const t = (performance.now() - spawnedAt) / 1000
      if (phase === "before" && t >= options.troubleAt) {
        say(`  ${t.toFixed(1)} s: ${trouble} starts`)
        if (trouble === "slowdown") await store.set({ throttleAbove: 0, throttleProbability: 1 })
        else {
          await toxiproxy.add(proxyName, { name: "latency", type: "latency", stream: "downstream", toxicity: 1, attributes: { latency: SLOWER_LATENCY_MILLIS, jitter: 0 } })
          await toxiproxy.add(proxyName, { name: "bandwidth", type: "bandwidth", stream: "upstream", toxicity: 1, attributes: { rate: SLOWER_KB_PER_SECOND } })
        }
        phase = "trouble"
      }
      if (phase === "trouble" && t >= options.troubleAt + options.troubleSeconds) {
        say(`  ${t.toFixed(1)} s: ${trouble} ends`)
        if (trouble === "slowdown") await store.set({ throttleAbove: null, throttleProbability: 0 })
        else {
          await toxiproxy.remove(proxyName, "latency")
          await toxiproxy.remove(proxyName, "bandwidth")
        }
        troubleEndAt = t
        phase = "after"
      }
      if (ends === undefined && t >= options.seconds) {
        ends = await load.stop()
        say(`  ${t.toFixed(1)} s: producer stopped after ${ends.reduce((a, b) => a + b, 0)} records`)
      }
      const [committed, high] = await Promise.all([
        Services.committedOffsets(admin, group, topic, PARTITIONS),
        Services.endOffsets(admin, topic, PARTITIONS)
      ])
      const lag = high.reduce((s, e, p) => s + Math.max(0, e - Math.max(0, committed[p] ?? 0)), 0)
      lags.push({ t, lag })
      if (ends !== undefined && committed.every((c, p) => c === ends?.[p])) break
      if (ends !== undefined && (t - options.seconds) * 1000 > CATCH_UP_MILLIS) break
      if (exit !== undefined && ends !== undefined) break
      await sleep(SAMPLE_MILLIS)
    }
    const stoppedOnItsOwn = exit !== undefined
    if (exit === undefined) {
      child.kill("SIGTERM")
      exit = (await exitOf(child, TERM_GRACE_MILLIS)) ?? (child.kill("SIGKILL"), "SIGKILL")
    }
    const final = ends ?? []
    const committed = await Services.committedOffsets(admin, group, topic, PARTITIONS)
    const produced = final.reduce((a, b) => a + b, 0)
    const worstBefore = Math.max(0, ...lags.filter((l) => l.t < options.troubleAt).map((l) => l.lag))
    const back = lags.find((l) => l.t >= troubleEndAt && l.lag <= worstBefore)
    let lost: number | null = null
    let unarchived: number | null = null
    let duplicates: number | null = null
    let detail = stoppedOnItsOwn ? `exited on its own at ${(exitedAt ?? 0).toFixed(1)} s: ${tail.trim().split("\n").slice(-3).join(" | ")}` : ""
    if (contender !== "sluice") {
      const archived = await PeerArchive.check(client, bucket, topic, final, committed)
      unarchived = archived.lost
      lost = archived.lostCommitted + archived.corrupt
      duplicates = archived.duplicates
    } else {
      const committedFlag = committed.map((o, p) => `${topic}:${p}=${Math.max(0, o)}`).join(",")
      const audit = JSON.parse(execFileSync("npx", ["sluice", "audit", "--bucket", bucket, "--endpoint", services.s3.endpoint, "--region", services.s3.region, "--committed", committedFlag, "--json"], {
        encoding: "utf8",
        timeout: 300_000,
        env: { ...process.env, SLUICE_S3_ENDPOINT: services.s3.endpoint }
      }).trim().split("\n").at(-1) ?? "{}") as {
        readonly records?: number
        readonly holes?: ReadonlyArray<{ readonly count: number }>
        readonly conflicts?: number
        readonly overlaps?: ReadonlyArray<{ readonly from: number; readonly to: number; readonly kind: string }>
      }
      unarchived = produced - (audit.records ?? 0)
      // Holes below the committed offsets, and conflicting copies, are records the archive does not hold as produced.
      lost = (audit.holes ?? []).reduce((s, h) => s + h.count, 0) + (audit.conflicts ?? 0)
      duplicates = (audit.overlaps ?? []).filter((o) => o.kind === "duplicate").reduce((s, o) => s + o.to - o.from + 1, 0)
    }
    return {
      trouble,
      contender,
      produced,
      unarchived,
      lost,
      duplicates,
      worstLagRecords: Math.max(0, ...lags.map((l) => l.lag)),
      worstLagBeforeTrouble: worstBefore,
      catchUpSeconds: back === undefined ? null : Math.round((back.t - troubleEndAt) * 10) / 10,
      exit,
      exitedOnItsOwnAt: stoppedOnItsOwn ? Math.round((exitedAt ?? 0) * 10) / 10 : null,
      committedAll: committed.every((c, p) => c === final[p]),
      detail,
      lags
    }
  } finally {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    await toxiproxy.drop(proxyName).catch(() => undefined)
    store.close()
    await admin.close().catch(() => undefined)
  }
}

/** Each archiver's line in the plots. */
const COLORS: Record<Contender, string> = { sluice: "#1f77b4", peer: "#d62728", camel: "#2ca02c" }

/** Runs every trouble for each archiver; prints the table and, with `--json`, the rows. */
export const main = async ({ troubles, contenders, json, ...numbers }: Options): Promise<void> => {
  const toxiproxyUrl = process.env["SLUICE_TOXIPROXY_URL"]
  if (toxiproxyUrl === undefined) {
    console.error("bench:peer --trouble: SLUICE_TOXIPROXY_URL must be set: run it through `npm run bench:peer`")
    process.exit(2)
  }
  // The peers as `scripts/bench-peer.sh` provides them; Quix with its default checkpointing (every 5 s, as fresh as Sluice's maxAge).
  const peers: Partial<Record<Contender, Peers.PeerProgram>> = {}
  try {
    if (contenders.includes("peer")) peers.peer = Peers.peerProgram("quix", true)
    if (contenders.includes("camel")) peers.camel = Peers.peerProgram("camel", false)
  } catch (error) {
    console.error(`bench:peer --trouble: ${error instanceof Peers.SetupFailed ? error.message : String(error)}`)
    process.exit(2)
  }
  const options = {
    services: Services.fromEnv(),
    toxiproxyUrl,
    peers,
    ...numbers,
    say: (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`)
  }
  const rows: Array<Row> = []
  for (const trouble of troubles) {
    for (const contender of contenders) {
      options.say(`${trouble} × ${contender}: ${options.rate} records/s for ${options.seconds} s, the store in trouble from ${options.troubleAt} s for ${options.troubleSeconds} s`)
      const row = await run(trouble, contender, options)
      rows.push(row)
      options.say(`  ${JSON.stringify({ ...row, lags: undefined })}`)
    }
  }
  options.say("")
  options.say("| trouble | archiver | produced | not archived at the end | lost (committed, not archived) | duplicates | worst lag (records) | worst lag before | catch-up (s) | exit | exited on its own at (s) | all committed |")
  options.say("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
  for (const r of rows) {
    options.say(`| ${r.trouble} | ${r.contender} | ${r.produced} | ${r.unarchived ?? "-"} | ${r.lost ?? "-"} | ${r.duplicates ?? "-"} | ${r.worstLagRecords} | ${r.worstLagBeforeTrouble} | ${r.catchUpSeconds ?? "never"} | ${r.exit} | ${r.exitedOnItsOwnAt ?? "-"} | ${r.committedAll} |`)
  }
  // The report: every lag series, and a plot per trouble (both archivers on one time axis).
  const dir = join("reports", `bench-trouble-${new Date().toISOString().replace(/[:.]/g, "-")}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "result.json"), JSON.stringify({ options: { ...options, services: undefined, say: undefined }, rows }, null, 2))
  for (const trouble of troubles) {
    const both = rows.filter((r) => r.trouble === trouble)
    const t = [...new Set(both.flatMap((r) => r.lags.map((l) => Math.round(l.t * 2) / 2)))].sort((a, b) => a - b)
    const at = (r: Row) => t.map((x) => r.lags.find((l) => Math.round(l.t * 2) / 2 === x)?.lag ?? null)
    writeFileSync(
      join(dir, `${trouble}.svg`),
      Svg.chart(`${trouble} from ${options.troubleAt} s for ${options.troubleSeconds} s, ${options.rate} records/s produced`, t, [
        { title: "lag (records produced, not committed)", series: both.map((r) => ({ name: r.contender, color: COLORS[r.contender], values: at(r) })) }
      ])
    )
  }
  options.say(`report: ${dir}`)
  if (json) console.log(JSON.stringify({ trouble: rows.map((r) => ({ ...r, lags: undefined })), report: dir }))
  // Sluice must lose nothing and catch up; the peer's figures are what they are.
  process.exitCode = rows.filter((r) => r.contender === "sluice").every((r) => r.lost === 0 && r.unarchived === 0 && r.committedAll && r.catchUpSeconds !== null) ? 0 : 1
}
