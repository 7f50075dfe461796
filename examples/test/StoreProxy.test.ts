/**
 * The replay's store proxy: its pure fault model (`StoreFaults.decide`, the
 * simulator's order and draws) and the proxy process in front of the real S3
 * server — real S3 error responses the SDK classifies as S3 sends them, and a
 * knee that caps the requests reaching the server, counted by an upstream of
 * the test's own (outside the proxy).
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { S3Errors } from "@sluice/adapter-s3"
import { Rng } from "@sluice/testkit"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import * as StoreFaults from "../replay/StoreFaults.ts"
import * as StoreProxy from "../replay/StoreProxy.ts"
import { endpoints, reachable, s3Client } from "./services.ts"

const at = (now: number, objectUpload = true, inflight = 1): StoreFaults.Request => ({ objectUpload, inflight, now })

describe("StoreFaults.decide (the simulator's fault model per request)", () => {
  it("throttles only above throttleAbove, with its probability; errors independently", () => {
    const p = { ...StoreFaults.none, throttleAbove: 4, throttleProbability: 0.5, errorRate: 0.1 }
    const b = StoreFaults.fullBucket(p, 0)
    expect(StoreFaults.decide(p, b, at(0, true, 4), 0, 0.5).verdict._tag).toBe("Forward")
    expect(StoreFaults.decide(p, b, at(0, true, 5), 0.49, 0.5).verdict._tag).toBe("SlowDown")
    expect(StoreFaults.decide(p, b, at(0, true, 5), 0.5, 0.5).verdict._tag).toBe("Forward")
    expect(StoreFaults.decide(p, b, at(0, true, 1), 0.9, 0.09).verdict._tag).toBe("InternalError")
  })

  it("a token bucket of rateLimit uploads a second answers 429 with whole-second Retry-After; bodiless requests are not counted", () => {
    const p = { ...StoreFaults.none, rateLimit: 2 }
    let bucket = StoreFaults.fullBucket(p, 0)
    const verdicts: Array<string> = []
    for (const now of [0, 1, 2]) {
      const d = StoreFaults.decide(p, bucket, at(now), 1, 1)
      bucket = d.bucket
      verdicts.push(d.verdict._tag === "TooManyRequests" ? `429 ${d.verdict.retryAfterSeconds}` : d.verdict._tag)
    }
    expect(verdicts).toEqual(["Forward", "Forward", "429 1"])
    expect(StoreFaults.decide(p, bucket, at(3, false), 1, 1).verdict._tag).toBe("Forward")
    // Half a second later one token is back.
    expect(StoreFaults.decide(p, bucket, at(503), 1, 1).verdict._tag).toBe("Forward")
  })

  it("a seed fixes every verdict (two draws per request, in a fixed order)", () => {
    const p = { ...StoreFaults.none, throttleAbove: 0, throttleProbability: 0.3, errorRate: 0.2 }
    const run = (seed: number) => {
      const rng = Rng.make(seed)
      const b = StoreFaults.fullBucket(p, 0)
      return Array.from({ length: 200 }, (_, i) => StoreFaults.decide(p, b, at(i), rng.uniform(), rng.uniform()).verdict._tag)
    }
    expect(run(13)).toEqual(run(13))
    expect(run(13)).not.toEqual(run(14))
    const throttled = run(13).filter((v) => v === "SlowDown").length
    expect(throttled).toBeGreaterThan(30)
    expect(throttled).toBeLessThan(90)
  })
})

/** An upstream that holds every request `holdMillis` and counts how many it holds at once. */
const countingUpstream = async (holdMillis: number) => {
  let now = 0
  let max = 0
  const server = Http.createServer((req, res) => {
    now++
    max = Math.max(max, now)
    req.resume()
    setTimeout(() => {
      now--
      res.writeHead(200, { "Content-Length": "0" })
      res.end()
    }, holdMillis)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    max: () => max,
    /** Starts counting the maximum again from the requests held now. */
    reset: () => {
      max = now
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

describe("the store proxy (its own process)", { timeout: 60_000 }, () => {
  /** A PUT of `k<i>` through `agent`; its status. */
  const put = (endpoint: string, agent: Http.Agent, i: number) =>
    new Promise<number>((resolve, reject) => {
      const req = Http.request(`${endpoint}/bucket/k${i}`, { method: "PUT", agent }, (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode ?? 0))
      })
      req.on("error", reject)
      req.end("body")
    })

  it("caps the requests reaching the server at the knee; the others wait and all complete", async () => {
    const upstream = await countingUpstream(150)
    const proxy = await StoreProxy.start(upstream.url, 1)
    try {
      await proxy.set({ knee: 3 })
      const agent = new Http.Agent({ keepAlive: true, maxSockets: 32 })
      const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => put(proxy.endpoint, agent, i)))
      agent.destroy()
      expect(statuses).toEqual(Array(12).fill(200))
      expect(upstream.max(), "never more than the knee at the server").toBe(3)
      expect((await proxy.counters()).maxWaiting).toBeGreaterThan(0)
      // Without a knee the same load reaches the server at once.
      await proxy.set({ knee: null })
      const again = await Promise.all(Array.from({ length: 8 }, () => fetch(`${proxy.endpoint}/bucket/x`, { method: "PUT", body: "b" }).then((r) => r.status)))
      expect(again).toEqual(Array(8).fill(200))
      expect(upstream.max()).toBeGreaterThan(3)
    } finally {
      proxy.close()
      await upstream.close()
    }
  })

  it("serves no more than throttleAbove at once (a store throttles at capacity), and a lowered limit holds from then on", async () => {
    const upstream = await countingUpstream(300)
    const proxy = await StoreProxy.start(upstream.url, 1)
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 32 })
    try {
      // No knee; throttling above 2 (never refusing, so every request is let through and must wait).
      await proxy.set({ knee: null, throttleAbove: 2, throttleProbability: 0 })
      expect(await Promise.all(Array.from({ length: 8 }, (_, i) => put(proxy.endpoint, agent, i)))).toEqual(Array(8).fill(200))
      expect(upstream.max(), "never more than throttleAbove at the server").toBe(2)
      // A knee lowered while 6 are served: as they finish, only 2 go on.
      await proxy.set({ knee: 6, throttleAbove: null })
      const running = Promise.all(Array.from({ length: 14 }, (_, i) => put(proxy.endpoint, agent, 100 + i)))
      await new Promise((resolve) => setTimeout(resolve, 100))
      await proxy.set({ knee: 2 })
      await new Promise((resolve) => setTimeout(resolve, 350))
      upstream.reset()
      expect(await running).toEqual(Array(14).fill(200))
      expect(upstream.max(), "the lowered knee, once the requests it found have finished").toBe(2)
    } finally {
      agent.destroy()
      proxy.close()
      await upstream.close()
    }
  })

  it("in front of the real S3 server: forwards signed requests unchanged, and answers 503 SlowDown, a bare 503 on HEAD, 500 and 429 + Retry-After as S3 does", async () => {
    const { s3 } = endpoints()
    const proxy = await StoreProxy.start(s3.endpoint, 7)
    const client = s3Client(s3, proxy.endpoint)
    const bucket = `store-proxy-${Date.now().toString(36)}`
    const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)
    try {
      await reachable("the S3 server through the store proxy", client.send(new CreateBucketCommand({ Bucket: bucket })))
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: "a.rec", Body: "payload" }))
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: "a.rec" }))
      expect(await got.Body?.transformToString()).toBe("payload")

      await proxy.set({ throttleAbove: 0, throttleProbability: 1 })
      const put = await failure(client.send(new PutObjectCommand({ Bucket: bucket, Key: "b.rec", Body: "x" })))
      expect(S3Errors.classOf(put)).toBe("Throttled")
      expect(S3Errors.codeOf(put)).toBe("SlowDown")
      const head = await failure(client.send(new HeadObjectCommand({ Bucket: bucket, Key: "a.rec" })))
      expect(S3Errors.statusOf(head)).toBe(503)

      await proxy.set({ throttleAbove: null, errorRate: 1 })
      const err = await failure(client.send(new PutObjectCommand({ Bucket: bucket, Key: "c.rec", Body: "x" })))
      expect(S3Errors.codeOf(err)).toBe("InternalError")
      expect(S3Errors.classOf(err)).toBe("Transient")

      await proxy.set({ errorRate: 0, rateLimit: 1 })
      const puts = await Promise.all([1, 2, 3].map((i) => failure(client.send(new PutObjectCommand({ Bucket: bucket, Key: `r${i}.rec`, Body: "x" })))))
      const limited = puts.filter((e) => e !== undefined)
      expect(limited.length).toBeGreaterThanOrEqual(2)
      for (const e of limited) {
        expect(S3Errors.classOf(e)).toBe("Throttled")
        expect(S3Errors.retryAfterOf(e)).toBe(1000)
      }
      const counted = await proxy.counters()
      expect(counted.slowDown).toBe(2)
      expect(counted.internalError).toBe(1)
      expect(counted.tooManyRequests).toBe(limited.length)
    } finally {
      client.destroy()
      proxy.close()
    }
  })
})
