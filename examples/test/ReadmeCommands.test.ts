/**
 * Every shell command the READMEs and guides show, accounted for.
 *
 * Each command line of a ```sh block (README.md, examples/**, packages/*,
 * docs/) must be listed below, either as **run** here — cheap commands, run as
 * written from the repository root against the build `npm test` makes, in their
 * smoke form when `smoke` says so (the same script or entry, smaller arguments)
 * — or as **checked elsewhere**, naming the test or script that exercises it
 * (`.ci/run` is `npm ci && npm test`). A README command that is in neither list
 * fails the first test: add it to one.
 *
 * The smoke forms that need the real services (Kafka, S3) take them from the
 * environment `npm test` sets (`scripts/test.sh` sources `.services/*.env`);
 * without them they fail, never skip. The slowest smokes take 30–50 s here:
 * `npm run bench:e2e` and `npm run bench -w
 * @sluice/adapter-s3`. The full-size runs stay by hand (minutes).
 */
import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")

/** Markdown files with commands: the root README, every package's and example's, the guides. */
const documents = (): Array<string> => {
  const out = ["README.md"]
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir))) {
      if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue
      const path = join(dir, name)
      if (statSync(join(root, path)).isDirectory()) walk(path)
      else if (name.endsWith(".md")) out.push(path)
    }
  }
  for (const dir of ["examples", "packages", "docs"]) walk(dir)
  return out.sort()
}

