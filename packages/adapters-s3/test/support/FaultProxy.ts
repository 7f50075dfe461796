/**
 * A loopback HTTP proxy in front of a real S3 server that forwards bytes
 * unchanged (so SigV4 signatures still verify) and, on rules, answers with real
 * S3 error responses, resets the connection, adds latency, holds requests
 * until released, or corrupts the request body in flight.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Transform } from "node:stream"
import { Effect } from "effect"
import type { Scope } from "effect"

/** What a rule does to a matching request. */
export type Fault =
  | {
    readonly _tag: "Error"
    readonly status: number
    /** S3 error code; `undefined` answers with no body (like a bare 503 on HEAD). */
    readonly code?: string | undefined
    readonly message?: string | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
  }
  | { readonly _tag: "Reset" }
  | { readonly _tag: "Latency"; readonly millis: number }
  | { readonly _tag: "Corrupt" }
  | { readonly _tag: "Hold" }

/** Which requests a rule applies to, and how many times. */
export interface Rule {
  /** HTTP method, e.g. `"PUT"` or `"HEAD"` (any when absent). */
  readonly method?: string | undefined
  /** Tested against the decoded path without the query, e.g. `/\.rec$/`. */
  readonly path?: RegExp | undefined
  /** Tested against the query string, e.g. `/partNumber=2\b/`. */
  readonly query?: RegExp | undefined
  /** Let this many matching requests through first (default 0). */
  readonly skip?: number | undefined
  /** Apply to this many matching requests, then stop (default: forever). */
  readonly times?: number | undefined
  /** Apply only while this holds, checked per request (default: always); a request it lets through is not counted. */
  readonly while?: (() => boolean) | undefined
  readonly fault: Fault
}

/** A request seen by the proxy and the fault applied to it, if any. */
export interface Hit {
  readonly method: string
  readonly path: string
  readonly fault: Fault["_tag"] | undefined
  /** Wall-clock ms when the proxy received it. */
  readonly at: number
  /** Its `x-amz-content-sha256` header: the payload hash it was signed with. */
  readonly contentSha256: string | undefined
}

/** A regular expression matching `text` literally (e.g. an object key in a `path` rule). */
export const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A running proxy. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: use as the S3 endpoint. */
  readonly endpoint: string
  /** Replaces the rules (counters start over). */
  readonly setRules: (rules: ReadonlyArray<Rule>) => void
  /** Every request, in order. */
  readonly hits: Array<Hit>
  /** Requests held by a {@link hold} rule and not released yet. */
  readonly held: () => number
  /** Forwards every held request now (set other rules first, or later ones are held again). */
  readonly release: () => void
  readonly close: () => Promise<void>
}

/** `503 SlowDown`, as S3 sends it. */
export const slowDown = (headers?: Record<string, string>): Fault => ({
  _tag: "Error",
  status: 503,
  code: "SlowDown",
  message: "Please reduce your request rate.",
  headers
})
/** `429` with a `Retry-After` header (seconds or an HTTP date). */
export const tooManyRequests = (retryAfter: string): Fault => ({
  _tag: "Error",
  status: 429,
  code: "TooManyRequests",
  message: "Too many requests.",
  headers: { "Retry-After": retryAfter }
})
/** `500 InternalError`. */
export const internalError: Fault = {
  _tag: "Error",
  status: 500,
  code: "InternalError",
  message: "We encountered an internal error. Please try again."
}
/** A bare `503` with no body (what a throttled HEAD looks like). */
export const bare503: Fault = { _tag: "Error", status: 503 }
/** `403 AccessDenied`. */
export const accessDenied: Fault = { _tag: "Error", status: 403, code: "AccessDenied", message: "Access Denied" }
/** Destroys the client's socket. */
export const reset: Fault = { _tag: "Reset" }
/** Adds `millis` before forwarding. */
export const latency = (millis: number): Fault => ({ _tag: "Latency", millis })
/** Keeps the request waiting, unanswered, until `release()` (or `close()`). */
export const hold: Fault = { _tag: "Hold" }
/** Flips one byte of the request body while forwarding it. */
export const corrupt: Fault = { _tag: "Corrupt" }

