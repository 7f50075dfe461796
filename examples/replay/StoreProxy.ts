/**
 * The store proxy (`store-proxy.ts`) started as a child process in front of
 * an S3 server, and its control API. It ends when this process does (its
 * stdin closes) or on `close`.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type * as StoreFaults from "./StoreFaults.ts"

/** What the store proxy counted (its `GET /__store/counters`). */
export interface Counters {
  readonly requests: number
  readonly forwarded: number
  readonly slowDown: number
  readonly internalError: number
  readonly tooManyRequests: number
  readonly maxInflight: number
  readonly maxWaiting: number
  readonly inflight: number
  readonly forwarding: number
  readonly waiting: number
  readonly params: StoreFaults.FaultParams
}

/** A running store proxy. */
export interface StoreProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string
  /** Changes the faults and knee from the next request on. */
  readonly set: (change: Partial<StoreFaults.FaultParams>) => Promise<void>
  readonly counters: () => Promise<Counters>
  readonly close: () => void
}

/** Starts the proxy forwarding to `upstream` (`http://host:port`), drawing its faults from `seed`. */
export const start = async (upstream: string, seed: number): Promise<StoreProxy> => {
  const child = spawn(process.execPath, ["--conditions=@sluice/source", fileURLToPath(new URL("./store-proxy.ts", import.meta.url)), "--upstream", upstream, "--seed", String(seed)], {
    stdio: ["pipe", "pipe", "inherit"]
  })
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error("store proxy: no `listening` line within 30 s"))
    }, 30_000)
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
      const line = /listening (http:\/\/\S+)/.exec(out)
      if (line?.[1] !== undefined) {
        clearTimeout(timer)
        resolve(line[1])
      }
    })
    child.on("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`store proxy exited (${code}) before listening`))
    })
  })
  return {
    endpoint,
    set: async (change) => {
      const response = await fetch(`${endpoint}/__store/params`, { method: "POST", body: JSON.stringify(change), headers: { "content-type": "application/json" } })
      if (!response.ok) throw new Error(`store proxy params: ${response.status} ${await response.text()}`)
    },
    counters: async () => (await (await fetch(`${endpoint}/__store/counters`)).json()) as Counters,
    close: () => {
      child.stdin.end()
      child.kill("SIGTERM")
    }
  }
}
