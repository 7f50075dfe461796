/**
 * `sluice calibrate` on the real S3 server, straight and through a real
 * network shaper (toxiproxy, started by `scripts/services.sh`): the sweep
 * runs, cleans up after itself, prints a store block the simulator accepts,
 * and — the check from outside — through a toxic of a known latency and
 * bandwidth, the fitted per-request latency and bandwidth are the toxic's
 * (plus the host's own few milliseconds). Bad flags exit 2 naming the flag.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3"
import { Scenario } from "@sluice/testkit"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Calibrate } from "../src/index.ts"
import * as CalibrateCli from "../src/CalibrateCli.ts"
import type { Calibration } from "../src/index.ts"
import { client, env, newBucket, requireServer } from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

const toxiproxy = (): string => {
  const url = process.env["SLUICE_TOXIPROXY_URL"]
  if (url === undefined || url === "") {
    throw new Error("SLUICE_TOXIPROXY_URL is not set: run `npm test`, or `bash scripts/services.sh up` and source .services/*.env")
  }
  return url
}

/** Calls toxiproxy's HTTP API; fails the test (never skips) when it does not answer. */
const api = async (path: string, method: string, body?: unknown): Promise<unknown> => {
  const response = await fetch(`${toxiproxy()}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  }).catch((cause: unknown) => {
    throw new Error(`toxiproxy at ${toxiproxy()} did not answer (${String(cause)}): run \`bash scripts/services.sh up\``)
  })
  if (!response.ok) throw new Error(`toxiproxy ${method} ${path}: ${response.status} ${await response.text()}`)
  return response.status === 204 ? undefined : response.json()
}

interface Run {
  readonly code: number
  readonly out: Array<string>
  readonly err: Array<string>
}

const run = async (argv: ReadonlyArray<string>): Promise<Run> => {
  const out: Array<string> = []
  const err: Array<string> = []
  const e = env()
  const code = await CalibrateCli.main(argv, (l) => out.push(l), (l) => err.push(l), {
    SLUICE_S3_ACCESS_KEY: e.accessKeyId,
    SLUICE_S3_SECRET_KEY: e.secretAccessKey,
    SLUICE_S3_REGION: e.region
  })
  return { code, out, err }
}

const lastJson = (r: Run) => JSON.parse(r.out.at(-1) ?? "{}") as { readonly store: unknown; readonly model: Calibration.StoreModel; readonly cells: ReadonlyArray<unknown> }

let bucket = ""
const proxy = `sluice-calibrate-${process.pid}`
let proxied = ""
beforeAll(async () => {
  await requireServer()
  bucket = await newBucket("calibrate")
  const upstream = new URL(env().endpoint).host
  const made = (await api("/proxies", "POST", { name: proxy, listen: "127.0.0.1:0", upstream })) as { readonly listen: string }
  proxied = `http://${made.listen}`
})
afterAll(async () => {
  if (proxied !== "") await api(`/proxies/${proxy}`, "DELETE").catch(() => undefined)
})

