/**
 * SASL_SSL with SCRAM-SHA-512 on a real broker (`scripts/kafka-sasl.sh`,
 * started on demand: the SCRAM user is made by Kafka's own `kafka-storage
 * format --add-scram`). The right credentials archive a topic through the core
 * pipeline; a wrong password fails at connect, within seconds, with a
 * `SourceError` carrying `SaslAuthentication.SaslAuthenticationFailed` (the
 * mechanism and the user named), after exactly one authentication attempt as
 * the broker's own log counts them.
 */
import { Admin, Producer } from "@platformatic/kafka"
import { Fixed, Memory, Pipeline, Source } from "@sluice/core"
import { Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import { beforeAll, describe, expect, it } from "vitest"
import * as LazyService from "../../../scripts/lib/LazyService.ts"
import * as KafkaSource from "../src/KafkaSource.ts"
import * as SaslAuthentication from "../src/SaslAuthentication.ts"

/** The SASL broker's endpoints and credentials (`.services/kafka-sasl.env`). */
let env: Readonly<Record<string, string>> = {}
const need = (name: string): string => {
  const value = env[name]
  if (value === undefined || value === "") throw new Error(`${name} missing from .services/kafka-sasl.env`)
  return value
}

beforeAll(() => {
  env = LazyService.up("kafka-sasl")
})

const tls = () => ({ ca: readFileSync(need("SLUICE_KAFKA_SASL_CA"), "utf8") })
const sasl = (password: string) => ({ mechanism: "SCRAM-SHA-512" as const, username: need("SLUICE_KAFKA_SASL_USERNAME"), password })
const clientOptions = (password: string) => ({
  bootstrapBrokers: [need("SLUICE_KAFKA_SASL_BROKERS")],
  tls: tls(),
  sasl: sasl(password),
  retries: 1
})

/** The lock every wrong login at the SASL broker is made under (so the counts are each test's own). */
const LOGIN_COUNT_LOCK = LazyService.LOGIN_COUNT_LOCK

/** Failed authentications the broker logged so far. */
const failedLogins = (): number =>
  readFileSync(need("SLUICE_KAFKA_SASL_LOG"), "utf8").split("\n").filter((l) => l.includes("Failed authentication with")).length

/** A fresh topic of `partitions` × `perPartition` records, made and filled over SASL_SSL with the right password. */
const filledTopic = async (label: string, partitions: number, perPartition: number): Promise<string> => {
  const topic = `sluice-sasl-${label}-${process.pid}-${Date.now().toString(36)}`
  const admin = new Admin({ clientId: "sluice-sasl-admin", ...clientOptions(need("SLUICE_KAFKA_SASL_PASSWORD")) })
  const producer = new Producer({ clientId: "sluice-sasl-producer", idempotent: true, ...clientOptions(need("SLUICE_KAFKA_SASL_PASSWORD")) })
  try {
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
    const messages = []
    for (let partition = 0; partition < partitions; partition++) {
      for (let i = 0; i < perPartition; i++) messages.push({ topic, partition, value: Buffer.from(`record ${partition}/${i}`) })
    }
    await producer.send({ messages })
  } finally {
    await producer.close().catch(() => undefined)
    await admin.close().catch(() => undefined)
  }
  return topic
}

describe("KafkaSource over SASL_SSL (SCRAM-SHA-512)", () => {
  it("with the right password, connects over TLS and archives every record, committing the ends", async () => {
    const topic = await filledTopic("ok", 2, 500)
    const source = KafkaSource.make({
      brokers: [need("SLUICE_KAFKA_SASL_BROKERS")],
      topic,
      mode: { kind: "assign", groupId: `${topic}-g` },
      until: "caught-up",
      tls: tls(),
      sasl: sasl(need("SLUICE_KAFKA_SASL_PASSWORD"))
    })
    const stats = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const kafka = yield* source
      const run = yield* Pipeline.run({ source: kafka, sink: Memory.sink(), policies: Fixed.layer({ concurrency: 4 }) })
      return { run, committed: new Map(kafka.committed) }
    })))
    expect(stats.run.recordsCommitted).toBe(1000)
    expect([...stats.committed.entries()].sort()).toEqual([[0, 500], [1, 500]])
  })

  it("with a wrong password, fails at connect within seconds, typed and naming the mechanism, after one attempt", () =>
    // Other test files log in wrongly too: count under the lock they take for it.
    LazyService.exclusive(LOGIN_COUNT_LOCK, async () => {
      const before = failedLogins()
      const started = Date.now()
      const exit = await Effect.runPromiseExit(Effect.scoped(KafkaSource.make({
        brokers: [need("SLUICE_KAFKA_SASL_BROKERS")],
        topic: "any-topic",
        mode: { kind: "assign" },
        tls: tls(),
        sasl: sasl("not-the-password")
      })).pipe(Effect.timeout("30 seconds")))
      const elapsed = Date.now() - started
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
      expect(error).toBeInstanceOf(Source.SourceError)
      const failed = error instanceof Source.SourceError ? SaslAuthentication.fromSourceError(error) : undefined
      expect(failed).toBeInstanceOf(SaslAuthentication.SaslAuthenticationFailed)
      expect(failed).toMatchObject({ mechanism: "SCRAM-SHA-512", username: need("SLUICE_KAFKA_SASL_USERNAME"), broker: need("SLUICE_KAFKA_SASL_BROKERS") })
      expect(error instanceof Source.SourceError ? error.message : "").toMatch(/SCRAM-SHA-512 authentication .*failed/)
      // Bounded: one TLS handshake and one SCRAM exchange, no retry with its 1 s delay.
      expect(elapsed).toBeLessThan(2_000)
      // Counted from outside the client: the broker logged one failed login, not four.
      await new Promise((resolve) => setTimeout(resolve, 300)) // the log line is written after the answer
      expect(failedLogins() - before).toBe(1)
    }))

  it.each([
    ["an unknown user", { mechanism: "SCRAM-SHA-512" as const, username: "nobody" }],
    ["a mechanism the broker does not enable", { mechanism: "SCRAM-SHA-256" as const, username: "" }]
  ])("with %s, fails at connect within seconds, typed, naming that mechanism and user", (_what, login) =>
    LazyService.exclusive(LOGIN_COUNT_LOCK, async () => {
      const username = login.username === "" ? need("SLUICE_KAFKA_SASL_USERNAME") : login.username
      const started = Date.now()
      const exit = await Effect.runPromiseExit(Effect.scoped(KafkaSource.make({
        brokers: [need("SLUICE_KAFKA_SASL_BROKERS")],
        topic: "any-topic",
        mode: { kind: "assign" },
        tls: tls(),
        sasl: { mechanism: login.mechanism, username, password: need("SLUICE_KAFKA_SASL_PASSWORD") }
      })).pipe(Effect.timeout("30 seconds")))
      expect(Date.now() - started).toBeLessThan(2_000)
      const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
      const failed = error instanceof Source.SourceError ? SaslAuthentication.fromSourceError(error) : undefined
      expect(failed).toMatchObject({ _tag: "SaslAuthenticationFailed", mechanism: login.mechanism, username })
    }))
})
