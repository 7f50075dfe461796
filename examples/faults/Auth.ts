/**
 * The authentication faults of the fault report (issue 27 item 6), each a
 * {@link FaultRow} checked from outside the archiver:
 *
 * - `sasl-scram`: the archiver (a child process, `AuthArchiver.ts`) connects
 *   to the SASL_SSL broker (SCRAM-SHA-512) with a wrong password, twice: each
 *   run must fail within seconds naming the mechanism, the broker's own log
 *   must count exactly one failed login per run (no retry loop), and nothing
 *   may be committed; then a run with the right password archives the topic.
 * - `tls-private-ca`: the archiver writes to the S3 server over HTTPS whose
 *   certificate comes from a private CA, twice without that CA: each run must
 *   fail within seconds saying the certificate is not trusted, and leave the
 *   bucket empty and nothing committed; then a run with the CA archives.
 *
 * In both, the last run's archive is audited by `npx sluice audit` over the
 * bucket against the offsets the admin API reads as committed, and every
 * run's stdout and stderr is searched for the secrets (the SASL password, the
 * S3 secret key, the Kafka client's TLS private key): one found fails the row.
 *
 * Services: it starts the SASL broker (`scripts/kafka-sasl.sh`) and the HTTPS
 * S3 server (`scripts/s3-tls.sh`) unless they run, and stops at the end the
 * ones it started (unless told to leave them); services already running are
 * used and left running.
 *
 *   node --conditions=@sluice/source examples/faults/Auth.ts   # prints the rows as JSON
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as AuthServices from "./AuthServices.ts"
import type { FaultRow } from "./FaultRow.ts"

/** Wrong-credential runs per fault: more than one, so a count of one failed login per run is not a coincidence. */
const WRONG_RUNS = 2
/** Partitions × records of each fault's topic: small (the faults are about connecting, not volume), over more than one partition. */
const PARTITIONS = 2
const PER_PARTITION = 500
/** A wrong-credential run must end within this (a retry loop would not). */
const FAIL_FAST_MS = 10_000
/** A bound on any one archiver run (a drain of 1 000 records takes ~2 s). */
const RUN_BOUND_MS = 90_000
/** How often the committed offsets are read while the right run works (the recovery time's resolution). */
const POLL_MS = 50

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface RunResult {
  readonly exit: number | null
  readonly output: string
  readonly millis: number
  /** When it started (epoch ms). */
  readonly startedAt: number
  /** Milliseconds from start to the first commit seen (`undefined`: none). */
  readonly firstCommitMillis: number | undefined
}

/**
 * Runs `AuthArchiver.ts` with `options` (written to a file of mode 600, as a
 * mounted secret), bounded; with `watch`, polls the committed record count
 * and notes when it first rises.
 */
