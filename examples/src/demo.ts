/**
 * The main demo.
 *
 * 1. Archive records from an in-memory source into an in-memory store through
 *    the full read → seal → upload → verify → commit pipeline, print what was
 *    archived and prove every record landed exactly once.
 * 2. Why policies: run the same pipeline against the testkit's simulated store
 *    (a store whose per-request bandwidth makes 8 uploads too few, slowed down
 *    10× for a minute) on a virtual clock, with today's fixed 8 uploads and with
 *    Sluice's default policies, and compare.
 */
import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { Batch, Fixed, Memory, Pipeline } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Runner, Scenario } from "@sluice/testkit"

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

  // --- 2. fixed 8 uploads vs the default policies, on a simulated store ------
  const path = fileURLToPath(new URL("../../packages/policies/scenarios/wide-slowdown-10x.json", import.meta.url))
  const scenario = yield* Scenario.load(path)
  console.log(`\nSimulated: ${scenario.name} — ${scenario.description}`)
  const rows: Array<ReadonlyArray<string>> = [["policy", "goodput/oracle", "inside the slowdown", "max lag s", "p95 latency ×", "recovery s", "max held MiB", "wall ms"]]
  for (const [label, policies] of [["fixed:8", Fixed.layer({ concurrency: 8 })], ["default", Composition.defaults()]] as const) {
    const { summary } = yield* Runner.run(scenario, { policy: label, policies })
    rows.push([
      label,
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
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
