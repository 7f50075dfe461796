/**
 * The authenticated services of the auth faults and the secrets test, and what
 * they read from outside the archiver: the SASL_SSL Kafka broker
 * (`scripts/kafka-sasl.sh`, SCRAM-SHA-512) and the S3 server over HTTPS with a
 * private CA (`scripts/s3-tls.sh`), both started on demand
 * (`scripts/lib/LazyService.ts`); topics filled over SASL_SSL, buckets made and
 * audited over HTTPS, committed offsets read with the Kafka admin API, failed
 * logins counted in the broker's own log.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import * as Https from "node:https"
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { Admin, Producer } from "@platformatic/kafka"
import * as LazyService from "../../scripts/lib/LazyService.ts"
import type { ArchiveOptions } from "../src/KafkaToS3.ts"

/** The brokers, CA, SCRAM user and S3 endpoint the scripts wrote (`.services/kafka-sasl.env`, `.services/s3-tls.env`). */
export interface AuthEnv {
  readonly kafka: {
    readonly brokers: readonly [string, ...Array<string>]
    /** The CA the broker's certificate chains to (PEM text). */
    readonly ca: string
    /** Its file, for a child's `NODE_EXTRA_CA_CERTS`. */
    readonly caFile: string
    /** A client certificate and key the same CA signed (kafka-certs.sh): a TLS private key to keep secret. */
    readonly clientCert: string
    readonly clientKey: string
    readonly username: string
    readonly password: string
    /** The broker's log4j2 file: failed logins are counted there. */
    readonly log: string
  }
  readonly s3: {
    readonly endpoint: string
    readonly ca: string
    readonly caFile: string
    readonly region: string
    readonly accessKeyId: string
    readonly secretAccessKey: string
  }
}

const required = (vars: Readonly<Record<string, string>>, file: string, name: string): string => {
  const value = vars[name]
  if (value === undefined || value === "") throw new Error(`${name} is missing from .services/${file}.env`)
  return value
}

/**
 * Starts the SASL broker and the HTTPS S3 server unless they run, and reads
 * their endpoints. `stop` stops the ones this call started (a standalone run);
 * under vitest the run's teardown does it.
 */
export const start = (): { readonly env: AuthEnv; readonly stop: () => void } => {
  const started = LazyService.LAZY_SERVICES.filter((name) => !LazyService.isRunning(name))
  const kafka = LazyService.up("kafka-sasl")
  const s3 = LazyService.up("s3-tls")
  const k = (name: string) => required(kafka, "kafka-sasl", name)
  const s = (name: string) => required(s3, "s3-tls", name)
  const caFile = k("SLUICE_KAFKA_SASL_CA")
  const certs = caFile.replace(/\/ca\.pem$/, "")
  const [broker, ...more] = k("SLUICE_KAFKA_SASL_BROKERS").split(",")
  return {
    env: {
      kafka: {
        brokers: [broker ?? "", ...more],
        ca: readFileSync(caFile, "utf8"),
        caFile,
        clientCert: readFileSync(`${certs}/client.pem`, "utf8"),
        clientKey: readFileSync(`${certs}/client.key`, "utf8"),
        username: k("SLUICE_KAFKA_SASL_USERNAME"),
        password: k("SLUICE_KAFKA_SASL_PASSWORD"),
        log: k("SLUICE_KAFKA_SASL_LOG")
      },
      s3: {
        endpoint: s("SLUICE_S3_TLS_ENDPOINT"),
        ca: readFileSync(s("SLUICE_S3_TLS_CA"), "utf8"),
        caFile: s("SLUICE_S3_TLS_CA"),
        region: s("SLUICE_S3_TLS_REGION"),
        accessKeyId: s("SLUICE_S3_TLS_ACCESS_KEY"),
        secretAccessKey: s("SLUICE_S3_TLS_SECRET_KEY")
      }
    },
    stop: () => {
      for (const name of started.toReversed()) LazyService.down(name)
    }
  }
}

/** Kafka client options for the SASL listener, with `password` (the right one unless told). */
const kafkaClient = (env: AuthEnv, clientId: string) => ({
  clientId,
  bootstrapBrokers: [...env.kafka.brokers],
  tls: { ca: env.kafka.ca },
  sasl: { mechanism: "SCRAM-SHA-512" as const, username: env.kafka.username, password: env.kafka.password },
  retries: 1
})

/** Creates `topic` and fills it with `perPartition` records per partition, over SASL_SSL; returns the record count. */
export const fillTopic = async (env: AuthEnv, topic: string, partitions: number, perPartition: number): Promise<number> => {
  const admin = new Admin(kafkaClient(env, "sluice-auth-admin"))
  const producer = new Producer({ ...kafkaClient(env, "sluice-auth-producer"), idempotent: true })
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
    const messages = []
    for (let partition = 0; partition < partitions; partition++) {
      for (let i = 0; i < perPartition; i++) messages.push({ topic, partition, key: Buffer.from(`k${i}`), value: Buffer.from(`record ${partition}/${i}`) })
    }
    await producer.send({ messages })
  } finally {
    await producer.close().catch(() => undefined)
    await admin.close().catch(() => undefined)
  }
  return partitions * perPartition
}