const quoteCount = (text: string): number => (text.match(/'/g) ?? []).length

/** `text` without a trailing ` # comment` that is outside single quotes. */
const withoutComment = (text: string): string => {
  for (const m of text.matchAll(/\s#/g)) {
    if (quoteCount(text.slice(0, m.index)) % 2 === 0) return text.slice(0, m.index).trim()
  }
  return text.trim() === "#" || text.trim().startsWith("# ") ? "" : text.trim()
}

/**
 * The commands of a document: each line of a ```sh / ```bash block, comments
 * stripped; a line ending in `\` and a single-quoted argument spanning lines
 * join the next ones.
 */
const commands = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const block of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
    let pending = ""
    for (const raw of (block[1] ?? "").split("\n")) {
      const line = withoutComment(pending === "" ? raw.trim() : `${pending}\n${raw}`)
      if (quoteCount(line) % 2 === 1 || line.endsWith("\\")) {
        pending = line
        continue
      }
      pending = ""
      if (line !== "" && !line.startsWith("#")) out.push(line)
    }
  }
  return out
}

/** A fresh name for a topic and bucket (S3: lowercase, ≤ 63 characters). */
const fresh = "readme-$(date +%s%N)-$$"
/** Produces 1 000 records over 2 partitions into topic `$t` and creates bucket `$t` (examples/kafka-to-s3/produce.ts). */
const produceSmall =
  `t=${fresh} && node_modules/.bin/node --conditions=@sluice/source examples/kafka-to-s3/produce.ts "$t" "$t" --records 1000 --partitions 2 >/dev/null`

/**
 * Run here, as written (or as `smoke`), with the exit code each must give and,
 * when given, a pattern its output (stdout and stderr) must match.
 */
const run: ReadonlyArray<{ readonly command: string; readonly smoke?: string; readonly exit?: number; readonly output?: RegExp }> = [
  { command: "npx sluice-sim --help" },
  { command: "npx sluice-sim schema" },
  { command: "npx sluice-sim run packages/testkit/scenarios/knee-24.json --max-duration 48h" },
  {
    command: "npx sluice-sim run packages/testkit/scenarios/knee-24.json --policy ./packages/testkit/test/fixtures/CappedPolicy.mjs+throttle",
    exit: 1 // a constant cap of 3 uploads misses knee-24's bounds, as the README says
  },
  { command: "npx sluice-sim run examples/custom-policy/scenarios/storm-then-slower.json --policy ./examples/custom-policy/dist/index.js" },
  { command: "npx sluice-sim run packages/testkit/scenarios/throttle-storm.json --policy ./examples/custom-policy/dist/index.js+throttle+shared" },
  { command: "npx sluice-sim run examples/custom-policy/scenarios/storm-then-slower.json --policy sluice-policy-example --json" },
  {
    command: "npx sluice-sim generate --family mixed --count 200 --seed 1 --out out/family-train",
    smoke: "d=$(mktemp -d) && npx sluice-sim generate --family mixed --count 3 --seed 1 --out $d/family-train && test $(ls $d/family-train | wc -l) = 3; s=$?; rm -rf $d; exit $s"
  },
  {
    command: "npx sluice-sim family out/family-train --policy default --policy fixed:8 --json",
    smoke: "d=$(mktemp -d) && npx sluice-sim generate --family mixed --count 2 --seed 1 --out $d/f && npx sluice-sim family $d/f --policy default --policy fixed:8 --json; s=$?; rm -rf $d; exit $s",
    output: /"policy":"fixed:8","scenarios":2/
  },
  { command: "npx sluice audit --help" },
  { command: "npx sluice calibrate --help" },
  { command: "npm run soak -- --help" },
  { command: "npx tsc -p examples/virtual-clock-tests/tsconfig.test.json --noEmit" },
  { command: "npx tsc -b packages/policies" },
  { command: "npx turbo run typecheck --filter=sluice-virtual-clock-tests-example" },
  {
    command: "SLUICE_SEEDS=7,8 npx vitest run examples/virtual-clock-tests",
    smoke: "SLUICE_SEEDS=7 npx vitest run examples/virtual-clock-tests",
    output: /seed 7 BACKOFF/
  },
  {
    command: "npm run bench:checksum",
    smoke: "npm run bench:checksum -- --millis 30 --rounds 3",
    output: /CRC32 node:zlib/
  },
  // The Kafka → S3 archiver's command lines, on the services npm test started.
  {
    command: "npm run example:kafka-to-s3 -- --until-committed",
    smoke: "npm run example:kafka-to-s3 -- --until-committed --records 2000 --partitions 2 --prometheus-port 0",
    output: /"reason":"committed","recordsRead":2000,"recordsVerified":2000,"recordsCommitted":2000/
  },
  {
    command: "node examples/dist/KafkaToS3.js <topic> <bucket>",
    smoke: `${produceSmall} && node examples/dist/KafkaToS3.js "$t" "$t"`,
    output: /archived 1000 records in \d+ objects/
  },
  {
    // Follow mode until SIGTERM, which drains: exit 0 with what was committed.
    command: "node examples/dist/KafkaToS3.js <topic> <bucket> --follow",
    smoke: `${produceSmall} && { node examples/dist/KafkaToS3.js "$t" "$t" --follow & p=$!; sleep 12; kill -TERM $p; wait $p; }`,
    output: /^(?=[\s\S]*draining: stopped reading)(?=[\s\S]*archived \d+ records in \d+ objects)/
  },
  // The archiver built into one file (examples/bundle/build.ts), run on the services npm test started.
  {
    command: "npm run bundle -w @sluice/examples",
    output: /dist\/bundle\/kafka-to-s3\.mjs\n[\s\S]*dist\/bundle\/bench-e2e\.mjs/
  },
  {
    command: "node examples/dist/bundle/kafka-to-s3.mjs <topic> <bucket> --until-committed 1000",
    smoke: `npm run -s bundle -w @sluice/examples >/dev/null && ${produceSmall} && node examples/dist/bundle/kafka-to-s3.mjs "$t" "$t" --until-committed 1000 --prometheus-port 0 --progress-seconds 0`,
    output: /"reason":"committed","recordsRead":1000,"recordsVerified":1000,"recordsCommitted":1000/
  },
  {
    command: "npm run chaos -- --runs 20 --json",
    // 200 000 records a partition (4 objects each), killed at its first commit: the kill lands
    // with most of the topic still to archive (with 10 000 a partition, one object each, a run
    // could finish before the kill).
    smoke: "npm run chaos -- --runs 1 --records 400000 --partitions 2 --max-ms 0 --json",
    output: /"kills":1,.*"recordsProduced":400000,"recordsChecked":400000,"lost":0,"committedAtEnd":true,"holes":0,.*"auditOk":true/
  },
  {
    command: "npm run soak -- --rate 30k --duration 5m --source kafka --sink s3",
    smoke: `d=$(mktemp -d) && { npm run soak -- --rate 5k --duration 5 --source kafka --sink s3 --partitions 2 --json --out "$d"; s=$?; rm -rf "$d"; exit $s; }`,
    output: /"source":"kafka","sink":"s3",.*"lost":0,"committedNotVerified":0,"uncommittedAtEnd":0/
  },
  { command: "npm run brokers -- --help" },
  // The slow ones in their smallest form (30–50 s each here, on the services npm test started).
  {
    command: "npm run bench:e2e -- --json",
    smoke: "npm run bench:e2e -- --records 20000 --partitions 2 --rounds 1 --ceiling-seconds 1 --json",
    output: /"sluiceRecordsPerSecond":\d+(\.\d+)?,"plainRecordsPerSecond":\d+(\.\d+)?,"ratio":[\d.]+,"serverCeilingBytesPerSecond":\d+.*"sluiceCpuMicrosPerRecord":\d+(\.\d+)?,"plainCpuMicrosPerRecord":\d+(\.\d+)?\}/
  },
  {
    command: "npm run bench:e2e -- --records 5000000 --rounds 1 --policies \"fixed:32+throttle+shared+batch\"",
    smoke: "npm run bench:e2e -- --records 20000 --partitions 2 --rounds 1 --ceiling-seconds 1 --policies \"fixed:32+throttle+shared+batch\" --json",
    output: /"rounds":1,"policies":"fixed:32\+throttle\+shared\+batch"/
  },
  { command: "npm run bench -w @sluice/adapter-s3", smoke: "SLUICE_BENCH_SECONDS=1 npm run bench -w @sluice/adapter-s3", output: /total [\d.]+ s/ },
  {
    // Two restarts, a drained one and a killed static member's (the `kill` mode waits out the 30 s session timeout: by hand).
    command: "npm run recovery -- --backlogs 50000,200000,800000 --modes term,kill-static,kill --json",
    smoke: "npm run recovery -- --backlogs 1000 --modes term,kill-static --json",
    output: /"mode":"kill-static","backlog":1000,"committedAtKill":\d+,"backlogAtRestart":\d+,"assignedSeconds":[\d.]+,"firstCommitSeconds":[\d.]+,"caughtUpSeconds":[\d.]+,"drainExit":0/
  }
]

