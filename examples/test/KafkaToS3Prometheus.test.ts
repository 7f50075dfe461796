/**
 * examples/kafka-to-s3 end to end on the real services `npm test` starts: the
 * archiver (default policies, `archiver.json`) reads a real topic into a real
 * bucket with its metrics on a Prometheus endpoint (`Prometheus.make`, port 0),
 * and the endpoint is scraped over HTTP while it runs and after it drained.
 *
 * - the pipeline's series are there, each with `sluice_pipeline` and
 *   `messaging_destination_name`: the meter provider the pipeline wrote to is
 *   the one the exporter reads;
 * - records verified = committed = produced, in the scrape, in the stats and
 *   in the consumer group's offsets;
 * - every `sluice_` name in `alerts.yml` is a metric or a label of the scrape,
 *   and every label its rules group or match on is one (or Prometheus' own
 *   `instance` / `job`): the rules cannot drift from what the exporter renders.
 *
 * Without the services it fails (never skips), naming what is missing.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Admin } from "@platformatic/kafka"
import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import * as Archiver from "../kafka-to-s3/Archiver.ts"
import { createBucket, produce, recordsIn } from "../kafka-to-s3/produce.ts"
import * as Prometheus from "../kafka-to-s3/Prometheus.ts"
import * as Settings from "../kafka-to-s3/Settings.ts"
import { endpoints, reachable } from "./services.ts"

const DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "kafka-to-s3")
/** One sample of the exposition text. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** Parses Prometheus' text format (the sample lines; comments skipped). */
const parseExposition = (text: string): Array<Sample> =>
  text.split("\n").flatMap((line) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (line.startsWith("#") || m === null) return []
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ""] = l[2] ?? ""
    return [{ name: m[1] ?? "", labels, value: Number(m[3]) }]
  })

/** The rules of a Prometheus rules file as written here (`- alert:`, `expr:` on one line or as a `|` block, `for:`, `severity:`, `summary:`). */
const parseRules = (text: string) => {
  const rules: Array<{ alert: string; expr: string; severity?: string; summary?: string; for?: string }> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    const alert = /^\s*- alert:\s*(\S+)\s*$/.exec(line)
    if (alert !== null) {
      rules.push({ alert: alert[1] ?? "", expr: "" })
      continue
    }
    const rule = rules.at(-1)
    if (rule === undefined) continue
    const expr = /^(\s*)expr:\s*(.*)$/.exec(line)
    if (expr !== null) {
      if (expr[2] === "|") {
        const indent = (expr[1] ?? "").length
        const block: Array<string> = []
        while (i + 1 < lines.length && ((lines[i + 1] ?? "").trim() === "" || (/^\s*/.exec(lines[i + 1] ?? "")?.[0].length ?? 0) > indent)) {
          block.push((lines[++i] ?? "").trim())
        }
        rule.expr = block.join(" ").trim()
      } else {
        rule.expr = expr[2] ?? ""
      }
      continue
    }
    const field = /^\s*(for|severity|summary):\s*(.*)$/.exec(line)
    if (field !== null) rule[field[1] as "for" | "severity" | "summary"] = field[2] ?? ""
  }
  return rules
}

