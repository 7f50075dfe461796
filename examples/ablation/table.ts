/**
 * The ablation table (`npm run ablation`): reads the runs scripts/ablation.sh
 * wrote to DIR (`family.*.jsonl`: the family test set; `matrix.*.jsonl`: the
 * shipped scenarios), and writes DIR/table.md — per variant: the family's
 * distribution (`Family.distribution`), what switching the rule off costs
 * against the default (p10 and median of the worst degraded phase), the
 * shipped scenario that loses most, the family's requests against the
 * default's (what a rule buys in object count rather than goodput), and the
 * verdict: a rule whose removal
 * costs less than `KEEP_P10_MEDIAN` on both p10 and median, and loses no
 * shipped scenario more than `KEEP_MATRIX`, has not shown what it buys.
 *
 *   node --conditions=@sluice/source examples/ablation/table.ts DIR
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Argument } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { Family } from "@sluice/testkit"
import { ablations } from "./Ablations.ts"

/** A rule is kept when switching it off costs at least this on the family's p10 or median (issue 26). */
export const KEEP_P10_MEDIAN = 0.005
/** …or loses a shipped scenario more than this (issue 26: no shipped scenario may lose more than 0.02). */
export const KEEP_MATRIX = 0.02

interface Run {
  readonly variant: string
  readonly scenario: string
  readonly worstPhaseGoodput: number | null
  readonly goodputRatio: number
  readonly maxLagSeconds: number
  readonly throttleRate: number
  /** Requests sent to the store (absent in lines written before 2026-12-06). */
  readonly requests?: number | undefined
  readonly lostRecords: number
  readonly undetectedLostRecords: number
  readonly committedNotVerified: number
}

const command = CommandLine.script(
  "ablation-table",
  { dir: Argument.String("dir").pipe(Argument.withDescription("the folder of the runs (family.*.jsonl, matrix.*.jsonl)")) },
  "The ablation table: reads the runs scripts/ablation.sh wrote to DIR, writes DIR/table.md (printed too): per variant, what switching its rule off costs, and the verdict.",
  { invocation: "node --conditions=@sluice/source examples/ablation/table.ts" }
)
const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
if (flags === undefined) process.exit()
const { dir } = flags
const read = (prefix: string): Array<Run> =>
  readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Run))
const family = read("family.")
const matrix = read("matrix.")
const f = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? "—" : x.toFixed(digits))
const signed = (x: number | null) => (x === null ? "—" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`)

/** A shipped scenario's figure: its worst judged phase, or its whole-run goodput where no phase is judged. */
const figure = (r: Run): number => r.worstPhaseGoodput ?? r.goodputRatio
const reference = new Map(matrix.filter((r) => r.variant === "default").map((r) => [r.scenario, figure(r)]))
const base = Family.distribution("default", family.filter((r) => r.variant === "default"))
const baseRequests = new Map(family.filter((r) => r.variant === "default").map((r) => [r.scenario, r.requests ?? 0]))
/**
 * The variant's requests on the family over the default's, as a signed share,
 * summed over the scenarios both ran ("—" without figures).
 */
const requestsShare = (runs: ReadonlyArray<Run>): string => {
  let mine = 0
  let theirs = 0
  for (const r of runs) {
    const base = baseRequests.get(r.scenario)
    if (base === undefined || r.requests === undefined) continue
    mine += r.requests
    theirs += base
  }
  if (theirs === 0 || mine === 0) return "—"
  const share = mine / theirs - 1
  return `${share >= 0 ? "+" : ""}${(100 * share).toFixed(1)} %`
}

const lines = [
  `Family: ${base.scenarios} scenarios (${base.judged} judged); shipped: ${reference.size} scenarios. Cost = the default's figure − the variant's (positive: the rule buys it).`,
  "",
  "| variant | switches off | worst phase ≥ 0.8 | p10 | median | max lag p90 (s) | cost p10 | cost median | shipped: largest loss | requests vs default | lost undetected / unverified | verdict |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|"
]
for (const a of ablations) {
  const runs = family.filter((r) => r.variant === a.name)
  const shipped = matrix.filter((r) => r.variant === a.name)
  if (runs.length === 0 && shipped.length === 0) continue
  const d = Family.distribution(a.name, runs)
  const cost = (x: number | null, y: number | null) => (x === null || y === null ? null : x - y)
  const costP10 = cost(base.worstPhaseP10, d.worstPhaseP10)
  const costMedian = cost(base.worstPhaseMedian, d.worstPhaseMedian)
  const losses = shipped.map((r) => [r.scenario, (reference.get(r.scenario) ?? figure(r)) - figure(r)] as const).sort((x, y) => y[1] - x[1])
  const worstLoss = losses[0]
  const unsafe = [...runs, ...shipped].filter((r) => r.undetectedLostRecords > 0 || r.committedNotVerified > 0).length
  // An added-back rule would buy what its variant gains over the default: the costs negated.
  const gains = a.addsBack === true
    ? { p10: -(costP10 ?? 0), median: -(costMedian ?? 0), shipped: -(losses[losses.length - 1]?.[1] ?? 0) }
    : { p10: costP10 ?? 0, median: costMedian ?? 0, shipped: worstLoss?.[1] ?? 0 }
  const showsNothing = gains.p10 < KEEP_P10_MEDIAN && gains.median < KEEP_P10_MEDIAN && gains.shipped <= KEEP_MATRIX
  const verdict = a.name === "default"
    ? "reference"
    : a.addsBack === true
    ? (showsNothing ? "removed: adding it back buys nothing" : "**removed, but adding it back buys something**")
    : showsNothing
    ? "**has not shown what it buys**"
    : "kept"
  lines.push(
    `| ${a.name} | ${a.switchesOff} | ${f(d.goodShare, 2)} | ${f(d.worstPhaseP10)} | ${f(d.worstPhaseMedian)} | ${f(d.maxLagP90, 1)} | ${signed(costP10)} | ${signed(costMedian)} | ${worstLoss === undefined ? "—" : `${worstLoss[0]} ${signed(worstLoss[1])}`} | ${requestsShare(runs)} | ${unsafe} | ${verdict} |`
  )
}
writeFileSync(join(dir, "table.md"), `${lines.join("\n")}\n`)
process.stdout.write(`${lines.join("\n")}\n`)
