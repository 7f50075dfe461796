/**
 * bench:peer — running one archiver as a measured process tree: the command is
 * started under a small bash wrapper, and what the archiver spends is read
 * from the kernel, the same way for a Node process and for a Python one.
 *
 * - CPU: the wrapper waits for the archiver and then prints bash's `times`,
 *   whose second line is the user and system time of every descendant it (and
 *   they) waited for: the whole tree, threads included, to the end. While the
 *   tree runs it is also sampled from `/proc/<pid>/stat` (utime + stime +
 *   cutime + cstime of every live process under the wrapper); the last sample
 *   is the figure used when the wrapper could not print (the tree was killed).
 * - Memory: `VmHWM` (peak RSS) from `/proc/<pid>/status`, summed over the live
 *   processes of the tree, the highest sum over the samples. For a tree of one
 *   process (both archivers here) it is that process's peak RSS, missing at
 *   most the growth of its last sampling interval.
 *
 * Linux only (`/proc`); the wrapper needs bash.
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import { Readable } from "node:stream"
import { Data } from "effect"
import { clockTicks } from "./services.ts"

/** How often the tree is sampled: often enough that VmHWM misses little of a run of seconds, cheap enough (a /proc scan) to be noise. */
export const SAMPLE_MILLIS = 100

/**
 * The wrapper: runs `"$@"` (fd 3 closed for it), reports the archiver's pid on
 * fd 3, waits for it, then prints `times` on fd 3 and exits with its status.
 */
const WRAPPER = `"$@" 3>&- & child=$!; echo "pid $child" >&3; wait "$child"; status=$?; times >&3; exit "$status"`

/** The tree could not be started or measured. */
export class TreeFailed extends Data.TaggedError("TreeFailed")<{ readonly command: string; readonly message: string }> {}

/** What a finished tree spent. */
export interface Usage {
  /** The archiver's exit status as bash reports it (128 + n when signal n ended it); null when the wrapper was killed. */
  readonly code: number | null
  /** The signal that ended the wrapper (the tree was killed), else null. */
  readonly signal: NodeJS.Signals | null
  /** User + system CPU seconds of the whole tree. */
  readonly cpuSeconds: number
  /** Where `cpuSeconds` comes from: bash's `times` after the wait, or the last /proc sample. */
  readonly cpuSource: "times" | "sampled"
  /** The last /proc sample's CPU seconds (a lower bound of `cpuSeconds`). */
  readonly sampledCpuSeconds: number
  /** Highest sum of VmHWM over the tree's processes, over the samples. */
  readonly peakRssBytes: number
  readonly samples: number
  /** Seconds from spawn to the wrapper's exit. */
  readonly exitSeconds: number
  /** The archiver's stdout, line by line. */
  readonly stdout: ReadonlyArray<string>
}

/** A running tree. */
export interface Tree {
  /** `performance.now()` just before the spawn. */
  readonly startedAt: number
  /** The archiver's pid (once the wrapper has reported it). */
  readonly pid: () => number | undefined
  /** Sends `signal` to the archiver. */
  readonly signal: (signal: NodeJS.Signals) => void
  /** SIGKILLs every live process of the tree, the wrapper included. */
  readonly kill: () => void
  /** Settles when the wrapper exits, with what the tree spent. */
  readonly done: Promise<Usage>
}

interface ProcStat {
  readonly pid: number
  readonly ppid: number
  /** utime + stime + cutime + cstime, in clock ticks. */
  readonly ticks: number
}

const readStat = (pid: number): ProcStat | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // After the command: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    return { pid, ppid: Number(fields[1]), ticks }
  } catch {
    return undefined // exited between the listing and the read
  }
}

const peakRssBytes = (pid: number): number => {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? 0 : Number(m[1]) * 1024
  } catch {
    return 0
  }
}

/** The live descendants of `root` (not `root` itself), from one scan of /proc. */
export const descendants = (root: number): Array<ProcStat> => {
  const all: Array<ProcStat> = []
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    const stat = readStat(Number(name))
    if (stat !== undefined) all.push(stat)
  }
  const out: Array<ProcStat> = []
  const parents = new Set([root])
  // Breadth first; a tree deeper than the process count is impossible, so this ends.
  for (let grew = true; grew;) {
    grew = false
    for (const s of all) {
      if (parents.has(s.ppid) && !parents.has(s.pid)) {
        parents.add(s.pid)
        out.push(s)
        grew = true
      }
    }
  }
  return out
}

