/**
 * `npm run brokers`' pure parts: the command line (`brokers/Options.ts`), the
 * verdicts (`brokers/Verdict.ts`), the settings merge and the Prometheus sum
 * of `brokers/ArchiverChild.ts`, the report's JSON and CSV (`brokers/Report.ts`).
 * The scenarios themselves need the 3-node cluster and run by hand
 * (`npm run brokers`, minutes on 2 cores); figures in examples/README.md.
 */
import { describe, expect, it } from "vitest"
import { merge, metricSum } from "../brokers/ArchiverChild.ts"
import { command, parse, SCENARIOS, UsageError } from "../brokers/Options.ts"
import * as Report from "../brokers/Report.ts"
import type { Outcome } from "../brokers/Scenarios.ts"
import * as Verdict from "../brokers/Verdict.ts"

const MiB = 2 ** 20

const clean: Verdict.Archived = {
  auditOk: true,
  records: 1000,
  expected: 1000,
  holes: 0,
  conflicts: 0,
  checksumFailures: 0,
  orphanedUploads: 0,
  committedAtEnd: true,
  archiverExit: 0
}
const failed = (v: Verdict.Verdict) => v.checks.filter((c) => !c.ok).map((c) => c.name)

describe("brokers options", () => {
  it("defaults to every scenario, 120 s of mTLS, 20 s phases", () => {
    expect(parse([])).toEqual({ _tag: "Run", options: { scenarios: [...SCENARIOS], durationSeconds: 120, phaseSeconds: 20, json: false, out: "reports" } })
  })
  it("keeps the named scenarios once each, in the canonical order", () => {
    expect(parse(["--scenario", "mtls-long", "--scenario", "producer-flood", "--scenario", "mtls-long", "--json"])).toMatchObject({
      _tag: "Run",
      options: { scenarios: ["producer-flood", "mtls-long"], json: true }
    })
  })
  it("rejects an unknown scenario, a bad duration and an unknown flag with a UsageError naming them", () => {
    expect(() => parse(["--scenario", "nope"])).toThrow(/--scenario: unknown scenario "nope"/)
    expect(() => parse(["--duration", "5"])).toThrow(/--duration: expected a whole number of seconds in \[10, 3600\], got "5"/)
    expect(() => parse(["--phase-seconds", "2.5"])).toThrow(/--phase-seconds/)
    expect(() => parse(["--rate", "1"])).toThrow(UsageError)
  })
  it("refuses a typo'd flag in effect/cli's words, with its suggestion", () => {
    expect(() => parse(["--scenaro", "mtls-long"])).toThrow(/^brokers: Unrecognized flag: --scenaro\b[\s\S]*--scenario/)
  })
  it("--help and -h give the help generated from the flags; --completions the shell's script", () => {
    for (const flag of ["npm run brokers -- [flags]", "--scenario NAME", "--duration S", "--phase-seconds S", "--json", "--out DIR", "--help, -h", "--completions"]) {
      expect(command.help, flag).toContain(flag)
    }
    expect(command.help).toContain("10..3600 (default 120)")
    expect(parse(["--help"])).toEqual({ _tag: "Help", text: command.help })
    expect(parse(["--duration", "5", "-h"])).toEqual({ _tag: "Help", text: command.help })
    const completions = parse(["--completions", "bash"])
    expect(completions._tag === "Completions" && completions.script).toContain("--phase-seconds")
  })
})

