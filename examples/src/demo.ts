/**
 * The main demo.
 *
 * 1. Archive records from an in-memory source into an in-memory store through
 *    the full read → seal → upload → verify → commit pipeline, print what was
 *    archived and prove every record landed exactly once.
 * 2. Why policies: run the same pipeline against the testkit's simulated store
 *    on a virtual clock — by default `wide-slowdown-10x` (a store whose
 *    per-request bandwidth makes 8 uploads too few, slowed down 10× for a
 *    minute) — with today's fixed 8 uploads and with Sluice's default
 *    policies, showing live progress, and compare them inside the slowdown.
 * 3. Write an HTML report with both runs' plots and print its path.
 *
 * Options (`npm start -- --scenario <file> --policy <spec> --baseline <spec> --report <dir>`):
 * any scenario file, and any policy spec `sluice-sim` accepts (`default`,
 * `aimd+throttle`, `fixed:16`, `./my-policy.js+throttle`).
 */
import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { Flag } from "effect/cli"
import { Batch, Fixed, Memory, Pipeline } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import { PolicySpec, Runner, Scenario } from "@sluice/testkit"
import type { Trace } from "@sluice/testkit"
import * as DemoReport from "./DemoReport.ts"

/** A flag naming a composition of policies: any spec `sluice-sim` accepts. */
const spec = (name: string, fallback: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar("spec"), Flag.withDescription(`${description} (default: ${fallback})`), Flag.withDefault(fallback))

const command = CommandLine.script(
  "demo",
  {
    scenario: Flag.String("scenario").pipe(
      Flag.withMetavar("file.json"),
      Flag.withDescription("the scenario of the simulated runs (default: packages/policies/scenarios/wide-slowdown-10x.json)"),
      Flag.withDefault(fileURLToPath(new URL("../../packages/policies/scenarios/wide-slowdown-10x.json", import.meta.url)))
    ),
    policy: spec("policy", "default", "the policies, any spec sluice-sim accepts"),
    baseline: spec("baseline", "fixed:8", "what they are compared with, any spec sluice-sim accepts"),
    report: Flag.String("report").pipe(
      Flag.withMetavar("dir"),
      Flag.withDescription("where the HTML report with both runs' plots goes (default: reports/demo-<time>)"),
      Flag.withDefault(`reports/demo-${new Date().toISOString().replace(/[:.]/g, "-")}`)
    ),
    quiet: CommandLine.switchFlag("quiet", "no live progress lines")
  },
  "Archives records from an in-memory source into an in-memory store and proves every record landed once; " +
    "then runs a simulated store with the baseline and with the policies, compares them, and writes an HTML report.",
  { invocation: "npm start --" }
)
const options = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
if (options === undefined) process.exit()

/**
 * A live progress line every 5 virtual seconds: virtual time, goodput vs the
 * oracle, concurrency, bytes held and freshness lag. On a terminal it rewrites
 * one line; elsewhere it prints every 30 virtual seconds.
 */
const progress = (label: string) => {
  const tty = process.stdout.isTTY === true && !options.quiet
  const every = tty ? 5_000 : 30_000
  // Goodput and the oracle are means since the last line: per 100 ms row they
  // are a comb of spikes (a window either completed an object or did not).
  let goodput = 0
  let oracle = 0
  let n = 0
  return {
    onRow: (row: Trace.TraceRow) => {
      goodput += row.goodputBytesPerSecond
      oracle += row.oracleBytesPerSecond
      n++
      if (options.quiet || row.t % every !== 0) return
      const line = `  ${label.padEnd(10)} t=${String(row.t / 1000).padStart(4)} s  goodput ${(goodput / n / 1e6).toFixed(1).padStart(6)} MB/s ` +
        `(oracle ${(oracle / n / 1e6).toFixed(1).padStart(6)})  uploads ${String(row.concurrency).padStart(3)}  ` +
        `held ${(row.heldBytes / 2 ** 20).toFixed(0).padStart(4)} MiB  lag ${row.lagSeconds.toFixed(1).padStart(5)} s`
      goodput = 0
      oracle = 0
      n = 0
      if (tty) process.stdout.write(`\r${line}`)
      else console.log(line)
    },
    done: () => {
      if (tty) process.stdout.write("\n")
    }
  }
}

