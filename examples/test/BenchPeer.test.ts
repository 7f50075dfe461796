/**
 * bench:peer's own parts, without the peer: the reader of Quix Streams'
 * `S3FileSink` archives (`examples/bench/peer-archive.ts`) on an object the
 * real sink's JSON format wrote (quixstreams 3.28.1, `JSONFormat.serialize`,
 * records 5..9 of partition 1, no keys: the fixture under
 * `fixtures/quix-s3-sink/`) and of the Camel route's archives (an object the
 * route in `bench/peer/camel` wrote, Camel 4.14.0: the 10 records of partition
 * 1, under `fixtures/camel-route/`), and the process-tree measure
 * (`examples/bench/process-tree.ts`), and its command line (`peer.ts`, the
 * trouble run's flags from `trouble.ts`). None needs the services or the
 * virtualenv; the benchmark itself (`npm run bench:peer`) runs by hand.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { command, decode, runSeconds, storedSecondsOf } from "../bench/peer.ts"
import { peerProgram, SetupFailed } from "../bench/peers.ts"
import * as PeerArchive from "../bench/peer-archive.ts"
import * as ProcessTree from "../bench/process-tree.ts"

const fixtureTopic = "sluice-bench-peer-fixture"
const fixtureKey = "sluice_bench_peer_fixture/1/0000000000000000005.jsonl"
const fixture = readFileSync(join(import.meta.dirname, "fixtures/quix-s3-sink", fixtureKey), "utf8")
const camelKey = "sluice_bench_peer_fixture/1/0000000000000000000.txt"
const camelFixture = readFileSync(join(import.meta.dirname, "fixtures/camel-route", camelKey), "utf8")

describe("bench:peer — reading the peer's archive", () => {
  it("names the object as FileSink does: sanitized topic, partition, first offset", () => {
    expect(PeerArchive.sanitizeTopic(fixtureTopic)).toBe("sluice_bench_peer_fixture")
    expect(PeerArchive.parseKey(fixtureTopic, fixtureKey)).toEqual({ partition: 1, first: 5, format: "jsonl" })
    expect(PeerArchive.parseKey(fixtureTopic, camelKey)).toEqual({ partition: 1, first: 0, format: "txt" })
    expect(PeerArchive.parseKey(fixtureTopic, "sluice_bench_peer_fixture/1/0000000000000000000.csv")).toBeUndefined()
    expect(PeerArchive.parseKey(fixtureTopic, "other/1/0000000000000000005.jsonl")).toBeUndefined()
    expect(PeerArchive.parseKey(fixtureTopic, "sluice_bench_peer_fixture/1/5.jsonl")).toBeUndefined()
  })

  it("reads each line as the record at first + line, and counts what is missing", () => {
    const t = PeerArchive.tally([0, 10])
    PeerArchive.countObject(t, 1, 5, fixture)
    expect(t.records).toBe(5)
    expect(t.corrupt).toBe(0)
    expect(PeerArchive.totals(t)).toEqual({ lost: 5, duplicates: 0, lostCommitted: 0 }) // offsets 0..4 are in no object
    // Committed up to offset 3 of partition 1: offsets 0..2 are committed and in no object.
    expect(PeerArchive.totals(t, [0, 3]).lostCommitted).toBe(3)
    expect(PeerArchive.totals(t, [0, 10]).lostCommitted).toBe(5)
  })

  it("reads the Camel route's object as one value a line, every offset of the partition once", () => {
    const t = PeerArchive.tally([0, 10])
    PeerArchive.countObject(t, 1, 0, camelFixture, "txt")
    expect(t.records).toBe(10)
    expect({ corrupt: t.corrupt, stray: t.stray }).toEqual({ corrupt: 0, stray: 0 })
    expect(PeerArchive.totals(t, [0, 10])).toEqual({ lost: 0, duplicates: 0, lostCommitted: 0 })
    // Read as JSON lines, no line is the record: the format is the key's, not a guess.
    const asJson = PeerArchive.tally([0, 10])
    PeerArchive.countObject(asJson, 1, 0, camelFixture)
    expect(asJson.corrupt).toBe(10)
    // A value changed in the object is corrupt, and its offset lost.
    const changed = PeerArchive.tally([0, 10])
    PeerArchive.countObject(changed, 1, 0, camelFixture.replace("1/3/x", "1/3/y"), "txt")
    expect({ corrupt: changed.corrupt, lost: PeerArchive.totals(changed).lost }).toEqual({ corrupt: 1, lost: 1 })
  })

  it("counts an object stored twice as duplicates, and a changed or surplus line as corrupt or stray", () => {
    const twice = PeerArchive.tally([0, 10])
    PeerArchive.countObject(twice, 1, 5, fixture)
    PeerArchive.countObject(twice, 1, 5, fixture)
    expect(PeerArchive.totals(twice)).toEqual({ lost: 5, duplicates: 5, lostCommitted: 0 })

    const changed = PeerArchive.tally([0, 10])
    PeerArchive.countObject(changed, 1, 5, fixture.replace("1/7/x", "1/7/y"))
    expect(changed.corrupt).toBe(1)
    expect(PeerArchive.totals(changed).lost).toBe(6)

    const shifted = PeerArchive.tally([0, 8])
    PeerArchive.countObject(shifted, 1, 5, fixture) // offsets 8 and 9 are past the end
    expect(shifted.stray).toBe(2)
  })
})

describe("bench:peer — measuring a process tree", () => {
  it("reads the children's CPU from bash's `times`", () => {
    expect(ProcessTree.parseTimes("0m0.004s 0m0.001s\n1m2.500s 0m0.250s\n")).toBeCloseTo(62.75, 6)
    expect(ProcessTree.parseTimes("pid 12\n")).toBeUndefined()
  })

  it.runIf(process.platform === "linux")("measures a tree's CPU and exit status through the wrapper", async () => {
    // A child that spins ~0.3 s of CPU, under a shell: two levels below the wrapper.
    const spin = "const t = process.cpuUsage(); while (process.cpuUsage(t).user < 300000); console.log('spun')"
    const tree = ProcessTree.start("test", "bash", ["-c", `"${process.execPath}" -e "${spin}"; exit 3`])
    const usage = await tree.done
    expect(usage.code).toBe(3)
    expect(usage.stdout).toEqual(["spun"])
    expect(usage.cpuSource).toBe("times")
    expect(usage.cpuSeconds).toBeGreaterThanOrEqual(0.3)
    expect(usage.cpuSeconds).toBeLessThan(5)
    expect(usage.cpuSeconds).toBeGreaterThanOrEqual(usage.sampledCpuSeconds)
  })
})

describe("bench:peer — the command line", () => {
  const invalid = (argv: ReadonlyArray<string>): string => {
    const line = decode(argv)
    return line._tag === "Invalid" ? line.message : `not refused: ${JSON.stringify(line)}`
  }

  it("generates the help from the definition: the rounds' flags and the trouble run's, with their defaults", () => {
    for (const flag of ["--records n", "--partitions n", "--rounds n", "--peer choice", "--peer-defaults", "--sluice-from choice", "--trouble list", "--contenders list", "--rate n", "--seconds n", "--trouble-at n", "--trouble-seconds n", "--json"]) {
      expect(command.help).toContain(flag)
    }
    expect(command.help).toContain("npm run bench:peer -- [flags]")
    expect(command.help).toContain("100 to 200000 (default 20000)")
    expect(decode(["--help"])).toEqual({ _tag: "Help", text: command.help })
  })

  it("reads the throughput rounds, their defaults, and counts written with _ or ,", () => {
    expect(decode([])).toEqual({ _tag: "Run", flags: { _tag: "Rounds", records: 1_000_000, partitions: 8, rounds: 3, peer: "quix", peerDefaults: false, sluiceFrom: "bundle", json: false } })
    expect(decode(["--records", "200_000", "--rounds", "1", "--peer-defaults", "--json"])).toEqual({
      _tag: "Run",
      flags: { _tag: "Rounds", records: 200_000, partitions: 8, rounds: 1, peer: "quix", peerDefaults: true, sluiceFrom: "bundle", json: true }
    })
    expect(decode(["--peer", "camel"])).toEqual({ _tag: "Run", flags: { _tag: "Rounds", records: 1_000_000, partitions: 8, rounds: 3, peer: "camel", peerDefaults: false, sluiceFrom: "bundle", json: false } })
    expect(decode(["--sluice-from", "sources"])).toMatchObject({ _tag: "Run", flags: { _tag: "Rounds", sluiceFrom: "sources" } })
    expect(invalid(["--sluice-from", "dist"])).toMatch(/^bench:peer: Invalid value for flag --sluice-from: "dist"/)
    expect(invalid(["--trouble", "slowdown", "--sluice-from", "sources"])).toMatch(/--sluice-from not with --trouble/)
  })

  it("ends a run at its commits, or at its last record stored when the archiver says that came later", () => {
    const spawned = 1_700_000_000_000
    const stdout = ["progress", `RESULT {"stopAfter": 10, "seconds": 3.2, "storedAtEpochMillis": ${spawned + 7_500}}`]
    expect(storedSecondsOf(stdout, spawned)).toBe(7.5)
    expect(storedSecondsOf(['RESULT {"stopAfter": 10, "seconds": 3.2}'], spawned)).toBeUndefined() // Quix says no such time
    expect(storedSecondsOf(["RESULT not json"], spawned)).toBeUndefined()
    expect(runSeconds({ commitSeconds: 5, storedSeconds: 7.5 })).toBe(7.5) // commits ran ahead of the uploads
    expect(runSeconds({ commitSeconds: 5, storedSeconds: 4 })).toBe(5)
    expect(runSeconds({ commitSeconds: 5, storedSeconds: undefined })).toBe(5)
    expect(runSeconds({ commitSeconds: undefined, storedSeconds: 7.5 })).toBeUndefined() // never committed the end
  })

  it("starts the peer --peer names, from what scripts/bench-peer.sh sets, or says what is missing", () => {
    const saved = process.env["SLUICE_PEER_CAMEL_CLASSPATH"]
    try {
      delete process.env["SLUICE_PEER_CAMEL_CLASSPATH"]
      expect(() => peerProgram("camel", false)).toThrow(SetupFailed)
      process.env["SLUICE_PEER_CAMEL_CLASSPATH"] = "/cache/build/camel-s3-archiver-1.0.0.jar:/m2/org/apache/camel/camel-main/4.14.0/camel-main-4.14.0.jar"
      const camel = peerProgram("camel", false)
      expect(camel.label).toBe("camel 4.14.0")
      expect(camel.command).toBe("java")
      expect(camel.args({ brokers: "b:1", topic: "t", group: "g", bucket: "k", records: 7 })).toEqual([
        "-cp",
        "/cache/build/camel-s3-archiver-1.0.0.jar:/m2/org/apache/camel/camel-main/4.14.0/camel-main-4.14.0.jar",
        "sluice.peer.CamelS3Archiver",
        "--brokers",
        "b:1",
        "--topic",
        "t",
        "--group",
        "g",
        "--bucket",
        "k",
        "--records",
        "7"
      ])
    } finally {
      if (saved === undefined) delete process.env["SLUICE_PEER_CAMEL_CLASSPATH"]
      else process.env["SLUICE_PEER_CAMEL_CLASSPATH"] = saved
    }
  })

  it("reads a run through trouble, its defaults filled", () => {
    expect(decode(["--trouble", "slowdown, slower", "--json"])).toEqual({
      _tag: "Run",
      flags: { _tag: "Trouble", troubles: ["slowdown", "slower"], contenders: ["sluice", "peer"], rate: 20_000, seconds: 150, troubleAt: 30, troubleSeconds: 60, json: true }
    })
    expect(decode(["--trouble", "slowdown", "--contenders", "camel,sluice"])).toMatchObject({ _tag: "Run", flags: { _tag: "Trouble", contenders: ["camel", "sluice"] } })
    expect(decode(["--trouble", "slowdown", "--contenders", "sluice", "--rate", "5000", "--seconds", "60", "--trouble-at", "10", "--trouble-seconds", "20"])).toEqual({
      _tag: "Run",
      flags: { _tag: "Trouble", troubles: ["slowdown"], contenders: ["sluice"], rate: 5000, seconds: 60, troubleAt: 10, troubleSeconds: 20, json: false }
    })
  })

  it("refuses a typo'd flag in effect/cli's words, with a suggestion", () => {
    expect(invalid(["--peer-default"])).toMatch(/^bench:peer: Unrecognized flag: --peer-default[\s\S]*--peer-defaults/)
    expect(invalid(["--trouble", "slowdown", "--rate", "fast"])).toMatch(/^bench:peer: Invalid value for flag --rate: "fast"/)
  })

  it("keeps its own messages for the values only it checks", () => {
    expect(invalid(["--records", "0"])).toBe("bench:peer: --records needs a whole number ≥ 1, got 0")
    expect(invalid(["--trouble", "slowdown,outage"])).toBe("bench:peer --trouble: slowdown or slower, got outage")
    expect(invalid(["--trouble", "slower", "--contenders", "sluice,quix"])).toBe("bench:peer --contenders: sluice, peer and/or camel, got quix")
    expect(invalid(["--trouble", "slower", "--rate", "50"])).toBe("bench:peer --trouble: --rate expects a number in [100, 200000]")
    expect(invalid(["--trouble", "slower", "--trouble-seconds", "0"])).toBe("bench:peer --trouble: --trouble-seconds expects a number in [1, 3600]")
    expect(invalid(["--trouble", "slower", "--seconds", "60"])).toBe(
      "bench:peer --trouble: the trouble must end before the producer stops (--trouble-at + --trouble-seconds < --seconds)"
    )
  })

  it("refuses a flag of the other mode rather than ignoring it", () => {
    expect(invalid(["--trouble", "slowdown", "--records", "5", "--peer-defaults"])).toBe("bench:peer: --records, --peer-defaults not with --trouble (the throughput rounds' flags)")
    expect(invalid(["--rate", "5000"])).toBe("bench:peer: --rate only with --trouble")
    expect(invalid(["--trouble", "slowdown", "--peer", "camel"])).toBe("bench:peer: --peer not with --trouble (the throughput rounds' flags)")
    expect(invalid(["--peer", "camel", "--peer-defaults"])).toBe("bench:peer: --peer-defaults is Quix's commit settings, not with --peer camel")
    expect(invalid(["--peer", "flink"])).toMatch(/^bench:peer: Invalid value for flag --peer: "flink"/)
  })
})