describe("brokers verdicts", () => {
  it("an archive passes only when the audit is clean, every record is found, committed = ends and the drain exited 0", () => {
    expect(Verdict.archivedChecks("a", clean).every((c) => c.ok)).toBe(true)
    const broken: Array<[Partial<Verdict.Archived>, string]> = [
      [{ auditOk: false }, "a: audit clean"],
      [{ holes: 1 }, "a: audit clean"],
      [{ orphanedUploads: 2 }, "a: audit clean"],
      [{ records: 999 }, "a: every record archived"],
      [{ records: 0, expected: 0 }, "a: every record archived"],
      [{ committedAtEnd: false }, "a: committed offsets = ends"],
      [{ archiverExit: null }, "a: drained cleanly on SIGTERM"]
    ]
    for (const [change, name] of broken) {
      expect(Verdict.archivedChecks("a", { ...clean, ...change }).filter((c) => !c.ok).map((c) => c.name), JSON.stringify(change)).toEqual([name])
    }
  })

  const flood: Verdict.FloodFigures = {
    budgetBytes: 64 * MiB,
    heldSamples: 40,
    heldMaxBytes: 48 * MiB,
    rssMaxBytes: 400 * MiB,
    lagFirst: 5000,
    lagLast: 1_300_000,
    lagSlope: 70_000,
    rates: { producedPerSecond: 70_000, archivedPerSecond: 6000 },
    archive: clean
  }
  it("producer-flood: held bytes at or under the budget pass, one byte over fails; lag must grow", () => {
    expect(Verdict.producerFlood(flood).pass).toBe(true)
    expect(Verdict.producerFlood({ ...flood, heldMaxBytes: 64 * MiB }).pass).toBe(true)
    expect(failed(Verdict.producerFlood({ ...flood, heldMaxBytes: 64 * MiB + 1 }))).toEqual(["held bytes stayed within the memory budget"])
    expect(failed(Verdict.producerFlood({ ...flood, heldSamples: 2 }))).toEqual(["held bytes stayed within the memory budget"])
    expect(failed(Verdict.producerFlood({ ...flood, rssMaxBytes: Verdict.rssCeiling(flood.budgetBytes) + 1 }))).toEqual(["RSS under its ceiling"])
    expect(failed(Verdict.producerFlood({ ...flood, rates: { producedPerSecond: 5000, archivedPerSecond: 6000 } }))).toEqual([
      "the producer outran the archiver: lag grew"
    ])
  })

  const slowFast: Verdict.SlowFastFigures = {
    producedPerSecond: 10_000,
    fast: { archivedPerSecond: 9800, lagMax: 90_000, lagLast: 30_000, lagSlope: 100 },
    slow: { archivedPerSecond: 3000, lagMax: 140_000, lagLast: 140_000, lagSlope: 7000 },
    fastArchive: clean,
    slowArchive: clean
  }
  it("slow-beside-fast: the fast lag bound is 15 s of the produce rate; the slow group must fall behind", () => {
    expect(Verdict.slowBesideFast(slowFast).pass).toBe(true)
    expect(Verdict.slowBesideFast({ ...slowFast, fast: { ...slowFast.fast, lagMax: 150_000 } }).pass).toBe(true)
    expect(failed(Verdict.slowBesideFast({ ...slowFast, fast: { ...slowFast.fast, lagMax: 150_001 } }))).toEqual(["the fast group's lag stayed bounded"])
    expect(failed(Verdict.slowBesideFast({ ...slowFast, fast: { ...slowFast.fast, archivedPerSecond: 8999 } }))).toEqual([
      "the fast group kept up (not dragged by the slow one)"
    ])
    expect(failed(Verdict.slowBesideFast({ ...slowFast, slow: { ...slowFast.slow, archivedPerSecond: 9000 } }))).toEqual([
      "the slow group really was slow: it fell behind"
    ])
    expect(failed(Verdict.slowBesideFast({ ...slowFast, slowArchive: { ...clean, archiverExit: 1 } }))).toEqual(["slow group: drained cleanly on SIGTERM"])
  })

  const throttle: Verdict.ThrottleFigures = {
    baseline: { producedPerSecond: 20_000, archivedPerSecond: 20_000 },
    throttled: { producedPerSecond: 20_000, archivedPerSecond: 15_000, followerOutOfIsrShare: 1, followerBytesPerSecond: 520 * 1024, leaderBytesPerSecond: 3 * MiB },
    throttleBytesPerSecond: 512 * 1024,
    minIsr: 2,
    minInsyncReplicas: 2,
    rejoinSeconds: 9,
    archive: clean
  }
  it("replication-throttle: the follower out of the ISR and at most 1.5 × the rate + 256 KiB/s; ISR never under min.insync", () => {
    expect(Verdict.replicationThrottle(throttle).pass).toBe(true)
    const held = "the throttle held the follower back"
    expect(failed(Verdict.replicationThrottle({ ...throttle, throttled: { ...throttle.throttled, followerOutOfIsrShare: 0.7 } }))).toEqual([held])
    expect(failed(Verdict.replicationThrottle({ ...throttle, throttled: { ...throttle.throttled, followerBytesPerSecond: 1.5 * 512 * 1024 + 256 * 1024 + 1 } }))).toEqual([held])
    expect(failed(Verdict.replicationThrottle({ ...throttle, minIsr: 1 }))).toEqual(["acks=all kept producing with the ISR at min.insync.replicas"])
    expect(failed(Verdict.replicationThrottle({ ...throttle, rejoinSeconds: undefined }))).toEqual(["the follower rejoined the ISR once the throttle was removed"])
  })

  it("mtls-long: a client without a certificate must be refused, and the archiver keep up at ≥ 80%", () => {
    const mtls: Verdict.MtlsFigures = { durationSeconds: 120, noCertRefused: true, noCertError: "bad certificate", rates: { producedPerSecond: 5000, archivedPerSecond: 4000 }, archive: clean }
    expect(Verdict.mtlsLong(mtls).pass).toBe(true)
    expect(failed(Verdict.mtlsLong({ ...mtls, noCertRefused: false }))).toEqual(["a client without a certificate is refused"])
    expect(failed(Verdict.mtlsLong({ ...mtls, rates: { producedPerSecond: 5000, archivedPerSecond: 3999 } }))).toEqual(["the archiver kept up over mTLS for the whole run"])
  })

  it("a verdict without checks does not pass", () => {
    const outcome: Outcome = { name: "mtls-long", verdict: { pass: false, checks: [] }, figures: {}, rows: [], notes: [] }
    expect(Report.result([outcome], [], "r").pass).toBe(false)
    expect(Report.result([], [], "r").pass).toBe(false)
  })
})