describe("examples/kafka-to-s3: the archiver's Prometheus endpoint", () => {
  it("serves the pipeline's metrics while it runs and after the drain; verified = committed = produced; alerts.yml names only what the scrape has", async () => {
    const { brokers, s3 } = endpoints()
    const id = `${process.pid}-${Date.now().toString(36)}`
    const topic = `sluice-prom-${id}`
    const bucket = `prom-${id}`
    const name = `${topic}-archiver`
    const partitions = 3
    const records = 30_000

    await reachable(`creating bucket ${bucket} at ${s3.endpoint}`, createBucket({ brokers, s3 }, bucket))
    await reachable(`producing to ${brokers.join(",")}`, produce({ brokers, s3 }, topic, { records, partitions, recordBytes: 150 }))

    const settings = await Effect.runPromise(Settings.load(join(DIR, "archiver.json")))
    let ended = false
    const { stats, during, after, url } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const endpoint = yield* Prometheus.make({ port: 0 })
      // While it runs: scrape until the ticker's gauges are there (the pipeline is running).
      const poll = Effect.gen(function*() {
        while (true) {
          const text = yield* Prometheus.scrape(endpoint.url)
          const running = !ended
          if (text.includes(`sluice_inflight_bytes{sluice_pipeline="${name}"`)) return { text, running }
          yield* Effect.sleep("100 millis")
        }
      }).pipe(Effect.timeout("60 seconds"))
      const polling = yield* Effect.forkChild(poll)
      const stats = yield* Archiver.run({
        brokers,
        topic,
        groupId: `${topic}-archiver`,
        s3: { ...s3, bucket },
        name,
        settings,
        meterProvider: endpoint.meterProvider,
        untilCommitted: records,
        maxDuration: "90 seconds",
        drainDeadline: "30 seconds"
      })
      ended = true
      const during = yield* Fiber.join(polling)
      const after = yield* Prometheus.scrape(endpoint.url)
      return { stats, during, after, url: endpoint.url }
    })))

    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    // The run: everything produced was verified and committed.
    expect(stats.recordsVerified).toBe(records)
    expect(stats.recordsCommitted).toBe(records)

    // A scrape taken while the pipeline ran already carries its series, labelled.
    expect(during.running).toBe(true)
    const duringSamples = parseExposition(during.text).filter((s) => s.labels["sluice_pipeline"] === name)
    expect(duringSamples.map((s) => s.name)).toEqual(expect.arrayContaining(["sluice_inflight_bytes", "sluice_concurrency_limit", "sluice_records_committed_total"]))

    // After the drain: every sluice_ series of the core's meter carries both identity labels.
    const samples = parseExposition(after)
    const sluice = samples.filter((s) => s.name.startsWith("sluice_"))
    const core = sluice.filter((s) => s.labels["otel_scope_name"] === "@sluice/core")
    expect(core.length).toBeGreaterThan(20)
    for (const s of sluice) {
      expect(s.labels["sluice_pipeline"], `${s.name} sluice_pipeline`).toBe(name)
      expect(s.labels["messaging_destination_name"], `${s.name} messaging_destination_name`).toBe(topic)
    }
    const value = (metric: string) => sluice.filter((s) => s.name === metric).reduce((sum, s) => sum + s.value, 0)
    expect(value("sluice_records_verified_total")).toBe(records)
    expect(value("sluice_records_committed_total")).toBe(records)
    expect(value("sluice_inflight_bytes")).toBe(0) // the up-down counter is taken back at the end
    expect(value("sluice_verification_failures_total")).toBe(0)
    expect(value("sluice_retention_gap_records_total")).toBe(0)
    expect(value("sluice_config_memory_budget")).toBe(settings.pipeline.memoryBudget)
    expect(value("sluice_config_concurrency_floor")).toBe(settings.concurrencyFloor)
    // The group as the only member saw it: every partition its own, no rebalance after the first join.
    expect(value("sluice_kafka_topic_partitions")).toBe(partitions)
    expect(value("sluice_kafka_partitions_owned")).toBe(partitions)
    expect(value("sluice_kafka_rebalances_total")).toBeLessThanOrEqual(1)
    expect(sluice.filter((s) => s.name === "sluice_source_lag").map((s) => s.labels["messaging_destination_partition_id"]).sort()).toEqual(["0", "1", "2"])
    expect(after).toContain("# TYPE sluice_records_committed_total counter")
    expect(after).toContain("# TYPE sluice_uncommitted_oldest_age gauge")
    expect(after).toContain("# TYPE sluice_stage_duration histogram")

    // Kafka agrees: the group's committed offsets are the end of every partition.
    const admin = new Admin({ clientId: "sluice-prom-test-admin", bootstrapBrokers: [...brokers] })
    try {
      const answer = await admin.listConsumerGroupOffsets({ groups: [`${topic}-archiver`] })
      const offsets = new Array<number>(partitions).fill(-1)
      for (const g of answer) for (const t of g.topics) if (t.name === topic) for (const p of t.partitions) offsets[p.partitionIndex] = Number(p.committedOffset)
      expect(offsets).toEqual(Array.from({ length: partitions }, (_, p) => recordsIn(records, partitions, p)))
    } finally {
      await admin.close().catch(() => undefined)
    }

    // alerts.yml: every rule is complete, and names only what the scrape has.
    const metricNames = new Set(samples.map((s) => s.name))
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)))
    const rules = parseRules(readFileSync(join(DIR, "alerts.yml"), "utf8"))
    expect(rules.length).toBeGreaterThanOrEqual(10)
    const used = new Set<string>()
    for (const rule of rules) {
      expect(rule.expr, `${rule.alert}: expr`).not.toBe("")
      expect(["critical", "warning", "info"], `${rule.alert}: severity`).toContain(rule.severity)
      expect(rule.summary, `${rule.alert}: summary`).toBeTruthy()
      expect(rule.expr.split("(").length, `${rule.alert}: parentheses`).toBe(rule.expr.split(")").length)
      for (const token of rule.expr.matchAll(/\bsluice_[a-z_]+\b/g)) {
        used.add(token[0])
        expect(metricNames.has(token[0]) || labelNames.has(token[0]), `${rule.alert}: ${token[0]} is neither a metric nor a label in the scrape`).toBe(true)
      }
      for (const clause of rule.expr.matchAll(/\b(?:by|on|ignoring|without)\s*\(([^)]*)\)/g)) {
        for (const label of (clause[1] ?? "").split(",").map((l) => l.trim()).filter((l) => l !== "")) {
          expect(labelNames.has(label) || label === "instance" || label === "job", `${rule.alert}: label ${label} is not in the scrape`).toBe(true)
        }
      }
      for (const matcher of rule.expr.matchAll(/\{([^}]*)\}/g)) {
        for (const m of (matcher[1] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) {
          expect(labelNames.has(m[1] ?? "") || m[1] === "job" || m[1] === "instance", `${rule.alert}: matcher label ${m[1]}`).toBe(true)
        }
      }
    }
    // The alerts cover what the README promises.
    for (const metric of [
      "sluice_uncommitted_oldest_age",
      "sluice_retention_gap_records_total",
      "sluice_verification_failures_total",
      "sluice_throttles_total",
      "sluice_partitions_held",
      "sluice_concurrency_limit",
      "sluice_inflight_bytes",
      "sluice_config_memory_budget"
    ]) {
      expect(used.has(metric), `alerts.yml uses ${metric}`).toBe(true)
    }
  }, 180_000)
})
