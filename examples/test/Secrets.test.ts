/**
 * No secret in any output channel. The archiver (`archiveTopic`) runs against
 * the SASL_SSL broker (SCRAM-SHA-512) and the S3 server over HTTPS with a
 * private CA, with distinctive secrets: the SASL password and the S3 secret
 * key (random at every start of the services) and a TLS private key (the
 * Kafka client key, PEM). It runs once right, then with each credential wrong
 * (a wrong password, a wrong S3 secret, the S3 CA left out), and every channel
 * is searched for each secret: in process, the errors (message, `String`,
 * `util.inspect` of every nested cause, JSON), every span (name, attributes,
 * status with its exit), every metric point (attributes and values, the
 * resource) and every log line down to Debug (message, annotations, cause);
 * as a child process (`faults/AuthArchiver.ts`), its stdout and stderr.
 */
import { spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inspect } from "node:util"
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { Effect, Exit, Logger, References, Tracer } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import * as AuthServices from "../faults/AuthServices.ts"
import { archiveTopic } from "../src/KafkaToS3.ts"

let env: AuthServices.AuthEnv | undefined
beforeAll(() => {
  env = AuthServices.start().env
})
const services = (): AuthServices.AuthEnv => {
  if (env === undefined) throw new Error("the auth services did not start (see beforeAll)")
  return env
}

/**
 * The wrong credentials of the failing runs: secrets too (a mistyped password
 * is often one character from the right one, or another environment's), and
 * distinctive, so a leak of either is found.
 */
const WRONG_PASSWORD = `wrong-pw-${randomUUID()}`
const WRONG_SECRET = `wrong-s3-${randomUUID()}`

/** Each secret and what to search for: the text itself; for a PEM key, every line of its base64 body. */
const secretsOf = (e: AuthServices.AuthEnv): ReadonlyArray<{ readonly what: string; readonly text: string }> => [
  { what: "SASL password", text: e.kafka.password },
  { what: "S3 secret key", text: e.s3.secretAccessKey },
  { what: "wrong SASL password", text: WRONG_PASSWORD },
  { what: "wrong S3 secret key", text: WRONG_SECRET },
  ...e.kafka.clientKey.split("\n").filter((l) => l.length >= 16 && !l.startsWith("-----")).map((text, i) => ({ what: `TLS private key line ${i + 1}`, text }))
]

/** The secrets found in `text`, named (an empty list: nothing leaked). */
const leaksIn = (channel: string, text: string): Array<string> =>
  secretsOf(services()).filter((s) => text.includes(s.text)).map((s) => `${s.what} in ${channel}`)

/** Every rendering of a value an output channel could print: inspect (all depths, hidden fields), String, JSON. */
const renderings = (value: unknown): string => {
  let json = ""
  try {
    json = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? ""
  } catch (error) {
    json = `unserialisable: ${String(error)}`
  }
  return [inspect(value, { depth: Infinity, showHidden: true }), String(value), json].join("\n")
}

let seq = 0
const fresh = async (label: string) => {
  const id = `${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`
  const topic = `sluice-secrets-${id}`
  const bucket = `secrets-${id}`.toLowerCase().slice(0, 63)
  const records = await AuthServices.fillTopic(services(), topic, 2, 200)
  await AuthServices.createBucket(services(), bucket)
  return { topic, bucket, records }
}

