/**
 * `node --conditions=@sluice/source examples/ablation/main.ts DIR --variants a,b,… --out F.jsonl`
 * (run by scripts/ablation.sh, `npm run ablation`): every scenario file of DIR
 * × each named variant of `Ablations.ts`, in the simulator (the testkit's
 * `Runner.run`, virtual time); one JSON line per run to F (the variant, the
 * scenario, the summary's judged figures and its request count). Progress on stderr. Exit codes:
 * 0 done, 1 a run lost a record undetected or committed an unverified one (a
 * loss the source reported — retention deleting unread records — is counted,
 * not failed: the scenario expects it), 2 bad options.
 */
import { appendFileSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Runner, Scenario } from "@sluice/testkit"
import { Effect } from "effect"
import { Argument, Flag } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { ablations, byName } from "./Ablations.ts"

const command = CommandLine.script(
  "ablation",
  {
    dir: Argument.String("dir").pipe(Argument.withDescription("the folder of the scenario files (*.json) to run")),
    variants: Flag.String("variants").pipe(
      Flag.withMetavar("a,b,…"),
      Flag.withDescription(`the variants to run, comma-separated: ${ablations.map((a) => a.name).join(",")}`)
    ),
    out: Flag.String("out").pipe(Flag.withMetavar("F.jsonl"), Flag.withDescription("one JSON line per run goes here (the file is emptied first)"))
  },
  "Every scenario file of DIR × each named variant (a rule of the default composition switched off), in the simulator. " +
    "Progress on stderr. Exit 0 done, 1 a run lost a record undetected or committed an unverified one, 2 bad options.",
  { invocation: "node --conditions=@sluice/source examples/ablation/main.ts" }
)

/** The line read, the variants it names checked against the ablations. */
const line = (() => {
  const line = command.read(process.argv.slice(2))
  if (line._tag !== "Run") return line
  const names = line.flags.variants.split(",").filter((n) => n !== "")
  const unknown = names.filter((n) => byName(n) === undefined)
  return names.length > 0 && unknown.length === 0
    ? { _tag: "Run" as const, flags: { ...line.flags, names } }
    : { _tag: "Invalid" as const, message: `ablation: ${unknown.length > 0 ? `unknown variant(s) ${unknown.join(", ")}; ` : ""}one scenario directory, --variants and --out` }
})()
const flags = CommandLine.settle(line, command.help)
if (flags === undefined) process.exit()
const { dir, names, out } = flags
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
writeFileSync(out, "")

const program = Effect.gen(function*() {
  let bad = 0
  let done = 0
  for (const file of files) {
    const scenario = yield* Scenario.load(join(dir, file))
    for (const name of names) {
      const variant = byName(name)
      if (variant === undefined) continue
      const { summary } = yield* Runner.run(scenario, { policy: name, policies: variant.policies })
      done++
      if (summary.undetectedLostRecords > 0 || summary.committedNotVerified > 0) bad++
      appendFileSync(out, `${JSON.stringify({
        variant: name,
        scenario: summary.scenario,
        worstPhaseGoodput: summary.worstPhaseGoodput,
        goodputRatio: summary.goodputRatio,
        maxLagSeconds: summary.maxLagSeconds,
        throttleRate: summary.throttleRate,
        requests: summary.requests,
        lostRecords: summary.lostRecords,
        undetectedLostRecords: summary.undetectedLostRecords,
        committedNotVerified: summary.committedNotVerified,
        failure: summary.failure
      })}\n`)
      process.stderr.write(`ablation: [${done}/${files.length * names.length}] ${summary.scenario} × ${name}: worst phase ${summary.worstPhaseGoodput ?? "—"}, max lag ${summary.maxLagSeconds} s\n`)
    }
  }
  return bad
})

Effect.runPromise(program).then(
  (bad) => {
    if (bad > 0) process.stderr.write(`ablation: ${bad} runs lost a record undetected or committed an unverified one\n`)
    process.exitCode = bad > 0 ? 1 : 0
  },
  (error: unknown) => {
    process.stderr.write(`ablation: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 2
  }
)
