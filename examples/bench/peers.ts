/**
 * bench:peer's peer archivers, and how to start one: Quix Streams' sink
 * (`peer/quix_s3_archiver.py`, in the virtualenv `scripts/lib/peer-venv.sh`
 * installs) or the Camel route (`peer/camel`, on the classpath
 * `scripts/lib/peer-camel.sh` builds). The throughput rounds (`peer.ts`) and
 * the runs through trouble (`trouble.ts`) start them from here.
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Data } from "effect"

/** The peers: Quix Streams' S3FileSink, or the Camel route. */
export type PeerName = "quix" | "camel"

/** Something the bench needs is missing (the peer's interpreter or classpath, a service). */
export class SetupFailed extends Data.TaggedError("SetupFailed")<{ readonly message: string }> {}

/** What one run of a peer archives, and where. */
export interface PeerRun {
  readonly brokers: string
  readonly topic: string
  readonly group: string
  readonly bucket: string
  /** The peer stops itself after this many records. */
  readonly records: number
}

/** How to start one run of the peer. */
export interface PeerProgram {
  /** The peer as the report names it, with the version it runs. */
  readonly label: string
  readonly settings: string
  readonly command: string
  readonly args: (run: PeerRun) => ReadonlyArray<string>
}

const peerVersion = (python: string): string =>
  execFileSync(python, ["-c", "import importlib.metadata as m; print(m.version('quixstreams'))"], { encoding: "utf8", timeout: 30_000 }).trim()

/** The environment variable `scripts/bench-peer.sh` sets, or why it is missing. */
const fromEnv = (name: string, how: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new SetupFailed({ message: `${name} is not set: run it through \`npm run bench:peer\` (${how})` })
  return value
}

/**
 * The peer `peer` names: the Camel route on the JVM, or Quix Streams' sink in
 * its virtualenv, tuned or with Quix's default checkpointing (`quixDefaults`).
 */
export const peerProgram = (peer: PeerName, quixDefaults: boolean): PeerProgram => {
  const runArgs = (r: PeerRun) => ["--brokers", r.brokers, "--topic", r.topic, "--group", r.group, "--bucket", r.bucket, "--records", String(r.records)]
  if (peer === "camel") {
    const classpath = fromEnv("SLUICE_PEER_CAMEL_CLASSPATH", "with --peer camel it builds the Camel route")
    const version = /camel-main-([0-9][^/]*)\.jar/.exec(classpath)?.[1] ?? "?"
    return {
      label: `camel ${version}`,
      settings: "camel-kafka → aggregate per partition (50 000 records or 5 s) → camel-aws2-s3, one PUT at a time; camel-kafka commits each record as it enters the aggregator",
      command: "java",
      args: (r) => ["-cp", classpath, "sluice.peer.CamelS3Archiver", ...runArgs(r)]
    }
  }
  const python = fromEnv("SLUICE_PEER_PYTHON", "it installs the peer's virtualenv")
  const app = fileURLToPath(new URL("./peer/quix_s3_archiver.py", import.meta.url))
  return {
    label: `quixstreams ${peerVersion(python)}`,
    settings: quixDefaults ? "Quix defaults (commit_interval=5, commit_every=0)" : "tuned (commit_every=250000, commit_interval=60)",
    command: python,
    args: (r) => [app, ...runArgs(r), ...(quixDefaults ? ["--defaults"] : [])]
  }
}