describe("brokers helpers", () => {
  it("merges overrides into the archiver's defaults key by key", () => {
    expect(merge({ pipeline: { memoryBudget: "256 MiB", rate: null, batch: { records: 50000, bytes: "8 MiB" } }, policies: { batch: { minBytes: "1 MiB" } } }, {
      pipeline: { rate: 1, batch: { bytes: "1 MiB" } }
    })).toEqual({ pipeline: { memoryBudget: "256 MiB", rate: 1, batch: { records: 50000, bytes: "1 MiB" } }, policies: { batch: { minBytes: "1 MiB" } } })
  })
  it("sums a metric over its label sets, and only that metric", () => {
    const text = [
      "# HELP sluice_inflight_bytes Bytes held",
      "sluice_inflight_bytes{sluice_pipeline=\"a\",p=\"0\"} 100",
      "sluice_inflight_bytes{sluice_pipeline=\"a\",p=\"1\"} 23",
      "sluice_inflight_bytes_total 999",
      "sluice_records_committed_total{sluice_pipeline=\"a\"} 5"
    ].join("\n")
    expect(metricSum(text, "sluice_inflight_bytes")).toBe(123)
    expect(metricSum(text, "sluice_records_committed_total")).toBe(5)
    expect(metricSum(text, "sluice_absent")).toBeUndefined()
  })
  it("writes the rows as CSV with the union of their columns", () => {
    expect(Report.csv([{ t: 1, phase: "a", x: 2 }, { t: 2.5, phase: "b", y: 3 }])).toBe("t,phase,x,y\n1,a,2,\n2.500,b,,3\n")
  })
})