/** The group's committed offsets of `topic`, by partition (-1: none), read with the admin API. */
export const committedOffsets = async (env: AuthEnv, group: string, topic: string, partitions: number): Promise<Array<number>> => {
  const admin = new Admin(kafkaClient(env, "sluice-auth-admin"))
  try {
    const offsets = new Array<number>(partitions).fill(-1)
    for (const g of await admin.listConsumerGroupOffsets({ groups: [group] })) {
      for (const t of g.topics) if (t.name === topic) for (const p of t.partitions) offsets[p.partitionIndex] = Number(p.committedOffset)
    }
    return offsets
  } finally {
    await admin.close().catch(() => undefined)
  }
}

/** Creates a bucket on the HTTPS server (a client trusting its CA). */
export const createBucket = async (env: AuthEnv, bucket: string): Promise<void> => {
  const client = new S3Client({
    endpoint: env.s3.endpoint,
    region: env.s3.region,
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey },
    requestHandler: { httpsAgent: new Https.Agent({ ca: env.s3.ca }) }
  })
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }))
  } finally {
    client.destroy()
  }
}

/** Failed logins the broker has logged ("Failed authentication with …", INFO, see scripts/kafka-sasl.sh). */
export const failedLogins = (env: AuthEnv): number =>
  readFileSync(env.kafka.log, "utf8").split("\n").filter((line) => line.includes("Failed authentication with")).length

/**
 * Runs `f` (which logs in wrongly at the SASL broker, or may) holding the
 * lock every such section holds, and returns its result with the failed
 * logins the broker logged meanwhile: test files running in parallel do not
 * count each other's.
 */
export const countingLogins = <A>(env: AuthEnv, f: () => Promise<A>): Promise<{ readonly result: A; readonly logins: number }> =>
  LazyService.exclusive(LazyService.LOGIN_COUNT_LOCK, async () => {
    const before = failedLogins(env)
    const result = await f()
    return { result, logins: failedLogins(env) - before }
  })

/** What `sluice audit --json` reports (the fields read here). */
export interface AuditReport {
  readonly ok: boolean
  readonly records: number
  readonly duplicates: number
  readonly exit: number | null
  readonly summary: string
}

/**
 * `npx sluice audit` over the bucket, from outside the archiver: its own
 * process, trusting the private CA through `NODE_EXTRA_CA_CERTS`, credentials
 * in its environment.
 */
export const audit = (env: AuthEnv, bucket: string, committed: ReadonlyArray<string>): AuditReport => {
  const args = ["sluice", "audit", "--bucket", bucket, "--endpoint", env.s3.endpoint, "--region", env.s3.region, "--json"]
  if (committed.length > 0) args.push("--committed", committed.join(","))
  const run = spawnSync("npx", args, {
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: env.s3.caFile, SLUICE_S3_ACCESS_KEY: env.s3.accessKeyId, SLUICE_S3_SECRET_KEY: env.s3.secretAccessKey }
  })
  const last = (run.stdout ?? "").trim().split("\n").pop() ?? ""
  let report: { ok?: unknown; records?: unknown; duplicates?: unknown } = {}
  try {
    report = JSON.parse(last) as typeof report
  } catch {
    report = {}
  }
  return {
    ok: report.ok === true,
    records: typeof report.records === "number" ? report.records : 0,
    duplicates: typeof report.duplicates === "number" ? report.duplicates : 0,
    exit: run.status,
    summary: report.ok === undefined ? `no JSON report (exit ${run.status}): ${(run.stderr ?? "").trim().slice(-300)}` : `audit exit ${run.status}`
  }
}

/** The archiver's options for `topic` → `bucket` over both authenticated services, with the right secrets unless `change` says otherwise. */
export const archiveOptions = (
  env: AuthEnv,
  topic: string,
  bucket: string,
  change: {
    readonly password?: string
    readonly secretAccessKey?: string
    /** `false`: leave the S3 CA out (Node's trust store only). */
    readonly s3Ca?: boolean
    /** The consumer group (default `<topic>-archiver`); a fresh one reads the topic again from its start. */
    readonly groupId?: string
  } = {}
): Omit<ArchiveOptions, "follow" | "meterProvider"> => ({
  brokers: env.kafka.brokers,
  topic,
  groupId: change.groupId ?? `${topic}-archiver`,
  tls: { ca: env.kafka.ca, cert: env.kafka.clientCert, key: env.kafka.clientKey },
  sasl: { mechanism: "SCRAM-SHA-512", username: env.kafka.username, password: change.password ?? env.kafka.password },
  s3: {
    bucket,
    endpoint: env.s3.endpoint,
    region: env.s3.region,
    accessKeyId: env.s3.accessKeyId,
    secretAccessKey: change.secretAccessKey ?? env.s3.secretAccessKey,
    ...(change.s3Ca === false ? {} : { tls: { ca: env.s3.ca } })
  }
})