/** Checked elsewhere: where. */
const elsewhere: Record<string, string> = {
  "npm ci && npm start": ".ci/run installs; the demo's smoke is `npm start -- --quiet` below",
  "npm test": ".ci/run",
  "npm run scaleout -- --instances 3 --json": "examples/test/Scaleout.test.ts runs its smoke (2 instances, 6 partitions, 2 s holds, no capacity runs)",
  "npm run scaleout -- --instances 3 --no-capacity --protocol consumer --json": "examples/test/Scaleout.test.ts runs its smoke with --protocol consumer (2 instances, 6 partitions, 2 s holds)",
  "npm ci": ".ci/run",
  "npm run build": ".ci/run (scripts/test.sh builds first)",
  "npm ci && npm run build": ".ci/run",
  "npx sluice-sim run packages/policies/scenarios/wide-slowdown-10x.json --policy default --plot out.svg": "packages/testkit/test/Cli.test.ts (run --plot) and the demo smoke (same scenario, both policies, plots)",
  "npx sluice-sim matrix packages/testkit/scenarios --policy default --policy fixed:8": "packages/testkit/test/Cli.test.ts (matrix) and packages/policies/test/oracle-bound.test.ts (every scenario × policy)",
  "npx sluice-sim run packages/testkit/scenarios/knee-24.json --policy fixed:8 --json --trace out/knee.csv --plot out/knee.svg": "packages/testkit/test/Cli.test.ts (--json, --trace, --plot)",
  "npx sluice-sim matrix packages/testkit/scenarios --policy fixed:8 --policy aimd+throttle+shared+batch --json": "packages/policies/test/oracle-bound.test.ts",
  "mkdir -p /tmp/allsc && cp packages/testkit/scenarios/*.json packages/policies/scenarios/*.json /tmp/allsc/": "shell setup for the matrix below",
  "npx sluice-sim matrix /tmp/allsc --policy default --policy aimd --policy gradient2 --policy vegas --policy fixed:8 --json": "packages/policies/test/oracle-bound.test.ts (full: npm run test:oracle-bound)",
  "mkdir -p /tmp/slow && cp packages/policies/scenarios/slow-store-*.json /tmp/slow/": "shell setup for the matrix below",
  "npx sluice-sim matrix /tmp/slow --policy default --policy classic --policy fixed:8": "packages/policies/test/scenarios.test.ts and oracle-bound.test.ts",
  "npx sluice-sim matrix packages/policies/scenarios --policy default --policy classic --policy deliveryrate": "packages/policies/test/scenarios.test.ts and oracle-bound.test.ts",
  "npm start -- --scenario packages/policies/scenarios/slow-store-5x.json --policy aimd --baseline fixed:16": "the demo smoke below (same options)",
  "npm start -- --policy default --baseline gradient2 --report /tmp/demo --quiet": "the demo smoke below",
  "bash scripts/services.sh up": "scripts/test.sh (npm test)",
  "set -a; . .services/kafka.env; . .services/s3.env; set +a": "scripts/test.sh (npm test)",
  "npm run bench:e2e": "a benchmark (minutes): run by hand, figures in examples/README.md",
  "npm run bench:e2e -- --records 5000000 --partitions 8 --rounds 3 --ceiling-seconds 10": "a benchmark (minutes): run by hand",
  "npm run bench:e2e -- --rounds 1 --cpu-prof /tmp/prof": "a benchmark (minutes): run by hand",
  "npm run bench:peer": "a benchmark (minutes; installs the Quix Streams virtualenv on first use, which npm test must not): run by hand, figures in examples/README.md; its reader and process-tree measure in examples/test/BenchPeer.test.ts",
  "npm run bench:peer -- --records 1000000 --rounds 3 --json": "a benchmark (minutes): run by hand, the same program as `npm run bench:peer`; figures in examples/README.md",
  "npm run bench:peer -- --sluice-from sources --json": "a benchmark (minutes): run by hand, the same program as `npm run bench:peer` with Sluice on the workspace's sources; figures in examples/README.md; the flag in examples/test/BenchPeer.test.ts",
  "npm run bench:peer -- --records 200000 --rounds 1 --peer-defaults --json": "a benchmark: run by hand, the same program as `npm run bench:peer` with Quix's default commit settings",
  "npm run bench:peer -- --peer camel --json": "a benchmark (minutes; builds the Camel route with Maven on first use, which npm test must not): run by hand, figures in examples/README.md; its reader of the route's objects, its command line and how it starts the route in examples/test/BenchPeer.test.ts",
  "npm run bench:peer -- --trouble slowdown,slower --json": "a benchmark (~15 min; the Quix Streams virtualenv): run by hand, figures in examples/README.md; its count of committed-but-not-archived records in examples/test/BenchPeer.test.ts",
  "npm run soak -- --rate 200k --duration 60": "examples/test/Soak.test.ts (5 s smoke of the same command)",
  "npm run soak -- --rate 1M --duration 5m --json": "examples/test/Soak.test.ts (smoke); the 5-minute run by hand",
  "npm run faults -- --json": "by hand (~35 min on 2 cores, starts its own services): figures in examples/README.md; its smoke (one fault of each class) in examples/test/Faults.test.ts",
  "npm run faults -- --only s3-kill,stall --json": "by hand: the same program as `npm run faults`, two of its faults; both run in the smoke, examples/test/Faults.test.ts",
  "npm run faults -- --smoke --json": "examples/test/Faults.test.ts runs `scripts/faults.sh --smoke --json` (what this command runs) and checks every row",
  "npm run brokers": "by hand (~15 min on 2 cores, starts the 3-node cluster and the S3 server): figures in examples/README.md; its pure parts in examples/test/Brokers.test.ts",
  "npm run brokers -- --scenario mtls-long --duration 300 --json": "by hand (minutes): the same program as `npm run brokers`; options parsed in examples/test/Brokers.test.ts",
  "bash scripts/kafka-cluster.sh up": "scripts/brokers.sh (npm run brokers) starts the cluster with it, by hand",
  "bash scripts/kafka-cluster.sh down": "scripts/brokers.sh (npm run brokers) stops the cluster it started with it, by hand",
  "npx vitest run examples/custom-policy/test/conformance.test.ts": "npm test (the same file)",
  "npx vitest run examples/custom-policy/test": "npm test (the same files)",
  "npm ci && npm run example:kafka-to-s3": "the smoke of `npm run example:kafka-to-s3 -- --until-committed` above (same script, 2 000 records) and examples/test/KafkaToS3Prometheus.test.ts (the endpoint and alerts)",
  "npm run example:kafka-to-s3 -- --records 1000000 --partitions 8 --max-seconds 300 --prometheus-port 9465": "the smoke of `npm run example:kafka-to-s3 -- --until-committed` above (same script and flags, 2 000 records); the full size by hand (minutes)",
  "node --conditions=@sluice/source examples/kafka-to-s3/produce.ts orders orders-archive --records 200000": "the smokes of KafkaToS3.js above (produce.ts, 1 000 records) and of example:kafka-to-s3 (which runs it)",
  "node --conditions=@sluice/source examples/kafka-to-s3/main.ts orders orders-archive --name orders-archiver": "the smoke of `npm run example:kafka-to-s3 -- --until-committed` above (the script runs main.ts with --name orders-archiver) and examples/test/KafkaToS3Prometheus.test.ts",
  "npx vitest run examples/virtual-clock-tests": "npm test (the same files)",
  "SLUICE_REPORT_DIR=reports npx vitest run examples/virtual-clock-tests": "npm test (the same files)",
  "SLUICE_REPORT_DIR=reports npx vitest run": "npm test",
  "bash scripts/kafka-broker.sh up && set -a && . .services/kafka.env && set +a": "scripts/test.sh (services up)",
  "npx vitest run packages/adapters-kafka": "npm test",
  "bash scripts/kafka-broker.sh down": "scripts/test.sh (services down)",
  "bash scripts/s3-server.sh up": "scripts/test.sh (services up)",
  "set -a; . .services/s3.env; set +a": "scripts/test.sh",
  "bash scripts/s3-server.sh up && set -a && . .services/s3.env && set +a": "scripts/test.sh",
  "npm run replay -- packages/policies/scenarios/wide-slowdown-10x.json --policy default --scale 0.1 --record-bytes 1500 --json": "examples/test/Replay.test.ts (a 20 s two-phase smoke of the same code); the full run by hand (~7 min)",
  "npm run calibrate -- --bucket cal --endpoint \"$SLUICE_S3_ENDPOINT\"": "packages/adapters-s3/test/CalibrateCli.test.ts (the same CLI on a smaller sweep, straight and through a toxic)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\"": "packages/adapters-s3/test/Audit.test.ts (clean archive)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\" --json | tail -n 1": "packages/adapters-s3/test/Audit.test.ts (--json)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\" --committed orders:0=10000,orders:1=10500": "packages/adapters-s3/test/Audit.test.ts (--committed past the archive exits 1)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\" --abort-orphans": "packages/adapters-s3/test/Audit.test.ts (--abort-orphans: the 1h default keeps a fresh orphan; 0s aborts it and the audit after is CLEAN)",
  "bash scripts/s3-server.sh down": "scripts/test.sh (services down)",
  "npx vitest run packages/adapters-s3": "npm test",
  "npx vitest run packages/policies": "npm test",
  "npm run docs": "examples/test/Docs.test.ts (npm run docs -- --out <a temp dir>: TypeDoc's validation warnings are errors)"
}

