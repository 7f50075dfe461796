/**
 * What the kill-and-restart runs (`chaos.ts`, `recovery.ts`) share: the
 * services from the environment `scripts/*.sh` exports, a group's committed
 * offsets read from outside through the Kafka admin API, and waiting for a
 * child process to exit within a bound.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { s3FromEnv } from "../src/KafkaToS3.ts"

/** The brokers and S3 endpoint; a missing variable exits 2 naming it and the npm script that sets it. */
export const servicesFromEnv = (tool: string) => {
  const env = (name: string): string => {
    const value = process.env[name]
    if (value === undefined || value.trim() === "") {
      console.error(`${tool}: ${name} is not set: run it with \`npm run ${tool}\` (it starts the services)`)
      process.exit(2)
    }
    return value.trim()
  }
  const [first, ...more] = env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim())
  const brokers: [string, ...Array<string>] = [first ?? "", ...more]
  return { brokers, s3: s3FromEnv("unused", env) }
}

/** Committed offsets of a group, per partition (the bench's, read through the Kafka admin API). */
export { committedOffsets } from "../bench/services.ts"

/** Records committed: the committed offsets summed (a partition without one counts 0). */
export const committedRecords = (offsets: ReadonlyArray<number>): number => offsets.reduce((s, o) => s + Math.max(0, o), 0)

/** The child's exit code once it exits, or `"timeout"` after `within` ms. */
export const exited = (child: ChildProcess, within: number) =>
  new Promise<number | null | "timeout">((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
    const timer = setTimeout(() => resolve("timeout"), within)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve(code)
    })
  })

/** The last bytes of an archiver's stderr kept, to say why it exited (bounded: a long run logs a lot). */
export const STDERR_TAIL_BYTES = 4096

/** An archiver child process and the tail of its stderr. */
export interface ArchiverChild {
  readonly child: ChildProcess
  readonly tail: () => string
}

/**
 * Starts the Kafka → S3 archiver (`kafka-to-s3/main.ts`, the repo's Node with
 * the workspace's sources) on `topic` → `bucket` with `args` after them; its
 * stdout is drained, the last {@link STDERR_TAIL_BYTES} of its stderr kept,
 * and `onLine` (if given) sees each stderr line.
 */
export const startArchiver = (
  topic: string,
  bucket: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly onLine?: (line: string) => void } = {}
): ArchiverChild => {
  const child = spawn(process.execPath, ["--conditions=@sluice/source", "examples/kafka-to-s3/main.ts", topic, bucket, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: options.env ?? process.env
  })
  let tail = ""
  let partial = ""
  child.stdout?.on("data", () => undefined)
  child.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8")
    tail = (tail + text).slice(-STDERR_TAIL_BYTES)
    if (options.onLine === undefined) return
    const lines = (partial + text).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) options.onLine(line)
  })
  return { child, tail: () => tail }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
