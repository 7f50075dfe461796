import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as CommandLine from "../src/CommandLine.ts"

/** What the `tool run` handler records. */
interface Run {
  readonly file: string
  readonly json: boolean
}

class Captured extends Context.Service<Captured, CommandLine.Recorder<Run>>()("test/CommandLine/Captured") {}

const run = Command.make("run", {
  file: Argument.String("file").pipe(Argument.withDescription("the file to run")),
  json: Flag.Boolean("json").pipe(Flag.withDescription("print JSON"))
}, (input) => Captured.use((captured) => Effect.sync(() => captured.set(input)))).pipe(Command.withDescription("run a file"))

const tool = Command.make("tool").pipe(Command.withDescription("A tool."), Command.withSubcommands([run]))

const globals = { help: "print this help", completions: "print the completion script" }
const read = CommandLine.reader(tool, Captured, CommandLine.globalFlags({ ...globals, version: { alias: "V", description: "print the version" } }))
const readWithoutVersion = CommandLine.reader(tool, Captured, CommandLine.globalFlags(globals))

describe("CommandLine.reader", () => {
  it("records what the handler of the command was given, without running anything else", () => {
    expect(read(["run", "a.json", "--json"])).toEqual({ parsed: { file: "a.json", json: true }, helpDoc: undefined, error: undefined })
  })

  it("records --help with the command it is about, and keeps its help document", () => {
    const root = read(["--help"])
    expect(root.parsed).toEqual({ _tag: "Help", command: undefined })
    expect(root.error).toBeUndefined()
    const reading = read(["run", "--help"])
    expect(reading.parsed).toEqual({ _tag: "Help", command: "run" })
    const doc = CommandLine.helpDoc(reading, "no help")
    expect(doc.commandPath).toEqual(["tool", "run"])
    expect(doc.description).toBe("run a file")
    expect(doc.flags.map((f) => f.name)).toEqual(["json"])
    expect(doc.globalFlags?.map((f) => f.name)).toEqual(["help", "version", "completions"])
  })

  it("lets --help win over the rest of the line, even a bad one", () => {
    expect(read(["run", "--nope", "--help"]).parsed).toEqual({ _tag: "Help", command: "run" })
  })

  it("records --completions with its shell (an alias read as its shell)", () => {
    expect(read(["--completions", "zsh"]).parsed).toEqual({ _tag: "Completions", shell: "zsh" })
    expect(read(["--completions", "pwsh"]).parsed).toEqual({ _tag: "Completions", shell: "powershell" })
  })

  it("records --version under its alias, and only when the line has one", () => {
    expect(read(["-V"]).parsed).toEqual({ _tag: "Version" })
    expect(readWithoutVersion(["-V"]).parsed).toBeUndefined()
    expect(readWithoutVersion(["run", "--help"]).helpDoc?.globalFlags?.map((f) => f.name)).toEqual(["help", "completions"])
  })

  it("gives an unknown flag as the effect/cli error, and records nothing", () => {
    const { parsed, helpDoc, error } = read(["run", "a.json", "--nope"])
    expect(parsed).toBeUndefined()
    expect(helpDoc).toBeUndefined()
    expect(error?._tag).toBe("ShowHelp")
    const errors = error?._tag === "ShowHelp" ? error.errors : []
    expect(errors.map((e) => e._tag)).toEqual(["UnrecognizedOption"])
  })

  it("helpDoc throws the given message when the line asked for no help", () => {
    expect(() => CommandLine.helpDoc(read(["run", "a.json"]), "tool: no help document")).toThrow("tool: no help document")
  })
})

describe("CommandLine help layout", () => {
  const flag = (name: string, type: string, description?: string, aliases: ReadonlyArray<string> = []) => ({
    name,
    aliases,
    type,
    description: Option.fromUndefinedOr(description),
    required: false
  })

  it("writes a flag with its metavar, a switch without", () => {
    expect(CommandLine.flagUsage(flag("policy", "spec"))).toBe("--policy <spec>")
    expect(CommandLine.flagUsage(flag("shell", "<shell>"))).toBe("--shell <shell>")
    expect(CommandLine.flagUsage(flag("json", "boolean"))).toBe("--json")
  })

  it("lays out two columns, extra lines indented under the second", () => {
    expect(CommandLine.table([["run", "run one\nscenario"], ["schema", "print"]])).toEqual([
      "  run     run one\n          scenario",
      "  schema  print"
    ])
  })

  it("lays out flags with their aliases and descriptions", () => {
    expect(CommandLine.flagRows([flag("help", "boolean", "print this help", ["-h"]), flag("out", "dir")])).toEqual([
      "  --help, -h   print this help",
      "  --out <dir>  "
    ])
  })

  it("lays out the global flags effect/cli documents", () => {
    const doc = CommandLine.helpDoc(read(["--help"]), "no help")
    expect(CommandLine.flagRows(doc.globalFlags ?? [])).toEqual([
      "  --help, -h             print this help",
      "  --version, -V          print the version",
      "  --completions <shell>  print the completion script (choices: bash, zsh, fish, powershell, sh, pwsh)"
    ])
  })
})

