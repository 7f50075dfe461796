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
import { Effect, Option } from "effect"
import { Argument, Flag } from "effect/cli"
import type { Command } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { onSignal, s3FromEnv } from "../src/KafkaToS3.ts"
import * as Archiver from "./Archiver.ts"
import * as KillHook from "./KillHook.ts"
import * as Prometheus from "./Prometheus.ts"
import * as Settings from "./Settings.ts"

/** A flag of seconds (or records): any number ≥ 0, checked after reading. */
const amount = (name: string, metavar: string, description: string) =>
  Flag.Finite(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description))

/** A flag naming a PEM file, read after the line is. */
const pem = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar("FILE"), Flag.withDescription(description), Flag.optional)

/**
 * The command line: `<topic> <bucket>` and the flags, as `effect/cli`
 * definitions (the help and the completions are generated from them).
 */
const config = {
  topic: Argument.String("topic").pipe(Argument.withDescription("the Kafka topic to archive")),
  bucket: Argument.String("bucket").pipe(Argument.withDescription("the S3 bucket to archive it into")),
  config: Flag.String("config").pipe(
    Flag.withMetavar("FILE"),
    Flag.withDescription("knobs: pipeline + policy config (default: archiver.json beside main.ts)"),
    Flag.withDefault(join(dirname(fileURLToPath(import.meta.url)), "archiver.json"))
  ),
  prometheusHost: Flag.String("prometheus-host").pipe(
    Flag.withMetavar("HOST"),
    Flag.withDescription("address of the metrics endpoint (default 127.0.0.1)"),
    Flag.withDefault("127.0.0.1")
  ),
  prometheusPort: Flag.Int("prometheus-port").pipe(
    Flag.withMetavar("PORT"),
    Flag.withDescription(`its port (default ${Prometheus.DEFAULT_PORT}; 0 = any free port)`),
    Flag.withDefault(Prometheus.DEFAULT_PORT)
  ),
  name: Flag.String("name").pipe(Flag.withMetavar("NAME"), Flag.withDescription("sluice.pipeline label (default <topic>-archiver)"), Flag.optional),
  group: Flag.String("group").pipe(Flag.withMetavar("ID"), Flag.withDescription("consumer group (default <topic>-archiver)"), Flag.optional),
  instanceId: Flag.String("instance-id").pipe(
    Flag.withMetavar("ID"),
    Flag.withDescription("static group membership: this instance's id, the same across its restarts (default: none)"),
    Flag.optional
  ),
  groupProtocol: Flag.Literals("group-protocol", ["classic", "consumer"]).pipe(
    Flag.withDescription("the consumer group protocol: classic, or consumer (KIP-848) (default: the settings file's group.protocol, else classic)"),
    Flag.optional
  ),
  untilCommitted: amount("until-committed", "N", "drain and exit once N records are committed").pipe(Flag.optional),
  maxSeconds: amount("max-seconds", "S", "drain and exit after S seconds").pipe(Flag.optional),
  drainSeconds: amount("drain-seconds", "S", "drain deadline (default 30)").pipe(Flag.withDefault(30)),
  progressSeconds: amount("progress-seconds", "S", "a progress line on stderr every S seconds (default 5; 0 = none)").pipe(Flag.withDefault(5)),
  lingerSeconds: amount("linger-seconds", "S", "keep serving /metrics S seconds after the drain (default 0)").pipe(Flag.withDefault(0)),
  printMetrics: CommandLine.switchFlag("print-metrics", "after the drain, scrape the endpoint once and print its sluice_ series (stderr)"),
  tlsCa: pem("tls-ca", "connect to the brokers over TLS, trusting this CA (PEM)"),
  tlsCert: pem("tls-cert", "with --tls-key: a client certificate (PEM) for mTLS"),
  tlsKey: pem("tls-key", "its private key (PEM)")
}

