/**
 * brokers — the report of a run: `summary.md` (each scenario's verdict, its
 * checks with their figures, its setup), one CSV of the per-second rows per
 * scenario, and `result.json` (also the `--json` line). Pure text builders;
 * `write` puts them in `<out>/brokers-<time>/`.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import type { Outcome, Row } from "./Scenarios.ts"

/** `brokers-2026-11-30T15-04-05`. */
export const folderName = (date: Date): string => `brokers-${date.toISOString().slice(0, 19).replace(/:/g, "-")}`

/** A scenario that threw: failed, with the error as its one check. */
export interface Crashed {
  readonly name: string
  readonly error: string
}

/** The `--json` object. */
export const result = (outcomes: ReadonlyArray<Outcome>, crashed: ReadonlyArray<Crashed>, report: string) => ({
  pass: crashed.length === 0 && outcomes.length > 0 && outcomes.every((o) => o.verdict.pass),
  report,
  scenarios: [
    ...outcomes.map((o) => ({
      name: o.name,
      pass: o.verdict.pass,
      failed: o.verdict.checks.filter((c) => !c.ok).map((c) => c.name),
      figures: o.figures
    })),
    ...crashed.map((c) => ({ name: c.name, pass: false, failed: ["the scenario ran to its end"], error: c.error }))
  ]
})

/** The rows as CSV (columns: the union of the rows' keys, in first-seen order). */
export const csv = (rows: ReadonlyArray<Row>): string => {
  const columns: Array<string> = []
  for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k)
  const cell = (v: unknown) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : v === undefined ? "" : String(v))
  return [columns.join(","), ...rows.map((r) => columns.map((c) => cell(r[c])).join(","))].join("\n") + "\n"
}

/** summary.md. */
export const summary = (argv: ReadonlyArray<string>, outcomes: ReadonlyArray<Outcome>, crashed: ReadonlyArray<Crashed>, started: Date, seconds: number): string => {
  const all = result(outcomes, crashed, "")
  const lines = [
    `# Broker-side scenarios — ${all.pass ? "PASS" : "FAIL"}`,
    "",
    `\`npm run brokers -- ${argv.join(" ")}\`, started ${started.toISOString()}, ${seconds.toFixed(0)} s. ` +
      "3-node KRaft cluster (scripts/kafka-cluster.sh) and the local S3 server on 127.0.0.1; the archiver is examples/kafka-to-s3/main.ts " +
      "(Kafka source → default policies → S3 sink) as a child process, watched from outside; every bucket audited (AuditS3) against the group's committed offsets.",
    ""
  ]
  for (const o of outcomes) {
    lines.push(`## ${o.name}: ${o.verdict.pass ? "PASS" : "FAIL"}`, "")
    for (const n of o.notes) lines.push(`- ${n}`)
    lines.push("", "| check | | figures |", "|---|---|---|")
    for (const c of o.verdict.checks) lines.push(`| ${c.name} | ${c.ok ? "✓" : "✗"} | ${c.detail.replace(/\|/g, "\\|")} |`)
    lines.push("", `Per-second rows: \`${o.name}.csv\` (${o.rows.length} rows).`, "")
  }
  for (const c of crashed) lines.push(`## ${c.name}: FAIL (did not finish)`, "", "```", c.error, "```", "")
  return lines.join("\n")
}

/** Writes the report folder; its path. */
export const write = (out: string, folder: string, argv: ReadonlyArray<string>, outcomes: ReadonlyArray<Outcome>, crashed: ReadonlyArray<Crashed>, started: Date, seconds: number): string => {
  const dir = Path.join(out, folder)
  mkdirSync(dir, { recursive: true })
  for (const o of outcomes) writeFileSync(Path.join(dir, `${o.name}.csv`), csv(o.rows))
  writeFileSync(Path.join(dir, "summary.md"), summary(argv, outcomes, crashed, started, seconds))
  writeFileSync(Path.join(dir, "result.json"), JSON.stringify(result(outcomes, crashed, dir), null, 2) + "\n")
  return dir
}