const runArchiver = async (
  dir: string,
  label: string,
  options: ReturnType<typeof AuthServices.archiveOptions>,
  watch?: () => Promise<number>
): Promise<RunResult> => {
  const file = join(dir, `${label}.json`)
  writeFileSync(file, JSON.stringify(options), { mode: 0o600 })
  const started = Date.now()
  const child = spawn(process.execPath, ["--conditions=@sluice/source", join(import.meta.dirname, "AuthArchiver.ts"), file], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const killer = setTimeout(() => child.kill("SIGKILL"), RUN_BOUND_MS)
  let firstCommitMillis: number | undefined
  if (watch !== undefined) {
    const before = await watch()
    while (child.exitCode === null && child.signalCode === null && firstCommitMillis === undefined) {
      if ((await watch().catch(() => before)) > before) firstCommitMillis = Date.now() - started
      else await sleep(POLL_MS)
    }
  }
  const exit = await exited
  clearTimeout(killer)
  if (watch !== undefined && firstCommitMillis === undefined && (await watch()) > 0) firstCommitMillis = Date.now() - started
  return { exit, output, millis: Date.now() - started, startedAt: started, firstCommitMillis }
}

/** The secrets of `env` found in `text`, named. */
const leaks = (env: AuthServices.AuthEnv, text: string): Array<string> => {
  const secrets = [
    ["SASL password", env.kafka.password],
    ["S3 secret key", env.s3.secretAccessKey],
    ...env.kafka.clientKey.split("\n").filter((l) => l.length >= 16 && !l.startsWith("-----")).map((l) => ["TLS private key", l] as const)
  ] as const
  return [...new Set(secrets.filter(([, secret]) => text.includes(secret)).map(([what]) => what))]
}

interface FaultSpec {
  readonly name: string
  /** The options of a wrong-credential run. */
  readonly wrong: (topic: string, bucket: string, run: number) => ReturnType<typeof AuthServices.archiveOptions>
  /** What a wrong run's output must say. */
  readonly says: RegExp
  /** Failed logins the broker logs per wrong run. */
  readonly loginsPerRun: number
}

const runFault = async (env: AuthServices.AuthEnv, dir: string, spec: FaultSpec): Promise<FaultRow> => {
  const id = `${spec.name}-${process.pid}-${Date.now().toString(36)}`
  const topic = `sluice-fault-${id}`
  const bucket = `fault-${id}`.toLowerCase().slice(0, 63)
  const group = `${topic}-archiver`
  const records = await AuthServices.fillTopic(env, topic, PARTITIONS, PER_PARTITION)
  await AuthServices.createBucket(env, bucket)
  const committedRecords = async () =>
    (await AuthServices.committedOffsets(env, group, topic, PARTITIONS)).reduce((sum, o) => sum + Math.max(0, o), 0)

  const problems: Array<string> = []
  const outputs: Array<string> = []
  let injected = 0
  let faultEnd = Date.now()
  for (let run = 0; run < WRONG_RUNS; run++) {
    // Counted under the lock every wrong login at the broker is made under (tests run in parallel).
    const { result, logins } = await AuthServices.countingLogins(env, async () => {
      const result = await runArchiver(dir, `${spec.name}-wrong-${run}`, spec.wrong(topic, bucket, run))
      await sleep(300) // the broker writes its log line just after answering
      return result
    })
    faultEnd = Date.now()
    injected++
    outputs.push(result.output)
    if (result.exit !== 1) problems.push(`wrong run ${run + 1} exited ${String(result.exit)}, not 1`)
    if (result.millis > FAIL_FAST_MS) problems.push(`wrong run ${run + 1} took ${result.millis} ms (> ${FAIL_FAST_MS})`)
    if (!spec.says.test(result.output)) problems.push(`wrong run ${run + 1} did not say ${spec.says.source}`)
    if (logins !== spec.loginsPerRun) problems.push(`wrong run ${run + 1}: ${logins} failed logins in the broker's log, not ${spec.loginsPerRun}`)
  }
  const committedAfterFaults = await committedRecords()
  if (committedAfterFaults !== 0) problems.push(`${committedAfterFaults} records committed by the wrong runs`)
  const afterFaults = AuthServices.audit(env, bucket, [])
  if (afterFaults.records !== 0) problems.push(`${afterFaults.records} records stored by the wrong runs`)

  const right = await runArchiver(dir, `${spec.name}-right`, AuthServices.archiveOptions(env, topic, bucket), committedRecords)
  outputs.push(right.output)
  if (right.exit !== 0) problems.push(`the right run exited ${String(right.exit)}: ${right.output.trim().slice(-300)}`)
  const committed = await AuthServices.committedOffsets(env, group, topic, PARTITIONS)
  if (committed.some((o) => o !== PER_PARTITION)) problems.push(`committed ${committed.join(",")}, not ${PER_PARTITION} per partition`)
  const report = AuthServices.audit(env, bucket, committed.map((o, p) => `${topic}:${p}=${o}`))
  if (!report.ok) problems.push(`audit not clean (${report.summary})`)
  const leaked = leaks(env, outputs.join("\n"))
  if (leaked.length > 0) problems.push(`secrets in the output: ${leaked.join(", ")}`)

  const found = Math.min(report.records, records)
  const firstCommitAt = right.firstCommitMillis === undefined ? undefined : right.startedAt + right.firstCommitMillis
  return {
    name: spec.name,
    injected,
    records,
    found,
    lost: records - found,
    duplicates: report.duplicates,
    recoverySeconds: firstCommitAt === undefined ? null : Math.round((firstCommitAt - faultEnd) / 10) / 100,
    exit: right.exit,
    ok: problems.length === 0,
    detail: problems.length === 0
      ? `${injected} wrong runs failed fast (${spec.says.source}), ${spec.loginsPerRun} failed login each in the broker's log, nothing stored or committed; the right run archived ${found}/${records}, audit clean, no secret in any output`
      : problems.join("; ")
  }
}

/**
 * Runs the two auth faults (`sasl-scram`, `tls-private-ca`) and returns their
 * rows; starts the services it needs unless they run, and stops those it
 * started unless `leaveServices` (a vitest run: other test files may be using
 * them, and the run's teardown stops them).
 *
 * **Example**
 *
 * ```ts
 * import { runAuthFaults } from "./Auth.ts"
 *
 * const rows = await runAuthFaults()
 * console.log(rows.every((r) => r.ok) ? "auth faults: ok" : JSON.stringify(rows))
 * ```
 */
export const runAuthFaults = async (options: { readonly leaveServices?: boolean } = {}): Promise<ReadonlyArray<FaultRow>> => {
  const services = AuthServices.start()
  const dir = mkdtempSync(join(tmpdir(), "sluice-auth-faults-"))
  try {
    const env = services.env
    return [
      await runFault(env, dir, {
        name: "sasl-scram",
        wrong: (topic, bucket, run) => AuthServices.archiveOptions(env, topic, bucket, { password: `${env.kafka.password}-wrong-${run}` }),
        says: /SaslAuthenticationFailed[\s\S]*SCRAM-SHA-512/,
        loginsPerRun: 1
      }),
      await runFault(env, dir, {
        name: "tls-private-ca",
        wrong: (topic, bucket) => AuthServices.archiveOptions(env, topic, bucket, { s3Ca: false }),
        says: /certificate is not trusted/,
        loginsPerRun: 0
      })
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
    if (options.leaveServices !== true) services.stop()
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, "/"))
if (isMain) {
  runAuthFaults().then(
    (rows) => {
      console.log(JSON.stringify(rows, null, 2))
      process.exitCode = rows.every((r) => r.ok) ? 0 : 1
    },
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
