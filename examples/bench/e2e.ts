/**
 * bench:e2e — Kafka → S3 end to end on the real local services: Sluice
 * (`KafkaSource` → default policies → `S3Sink`, CRC32 checked by HEAD) against
 * a plain loop doing the same work (`plain.ts`), and the S3 server's own
 * ceiling (`ceiling.ts`), in one run.
 *
 * ```sh
 * npm run bench:e2e [-- --records 1000000 --partitions 8 --rounds 3 --ceiling-seconds 10 --json]
 * npm run bench:e2e -- --rounds 1 --cpu-prof /tmp/prof   # + a V8 CPU profile of every contender run
 * npm run bench:e2e -- --policies "fixed:32+throttle+shared+batch"   # Sluice with another composition
 * ```
 *
 * `npm run bench:e2e` goes through `scripts/bench-e2e.sh`, which starts the
 * broker and the S3 server (`scripts/services.sh up`), sources their
 * `.services/*.env`, runs this file on the workspace's sources
 * (`--conditions=@sluice/source`), and stops the services again unless they
 * were already running (not for `--help` and `--completions`, which need
 * none). The command line is read with `effect/cli` ({@link command}): an
 * unknown flag or a bad value stops it before anything starts (exit 2).
 *
 * 1. One topic of `--records` records of 150 B over `--partitions` partitions
 *    is produced once.
 * 2. Each of `--rounds` rounds archives the whole topic twice, Sluice (with
 *    `--policies`, a composition string as `Composition.parse` reads it;
 *    default `Composition.defaults()`) and the
 *    plain loop (the order alternates), each in its own child process, with
 *    its own consumer group and its own bucket. The plain loop's objects hold
 *    as many records as Sluice's objects sealed on fill held (the median, from
 *    their manifests), so both write objects of the same size.
 * 3. After each run the bucket is read back from outside (`archive.ts`): every
 *    offset of every partition exactly once, each record the one produced
 *    there, the group's commits at the end offsets. Anything else fails the
 *    benchmark.
 * 4. The ceiling: bare `PutObject`s of that object size, 8, 16 and 32 in
 *    flight, `--ceiling-seconds` each; the best is the server's ceiling. A
 *    fourth flood at 8 adds what the contenders add per object (CRC32, HEAD).
 *
 * Records/s are medians over the rounds. With `--json` the report goes to
 * stderr and stdout holds one line, a JSON object:
 * `{ sluiceRecordsPerSecond, plainRecordsPerSecond, ratio,
 * serverCeilingBytesPerSecond, fractionOfCeiling, …, sluiceCpuMicrosPerRecord,
 * plainCpuMicrosPerRecord }`, where `fractionOfCeiling` is Sluice's object
 * bytes per second over the ceiling and `…CpuMicrosPerRecord` is the median of
 * a contender's CPU during its run (user + system of every thread of its
 * process, from the kernel's `getrusage`; the process start left out) per
 * record.
 */
import { spawn } from "node:child_process"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import * as CommandLine from "@sluice/core/CommandLine"
import { Composition } from "@sluice/policies"
import { Option, Result as Outcome } from "effect"
import { Flag } from "effect/cli"
import * as Archive from "./archive.ts"
import * as Ceiling from "./ceiling.ts"
import { countFlag, k, mb, median, pct, readLine, round3, sec } from "./cli.ts"
import type { Job, Result } from "./contender.ts"
import { RESULT } from "./contender.ts"
import * as Plain from "./plain.ts"
import * as Services from "./services.ts"
import * as Sluice from "./sluice.ts"

// --- the command line ---------------------------------------------------------

/** The child roles (`--role`): the two contenders and the S3 server's ceiling (`ceiling.ts`). */
const ROLES = ["sluice", "plain", "flood"] as const
/** A child role. */
export type Role = (typeof ROLES)[number]

/**
 * `bench:e2e`'s command line: the benchmark's flags, and the child roles'
 * (`--role`, `--job`), hidden from the help: this file runs itself (and
 * `peer.ts` runs it) as `--role sluice --job <json>`.
 */
