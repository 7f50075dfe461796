/**
 * The command lines of the soak's commands (`npm run soak`, `chaos`,
 * `recovery`, `scaleout`, and the producer child), read with their
 * `effect/cli` definitions without running anything: the help generated from
 * the flags, a typo'd flag refused in `effect/cli`'s words, and the values
 * only the command checks refused with the messages it has always given.
 */
import { describe, expect, it } from "@effect/vitest"
import type * as CommandLine from "@sluice/core/CommandLine"
import * as ChaosOptions from "../soak/ChaosOptions.ts"
import * as Options from "../soak/Options.ts"
import * as ProducerOptions from "../soak/ProducerOptions.ts"
import * as RecoveryOptions from "../soak/RecoveryOptions.ts"
import * as ScaleoutOptions from "../soak/ScaleoutOptions.ts"

/** The message of a refused line (fails the test when the line was not refused). */
const invalid = <A>(line: CommandLine.ScriptLine<A>): string => {
  expect(line._tag).toBe("Invalid")
  return line._tag === "Invalid" ? line.message : ""
}

const commands = [
  { name: "soak", script: Options.command, read: Options.fromArgv, usage: "npm run soak -- [flags]", flags: ["--rate R", "--duration D", "--source", "--sink", "--json", "--partitions P", "--record-bytes B", "--out DIR"] },
  { name: "chaos", script: ChaosOptions.command, read: ChaosOptions.fromArgv, usage: "npm run chaos -- [flags]", flags: ["--runs", "--records", "--partitions", "--seed", "--min-ms", "--max-ms", "--json"] },
  { name: "recovery", script: RecoveryOptions.command, read: RecoveryOptions.fromArgv, usage: "npm run recovery -- [flags]", flags: ["--backlogs", "--modes", "--kill-fraction", "--timeout-seconds", "--json"] },
  { name: "scaleout", script: ScaleoutOptions.command, read: ScaleoutOptions.fromArgv, usage: "npm run scaleout -- [flags]", flags: ["--instances", "--partitions", "--rate", "--hold-seconds", "--timeout-seconds", "--capacity", "--protocol", "--json"] },
  { name: "soak-producer", script: ProducerOptions.command, read: ProducerOptions.command.read, usage: "examples/soak/producer.ts [flags] <brokers> <topic>", flags: ["brokers", "topic", "partitions", "rate", "record-bytes", "acks"] }
] as const

describe("the soak's command lines", () => {
  for (const { name, script, read, usage, flags } of commands) {
    it(`${name}: --help and -h give the help generated from the flags`, () => {
      for (const flag of [...flags, "--help, -h", "--completions"]) expect(script.help, flag).toContain(flag)
      expect(script.help).toContain(usage)
      expect(read(["--help"])).toEqual({ _tag: "Help", text: script.help })
      expect(read(["-h"])).toEqual({ _tag: "Help", text: script.help })
    })

    it(`${name}: --completions gives the shell's completion script`, () => {
      const line = read(["--completions", "bash"])
      expect(line._tag).toBe("Completions")
      expect(line._tag === "Completions" && line.script).toContain(name)
    })
  }

  it("refuses a typo'd flag in effect/cli's words, with its suggestion", () => {
    expect(invalid(Options.fromArgv(["--rate", "1k", "--duration", "5", "--rat", "2"]))).toMatch(/^soak: Unrecognized flag: --rat\b[\s\S]*--rate/)
    expect(invalid(ChaosOptions.fromArgv(["--runz", "2"]))).toMatch(/^chaos: Unrecognized flag: --runz\b[\s\S]*--runs/)
    expect(invalid(RecoveryOptions.fromArgv(["--mode", "term"]))).toMatch(/^recovery: Unrecognized flag: --mode\b[\s\S]*--modes/)
    expect(invalid(ScaleoutOptions.fromArgv(["--instance", "2"]))).toMatch(/^scaleout: Unrecognized flag: --instance\b[\s\S]*--instances/)
    expect(invalid(ProducerOptions.command.read(["b:9092", "t", "--rat", "5"]))).toMatch(/^soak-producer: Unrecognized flag: --rat\b/)
  })
})