describe("CommandLine.script", () => {
  const bench = CommandLine.script("bench", {
    rounds: Flag.Int("rounds").pipe(Flag.withDefault(3), Flag.withDescription("rounds of each contender")),
    peer: Flag.Literals("peer", ["quix", "camel"]).pipe(Flag.withDefault("quix"), Flag.withDescription("the peer")),
    json: CommandLine.switchFlag("json", "print one JSON line, last")
  }, "Times the pipeline.", { invocation: "npm run bench --" })

  it("reads a line into the flags as effect/cli typed them, defaults filled", () => {
    expect(bench.read(["--rounds", "5", "--json"])).toEqual({ _tag: "Run", flags: { rounds: 5, peer: "quix", json: true } })
    expect(bench.read([])).toEqual({ _tag: "Run", flags: { rounds: 3, peer: "quix", json: false } })
  })

  it("generates the help from the definition, with the invocation in its usage line", () => {
    expect(bench.help).toContain("npm run bench -- [flags]")
    expect(bench.help).toContain("Times the pipeline.")
    expect(bench.help).toMatch(/--rounds integer +rounds of each contender/)
    expect(bench.help).toMatch(/--completions shell/)
    expect(bench.read(["--rounds", "x", "--help"])).toEqual({ _tag: "Help", text: bench.help })
    expect(bench.read(["-h"])).toEqual({ _tag: "Help", text: bench.help })
  })

  it("names what is wrong, prefixed by the command, with a suggestion for a typo", () => {
    const typo = bench.read(["--rouns", "5"])
    expect(typo._tag).toBe("Invalid")
    expect(typo._tag === "Invalid" && typo.message).toMatch(/^bench: Unrecognized flag: --rouns[\s\S]*--rounds/)
    const choice = bench.read(["--peer", "kafka-connect"])
    expect(choice._tag === "Invalid" && choice.message).toMatch(/^bench: Invalid value for flag --peer: "kafka-connect"/)
  })

  it("gives the completion script of the command for a shell", () => {
    const line = bench.read(["--completions", "bash"])
    expect(line._tag).toBe("Completions")
    expect(line._tag === "Completions" && line.script).toContain("--rounds")
  })
})

describe("CommandLine.script with positional arguments", () => {
  const table = CommandLine.script("table", {
    dir: Argument.String("dir").pipe(Argument.withDescription("the report folder")),
    json: CommandLine.switchFlag("json", "print JSON")
  }, "Tabulates a folder.")

  it("reads an argument beside flags, in any order, and documents it", () => {
    expect(table.read(["--json", "reports/x"])).toEqual({ _tag: "Run", flags: { dir: "reports/x", json: true } })
    expect(table.read(["reports/x"])).toEqual({ _tag: "Run", flags: { dir: "reports/x", json: false } })
    expect(table.help).toMatch(/ARGUMENTS[\s\S]*the report folder/)
  })

  it("refuses a line without its argument, or with one too many", () => {
    const missing = table.read(["--json"])
    expect(missing._tag === "Invalid" && missing.message).toMatch(/^table: Missing required argument/)
    expect(table.read(["a", "b"])._tag).toBe("Invalid")
  })
})

describe("CommandLine.settle", () => {
  /** Runs `settle` with stdout and stderr captured and the exit code restored after. */
  const settled = <A>(line: CommandLine.ScriptLine<A>) => {
    const out: Array<string> = []
    const err: Array<string> = []
    const write = { out: process.stdout.write, err: process.stderr.write }
    const exitCode = process.exitCode
    process.stdout.write = ((chunk: string) => out.push(chunk) > 0) as typeof process.stdout.write
    process.stderr.write = ((chunk: string) => err.push(chunk) > 0) as typeof process.stderr.write
    try {
      const flags = CommandLine.settle(line, "HELP")
      return { flags, out: out.join(""), err: err.join(""), exitCode: process.exitCode }
    } finally {
      process.stdout.write = write.out
      process.stderr.write = write.err
      process.exitCode = exitCode
    }
  }

  it("gives the flags of a line that asks to run, writing nothing", () => {
    expect(settled({ _tag: "Run", flags: { n: 1 } })).toEqual({ flags: { n: 1 }, out: "", err: "", exitCode: undefined })
  })

  it("writes the help or the completion script on stdout, exit code untouched", () => {
    expect(settled({ _tag: "Help", text: "usage" })).toEqual({ flags: undefined, out: "usage\n", err: "", exitCode: undefined })
    expect(settled({ _tag: "Completions", script: "complete\n" })).toEqual({ flags: undefined, out: "complete\n", err: "", exitCode: undefined })
  })

  it("writes a refused line's message and the help on stderr, exit code 2", () => {
    expect(settled({ _tag: "Invalid", message: "tool: bad" })).toEqual({
      flags: undefined,
      out: "",
      err: "tool: bad\n\nHELP\n",
      exitCode: CommandLine.BAD_USAGE
    })
    expect(CommandLine.BAD_USAGE).toBe(2)
  })
})