export const command = CommandLine.script("bench:e2e", {
  records: countFlag("records", 1_000_000, "records of 150 B produced once into the topic"),
  partitions: countFlag("partitions", 8, "partitions of the topic"),
  rounds: countFlag("rounds", 3, "rounds, each archiving the whole topic with Sluice and with the plain loop"),
  ceilingSeconds: countFlag("ceiling-seconds", 10, "seconds of each bare PutObject flood measuring the S3 server's ceiling"),
  policies: Flag.String("policies").pipe(
    Flag.withMetavar("composition"),
    Flag.withDescription("Sluice's policies, a composition as Composition.parse reads it, e.g. \"fixed:32+throttle+shared+batch\" (default \"default\": Composition.defaults())"),
    Flag.withDefault("default")
  ),
  cpuProf: Flag.String("cpu-prof").pipe(
    Flag.withMetavar("dir"),
    Flag.withDescription("write a V8 CPU profile of every contender run into dir (see examples/bench/stages.ts)"),
    Flag.optional
  ),
  json: CommandLine.switchFlag("json", "the report on stderr, and on stdout one JSON line: the summary"),
  role: Flag.Literals("role", ROLES).pipe(Flag.optional, Flag.withHidden),
  job: Flag.String("job").pipe(Flag.optional, Flag.withHidden)
}, "Kafka → S3 end to end on the local broker and S3 server (scripts/bench-e2e.sh starts them): Sluice against a plain loop doing the same work, each run read back and verified, and the server's ceiling.", { invocation: "npm run bench:e2e --" })

/** What `bench:e2e` runs: the benchmark. */
export interface Bench {
  readonly _tag: "Bench"
  readonly records: number
  readonly partitions: number
  readonly rounds: number
  readonly ceilingSeconds: number
  /** The composition string, checked by `Composition.parseResult`. */
  readonly policies: string
  /** `--cpu-prof`: the contenders' children write V8 CPU profiles there (to see where their time goes). */
  readonly cpuProfileDir: string | undefined
  readonly json: boolean
}

/** What `bench:e2e` runs: one child role on its job (`--job`, JSON; `{}` when absent). */
export interface Child {
  readonly _tag: "Child"
  readonly role: Role
  readonly job: string
}

/**
 * Reads `bench:e2e`'s argument list: the benchmark's options, a child's
 * role, the help, a completion script, or what is wrong (a count that is not
 * a whole number ≥ 1, a composition `Composition.parse` refuses: refused
 * here, before a topic is produced, rather than by the Sluice child).
 */
export const decode = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<Bench | Child> =>
  readLine(command, argv, (flags) =>
    Option.isSome(flags.role)
      ? Outcome.succeed<Bench | Child>({ _tag: "Child", role: flags.role.value, job: Option.getOrElse(flags.job, () => "{}") })
      : Outcome.gen(function*() {
        const records = yield* flags.records.value
        const partitions = yield* flags.partitions.value
        const rounds = yield* flags.rounds.value
        const ceilingSeconds = yield* flags.ceilingSeconds.value
        const parsed = Composition.parseResult(flags.policies)
        if (Outcome.isFailure(parsed)) return yield* Outcome.fail(`--policies: ${parsed.failure.message}`)
        const bench: Bench | Child = {
          _tag: "Bench",
          records,
          partitions,
          rounds,
          ceilingSeconds,
          policies: flags.policies,
          cpuProfileDir: Option.getOrUndefined(flags.cpuProf),
          json: flags.json
        }
        return bench
      }).pipe(Outcome.mapError((message) => `${command.name}: ${message}`)))

// --- child roles ------------------------------------------------------------
// Each run happens in a child process (`--role`), so that its peak RSS, heap
// and JIT state are its own; it prints one `RESULT <json>` line.