describe("sluice calibrate", { timeout: 120_000 }, () => {
  it("straight to the server: a store block the simulator accepts, every sweep object deleted", async () => {
    const r = await run(["--endpoint", env().endpoint, "--bucket", bucket, "--sizes", "64KiB,1MiB", "--inflight", "1,4", "--cell-seconds", "0.5", "--json"])
    expect(r.err.filter((l) => !l.startsWith("calibrate: "))).toEqual([])
    expect(r.code).toBe(0)
    const fit = lastJson(r)
    expect(fit.cells).toHaveLength(4)
    const store = Schema.decodeUnknownSync(Scenario.StoreSection)(fit.store)
    expect(store.knee).toBeGreaterThanOrEqual(1)
    expect(fit.model.bandwidthBytesPerSecond).toBeGreaterThan(0)
    const c = client()
    try {
      const left = await c.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "sluice-calibrate/" }))
      expect(left.KeyCount ?? 0).toBe(0)
    } finally {
      c.destroy()
    }
  })

  it("through a 40 ms + 5 MB/s toxic: the fitted latency and bandwidth are the toxic's", async () => {
    await api(`/proxies/${proxy}/toxics`, "POST", { name: "latency", type: "latency", stream: "downstream", attributes: { latency: 40, jitter: 0 } })
    await api(`/proxies/${proxy}/toxics`, "POST", { name: "bandwidth", type: "bandwidth", stream: "upstream", attributes: { rate: 5000 } })
    try {
      const r = await run(["--endpoint", proxied, "--bucket", bucket, "--sizes", "64KiB,512KiB", "--inflight", "1,2", "--cell-seconds", "1.5", "--json"])
      expect(r.code).toBe(0)
      const { model } = lastJson(r)
      // toxiproxy's "KB" is 1000 bytes: 5000 KB/s is 5 MB/s per connection. The host adds its own
      // per-request time (a few ms idle, tens of ms under a CPU hog), never less than the toxic.
      expect(model.baseLatencyMillis).toBeGreaterThanOrEqual(36)
      expect(model.baseLatencyMillis).toBeLessThanOrEqual(90)
      expect(model.bandwidthBytesPerSecond / 5e6).toBeGreaterThan(0.7)
      expect(model.bandwidthBytesPerSecond / 5e6).toBeLessThan(1.4)
    } finally {
      await api(`/proxies/${proxy}/toxics/latency`, "DELETE")
      await api(`/proxies/${proxy}/toxics/bandwidth`, "DELETE")
    }
  })

  it("a connection reset in a cell is counted and the cell goes on (the sweep does not end); a store that never answers ends it, saying so", async () => {
    // Through the fault proxy: the 2nd and 3rd uploads have their connection destroyed (what a
    // reused keep-alive socket closed by the server or a proxy looks like: EPIPE, ECONNRESET).
    const faults = await FaultProxy.start(env().endpoint, [{ method: "PUT", skip: 1, times: 2, fault: FaultProxy.reset }])
    const c = client(faults.endpoint)
    try {
      const cells = await Calibrate.sweep({ client: c, bucket, prefix: "sluice-reset", sizes: [64 * 1024], inflights: [1], cellSeconds: 0.5 })
      expect(cells).toHaveLength(1)
      expect(cells[0]?.errors).toBe(2)
      expect(cells[0]?.requests ?? 0).toBeGreaterThan(1)
      expect(cells[0]?.bytesPerSecond ?? 0).toBeGreaterThan(0)
      // From outside: every PUT the proxy saw but the 2 reset was answered.
      expect(faults.hits.filter((h) => h.method === "PUT").length).toBe((cells[0]?.requests ?? 0) + 2)
      faults.setRules([{ method: "PUT", fault: FaultProxy.reset }])
      await expect(Calibrate.sweep({ client: c, bucket, prefix: "sluice-reset", sizes: [64 * 1024], inflights: [2], cellSeconds: 0.3 })).rejects.toThrow(/no upload of 2 × 65536 B answered in 0.3 s: \d+ transient failures/)
    } finally {
      c.destroy()
      await faults.close()
    }
  })

  it("bad flags exit 2 naming the flag, before any request", async () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, RegExp]> = [
      [[], /--bucket: required/],
      [["--bucket", "b", "--inflight", "2,4"], /--inflight: must include 1/],
      [["--bucket", "b", "--sizes", "1MiB"], /--sizes: at least two different sizes/],
      [["--bucket", "b", "--sizes", "1MiB,lots"], /--sizes: "lots" is not a size/],
      [["--bucket", "b", "--cell-seconds", "600"], /--cell-seconds: "600" is not a number of seconds above 0 and at most 60/],
      [["--bucket", "b", "--inflight", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22"], /at most 64/],
      [["--bucket", "b", "--nope"], /Unknown option '--nope'/],
      [["--bucket", "x"], /s3: Expected a value with a length of at least 3/]
    ]
    for (const [argv, message] of cases) {
      const r = await run(argv)
      expect(r.code).toBe(2)
      expect(r.err.join("\n")).toMatch(message)
    }
  })

  it("--help prints the usage generated from the effect/cli definition; a bad flag beside it is still bad usage, as with node:util's parseArgs (issue 29)", async () => {
    const help = await run(["--help"])
    expect(help).toMatchObject({ code: 0, err: [] })
    expect(help.out.join("\n")).toBe(CalibrateCli.usage)
    expect(CalibrateCli.usage).toContain("sluice calibrate --bucket <bucket> [--endpoint <url>] [--region <region>] [--sizes <list>]")
    expect(CalibrateCli.usage).not.toContain("--abort-orphans") // audit's flags are not calibrate's
    expect((await run(["-h", "--sizes", "1MiB"])).code).toBe(0) // values are checked after --help
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["--help", "--nope"], "Unknown option '--nope'"],
      [["--bucket"], "Option '--bucket <value>' argument missing"],
      [["--bucket", "--help"], "Option '--bucket' argument is ambiguous."],
      [["--bucket", "b", "--json=1"], "Option '--json' does not take an argument"],
      [["--bucket", "b", "x"], "Unexpected argument 'x'. This command does not take positional arguments"],
      [["--bucket", "b", "--", "--help"], "Unexpected argument '--help'. This command does not take positional arguments"],
      [["-hx"], "Unknown option '-x'"]
    ]
    for (const [argv, message] of cases) {
      const r = await run(argv)
      expect(r.code).toBe(2)
      expect(r.err[0]?.split("\n")[0]).toBe(`sluice calibrate: ${message}`)
    }
    expect(CalibrateCli.parse(["--bucket", "a", "--bucket", "b"], {})).toMatchObject({ bucket: "b" }) // the last wins, as before
  })

  it("--completions <shell> prints the completion script of sluice; exit 0 (issue 29)", async () => {
    const { code, out, err } = await run(["--completions", "zsh"])
    expect(code).toBe(0)
    expect(err).toEqual([])
    for (const word of ["calibrate", "cell-seconds", "inflight"]) expect(out.join("\n")).toContain(word)
  })
})
