/**
 * The fault runs' hands on the real services: the project's scripts killed
 * and restarted (`scripts/s3-server.sh kill|start`, `scripts/kafka-broker.sh
 * kill|start`, `scripts/kafka-cluster.sh kill-node|start-node`), and
 * toxiproxy's HTTP API for the network faults. `scripts/faults.sh` starts the
 * services in a folder of their own (`SLUICE_SERVICES_DIR`), so killing them
 * never touches the instances the test suite shares; every call here inherits
 * that environment.
 */
import { spawnSync } from "node:child_process"

/** A script that did not do what it was asked (its stderr tail in the message). */
export class ServiceCommandFailed extends Error {
  readonly _tag = "ServiceCommandFailed"
}

/** Seconds a service script may take (a broker restarting on unclean logs took 12 s here). */
const SCRIPT_TIMEOUT_MS = 180_000

/** Runs `bash scripts/<script> <args…>`, bounded; throws `ServiceCommandFailed` when it fails. */
export const script = (name: string, ...args: ReadonlyArray<string>): string => {
  const result = spawnSync("bash", [`scripts/${name}`, ...args], { encoding: "utf8", timeout: SCRIPT_TIMEOUT_MS, env: process.env })
  if (result.status !== 0) {
    throw new ServiceCommandFailed(`scripts/${name} ${args.join(" ")}: exit ${String(result.status)}${result.error === undefined ? "" : ` (${result.error.message})`}\n${(result.stderr ?? "").slice(-2000)}`)
  }
  return result.stdout
}

export const s3 = {
  kill: () => script("s3-server.sh", "kill"),
  start: () => script("s3-server.sh", "start"),
  /** Where the server keeps its objects (the tmpfs of the disk-full fault). */
  dataDir: (): string => {
    const status = script("s3-server.sh", "status")
    const match = /data=(\S+)/.exec(status)
    if (match?.[1] === undefined) throw new ServiceCommandFailed(`s3-server.sh status: no data= in ${status}`)
    return match[1]
  }
}

export const broker = {
  kill: () => script("kafka-broker.sh", "kill"),
  start: () => script("kafka-broker.sh", "start")
}

export const cluster = {
  up: () => script("kafka-cluster.sh", "up"),
  down: () => script("kafka-cluster.sh", "down"),
  killNode: (n: number) => script("kafka-cluster.sh", "kill-node", String(n)),
  startNode: (n: number) => script("kafka-cluster.sh", "start-node", String(n))
}

/** Bound on one toxiproxy API call. */
const TOXIPROXY_CALL_MS = 120_000

/** A toxic as toxiproxy's API takes it (https://github.com/Shopify/toxiproxy#toxics). */
export interface Toxic {
  readonly name: string
  readonly type: "latency" | "bandwidth" | "slow_close" | "timeout" | "reset_peer" | "limit_data" | "slicer"
  /** `upstream`: client → server (request bodies); `downstream`: server → client. */
  readonly stream: "upstream" | "downstream"
  /** Share of connections it applies to (0..1). */
  readonly toxicity: number
  readonly attributes: Readonly<Record<string, number>>
}

/** Toxiproxy's API at `url` (`SLUICE_TOXIPROXY_URL`). */
export const toxiproxy = (url: string) => {
  const call = async (method: string, path: string, body?: unknown): Promise<void> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      // Removing a toxic waits for each connection's stub to drain, up to 5 s a connection
      // (toxiproxy's link.go): a bandwidth toxic over a dozen connections takes tens of seconds.
      signal: AbortSignal.timeout(TOXIPROXY_CALL_MS)
    })
    if (!response.ok && !(method === "DELETE" && response.status === 404)) {
      throw new ServiceCommandFailed(`toxiproxy ${method} ${path}: ${response.status} ${await response.text()}`)
    }
  }
  return {
    /** A proxy `name` on 127.0.0.1:`listenPort` to `upstream` (host:port), replacing one of that name. */
    proxy: async (name: string, listenPort: number, upstream: string): Promise<string> => {
      await call("DELETE", `/proxies/${name}`)
      await call("POST", "/proxies", { name, listen: `127.0.0.1:${listenPort}`, upstream, enabled: true })
      return `127.0.0.1:${listenPort}`
    },
    add: (proxy: string, toxic: Toxic) => call("POST", `/proxies/${proxy}/toxics`, toxic),
    remove: (proxy: string, toxic: string) => call("DELETE", `/proxies/${proxy}/toxics/${toxic}`),
    drop: (proxy: string) => call("DELETE", `/proxies/${proxy}`)
  }
}
export type Toxiproxy = ReturnType<typeof toxiproxy>
