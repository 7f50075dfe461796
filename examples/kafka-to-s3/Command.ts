/**
 * The archiver's command (`main.ts` loads it once Node's compile cache is on):
 * its flags, its settings, and the run with metrics on a Prometheus endpoint
 * and a graceful drain on SIGTERM / SIGINT. See README.md beside this file.
 *
 * Exit codes: 0 drained cleanly, 1 the run failed (or the drain timed out),
 * 2 bad usage or settings. The last stdout line is one JSON object:
 * `{ reason, recordsRead, recordsVerified, recordsCommitted, recordsLeftOnRevoke, batchesVerified, metrics }`.
 * Each rebalance that leaves records stored and not committed prints one
 * stderr line: `kafka-to-s3: left on revoke: partition P, N records at offsets
 * a-b[,c-d…] (…)`.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import { onSignal, s3FromEnv } from "../src/KafkaToS3.ts"
import * as Archiver from "./Archiver.ts"
import * as KillHook from "./KillHook.ts"
import * as Prometheus from "./Prometheus.ts"
import * as Settings from "./Settings.ts"

const USAGE = `usage: node --conditions=@sluice/source examples/kafka-to-s3/main.ts <topic> <bucket> [options]

  --config FILE             knobs: pipeline + policy config (default: archiver.json beside main.ts)
  --prometheus-host HOST    address of the metrics endpoint (default 127.0.0.1)
  --prometheus-port PORT    its port (default 9464; 0 = any free port)
  --name NAME               sluice.pipeline label (default <topic>-archiver)
  --group ID                consumer group (default <topic>-archiver)
  --instance-id ID          static group membership: this instance's id, the same across its restarts (default: none)
  --until-committed N       drain and exit once N records are committed
  --max-seconds S           drain and exit after S seconds
  --drain-seconds S         drain deadline (default 30)
  --progress-seconds S      a progress line on stderr every S seconds (default 5; 0 = none)
  --linger-seconds S        keep serving /metrics S seconds after the drain (default 0)
  --print-metrics           after the drain, scrape the endpoint once and print its sluice_ series (stderr)
  --tls-ca FILE             connect to the brokers over TLS, trusting this CA (PEM)
  --tls-cert FILE           with --tls-key: a client certificate (PEM) for mTLS
  --tls-key FILE            its private key (PEM)

environment: SLUICE_KAFKA_BROKERS, SLUICE_S3_ENDPOINT, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY [, SLUICE_S3_REGION]
test only: SLUICE_TEST_KILL_AT=<gap>[:<n>] SIGKILLs the process at a gap (KillHook.ts; npm run faults)`

/** A usage error: exit 2. */
class Usage extends Error {}

const number = (flag: string, text: string | undefined, fallback?: number): number | undefined => {
  if (text === undefined) return fallback
  const n = Number(text)
  if (text.trim() === "" || !Number.isFinite(n) || n < 0) throw new Usage(`${flag}: expected a number ≥ 0, got ${JSON.stringify(text)}`)
  return n
}

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value.trim() === "") {
    throw new Usage(`${name} is not set: start the services (\`bash scripts/services.sh up\`) and source .services/*.env, or run \`npm run example:kafka-to-s3\``)
  }
  return value.trim()
}

