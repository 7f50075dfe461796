/**
 * brokers — the archiver as the scenarios run it: `examples/kafka-to-s3/main.ts`
 * (Kafka source → default policies → S3 sink, group mode, metrics on a
 * Prometheus endpoint) as a child process, watched **from outside**: its RSS
 * from `/proc/<pid>/status`, its held bytes (`sluice_inflight_bytes`, the
 * pipeline's gauge of bytes charged to the memory budget) and records
 * committed from a scrape of its endpoint. Stopped with SIGTERM, on which it
 * drains (stops reading, finishes uploads, commits) and exits 0.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { exited, sleep } from "../soak/KillRuns.ts"

/** What to archive and how. */
export interface ArchiverSpec {
  readonly topic: string
  readonly bucket: string
  readonly group: string
  /** Overrides of `examples/kafka-to-s3/archiver.json` (the operator's defaults), merged key by key; the result goes to a temp file. */
  readonly settings: Settings
  /** Bootstrap brokers (the SSL listeners when `tls` is given). */
  readonly brokers: ReadonlyArray<string>
  /** Files for mTLS: the CA, the client certificate and key (PEM). */
  readonly tls?: { readonly ca: string; readonly cert: string; readonly key: string } | undefined
  /** The S3 environment (`SLUICE_S3_*`). */
  readonly env: NodeJS.ProcessEnv
  /** The drain deadline after SIGTERM (default 30 s): a deliberately slow archiver needs more to upload what it holds. */
  readonly drainSeconds?: number | undefined
}

/** One look at the archiver from outside. */
export interface ArchiverSample {
  readonly rssBytes: number
  /** `sluice_inflight_bytes`; undefined when the scrape failed. */
  readonly heldBytes: number | undefined
  readonly committed: number | undefined
}

/** A running archiver child. */
export interface ArchiverChild {
  readonly child: ChildProcess
  readonly sample: () => Promise<ArchiverSample>
  /** SIGTERM, then wait (bounded) for the drain; SIGKILL after `withinMs`. Exit code (null when killed). */
  readonly stop: (withinMs?: number) => Promise<number | null>
  /** The last ~4000 characters of its stderr. */
  readonly stderrTail: () => string
}

const mainTs = fileURLToPath(new URL("../kafka-to-s3/main.ts", import.meta.url))
const defaultsJson = fileURLToPath(new URL("../kafka-to-s3/archiver.json", import.meta.url))

/** Settings as JSON data. */
export interface Settings {
  readonly [key: string]: Settings | string | number | boolean | null
}

/** `overrides` merged into `base`: objects key by key, anything else replaced. */
export const merge = (base: Settings, overrides: Settings): Settings => {
  const out: { [key: string]: Settings | string | number | boolean | null } = { ...base }
  for (const [key, value] of Object.entries(overrides)) {
    const under = out[key]
    out[key] = typeof value === "object" && value !== null && typeof under === "object" && under !== null ? merge(under, value) : value
  }
  return out
}

/** Sums every sample of metric `name` (all label sets) in Prometheus text; undefined when absent. */
export const metricSum = (text: string, name: string): number | undefined => {
  let sum: number | undefined
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue
    const rest = line.slice(name.length)
    if (rest[0] !== "{" && rest[0] !== " ") continue
    const value = Number(line.slice(line.lastIndexOf(" ") + 1))
    if (Number.isFinite(value)) sum = (sum ?? 0) + value
  }
  return sum
}

/** Resident set size of a process (bytes), 0 when it cannot be read. */
export const rssOf = (pid: number | undefined): number => {
  if (pid === undefined) return 0
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? 0 : Number(m[1]) * 1024
  } catch {
    return 0
  }
}

/**
 * Starts the archiver and waits (≤ 60 s) until its metrics endpoint is up.
 *
 * **Example**
 *
 * ```ts
 * const archiver = await ArchiverChild.start({ topic, bucket, group, settings: {}, brokers, env })
 * const { heldBytes } = await archiver.sample()
 * await archiver.stop()
 * ```
 */
export const start = async (spec: ArchiverSpec): Promise<ArchiverChild> => {
  const dir = mkdtempSync(Path.join(Os.tmpdir(), "sluice-brokers-archiver-"))
  const config = Path.join(dir, "archiver.json")
  writeFileSync(config, JSON.stringify(merge(JSON.parse(readFileSync(defaultsJson, "utf8")) as Settings, spec.settings)))
  const tlsArgs = spec.tls === undefined ? [] : ["--tls-ca", spec.tls.ca, "--tls-cert", spec.tls.cert, "--tls-key", spec.tls.key]
  const child = spawn(
    process.execPath,
    [...process.execArgv, mainTs, spec.topic, spec.bucket, "--group", spec.group, "--name", spec.group, "--config", config, "--prometheus-port", "0", "--progress-seconds", "0", "--drain-seconds", String(spec.drainSeconds ?? 30), ...tlsArgs],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...spec.env, SLUICE_KAFKA_BROKERS: spec.brokers.join(",") } }
  )
  let tail = ""
  let url: string | undefined
  child.stderr?.setEncoding("utf8")
  child.stderr?.on("data", (text: string) => {
    tail = (tail + text).slice(-4000)
    const m = /metrics at (http:\/\/\S+)/.exec(tail)
    if (url === undefined && m !== null) url = m[1]
  })
  child.stdout?.resume()
  const cleanup = () => rmSync(dir, { recursive: true, force: true })
  child.once("exit", cleanup)

  const deadline = Date.now() + 60_000
  while (url === undefined && child.exitCode === null && Date.now() < deadline) await sleep(50)
  if (url === undefined) {
    child.kill("SIGKILL")
    await exited(child, 10_000)
    throw new Error(`archiver for ${spec.group} ${child.exitCode === null ? "did not start its metrics endpoint within 60 s" : `exited (${child.exitCode}) before its metrics endpoint was up`}:\n${tail}`)
  }
  const endpoint = url

  const sample = async (): Promise<ArchiverSample> => {
    const rssBytes = rssOf(child.pid)
    try {
      const response = await fetch(endpoint, { signal: AbortSignal.timeout(5_000) })
      const text = await response.text()
      return { rssBytes, heldBytes: metricSum(text, "sluice_inflight_bytes"), committed: metricSum(text, "sluice_records_committed_total") }
    } catch {
      return { rssBytes, heldBytes: undefined, committed: undefined }
    }
  }
  const stop = async (withinMs = 60_000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
    child.kill("SIGTERM")
    const code = await exited(child, withinMs)
    if (code !== "timeout") return code
    child.kill("SIGKILL")
    await exited(child, 10_000)
    return null
  }
  return { child, sample, stop, stderrTail: () => tail }
}