/** Runs `role` in a child process on the same Node flags (V8 CPU profiles into `cpuProfileDir`, but for the flood); its result, or a loud failure. */
function child<A>(childRole: Role, job: object, timeoutMillis: number, cpuProfileDir: string | undefined): Promise<A> {
  return new Promise((resolve, reject) => {
    const self = fileURLToPath(import.meta.url)
    const profile = cpuProfileDir !== undefined && childRole !== "flood" ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`] : []
    const proc = spawn(process.execPath, [...process.execArgv, ...profile, self, "--role", childRole, "--job", JSON.stringify(job)], {
      stdio: ["ignore", "pipe", "inherit"],
      timeout: timeoutMillis,
      killSignal: "SIGKILL"
    })
    let out = ""
    proc.stdout.setEncoding("utf8")
    proc.stdout.on("data", (text: string) => {
      out += text
    })
    proc.on("error", reject)
    proc.on("close", (code, signal) => {
      const lines = out.split("\n")
      for (const line of lines) if (line !== "" && !line.startsWith(RESULT)) process.stderr.write(`  [${childRole}] ${line}\n`)
      const result = lines.find((line) => line.startsWith(RESULT))
      if (code === 0 && result !== undefined) resolve(JSON.parse(result.slice(RESULT.length)) as A)
      else reject(new Error(`${childRole} run ${signal === null ? `exited with ${code}` : `killed (${signal}) after ${timeoutMillis / 1000} s`}`))
    })
  })
}

// --- the run ----------------------------------------------------------------

type Contender = "sluice" | "plain"

interface Row {
  readonly round: number
  readonly contender: Contender
  readonly result: Result
  readonly archive: Archive.Archive
  readonly cpu: { readonly s3: number | undefined; readonly kafka: number | undefined }
}

const delta = (after: number | undefined, before: number | undefined): number | undefined =>
  after === undefined || before === undefined ? undefined : after - before

async function main(options: Bench): Promise<void> {
  const { json, records, partitions, rounds, ceilingSeconds, policies, cpuProfileDir } = options
  const say = (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`)
  const services = Services.fromEnv()
  const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
  const client = Services.s3Client(services)
  const id = `${Date.now().toString(36)}-${process.pid}`
  const topic = `sluice-bench-e2e-${id}`
  const buckets = new Set<string>()
  const newBucket = async (name: string) => {
    await client.send(new CreateBucketCommand({ Bucket: name }))
    buckets.add(name)
    return name
  }
  const childTimeout = 60_000 + records * 0.2

  say(`bench:e2e — ${records.toLocaleString("en-US")} records × ${Services.RECORD_BYTES} B over ${partitions} partitions, ${rounds} rounds`)
  say(`machine: ${Os.cpus().length} cores, ${(Os.totalmem() / 2 ** 30).toFixed(0)} GiB, load ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")}, Node ${process.version}`)
  say(`Kafka ${services.brokers.join(",")}, S3 ${services.s3.endpoint}, Sluice policies: ${policies}`)
  try {
    const t0 = performance.now()
    const ends = await Services.produceTopic(services, topic, partitions, records)
    const produceSeconds = (performance.now() - t0) / 1000
    say(`produced ${topic} in ${produceSeconds.toFixed(1)} s (${k(records / produceSeconds)} records/s)`)

    const rows: Array<Row> = []
    // Records per object of Sluice's objects sealed on fill (set by its first run, which comes first).
    let fill = { records: 0, bytes: 0 }
    for (let round = 1; round <= rounds; round++) {
      const order: ReadonlyArray<Contender> = round % 2 === 1 ? ["sluice", "plain"] : ["plain", "sluice"]
      for (const contender of order) {
        const bucket = await newBucket(`bench-e2e-${id}-${contender}-${round}`)
        const job: Job = { topic, partitions, records, groupId: `${topic}-${contender}-${round}`, bucket, recordsPerObject: fill.records, policies }
        const before = Services.serviceCpu(repoRoot)
        const result = await child<Result>(contender, job, childTimeout, cpuProfileDir)
        const after = Services.serviceCpu(repoRoot)
        const archive = await Archive.check(client, bucket, ends, contender === "sluice")
        const committed = await Services.groupOffsets(services, job.groupId, topic, partitions)
        if (committed.some((offset, p) => offset !== ends[p])) {
          throw new Error(`${contender} round ${round}: group ${job.groupId} committed ${committed.join(",")}, topic ends at ${ends.join(",")}`)
        }
        if (result.records !== records || archive.records !== records) {
          throw new Error(`${contender} round ${round}: reported ${result.records}, stored ${archive.records} of ${records} records`)
        }
        if (contender === "sluice") {
          fill = archive.filledRecords > 0
            ? { records: archive.filledRecords, bytes: archive.filledBytes }
            : { records: Math.ceil(archive.records / archive.objects), bytes: Math.ceil(archive.objectBytes / archive.objects) }
        }
        await Archive.removeBucket(client, bucket)
        buckets.delete(bucket)
        const row: Row = { round, contender, result, archive, cpu: { s3: delta(after.s3, before.s3), kafka: delta(after.kafka, before.kafka) } }
        rows.push(row)
        say(
          `round ${round} ${contender.padEnd(6)} ${result.seconds.toFixed(2)} s  ${k(records / result.seconds)} records/s  ` +
            `${mb(archive.objectBytes / result.seconds)}/s  ${archive.objects} objects of ${mb(archive.objectBytes / archive.objects)} (verified)`
        )
      }
    }

    // The server's ceiling, at the size of Sluice's filled objects.
    const objectBytes = fill.bytes
    const floodBucket = await newBucket(`bench-e2e-${id}-ceiling`)
    const floods: Array<Ceiling.FloodJob & Ceiling.FloodResult & { readonly s3Cpu: number | undefined }> = []
    for (const [concurrency, mode] of [[8, "bare"], [16, "bare"], [32, "bare"], [8, "verified"]] as const) {
      const job: Ceiling.FloodJob = { bucket: floodBucket, objectBytes, concurrency, seconds: ceilingSeconds, mode }
      const before = Services.serviceCpu(repoRoot)
      const result = await child<Ceiling.FloodResult>("flood", job, ceilingSeconds * 1000 + 120_000, cpuProfileDir)
      floods.push({ ...job, ...result, s3Cpu: delta(Services.serviceCpu(repoRoot).s3, before.s3) })
      say(`flood ${mode.padEnd(8)} ×${String(concurrency).padEnd(2)} ${mb(objectBytes)} objects: ${result.puts} puts, ${mb(result.bytesPerSecond)}/s, p50 ${result.p50Millis.toFixed(0)} ms`)
    }
    await Archive.removeBucket(client, floodBucket)
    buckets.delete(floodBucket)

    const of = (c: Contender) => rows.filter((r) => r.contender === c)
    const rate = (c: Contender) => median(of(c).map((r) => records / r.result.seconds))
    const byteRate = (c: Contender) => median(of(c).map((r) => r.archive.objectBytes / r.result.seconds))
    const peak = (c: Contender) => Math.max(...of(c).map((r) => r.result.peakRssBytes))
    // The child's CPU during the run, every thread (getrusage), per record: the start is left out (bench:peer counts it).
    const cpuPerRecord = (c: Contender) => round3(median(of(c).map((r) => (r.result.cpuSeconds * 1e6) / records)))
    const sluiceRecordsPerSecond = rate("sluice")
    const plainRecordsPerSecond = rate("plain")
    const serverCeilingBytesPerSecond = Math.max(...floods.filter((f) => f.mode === "bare").map((f) => f.bytesPerSecond))
    const summary = {
      sluiceRecordsPerSecond: Math.round(sluiceRecordsPerSecond),
      plainRecordsPerSecond: Math.round(plainRecordsPerSecond),
      ratio: round3(sluiceRecordsPerSecond / plainRecordsPerSecond),
      serverCeilingBytesPerSecond: Math.round(serverCeilingBytesPerSecond),
      fractionOfCeiling: round3(byteRate("sluice") / serverCeilingBytesPerSecond),
      sluiceBytesPerSecond: Math.round(byteRate("sluice")),
      plainBytesPerSecond: Math.round(byteRate("plain")),
      objectBytes,
      recordsPerObject: fill.records,
      records,
      partitions,
      rounds,
      policies,
      sluicePeakRssBytes: peak("sluice"),
      plainPeakRssBytes: peak("plain"),
      sluiceCpuMicrosPerRecord: cpuPerRecord("sluice"),
      plainCpuMicrosPerRecord: cpuPerRecord("plain")
    }

    say("")
    say("| round | contender | s | records/s | object MB/s | objects | mean object | peak RSS | node CPU | S3 CPU | Kafka CPU | event loop busy |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (const r of rows) {
      say(
        `| ${r.round} | ${r.contender} | ${r.result.seconds.toFixed(2)} | ${k(records / r.result.seconds)} | ${mb(r.archive.objectBytes / r.result.seconds)} | ` +
          `${r.archive.objects} | ${mb(r.archive.objectBytes / r.archive.objects)} | ${mb(r.result.peakRssBytes)} | ${sec(r.result.cpuSeconds)} | ` +
          `${sec(r.cpu.s3)} | ${sec(r.cpu.kafka)} | ${pct(r.result.eventLoopUtilization)} |`
      )
    }
    say("")
    for (const r of rows) {
      const d = r.result.detail
      say(
        `round ${r.round} ${r.contender}: first record read at ${sec(d["firstReadSeconds"])}, last at ${sec(d["allReadSeconds"])}, ` +
          `last commit at ${sec(r.result.seconds)}`
      )
      say(
        r.contender === "sluice"
          ? `round ${r.round} sluice: uploads at the concurrency limit ${pct(d["uploadsAtLimit"])} of the time, memory-bound ${pct(d["memoryBound"])}, ` +
            `read gate closed ${pct(d["readGateClosed"])}, batches queued ${pct(d["batchesQueued"])}; concurrency mean ${(d["meanConcurrency"] ?? 0).toFixed(1)} ` +
            `max ${d["maxConcurrency"]}; peak held ${mb(d["maxInflightBytes"] ?? 0)}; ${d["requests"]} requests, ${d["retries"]} retries, ${d["throttles"]} throttles`
          : `round ${r.round} plain: waiting for a free upload slot ${pct(d["waitingForStore"])} of the time, for the next Kafka message ${pct(d["waitingForKafka"])}`
      )
    }
    say("")
    say("| flood | in flight | puts | MB/s | p50 ms | S3 CPU |")
    say("|---|---|---|---|---|---|")
    for (const f of floods) say(`| ${f.mode} | ${f.concurrency} | ${f.puts} | ${mb(f.bytesPerSecond)} | ${f.p50Millis.toFixed(0)} | ${sec(f.s3Cpu)} |`)
    say("")
    const met = summary.ratio >= 1 && (summary.fractionOfCeiling >= 0.8 || sluiceRecordsPerSecond >= 1e6)
    say(
      `median: Sluice ${k(sluiceRecordsPerSecond)} records/s (${mb(summary.sluiceBytesPerSecond)}/s), plain ${k(plainRecordsPerSecond)} records/s ` +
        `(${mb(summary.plainBytesPerSecond)}/s), ratio ${summary.ratio}; ceiling ${mb(serverCeilingBytesPerSecond)}/s, Sluice at ${pct(summary.fractionOfCeiling)} of it ` +
        `→ target (ratio ≥ 1 and ≥ 80% of the ceiling or ≥ 1 M records/s) ${met ? "met" : "NOT met"}`
    )
    say(`load at the end: ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")}`)
    if (json) process.stdout.write(`${JSON.stringify(summary)}\n`)
  } finally {
    for (const bucket of buckets) await Archive.removeBucket(client, bucket).catch(() => undefined)
    await Services.deleteTopic(services, topic)
    client.destroy()
  }
}

// --- entry ------------------------------------------------------------------

/** Runs one child role on its job: prints `RESULT <json>` and exits 0, or exits 1. */
const runChild = ({ role, job: text }: Child): void => {
  const job: unknown = JSON.parse(text)
  const services = Services.fromEnv()
  const work = role === "sluice"
    ? Sluice.run(job as Job, services)
    : role === "plain"
    ? Plain.run(job as Job, services)
    : Ceiling.run(job as Ceiling.FloodJob, services)
  work.then(
    (result) => {
      process.stdout.write(`${RESULT}${JSON.stringify(result)}\n`)
      process.exit(0)
    },
    (error: unknown) => {
      console.error(`bench:e2e ${role}:`, error)
      process.exit(1)
    }
  )
}

if (import.meta.main) {
  const options = CommandLine.settle(decode(process.argv.slice(2)), command.help)
  if (options?._tag === "Child") runChild(options)
  else if (options !== undefined) {
    main(options).catch((error: unknown) => {
      console.error("bench:e2e FAILED:", error instanceof Error ? error.message : error)
      process.exitCode = 1
    })
  }
}