const ranHere = new Set(run.map((r) => r.command))
/** Commands whose text starts with one of these are multi-line programs checked elsewhere. */
const elsewherePrefixes: Record<string, string> = {
  "npx node --input-type=module -e": "packages/adapters-s3/test/Audit.test.ts (an archive written by S3Sink through the pipeline, then audited)",
  "npx node packages/policies/bench/seeds.ts": "a measurement over held-out seeds (minutes): its smoke below (one scenario, one policy, one seed); packages/policies/test/scenarios.test.ts runs the same seeds"
}

const sh = (command: string, timeoutMillis = 120_000) =>
  spawnSync("bash", ["-c", command], { cwd: root, encoding: "utf8", timeout: timeoutMillis, env: { ...process.env, FORCE_COLOR: "0" } })

describe("README commands", () => {
  it("every command in a README or guide is run here or names the test that checks it", () => {
    const unaccounted: Array<string> = []
    let seen = 0
    for (const doc of documents()) {
      for (const command of commands(readFileSync(join(root, doc), "utf8"))) {
        seen++
        const known = ranHere.has(command) || command in elsewhere ||
          Object.keys(elsewherePrefixes).some((p) => command.startsWith(p))
        if (!known) unaccounted.push(`${relative(root, join(root, doc))}: ${command}`)
      }
    }
    expect(seen).toBeGreaterThan(50)
    expect(unaccounted, "add each to `run` or `elsewhere` in examples/test/ReadmeCommands.test.ts").toEqual([])
  })

  for (const { command, smoke, exit, output } of run) {
    it(`runs: ${command}${smoke === undefined ? "" : " (smoke)"}`, () => {
      const result = sh(smoke ?? command)
      const shown = `${smoke ?? command}\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}`
      expect(result.error, result.stderr).toBeUndefined()
      expect(result.status, shown).toBe(exit ?? 0)
      if (output !== undefined) expect(`${result.stdout}\n${result.stderr}`, shown).toMatch(output)
    }, 180_000)
  }

  it("runs the held-out-seed measurement (npx node packages/policies/bench/seeds.ts) in its smoke form: one scenario, one policy, one seed", () => {
    const result = sh("npx node packages/policies/bench/seeds.ts --policy fixed:8 --seeds tuned packages/testkit/scenarios/steady-under-capacity.json")
    expect(result.status, result.stderr.slice(-2000)).toBe(0)
    const line = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as { committedNotVerified?: number; failure?: unknown }
    expect(line.committedNotVerified).toBe(0)
    expect(line.failure).toBeNull()
  }, 180_000)

  it("runs the demo (npm start's program) in its smoke form: a short scenario, both policies, the report written", () => {
    const report = join(root, "reports", `demo-test-${process.pid}`)
    const result = sh(
      `node_modules/.bin/node examples/dist/demo.js --scenario packages/testkit/scenarios/steady-under-capacity.json --policy aimd --baseline fixed:16 --report ${report} --quiet`,
      300_000
    )
    expect(result.status, result.stderr.slice(-2000)).toBe(0)
    expect(result.stdout).toContain("Verified: all 200000 records are in storage exactly once.")
    expect(result.stdout).toMatch(/fixed:16\s+0\.\d{3}/)
    expect(result.stdout).toContain(`Report with the plots: ${report}/report.html`)
    expect(readFileSync(join(report, "report.html"), "utf8")).toContain("<svg")
    rmSync(report, { recursive: true, force: true })
  }, 320_000)
})
