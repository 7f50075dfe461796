/**
 * The sim-vs-real table and report (`npm run sim-vs-real`): reads the
 * summaries `scripts/sim-vs-real.sh` wrote to DIR (`NAME.POLICY.sim.json`,
 * `NAME.POLICY.real.json`, and `NAME.POLICY.sim-seeds.jsonl`: the simulator
 * at other seeds), writes DIR/table.md — per scenario, policy and phase: the
 * simulator's `goodputRatio` at the scenario's seed, its range over the other
 * seeds, the replay's, and the difference to the scenario's seed —
 * and DIR/index.html, each replay's plot beside the simulator's plot of the
 * same scenario. A run that produced no summary is a row saying so.
 *
 *   node --conditions=@sluice/source examples/replay/table.ts DIR
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Argument } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"

interface Phase {
  readonly from: number
  readonly to: number
  readonly degraded: boolean
  readonly oracleKeepsUp: boolean
  readonly goodputRatio: number
}
interface Summary {
  readonly phases: ReadonlyArray<Phase>
  readonly goodputRatio: number
  readonly worstPhaseGoodput: number | null
  readonly maxLagSeconds: number
  readonly throttleRate: number
  readonly failure?: string | null
}

/** A difference larger than this, sim against real, is a cell the note explains (issue 25). */
export const AGREEMENT = 0.1

const read = (file: string): Summary | undefined => {
  if (!existsSync(file)) return undefined
  const text = readFileSync(file, "utf8").trim()
  if (text === "") return undefined
  try {
    return JSON.parse(text) as Summary
  } catch {
    return undefined
  }
}

const f = (x: number | null | undefined) => (x === null || x === undefined ? "—" : x.toFixed(3))

/** The summaries of the simulator at other seeds (one JSON line each; lines that are not a summary are skipped). */
const readSeeds = (file: string): Array<Summary> => {
  if (!existsSync(file)) return []
  const out: Array<Summary> = []
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue
    try {
      out.push(JSON.parse(line) as Summary)
    } catch {
      // not a summary: a run that failed before printing one
    }
  }
  return out
}

const command = CommandLine.script(
  "sim-vs-real-table",
  { dir: Argument.String("dir").pipe(Argument.withDescription("the folder of the summaries (NAME.POLICY.sim.json, NAME.POLICY.real.json, NAME.POLICY.sim-seeds.jsonl)")) },
  "The sim-vs-real table: reads the summaries scripts/sim-vs-real.sh wrote to DIR, writes DIR/table.md (printed too) and DIR/index.html.",
  { invocation: "node --conditions=@sluice/source examples/replay/table.ts" }
)
const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
if (flags === undefined) process.exit()
const { dir } = flags
const runs = [...new Set(readdirSync(dir).filter((n) => n.endsWith(".sim.json") || n.endsWith(".real.json")).map((n) => n.replace(/\.(sim|real)\.json$/, "")))].sort()
const lines = [
  `| scenario | policy | phase (s) | | sim | sim, other seeds | real | difference | real within the seeds ± ${AGREEMENT} |`,
  `|---|---|---|---|---|---|---|---|---|`
]
const disagree: Array<string> = []
const outsideSeeds: Array<string> = []
for (const tag of runs) {
  const dot = tag.indexOf(".")
  const name = tag.slice(0, dot)
  const policy = tag.slice(dot + 1)
  const sim = read(join(dir, `${tag}.sim.json`))
  const real = read(join(dir, `${tag}.real.json`))
  const seeds = readSeeds(join(dir, `${tag}.sim-seeds.jsonl`))
  if (sim === undefined || real === undefined) {
    lines.push(`| ${name} | ${policy} | — | | ${sim === undefined ? "no summary" : "ok"} | | ${real === undefined ? "no summary" : "ok"} | — | |`)
    continue
  }
  for (const p of real.phases) {
    const s = sim.phases.find((q) => q.from === p.from && q.to === p.to)
    const diff = s === undefined ? undefined : p.goodputRatio - s.goodputRatio
    const kind = p.degraded ? (p.oracleKeepsUp ? "degraded" : "degraded, oracle behind") : ""
    const judged = p.degraded && p.oracleKeepsUp
    const flagged = diff !== undefined && judged && Math.abs(diff) > AGREEMENT
    if (flagged) disagree.push(`${name} × ${policy}, ${p.from}–${p.to} s`)
    const atSeeds = seeds.flatMap((x) => x.phases.filter((q) => q.from === p.from && q.to === p.to).map((q) => q.goodputRatio))
    const lo = Math.min(...atSeeds)
    const hi = Math.max(...atSeeds)
    const within = atSeeds.length === 0 ? undefined : p.goodputRatio >= lo - AGREEMENT && p.goodputRatio <= hi + AGREEMENT
    if (judged && within === false) outsideSeeds.push(`${name} × ${policy}, ${p.from}–${p.to} s`)
    const range = atSeeds.length === 0 ? "—" : `${f(lo)}–${f(hi)} (${atSeeds.length})`
    const bold = (text: string, on: boolean) => (on ? `**${text}**` : text)
    lines.push(`| ${name} | ${policy} | ${p.from}–${p.to} | ${kind} | ${f(s?.goodputRatio)} | ${range} | ${f(p.goodputRatio)} | ${diff === undefined ? "—" : bold(`${diff >= 0 ? "+" : ""}${diff.toFixed(3)}`, flagged)} | ${within === undefined ? "—" : bold(within ? "yes" : "no", judged && !within)} |`)
  }
  if (real.failure !== null && real.failure !== undefined) lines.push(`| ${name} | ${policy} | failed | | | ${real.failure.split("\n")[0]} | |`)
}
lines.push(
  "",
  `Degraded phases where the oracle keeps up and sim (the scenario's seed) and real differ by more than ${AGREEMENT}: ${disagree.length === 0 ? "none" : disagree.join("; ")}.`,
  `Of those phases, where real is outside the simulator's range over the other seeds by more than ${AGREEMENT}: ${outsideSeeds.length === 0 ? "none" : outsideSeeds.join("; ")}.`
)
writeFileSync(join(dir, "table.md"), `${lines.join("\n")}\n`)
process.stdout.write(`${lines.join("\n")}\n`)

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;")
const figure = (file: string, caption: string) =>
  existsSync(join(dir, file)) ? `<figure><img src="${esc(file)}" alt="${esc(caption)}"><figcaption>${esc(caption)}</figcaption></figure>` : `<figure><p>no plot (${esc(file)})</p></figure>`
const sections = runs.map((tag) =>
  `<section><h2>${esc(tag)}</h2><div class="pair">${figure(`${tag}.sim.svg`, `${tag}: simulator`)}${figure(`${tag}.real.svg`, `${tag}: replay (versitygw behind toxiproxy)`)}</div></section>`
)
writeFileSync(
  join(dir, "index.html"),
  `<!doctype html><meta charset="utf-8"><title>Sluice: simulator and real replays</title>
<style>body{font-family:sans-serif;margin:1em}.pair{display:flex;gap:1em}figure{flex:1;margin:0}img{width:100%}</style>
<h1>Simulator and real replays, side by side</h1>
<p>Each row: the simulator's plot (left) and the replay's (right) of the same scenario and policy. Table: <a href="table.md">table.md</a>.</p>
${sections.join("\n")}
`
)
