/**
 * What the soak's commands (`npm run soak`, `chaos`, `recovery`, `scaleout`,
 * the producer child) do with the line they read (`CommandLine.script`):
 * the help or a completion script on stdout, exit 0; a wrong line's message,
 * a blank line and the help on stderr, exit {@link BAD_USAGE}; else the
 * flags, to run with.
 */
import type * as CommandLine from "@sluice/core/CommandLine"

/** The exit code of a line the command refuses: 2, as each of these commands has always exited on bad usage (1 is a failed run). */
export const BAD_USAGE = 2

/**
 * The flags of a line that asks to run; for any other line, prints what it
 * asks for (or why it is refused, with `help`) and exits the process.
 *
 * **Example**
 *
 * ```ts
 * const options = Usage.flagsOrExit(ChaosOptions.read(process.argv.slice(2)), ChaosOptions.command.help)
 * ```
 */
export const flagsOrExit = <A>(line: CommandLine.ScriptLine<A>, help: string): A => {
  switch (line._tag) {
    case "Run":
      return line.flags
    case "Help":
      process.stdout.write(`${line.text}\n`)
      return process.exit(0)
    case "Completions":
      process.stdout.write(`${line.script}\n`)
      return process.exit(0)
    case "Invalid":
      process.stderr.write(`${line.message}\n\n${help}\n`)
      return process.exit(BAD_USAGE)
  }
}
