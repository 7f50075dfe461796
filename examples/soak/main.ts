/**
 * soak — the command (`npm run soak -- --rate R --duration D [--source
 * synthetic|kafka] [--sink memory|s3] [--json]`, through `scripts/soak.sh`,
 * which starts the local services when a run needs them).
 *
 * Prints a progress line a second on stderr, then the summary's path; with
 * `--json` the last stdout line is the result object. Exit codes: 0 the run
 * finished with verified = committed and nothing lost (whether or not the rate
 * was sustained: that is in the result); 1 records were lost, verified ≠
 * committed, a commit passed an unverified record, or the run failed; 2 bad
 * options (the message, then the help, on stderr). `--help` prints the help
 * generated from the flags (`Options.command`).
 */
import * as CommandLine from "@sluice/core/CommandLine"
import { Effect } from "effect"
import * as Options from "./Options.ts"

const argv = process.argv.slice(2)
const options = CommandLine.settle(Options.fromArgv(argv), Options.command.help)
if (options === undefined) process.exit()

// Loaded after the options are checked: a bad flag is refused before the pipeline's modules load.
const Soak = await import("./Soak.ts")
Effect.runPromise(Soak.run(options, argv)).then(
  ({ judgements, result, rss, sustained }) => {
    const say = (line: string) => (options.json ? process.stderr : process.stdout).write(`${line}\n`)
    say(`\n${sustained.sustained ? "sustained" : "NOT sustained"}: ${sustained.evidence}`)
    say(`RSS ${rss.flat ? "flat" : "NOT flat"} after warm-up: ${rss.evidence}`)
    for (const j of judgements) say(`hypothesis ${j.id} (${j.hypothesis}): ${j.verdict}`)
    say(`report: ${result.report}/summary.md`)
    const intact = result.lost === 0 && result.verified === result.committed && result.committedNotVerified === 0
    if (!intact) {
      process.stderr.write(
        `soak FAILED: read ${result.read}, verified ${result.verified}, committed ${result.committed}, lost ${result.lost}, ` +
          `committed while not verified ${result.committedNotVerified}\n`
      )
    }
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`)
    process.exit(intact ? 0 : 1)
  },
  (error: unknown) => {
    process.stderr.write(`soak FAILED: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
)
