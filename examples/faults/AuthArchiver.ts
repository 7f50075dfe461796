/**
 * The archiver as a child process for the auth faults and the secrets test:
 * `archiveTopic` (drain the topic once) with the options of a JSON file, the
 * secrets in it (a SASL password, an S3 secret key, a TLS private key), as a
 * deployment reads them from a mounted file rather than argv.
 *
 *   node --conditions=@sluice/source examples/faults/AuthArchiver.ts <options.json>
 *
 * It prints what an operator sees: every log line down to Debug (Effect's
 * logger, on stderr), the run's stats as JSON on stdout, or the failure
 * (`console.error`, with its causes) and exit code 1.
 */
import { readFileSync } from "node:fs"
import { Effect, References } from "effect"
import { archiveTopic } from "../src/KafkaToS3.ts"
import type { ArchiveOptions } from "../src/KafkaToS3.ts"

/** A bound for one drain of a small topic: a hung run fails instead of hanging its parent. */
const RUN_TIMEOUT = "60 seconds"

const file = process.argv[2]
if (file === undefined) {
  console.error("usage: AuthArchiver.ts <options.json>")
  process.exitCode = 2
} else {
  const options = JSON.parse(readFileSync(file, "utf8")) as ArchiveOptions
  Effect.runPromise(archiveTopic(options).pipe(
    Effect.timeout(RUN_TIMEOUT),
    Effect.provideService(References.MinimumLogLevel, "Debug")
  )).then(
    (stats) => console.log(JSON.stringify(stats)),
    (error: unknown) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