const parse = () => {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      config: { type: "string" },
      "prometheus-host": { type: "string" },
      "prometheus-port": { type: "string" },
      name: { type: "string" },
      group: { type: "string" },
      "instance-id": { type: "string" },
      "until-committed": { type: "string" },
      "max-seconds": { type: "string" },
      "drain-seconds": { type: "string" },
      "progress-seconds": { type: "string" },
      "linger-seconds": { type: "string" },
      "print-metrics": { type: "boolean" },
      "tls-ca": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      help: { type: "boolean", short: "h" }
    }
  })
  if (values.help === true) return undefined
  const [topic, bucket, ...extra] = positionals
  if (topic === undefined || bucket === undefined || extra.length > 0) throw new Usage("expected <topic> <bucket>")
  const port = number("--prometheus-port", values["prometheus-port"], Prometheus.DEFAULT_PORT) ?? Prometheus.DEFAULT_PORT
  if (!Number.isInteger(port) || port > 65535) throw new Usage(`--prometheus-port: expected a port, got ${port}`)
  const [broker, ...moreBrokers] = env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim())
  const pem = (flag: string, file: string | undefined): string | undefined => {
    if (file === undefined) return undefined
    try {
      return readFileSync(file, "utf8")
    } catch (error) {
      throw new Usage(`${flag}: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  const [ca, cert, key] = [pem("--tls-ca", values["tls-ca"]), pem("--tls-cert", values["tls-cert"]), pem("--tls-key", values["tls-key"])]
  if ((cert === undefined) !== (key === undefined)) throw new Usage("--tls-cert and --tls-key go together")
  const tls = ca === undefined && cert === undefined
    ? undefined
    : { ...(ca === undefined ? {} : { ca }), ...(cert === undefined || key === undefined ? {} : { cert, key }) }
  let killAt: KillHook.KillAt | undefined
  try {
    killAt = KillHook.parse(process.env[KillHook.ENV])
  } catch (error) {
    throw new Usage(error instanceof Error ? error.message : String(error))
  }
  return {
    killAt,
    tls,
    topic,
    bucket,
    configFile: values.config ?? join(dirname(fileURLToPath(import.meta.url)), "archiver.json"),
    prometheus: { host: values["prometheus-host"] ?? "127.0.0.1", port },
    name: values.name ?? `${topic}-archiver`,
    groupId: values.group ?? `${topic}-archiver`,
    instanceId: values["instance-id"],
    untilCommitted: number("--until-committed", values["until-committed"]),
    maxSeconds: number("--max-seconds", values["max-seconds"]),
    drainSeconds: number("--drain-seconds", values["drain-seconds"], 30) ?? 30,
    progressSeconds: number("--progress-seconds", values["progress-seconds"], 5) ?? 5,
    lingerSeconds: number("--linger-seconds", values["linger-seconds"], 0) ?? 0,
    printMetrics: values["print-metrics"] === true,
    brokers: [broker ?? "", ...moreBrokers] as [string, ...Array<string>],
    s3: s3FromEnv(bucket, env)
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const main = (args: NonNullable<ReturnType<typeof parse>>) =>
  Effect.scoped(Effect.gen(function*() {
    const settings = yield* Settings.load(args.configFile)
    const endpoint = yield* Prometheus.make(args.prometheus)
    console.error(`kafka-to-s3: metrics at ${endpoint.url}`)
    console.error(
      `kafka-to-s3: ${args.topic} → s3://${args.bucket} (pipeline ${args.name}, group ${args.groupId}, memory budget ${mib(settings.pipeline.memoryBudget)}, ` +
        // The adaptive batch policy sets the batch target (policies.batch), not pipeline.batch: its bounds are what holds.
        `objects of ≤ ${settings.policies.batch.records} records, ${mib(settings.policies.batch.minBytes)}–${mib(settings.policies.batch.maxObjectBytes)} ` +
        `(from ${mib(settings.policies.batch.initialBytes)}), sealed within ${(settings.policies.batch.maxAgeMillis > 0 ? settings.policies.batch.maxAgeMillis : settings.pipeline.batch.maxAge) / 1000} s)`
    )
    let reason: Archiver.StopReason | "ended" = "ended"
    const started = Date.now()
    const stats = yield* Archiver.run({
      brokers: args.brokers,
      topic: args.topic,
      groupId: args.groupId,
      group: { ...settings.group, ...(args.instanceId === undefined ? {} : { instanceId: args.instanceId }) },
      s3: args.s3,
      name: args.name,
      settings,
      meterProvider: endpoint.meterProvider,
      tls: args.tls,
      wrapSink: args.killAt === undefined ? undefined : KillHook.wrap(args.killAt),
      stop: onSignal,
      maxDuration: args.maxSeconds === undefined ? undefined : `${args.maxSeconds} seconds`,
      untilCommitted: args.untilCommitted,
      drainDeadline: `${args.drainSeconds} seconds`,
      progressEvery: `${Math.max(args.progressSeconds, 0.1)} seconds`,
      onProgress: args.progressSeconds === 0 ? undefined : (s) =>
        console.error(
          `kafka-to-s3: ${((Date.now() - started) / 1000).toFixed(0)} s: read ${s.recordsRead}, verified ${s.recordsVerified}, committed ${s.recordsCommitted}, ` +
            `uploading ${s.uploading}, held ${mib(s.inflightBytes)}, oldest uncommitted ${(s.oldestUncommittedAgeMillis / 1000).toFixed(1)} s, throttles ${s.throttles}, retries ${s.retries}`
        ),
      onLeftOnRevoke: (s) =>
        console.error(
          `kafka-to-s3: left on revoke: partition ${s.partition}, ${s.records} records at offsets ${s.ranges.map((r) => `${r.firstOffset}-${r.lastOffset}`).join(",")} ` +
            `(stored, not committed: the partition's next owner archives them again)`
        ),
      onStop: (r) => {
        reason = r
        if (r !== "signal") console.error(`kafka-to-s3: ${r === "committed" ? `${args.untilCommitted} records committed` : `${args.maxSeconds} s elapsed`}: draining …`)
      }
    })
    console.error(`kafka-to-s3: drained: ${stats.recordsCommitted} records committed in ${stats.batchesVerified} objects`)
    if (args.printMetrics) {
      // What Prometheus would scrape now: every sluice_ series but the histogram buckets.
      const text = yield* Prometheus.scrape(endpoint.url)
      const lines = text.split("\n").filter((l) => l.startsWith("sluice_") && !l.includes("_bucket{"))
      console.error(`kafka-to-s3: GET ${endpoint.url} (sluice_ series, buckets left out):\n${lines.join("\n")}`)
    }
    if (args.lingerSeconds > 0) {
      console.error(`kafka-to-s3: serving ${endpoint.url} for ${args.lingerSeconds} s more (the last scrape)`)
      yield* Effect.sleep(`${args.lingerSeconds} seconds`)
    }
    return {
      reason,
      recordsRead: stats.recordsRead,
      recordsVerified: stats.recordsVerified,
      recordsCommitted: stats.recordsCommitted,
      recordsLeftOnRevoke: stats.recordsLeftOnRevoke,
      batchesVerified: stats.batchesVerified,
      metrics: endpoint.url
    }
  }))

let args: ReturnType<typeof parse>
try {
  args = parse()
} catch (error) {
  console.error(`kafka-to-s3: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`)
  process.exit(2)
}
if (args === undefined) {
  console.log(USAGE)
} else {
  Effect.runPromiseExit(main(args)).then((exit) => {
    if (exit._tag === "Success") {
      console.log(JSON.stringify(exit.value))
      return
    }
    const error = exit.cause.reasons.find((r) => r._tag === "Fail")
    const failure = error?._tag === "Fail" ? error.error : undefined
    const tag = typeof failure === "object" && failure !== null && "_tag" in failure ? String(failure._tag) : undefined
    const hint = tag === "ListenFailed" ? " (another --prometheus-port, or 0 for any free port)" : ""
    console.error(`kafka-to-s3: failed: ${failure === undefined ? String(exit.cause) : (failure instanceof Error ? failure.message : String(failure))}${hint}`)
    process.exitCode = tag === "ConfigError" ? 2 : 1
  })
}