const errorXml = (code: string, message: string, path: string): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
  `<Resource>${path.split("?")[0] ?? ""}</Resource><RequestId>sluice-fault-proxy</RequestId></Error>`

const flipFirstByte = (): Transform => {
  let done = false
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (!done && chunk.length > 0) {
        const copy = Buffer.from(chunk)
        copy[0] = (copy[0] ?? 0) ^ 0xff
        done = true
        cb(null, copy)
      } else cb(null, chunk)
    }
  })
}

/**
 * Starts a proxy on 127.0.0.1 (random port) forwarding to `target`
 * (`http://host:port`).
 */
export const start = async (target: string, rules: ReadonlyArray<Rule> = []): Promise<FaultProxy> => {
  const upstream = new URL(target)
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })
  let active: Array<{ rule: Rule; seen: number; applied: number }> = []
  const setRules = (next: ReadonlyArray<Rule>) => {
    active = next.map((rule) => ({ rule, seen: 0, applied: 0 }))
  }
  setRules(rules)
  const hits: Array<Hit> = []
  const waiting: Array<() => void> = []

  const pick = (method: string, url: string): Fault | undefined => {
    const at = url.indexOf("?")
    const path = decodeURIComponent(at < 0 ? url : url.slice(0, at))
    const query = at < 0 ? "" : url.slice(at + 1)
    for (const r of active) {
      if (r.rule.method !== undefined && r.rule.method !== method) continue
      if (r.rule.path !== undefined && !r.rule.path.test(path)) continue
      if (r.rule.query !== undefined && !r.rule.query.test(query)) continue
      if (r.rule.while !== undefined && !r.rule.while()) continue
      r.seen++
      if (r.seen <= (r.rule.skip ?? 0)) continue
      if (r.applied >= (r.rule.times ?? Infinity)) continue
      r.applied++
      return r.rule.fault
    }
    return undefined
  }

  const forward = (req: Http.IncomingMessage, res: Http.ServerResponse, corruptBody: boolean) => {
    const out = Http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.pipe(res)
      }
    )
    out.on("error", () => req.socket.destroy())
    if (corruptBody) req.pipe(flipFirstByte()).pipe(out)
    else req.pipe(out)
  }

  const server = Http.createServer((req, res) => {
    const method = req.method ?? "GET"
    const path = req.url ?? "/"
    const fault = pick(method, path)
const sha = req.headers["x-amz-content-sha256"]
    hits.push({ method, path, fault: fault?._tag, at: Date.now(), contentSha256: typeof sha === "string" ? sha : undefined })
    if (fault === undefined) return forward(req, res, false)
    switch (fault._tag) {
      case "Reset":
        req.socket.destroy()
        return
      case "Latency":
        setTimeout(() => forward(req, res, false), fault.millis)
        return
      case "Corrupt":
        return forward(req, res, true)
      case "Hold":
        waiting.push(() => forward(req, res, false))
        return
      case "Error": {
        // Read the request body first so the client is not writing into a closed socket.
        req.resume()
        req.on("end", () => {
          const body = fault.code !== undefined && method !== "HEAD"
            ? errorXml(fault.code, fault.message ?? fault.code, path)
            : ""
          res.writeHead(fault.status, {
            ...(body !== "" ? { "Content-Type": "application/xml" } : {}),
            "Content-Length": String(Buffer.byteLength(body)),
            "x-amz-request-id": "sluice-fault-proxy",
            ...fault.headers
          })
          res.end(body)
        })
        return
      }
    }
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    endpoint: `http://127.0.0.1:${port}`,
    setRules,
    hits,
    held: () => waiting.length,
    release: () => {
      for (const go of waiting.splice(0)) go()
    },
    close: () =>
      new Promise<void>((resolve) => {
        waiting.length = 0
        server.closeAllConnections()
        agent.destroy()
        server.close(() => resolve())
      })
  }
}

/** {@link start} as a scoped Effect: the proxy closes with the scope. */
export const make = (target: string, rules: ReadonlyArray<Rule> = []): Effect.Effect<FaultProxy, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => start(target, rules)), (p) => Effect.promise(() => p.close()))
