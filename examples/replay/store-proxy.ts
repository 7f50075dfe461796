/**
 * The replay's store proxy, as its own process: a loopback HTTP proxy in front
 * of the S3 server that imposes the scenario's faults (`StoreFaults.decide`,
 * the simulator's model) and its serving limit (the knee, or the in-flight it
 * throttles above when lower: `StoreFaults.servingLimit`) on real requests, forwarding
 * the rest byte for byte (SigV4 signatures still verify). The replay puts it
 * in front of toxiproxy (the shaper: latency and bandwidth toxics), so the
 * serving limit holds before the bandwidth toxic: a request waiting here does
 * not move its body through the toxic. Behind toxiproxy it did: the kernel's
 * socket buffers took a waiting request's body at the toxic's rate, and a
 * store throttling above 5 in flight carried 48 MB/s at 64 in flight where
 * five at a time carry 16. Its own answers wait `answerLatencyMillis` (the
 * store's base latency), as the server's answers wait for the latency toxic.
 *
 *   node --conditions=@sluice/source examples/replay/store-proxy.ts --upstream http://127.0.0.1:9000 --seed 13
 *
 * prints `listening http://127.0.0.1:PORT` on stdout once it listens. Control:
 * `POST /__store/params` with a JSON `Partial<FaultParams>` (applied from the
 * next request on; `__store` is not a valid bucket name, so no S3 request
 * collides), `GET /__store/counters`. Bounded: requests waiting at the knee
 * are at most the connections the client opened (its agent's `maxSockets`).
 * Ends on SIGTERM/SIGINT, or when its stdin closes (the replay exited).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Flag } from "effect/cli"
import * as CommandLine from "@sluice/core/CommandLine"
import { Rng } from "@sluice/testkit"
import * as StoreFaults from "./StoreFaults.ts"

const command = CommandLine.script(
  "store-proxy",
  {
    upstream: Flag.String("upstream").pipe(Flag.withMetavar("URL"), Flag.withDescription("the S3 server to forward to, e.g. http://127.0.0.1:9000")),
    seed: Flag.Int("seed").pipe(Flag.withMetavar("N"), Flag.withDescription("seed of the fault draws (default 1)"), Flag.withDefault(1)),
    port: Flag.Int("port").pipe(Flag.withMetavar("PORT"), Flag.withDescription("port to listen on, on 127.0.0.1 (default 0: any free port)"), Flag.withDefault(0))
  },
  "The replay's store proxy: imposes the scenario's store faults and serving limit on the requests to the S3 server. " +
    "Prints `listening http://127.0.0.1:PORT` once it listens; control: POST /__store/params, GET /__store/counters.",
  { invocation: "node --conditions=@sluice/source examples/replay/store-proxy.ts" }
)

const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
if (flags === undefined) process.exit()
const { upstream: upstreamUrl, seed, port } = flags
const upstream = new URL(upstreamUrl)
const agent = new Http.Agent({ keepAlive: true, maxSockets: 1024 })
const rng = Rng.make(seed)
let params: StoreFaults.FaultParams = StoreFaults.none
let bucket = StoreFaults.fullBucket(params, performance.now())
let inflight = 0
let forwarding = 0
const waiting: Array<() => void> = []
const counters = { requests: 0, forwarded: 0, slowDown: 0, internalError: 0, tooManyRequests: 0, maxInflight: 0, maxWaiting: 0 }

const errorXml = (code: string, message: string, path: string): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
  `<Resource>${path.split("?")[0] ?? ""}</Resource><RequestId>sluice-store-proxy</RequestId></Error>`

const answer = (req: Http.IncomingMessage, res: Http.ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) => {
  // Read the body first so the client is not writing into a closed socket.
  req.resume()
  req.on("end", () => setTimeout(() => {
    const body = req.method === "HEAD" ? "" : errorXml(code, message, req.url ?? "/")
    res.writeHead(status, {
      ...(body === "" ? {} : { "Content-Type": "application/xml" }),
      "Content-Length": String(Buffer.byteLength(body)),
      "x-amz-request-id": "sluice-store-proxy",
      ...headers
    })
    res.end(body)
  }, params.answerLatencyMillis))
}

/** Lets waiting requests through while a slot is free (after a release, or a raised limit; a lowered one lets none through until it is met). */
const admit = () => {
  const limit = StoreFaults.servingLimit(params)
  while (waiting.length > 0 && (limit === null || forwarding < limit)) waiting.shift()?.()
}

const release = () => {
  forwarding--
  admit()
}

const forward = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  forwarding++
  counters.forwarded++
  let released = false
  const done = () => {
    if (released) return
    released = true
    release()
  }
  const out = Http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers)
    up.pipe(res)
    up.on("end", done)
    up.on("error", done)
  })
  out.on("error", () => {
    done()
    req.socket.destroy()
  })
  req.pipe(out)
}

const control = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  if (req.method === "GET" && req.url === "/__store/counters") {
    res.writeHead(200, { "Content-Type": "application/json" })
    res.end(JSON.stringify({ ...counters, inflight, forwarding, waiting: waiting.length, params }))
    return
  }
  if (req.method === "POST" && req.url === "/__store/params") {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      try {
        const change = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Partial<StoreFaults.FaultParams>
        params = { ...params, ...change }
        bucket = StoreFaults.rebucket(bucket, change)
        // A raised limit lets waiting requests through now.
        admit()
        res.writeHead(204)
        res.end()
      } catch (error) {
        res.writeHead(400, { "Content-Type": "text/plain" })
        res.end(String(error))
      }
    })
    return
  }
  res.writeHead(404)
  res.end()
}

const server = Http.createServer((req, res) => {
  if ((req.url ?? "").startsWith("/__store/")) return control(req, res)
  counters.requests++
  inflight++
  if (inflight > counters.maxInflight) counters.maxInflight = inflight
  res.on("close", () => {
    inflight--
  })
  const path = (req.url ?? "/").split("?")[0] ?? "/"
  // Fixed draw order per request (throttle, error), as the simulator draws.
  const uThrottle = rng.uniform()
  const uError = rng.uniform()
  const decided = StoreFaults.decide(params, bucket, { objectUpload: req.method === "PUT" && !path.endsWith(".manifest.json"), inflight, now: performance.now() }, uThrottle, uError)
  bucket = decided.bucket
  switch (decided.verdict._tag) {
    case "SlowDown":
      counters.slowDown++
      return answer(req, res, 503, "SlowDown", "Please reduce your request rate.")
    case "InternalError":
      counters.internalError++
      return answer(req, res, 500, "InternalError", "We encountered an internal error. Please try again.")
    case "TooManyRequests":
      counters.tooManyRequests++
      return answer(req, res, 429, "TooManyRequests", "Too Many Requests", { "Retry-After": String(decided.verdict.retryAfterSeconds) })
    case "Forward":
      const limit = StoreFaults.servingLimit(params)
      if (limit !== null && forwarding >= limit) {
        req.pause()
        waiting.push(() => forward(req, res))
        if (waiting.length > counters.maxWaiting) counters.maxWaiting = waiting.length
        return
      }
      return forward(req, res)
  }
})
server.keepAliveTimeout = 5_000
server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
})
const stop = () => {
  server.closeAllConnections()
  agent.destroy()
  server.close(() => process.exit(0))
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
process.stdin.on("end", stop)
process.stdin.resume()