const partitions = 4
const recordsPerPartition = 50_000

const program = Effect.gen(function*() {
  const source = Memory.source({ name: "orders", partitions, records: recordsPerPartition, recordBytes: 150 })
  const sink = Memory.sink({ latencyMillis: (op, bytes) => (op === "putObject" ? 2 + bytes / 200_000 : 1) })
  const started = Date.now()
  const stats = yield* Pipeline.run({
    source,
    sink,
    config: { batch: { records: 10_000, bytes: "4 MiB", maxAge: "5 seconds" }, memoryBudget: "64 MiB" },
    policies: Layer.mergeAll(Fixed.layer({ concurrency: 8 }))
  })
  const wall = Date.now() - started

  console.log(`Archived ${stats.recordsCommitted} records (${(stats.bytesVerified / 1e6).toFixed(1)} MB) in ${stats.batchesVerified} objects, ${wall} ms`)
  console.log(`Peak concurrent uploads: ${sink.peak.maxUploading}; peak bytes held: ${(stats.maxInflightBytes / 1e6).toFixed(1)} MB`)
  console.log("\nObjects:")
  for (const [key, manifest] of [...sink.manifests].slice(0, 6)) {
    console.log(`  ${key}  records=${manifest.records} seal=${manifest.sealReason} ${manifest.checksum.algorithm}=${manifest.checksum.value.slice(0, 12)}…`)
  }
  console.log(`  … ${sink.manifests.size} in all`)
  console.log("\nCommitted offsets:", Object.fromEntries(source.committed))

  // Prove it: decode every object and count each position once.
  const seen = new Set<string>()
  const decoder = new TextDecoder()
  for (const [key, { body }] of sink.objects) {
    const manifest = sink.manifests.get(key)
    if (manifest === undefined) throw new Error(`no manifest for ${key}`)
    for (const payload of Batch.decodeObject(manifest, body)) {
      const position = decoder.decode(payload).replace(/\.+$/, "")
      if (seen.has(position)) throw new Error(`duplicate record ${position}`)
      seen.add(position)
    }
  }
  const expected = partitions * recordsPerPartition
  if (seen.size !== expected) throw new Error(`expected ${expected} records, found ${seen.size}`)
  console.log(`\nVerified: all ${seen.size} records are in storage exactly once.`)

  // --- 2. a baseline vs the policies, on a simulated store ------------------
  const scenario = yield* Scenario.load(options.scenario)
  console.log(`\nSimulated: ${scenario.name} — ${scenario.description}`)
  const rows: Array<ReadonlyArray<string>> = [["policy", "goodput/oracle", "worst degraded phase", "max lag s", "p95 latency ×", "recovery s", "max held MiB", "wall ms"]]
  const runs: Array<DemoReport.ReportRun> = []
  for (const spec of [options.baseline, options.policy]) {
    const resolved = yield* PolicySpec.resolve(spec)
    const live = progress(resolved.label)
    const result = yield* Runner.run(scenario, { policy: resolved.label, policies: resolved.policies, floors: resolved.floors, onRow: live.onRow })
    live.done()
    runs.push({ label: resolved.label, result })
    const summary = result.summary
    rows.push([
      resolved.label,
      summary.goodputRatio.toFixed(3),
      summary.worstPhaseGoodput === null ? "-" : summary.worstPhaseGoodput.toFixed(3),
      summary.maxLagSeconds.toFixed(1),
      summary.latencyInflation.toFixed(2),
      summary.recoverySeconds === null ? "never" : summary.recoverySeconds.toFixed(1),
      (summary.maxInflightBytes / 2 ** 20).toFixed(0),
      String(summary.wallMillis)
    ])
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? []
  for (const row of rows) console.log("  " + row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  "))
  console.log(`  (${scenario.duration / 1000} virtual seconds each; rerun any scenario with \`npx sluice-sim run <file> --policy <spec>\`)`)

  // --- 3. the report ----------------------------------------------------------
  const file = yield* DemoReport.write(options.report, scenario, runs)
  console.log(`\nReport with the plots: ${file}`)
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