describe("no secret in any output channel", () => {
  it("in process: errors, spans, metric points and log lines of a right run and three wrong-credential runs", async () => {
    const e = services()
    const spans: Array<Tracer.Span> = []
    const lines: Array<string> = []
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const logger = Logger.make((options) => {
      lines.push(renderings({
        message: options.message,
        level: options.logLevel,
        annotations: options.fiber.getRef(References.CurrentLogAnnotations),
        cause: options.cause
      }))
    })
    const observed = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const base = yield* Tracer.Tracer
        const tracer = Tracer.make({
          span(options) {
            const span = base.span(options)
            spans.push(span)
            return span
          }
        })
        // A line of the test's own, so the capture is known to work when the run logs nothing else
        // (these runs log only on retries and held partitions, which a Fatal failure never reaches).
        return yield* Effect.andThen(Effect.logDebug("secrets-test: run starts"), effect).pipe(
          Effect.withTracer(tracer),
          Effect.provide(Logger.layer([logger])),
          Effect.provideService(References.MinimumLogLevel, "Debug"),
          Effect.timeout("60 seconds")
        )
      })

    const { topic, bucket, records } = await fresh("inproc")
    const ok = await Effect.runPromiseExit(observed(archiveTopic({ ...AuthServices.archiveOptions(e, topic, bucket), meterProvider })))
    expect(Exit.isSuccess(ok) ? ok.value.recordsCommitted : ok).toBe(records)

    const wrong = {
      password: AuthServices.archiveOptions(e, topic, bucket, { password: WRONG_PASSWORD, groupId: `${topic}-wrong-password` }),
      s3Secret: AuthServices.archiveOptions(e, topic, bucket, { secretAccessKey: WRONG_SECRET, groupId: `${topic}-wrong-secret` }),
      s3Ca: AuthServices.archiveOptions(e, topic, bucket, { s3Ca: false, groupId: `${topic}-no-ca` })
    }
    const failures: Array<[string, unknown]> = []
    for (const [name, options] of Object.entries(wrong)) {
      // A wrong login disturbs the counts of tests that count them: made under their lock.
      const { result: exit } = await AuthServices.countingLogins(e, () =>
        Effect.runPromiseExit(observed(archiveTopic({ ...options, meterProvider, name: `${topic}-${name}` })))
      )
      expect(Exit.isFailure(exit), name).toBe(true)
      if (Exit.isFailure(exit)) failures.push([name, exit.cause])
    }
    // Each wrong run failed on the credential it got wrong.
    const rendered = Object.fromEntries(failures.map(([name, cause]) => [name, renderings(cause)]))
    expect(rendered["password"]).toMatch(/SASL SCRAM-SHA-512 authentication as "[^"]+" failed/)
    expect(rendered["s3Secret"]).toMatch(/SignatureDoesNotMatch|signature/i)
    expect(rendered["s3Ca"]).toMatch(/certificate is not trusted/)

    await reader.forceFlush()
    const metrics = exporter.getMetrics()
    expect(metrics.flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics).length).toBeGreaterThan(0)
    expect(spans.length).toBeGreaterThan(0)
    expect(lines.filter((l) => l.includes("secrets-test: run starts")).length).toBe(4)

    const leaks = [
      ...failures.flatMap(([name, cause]) => leaksIn(`the ${name} failure`, renderings(cause))),
      ...spans.flatMap((span) =>
        leaksIn(`span ${span.name}`, renderings({ name: span.name, attributes: [...span.attributes], status: span.status, links: span.links }))
      ),
      ...leaksIn("metric points", renderings(metrics)),
      ...lines.flatMap((line) => leaksIn("a log line", line))
    ]
    expect(leaks).toEqual([])
  })

  it("as a child process: stdout and stderr of a right run and three wrong-credential runs", async () => {
    const e = services()
    const { topic, bucket, records } = await fresh("child")
    const dir = mkdtempSync(join(tmpdir(), "sluice-secrets-"))
    try {
      const run = async (name: string, options: ReturnType<typeof AuthServices.archiveOptions>) => {
        const file = join(dir, `${name}.json`)
        writeFileSync(file, JSON.stringify(options), { mode: 0o600 })
        // Under the lock of the tests that count wrong logins (a wrong run makes one).
        const { result: child } = await AuthServices.countingLogins(e, async () =>
          spawnSync(process.execPath, ["--conditions=@sluice/source", join(import.meta.dirname, "../faults/AuthArchiver.ts"), file], {
            encoding: "utf8",
            timeout: 90_000
          })
        )
        return { name, status: child.status, out: `${child.stdout ?? ""}\n${child.stderr ?? ""}` }
      }
      const ok = await run("ok", AuthServices.archiveOptions(e, topic, bucket))
      expect(ok.status, ok.out).toBe(0)
      expect((JSON.parse(ok.out.trim().split("\n").find((l) => l.startsWith("{")) ?? "{}") as { recordsCommitted?: number }).recordsCommitted).toBe(records)
      const failed = [
        await run("password", AuthServices.archiveOptions(e, topic, bucket, { password: WRONG_PASSWORD, groupId: `${topic}-wrong-password` })),
        await run("s3Secret", AuthServices.archiveOptions(e, topic, bucket, { secretAccessKey: WRONG_SECRET, groupId: `${topic}-wrong-secret` })),
        await run("s3Ca", AuthServices.archiveOptions(e, topic, bucket, { s3Ca: false, groupId: `${topic}-no-ca` }))
      ]
      for (const f of failed) expect(f.status, f.out).toBe(1)
      expect(failed[0]?.out).toMatch(/SaslAuthenticationFailed/)
      const leaks = [ok, ...failed].flatMap((r) => leaksIn(`the ${r.name} run's stdout/stderr`, r.out))
      expect(leaks).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