describe("npm run soak", () => {
  it("reads rates, durations and counts as written, with the defaults", () => {
    expect(Options.fromArgv(["--rate", "1M", "--duration", "5m", "--json"])).toEqual({
      _tag: "Run",
      flags: { rate: 1_000_000, duration: 300_000, source: "synthetic", sink: "memory", payloads: "pooled", json: true, partitions: 8, recordBytes: 150, out: "reports" }
    })
    const line = Options.fromArgv(["--rate", "2.5e5", "--duration", "60", "--source", "kafka", "--sink", "s3", "--partitions", "2", "--record-bytes", "1k", "--out", "/tmp/r", "--payloads", "fresh"])
    expect(line).toEqual({
      _tag: "Run",
      flags: { rate: 250_000, duration: 60_000, source: "kafka", sink: "s3", payloads: "fresh", json: false, partitions: 2, recordBytes: 1000, out: "/tmp/r" }
    })
  })

  it("refuses every bad value at once, with the messages it has always given", () => {
    const message = invalid(Options.fromArgv(["--rate", "-1", "--duration", "0.5", "--partitions", "2000", "--record-bytes", "8", "--out", ""]))
    expect(message).toMatch(/^soak: Expected a rate of records per second greater than 0, got -1\n {2}at \["rate"\]/)
    for (const text of [
      `Expected a duration of at least 1 second, got 500 ms\n  at ["duration"]`,
      `Expected a whole number of partitions from 1 to 1024, got 2000\n  at ["partitions"]`,
      `Expected a whole number of bytes ≥ 16, got 8\n  at ["recordBytes"]`,
      `at ["out"]`
    ]) expect(message).toContain(text)
    expect(invalid(Options.fromArgv(["--rate", "fast", "--duration", "5"]))).toContain(`Expected a rate of records per second (250000, 250k, 1M), got "fast"\n  at ["rate"]`)
  })

  it("leaves a missing flag and a flag given twice to effect/cli; a bad choice is named with the other bad values", () => {
    expect(invalid(Options.fromArgv(["--duration", "5"]))).toBe("soak: Missing required flag: --rate")
    expect(invalid(Options.fromArgv(["--rate", "1", "--rate", "2", "--duration", "5"]))).toMatch(/^soak: Invalid value for flag --rate: "2 occurrences"/)
    expect(invalid(Options.fromArgv(["--rate", "1", "--duration", "5", "--sink", "tape"]))).toBe(`soak: Expected "memory" | "s3"\n  at ["sink"]`)
    const both = invalid(Options.fromArgv(["--rate", "0", "--duration", "5", "--source", "file", "--payloads", "x"]))
    for (const at of [`at ["rate"]`, `at ["source"]`, `at ["payloads"]`]) expect(both).toContain(at)
  })
})

describe("npm run chaos", () => {
  it("reads the flags, with the defaults", () => {
    expect(ChaosOptions.fromArgv([])).toEqual({
      _tag: "Run",
      flags: { runs: 20, records: 3_000_000, partitions: 8, seed: 7, minMs: 0, maxMs: 1000, json: false }
    })
    expect(ChaosOptions.fromArgv(["--runs", "1", "--records", "400000", "--partitions", "2", "--max-ms", "0", "--json"])).toEqual({
      _tag: "Run",
      flags: { runs: 1, records: 400_000, partitions: 2, seed: 7, minMs: 0, maxMs: 0, json: true }
    })
  })

  it("refuses a value out of its range with the message it has always given", () => {
    expect(invalid(ChaosOptions.fromArgv(["--runs", "0"]))).toBe("chaos: --runs: expected a whole number in [1, 1000], got 0")
    expect(invalid(ChaosOptions.fromArgv(["--min-ms", "500", "--max-ms", "100"]))).toBe("chaos: --max-ms: expected a whole number in [500, 600000], got 100")
    expect(invalid(ChaosOptions.fromArgv(["--partitions", "65"]))).toBe("chaos: --partitions: expected a whole number in [1, 64], got 65")
    expect(invalid(ChaosOptions.fromArgv(["--runs", "1.5"]))).toMatch(/^chaos: Invalid value for flag --runs: "1.5"/)
  })
})

