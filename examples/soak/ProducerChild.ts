/**
 * soak — the producer child process (`producer.ts`) seen from its parent:
 * spawned with the topic, rate and record size, its `PRODUCED <n>` lines read
 * into a count of records acknowledged, and a stop that lets it finish the
 * send in flight. `ServiceEnds.ts` (the soak's Kafka source) and
 * `examples/brokers` (the broker scenarios) both start their load with it.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"

/** What to produce. */
export interface Load {
  readonly brokers: ReadonlyArray<string>
  readonly topic: string
  readonly partitions: number
  /** Records per second (paced); a huge rate means as fast as 4 sends in flight go. */
  readonly rate: number
  readonly recordBytes: number
  /** `leader` (default) or `all` in-sync replicas. */
  readonly acks?: "leader" | "all" | undefined
}

/** A running producer child. */
export interface ProducerChild {
  readonly child: ChildProcess
  /** Records acknowledged so far (updated about once a second), and whether the child exited. */
  readonly state: { produced: number; exited: boolean; exitCode: number | null }
  readonly exited: Promise<void>
  /** SIGTERM: it finishes the send in flight, prints its last count and exits; resolves with the records acknowledged. */
  readonly stop: () => Promise<number>
}

/**
 * Starts `producer.ts` as a child of this process (same Node and conditions);
 * its stderr goes to ours.
 *
 * **Example**
 *
 * ```ts
 * const load = ProducerChild.start({ brokers, topic, partitions: 8, rate: 20_000, recordBytes: 150, acks: "all" })
 * // …
 * const produced = await load.stop()
 * ```
 */
export const start = (load: Load): ProducerChild => {
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(new URL("./producer.ts", import.meta.url)),
      load.brokers.join(","),
      load.topic,
      String(load.partitions),
      String(load.rate),
      String(load.recordBytes),
      load.acks ?? "leader"
    ],
    { stdio: ["ignore", "pipe", "inherit"] }
  )
  const state = { produced: 0, exited: false, exitCode: null as number | null }
  const exited = new Promise<void>((resolve) =>
    child.on("exit", (code) => {
      state.exited = true
      state.exitCode = code
      resolve()
    })
  )
  let buffered = ""
  child.stdout?.setEncoding("utf8")
  child.stdout?.on("data", (text: string) => {
    buffered += text
    const lines = buffered.split("\n")
    buffered = lines.pop() ?? ""
    for (const line of lines) {
      const m = /^PRODUCED (\d+)$/.exec(line)
      if (m !== null) state.produced = Number(m[1])
    }
  })
  const stop = async () => {
    if (!state.exited) child.kill("SIGTERM")
    await exited
    return state.produced
  }
  return { child, state, exited, stop }
}