/** `0m1.234s` (bash's `times`) in seconds. */
const timesSeconds = (text: string): number => {
  const m = /^(\d+)m([\d.]+)s$/.exec(text)
  return m === null ? NaN : Number(m[1]) * 60 + Number(m[2])
}

/** User + system seconds of the waited children, from bash's `times` output (its second line). */
export const parseTimes = (output: string): number | undefined => {
  const children = output.split("\n").filter((line) => /^\d+m[\d.]+s \d+m[\d.]+s$/.test(line))[1]
  if (children === undefined) return undefined
  const [user = "", system = ""] = children.split(" ")
  const total = timesSeconds(user) + timesSeconds(system)
  return Number.isFinite(total) ? total : undefined
}

/**
 * Starts `command args…` as a measured tree. Its stdout is collected, its
 * stderr goes to ours prefixed with `label`; `env` is added to ours.
 */
export const start = (label: string, command: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Tree => {
  const started = performance.now()
  const wrapper = spawn("bash", ["-c", WRAPPER, "measured", command, ...args], {
    stdio: ["ignore", "pipe", "pipe", "pipe"],
    env: { ...process.env, ...env }
  })
  // Piped as asked; the checks only tell the compiler (spawn's types know no fourth stream).
  const { stdout, stderr } = wrapper
  const fd3 = wrapper.stdio[3]
  if (stdout === null || stderr === null || !(fd3 instanceof Readable)) {
    wrapper.kill("SIGKILL")
    throw new TreeFailed({ command, message: "the wrapper's stdout, stderr or fd 3 is not a pipe" })
  }
  let archiverPid: number | undefined
  let report = ""
  let out = ""
  let samples = 0
  let sampledTicks = 0
  let peak = 0
  const sample = (): void => {
    const root = wrapper.pid
    if (root === undefined) return
    const tree = descendants(root)
    if (tree.length === 0) return
    samples++
    sampledTicks = Math.max(sampledTicks, tree.reduce((sum, s) => sum + s.ticks, 0))
    peak = Math.max(peak, tree.reduce((sum, s) => sum + peakRssBytes(s.pid), 0))
  }
  const timer = setInterval(sample, SAMPLE_MILLIS)
  fd3.setEncoding("utf8")
  fd3.on("data", (text: string) => {
    report += text
    const m = /^pid (\d+)$/m.exec(report)
    if (archiverPid === undefined && m !== null) {
      archiverPid = Number(m[1])
      sample()
    }
  })
  stdout.setEncoding("utf8")
  stdout.on("data", (text: string) => {
    out += text
  })
  stderr.setEncoding("utf8")
  let partial = ""
  stderr.on("data", (text: string) => {
    const lines = (partial + text).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) process.stderr.write(`  [${label}] ${line}\n`)
  })
  const killTree = (): void => {
    const root = wrapper.pid
    if (root === undefined) return
    for (const s of descendants(root)) {
      try {
        process.kill(s.pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
    wrapper.kill("SIGKILL")
  }
  const done = new Promise<Usage>((resolve, reject) => {
    wrapper.on("error", (error) => {
      clearInterval(timer)
      reject(new TreeFailed({ command, message: error.message }))
    })
    wrapper.on("close", (code, signal) => {
      clearInterval(timer)
      if (partial !== "") process.stderr.write(`  [${label}] ${partial}\n`)
      const fromTimes = parseTimes(report)
      const sampledCpuSeconds = sampledTicks / clockTicks()
      resolve({
        code,
        signal,
        cpuSeconds: fromTimes ?? sampledCpuSeconds,
        cpuSource: fromTimes === undefined ? "sampled" : "times",
        sampledCpuSeconds,
        peakRssBytes: peak,
        samples,
        exitSeconds: (performance.now() - started) / 1000,
        stdout: out.split("\n").filter((line) => line !== "")
      })
    })
  })
  return {
    startedAt: started,
    pid: () => archiverPid,
    signal: (signal) => {
      if (archiverPid === undefined) return
      try {
        process.kill(archiverPid, signal)
      } catch {
        // already gone
      }
    },
    kill: killTree,
    done
  }
}