describe("npm run recovery", () => {
  it("reads the lists and numbers, with the defaults", () => {
    expect(RecoveryOptions.fromArgv([])).toEqual({
      _tag: "Run",
      flags: { backlogs: [50_000, 100_000, 200_000, 400_000], modes: ["term", "kill-static", "kill"], killFraction: 0.25, timeoutMillis: 300_000, json: false }
    })
    expect(RecoveryOptions.fromArgv(["--backlogs", "1000", "--modes", "term, kill-static", "--json"])).toEqual({
      _tag: "Run",
      flags: { backlogs: [1000], modes: ["term", "kill-static"], killFraction: 0.25, timeoutMillis: 300_000, json: true }
    })
  })

  it("refuses a bad list item or a value out of its range with the message it has always given", () => {
    expect(invalid(RecoveryOptions.fromArgv(["--backlogs", "1000,500"]))).toBe("recovery: --backlogs: each must be a whole number of records in [1000, 10000000], got 500")
    expect(invalid(RecoveryOptions.fromArgv(["--modes", "term,restart"]))).toBe(`recovery: --modes: each one of term, kill-static, kill, got "restart"`)
    expect(invalid(RecoveryOptions.fromArgv(["--kill-fraction", "1"]))).toBe("recovery: --kill-fraction: expected a number in (0, 1), got 1")
    expect(invalid(RecoveryOptions.fromArgv(["--timeout-seconds", "5"]))).toBe("recovery: --timeout-seconds: expected 10..3600, got 5")
  })
})

describe("npm run scaleout", () => {
  it("reads the flags, --no-capacity included, with the defaults", () => {
    expect(ScaleoutOptions.fromArgv([])).toEqual({
      _tag: "Run",
      flags: { instances: 3, partitions: 24, rate: 20_000, holdMillis: 10_000, timeoutMillis: 120_000, capacity: true, protocol: "classic", json: false }
    })
    expect(ScaleoutOptions.fromArgv(["--instances", "2", "--partitions", "6", "--rate", "2000", "--hold-seconds", "2", "--no-capacity", "--protocol", "consumer", "--json"])).toEqual({
      _tag: "Run",
      flags: { instances: 2, partitions: 6, rate: 2000, holdMillis: 2000, timeoutMillis: 120_000, capacity: false, protocol: "consumer", json: true }
    })
    expect(invalid(ScaleoutOptions.fromArgv(["--protocol", "kip848"]))).toMatch(/^scaleout: .*--protocol/)
  })

  it("refuses a value out of its range with the message it has always given", () => {
    expect(invalid(ScaleoutOptions.fromArgv(["--instances", "8", "--partitions", "6"]))).toBe("scaleout: --instances: expected a whole number in [2, 6], got 8")
    expect(invalid(ScaleoutOptions.fromArgv(["--partitions", "1"]))).toBe("scaleout: --partitions: expected a whole number in [2, 256], got 1")
    expect(invalid(ScaleoutOptions.fromArgv(["--rate", "10"]))).toBe("scaleout: --rate: expected a whole number in [100, 1000000], got 10")
  })
})

describe("the soak's producer child", () => {
  it("reads the arguments ProducerChild.start passes, with the defaults", () => {
    expect(ProducerOptions.command.read(["localhost:9092", "t", "8", "20000", "150", "all"])).toEqual({
      _tag: "Run",
      flags: { brokers: "localhost:9092", topic: "t", partitions: 8, rate: 20_000, recordBytes: 150, acks: "all" }
    })
    expect(ProducerOptions.command.read(["localhost:9092", "t"])).toEqual({
      _tag: "Run",
      flags: { brokers: "localhost:9092", topic: "t", partitions: 8, rate: 1000, recordBytes: 150, acks: "leader" }
    })
  })

  it("refuses bad acks and a missing topic in effect/cli's words", () => {
    expect(invalid(ProducerOptions.command.read(["b:9092", "t", "8", "100", "150", "some"]))).toBe(`soak-producer: Invalid value for argument <acks>: "some". Expected: "leader" | "all"`)
    expect(invalid(ProducerOptions.command.read(["b:9092"]))).toMatch(/^soak-producer: Missing required argument: topic/)
  })
})
