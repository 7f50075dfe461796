/**
 * Every shell command the READMEs and guides show, accounted for.
 *
 * Each command line of a ```sh block (README.md, examples/**, packages/*,
 * docs/) must be listed below, either as **run** here — cheap commands, run as
 * written from the repository root against the build `npm test` makes, in their
 * smoke form when `smoke` says so — or as **checked elsewhere**, naming the test
 * or script that exercises it (`.ci/run` is `npm ci && npm test`). A README
 * command that is in neither list fails the first test: add it to one.
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

/** Run here, as written (or as `smoke`), with the exit code each must give. */
const run: ReadonlyArray<{ readonly command: string; readonly smoke?: string; readonly exit?: number }> = [
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
  { command: "npx sluice audit --help" },
  { command: "npm run soak -- --help" },
  { command: "npm run brokers -- --help" },
  { command: "npx tsc -p examples/virtual-clock-tests/tsconfig.test.json --noEmit" }
]

/** Checked elsewhere: where. */
const elsewhere: Record<string, string> = {
  "npm ci && npm start": ".ci/run installs; the demo's smoke is `npm start -- --quiet` below",
  "npm test": ".ci/run",
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
  "node examples/dist/KafkaToS3.js <topic> <bucket>": "examples/test/KafkaToS3.test.ts (archiveTopic, the same code)",
  "node examples/dist/KafkaToS3.js <topic> <bucket> --follow": "examples/test/KafkaToS3.test.ts (--follow: drain on SIGTERM)",
  "npm run bench:e2e": "a benchmark (minutes): run by hand, figures in examples/README.md",
  "npm run bench:e2e -- --json": "a benchmark (minutes): run by hand",
  "npm run bench:e2e -- --records 5000000 --partitions 8 --rounds 3 --ceiling-seconds 10": "a benchmark (minutes): run by hand",
  "npm run bench:e2e -- --rounds 1 --cpu-prof /tmp/prof": "a benchmark (minutes): run by hand",
  "npm run soak -- --rate 200k --duration 60": "examples/test/Soak.test.ts (5 s smoke of the same command)",
  "npm run soak -- --rate 1M --duration 5m --json": "examples/test/Soak.test.ts (smoke); the 5-minute run by hand",
  "npm run soak -- --rate 30k --duration 5m --source kafka --sink s3": "by hand (starts its own services); the Kafka → S3 path is examples/test/KafkaToS3*.test.ts",
  "npm run recovery -- --backlogs 50000,100000,200000,400000 --json": "by hand (minutes, starts the services): figures in examples/README.md",
  "npm run chaos -- --runs 20 --json": "by hand (minutes, starts the services): figures in examples/README.md",
  "npm run brokers": "by hand (~15 min on 2 cores, starts the 3-node cluster and the S3 server): figures in examples/README.md; its pure parts in examples/test/Brokers.test.ts",
  "npm run brokers -- --scenario mtls-long --duration 300 --json": "by hand (minutes): the same program as `npm run brokers`; options parsed in examples/test/Brokers.test.ts",
  "bash scripts/kafka-cluster.sh up": "scripts/brokers.sh (npm run brokers) starts the cluster with it, by hand",
  "bash scripts/kafka-cluster.sh down": "scripts/brokers.sh (npm run brokers) stops the cluster it started with it, by hand",
  "npx vitest run examples/custom-policy/test/conformance.test.ts": "npm test (the same file)",
  "npx vitest run examples/custom-policy/test": "npm test (the same files)",
  "npm ci && npm run example:kafka-to-s3": "examples/test/KafkaToS3Prometheus.test.ts (the archiver, its endpoint and alerts against the real services)",
  "npm run example:kafka-to-s3 -- --until-committed": "examples/test/KafkaToS3Prometheus.test.ts",
  "npm run example:kafka-to-s3 -- --records 1000000 --partitions 8 --max-seconds 300 --prometheus-port 9465": "by hand (minutes)",
  "node --conditions=@sluice/source examples/kafka-to-s3/produce.ts orders orders-archive --records 200000": "examples/test/KafkaToS3Prometheus.test.ts (produce)",
  "node --conditions=@sluice/source examples/kafka-to-s3/main.ts orders orders-archive --name orders-archiver": "examples/test/KafkaToS3Prometheus.test.ts (the archiver)",
  "npx vitest run examples/virtual-clock-tests": "npm test (the same files)",
  "SLUICE_SEEDS=7,8 npx vitest run examples/virtual-clock-tests": "npm test (the same files, other seeds)",
  "SLUICE_REPORT_DIR=reports npx vitest run examples/virtual-clock-tests": "npm test (the same files)",
  "npx turbo run typecheck --filter=sluice-virtual-clock-tests-example": "scripts/test.sh (turbo typecheck)",
  "SLUICE_REPORT_DIR=reports npx vitest run": "npm test",
  "bash scripts/kafka-broker.sh up && set -a && . .services/kafka.env && set +a": "scripts/test.sh (services up)",
  "npx vitest run packages/adapters-kafka": "npm test",
  "bash scripts/kafka-broker.sh down": "scripts/test.sh (services down)",
  "bash scripts/s3-server.sh up": "scripts/test.sh (services up)",
  "set -a; . .services/s3.env; set +a": "scripts/test.sh",
  "bash scripts/s3-server.sh up && set -a && . .services/s3.env && set +a": "scripts/test.sh",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\"": "packages/adapters-s3/test/Audit.test.ts (clean archive)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\" --json | tail -n 1": "packages/adapters-s3/test/Audit.test.ts (--json)",
  "npx sluice audit --bucket audit-demo --endpoint \"$SLUICE_S3_ENDPOINT\" --committed orders:0=10000,orders:1=10500": "packages/adapters-s3/test/Audit.test.ts (--committed past the archive exits 1)",
  "bash scripts/s3-server.sh down": "scripts/test.sh (services down)",
  "npx vitest run packages/adapters-s3": "npm test",
  "npm run bench -w @sluice/adapter-s3": "a benchmark: run by hand",
  "npm run bench:checksum": "a benchmark: run by hand",
  "npx vitest run packages/policies": "npm test",
  "npx tsc -b packages/policies": "scripts/test.sh (turbo build)"
}

const ranHere = new Set(run.map((r) => r.command))
/** Commands whose text starts with one of these are multi-line programs checked elsewhere. */
const elsewherePrefixes: Record<string, string> = {
  "npx node --input-type=module -e": "packages/adapters-s3/test/Audit.test.ts (an archive written by S3Sink through the pipeline, then audited)",
  "npx node packages/policies/bench/seeds.ts": "a measurement over held-out seeds (minutes): packages/policies/test/scenarios.test.ts runs the same seeds"
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

  for (const { command, smoke, exit } of run) {
    it(`runs: ${command}`, () => {
      const result = sh(smoke ?? command)
      expect(result.error, result.stderr).toBeUndefined()
      expect(result.status, `${command}\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}`).toBe(exit ?? 0)
    }, 180_000)
  }

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