// The effect/cli definition read by `CommandLine.script`: it keeps this command's exit codes
// (2 for a usage error) and needs no platform layer, where `Command.run` would.
const command = CommandLine.script(
  "kafka-to-s3",
  config,
  "A Kafka topic into an S3 bucket with the default policies, metrics on a Prometheus endpoint, a graceful drain on SIGTERM / SIGINT. " +
    "Exit 0 drained cleanly, 1 the run failed, 2 bad usage or settings.\n\n" +
    "  environment: SLUICE_KAFKA_BROKERS, SLUICE_S3_ENDPOINT, SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY [, SLUICE_S3_REGION]\n" +
    `  test only: ${KillHook.ENV}=<gap>[:<n>] SIGKILLs the process at a gap (KillHook.ts; npm run faults)`,
  { invocation: "node --conditions=@sluice/source examples/kafka-to-s3/main.ts" }
)

/** A usage error: exit 2. */
class Usage extends Error {}

/** `n` when it is absent or ≥ 0; throws {@link Usage} otherwise. */
const atLeastZero = <N extends number | undefined>(flag: string, n: N): N => {
  if (n !== undefined && n < 0) throw new Usage(`${flag}: expected a number ≥ 0, got ${JSON.stringify(String(n))}`)
  return n
}

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value.trim() === "") {
    throw new Usage(`${name} is not set: start the services (\`bash scripts/services.sh up\`) and source .services/*.env, or run \`npm run example:kafka-to-s3\``)
  }
  return value.trim()
}

const readPem = (flag: string, file: Option.Option<string>): string | undefined => {
  if (Option.isNone(file)) return undefined
  try {
    return readFileSync(file.value, "utf8")
  } catch (error) {
    throw new Usage(`${flag}: cannot read ${file.value}: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** What the run needs, from the flags `effect/cli` read and the environment; throws {@link Usage}. */
const argsOf = (flags: Command.Command.Config.Infer<typeof config>) => {
  const { topic, bucket } = flags
  const port = atLeastZero("--prometheus-port", flags.prometheusPort)
  if (port > 65535) throw new Usage(`--prometheus-port: expected a port, got ${port}`)
  const [broker, ...moreBrokers] = env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim())
  const [ca, cert, key] = [readPem("--tls-ca", flags.tlsCa), readPem("--tls-cert", flags.tlsCert), readPem("--tls-key", flags.tlsKey)]
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
    configFile: flags.config,
    prometheus: { host: flags.prometheusHost, port },
    name: Option.getOrElse(flags.name, () => `${topic}-archiver`),
    groupId: Option.getOrElse(flags.group, () => `${topic}-archiver`),
    instanceId: Option.getOrUndefined(flags.instanceId),
    groupProtocol: Option.getOrUndefined(flags.groupProtocol),
    untilCommitted: atLeastZero("--until-committed", Option.getOrUndefined(flags.untilCommitted)),
    maxSeconds: atLeastZero("--max-seconds", Option.getOrUndefined(flags.maxSeconds)),
    drainSeconds: atLeastZero("--drain-seconds", flags.drainSeconds),
    progressSeconds: atLeastZero("--progress-seconds", flags.progressSeconds),
    lingerSeconds: atLeastZero("--linger-seconds", flags.lingerSeconds),
    printMetrics: flags.printMetrics,
    brokers: [broker ?? "", ...moreBrokers] as [string, ...Array<string>],
    s3: s3FromEnv(bucket, env)
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const main = (args: ReturnType<typeof argsOf>) =>
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
      group: {
        ...settings.group,
        ...(args.instanceId === undefined ? {} : { instanceId: args.instanceId }),
        ...(args.groupProtocol === undefined ? {} : { protocol: args.groupProtocol })
      },
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

/** The line read, its flags made into what the run needs by `argsOf` above (a {@link Usage} it throws refuses the line). */
const line = ((): CommandLine.ScriptLine<ReturnType<typeof argsOf>> => {
  const line = command.read(process.argv.slice(2))
  if (line._tag !== "Run") return line
  try {
    return { _tag: "Run", flags: argsOf(line.flags) }
  } catch (error) {
    if (!(error instanceof Usage)) throw error
    return { _tag: "Invalid", message: `kafka-to-s3: ${error.message}` }
  }
})()
const args = CommandLine.settle(line, command.help)
if (args !== undefined) {
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
