/**
 * Every failure class, produced by a real S3 server behind the fault proxy and
 * seen through the real AWS SDK (one attempt per request).
 */
import * as Net from "node:net"
import { Effect } from "effect"
import type { Scope } from "effect"
import { beforeEach, describe, expect, it } from "vitest"
import * as S3Errors from "../src/S3Errors.ts"
import * as S3Sink from "../src/S3Sink.ts"
import { batchOf } from "./support/Batches.ts"
import * as Env from "./support/Env.ts"
import * as FaultProxy from "./support/FaultProxy.ts"

beforeEach(Env.requireServer)

const withSink = <A, E>(
  rules: ReadonlyArray<FaultProxy.Rule>,
  f: (sink: S3Sink.S3Sink, proxy: FaultProxy.FaultProxy) => Effect.Effect<A, E>,
  extra: Record<string, unknown> = {}
) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const bucket = yield* Effect.promise(() => Env.newBucket("faults"))
    const proxy: FaultProxy.FaultProxy = yield* FaultProxy.make(Env.env().endpoint, rules)
    const sink = yield* S3Sink.make(Env.sinkConfig(bucket, extra, proxy.endpoint))
    return yield* f(sink, proxy)
  }) as Effect.Effect<A, E | import("@sluice/core").Config.ConfigError, Scope.Scope>))

const batch = batchOf({ count: 50, recordBytes: 100 })

describe("classification through the real SDK", () => {
  it("503 SlowDown on PUT → Throttled SlowDown, exactly one request (no SDK retry)", async () => {
    const { error, hits } = await withSink(
      [{ method: "PUT", times: 1, fault: FaultProxy.slowDown() }],
      (sink, proxy) => Effect.map(Effect.flip(sink.putObject(batch)), (error) => ({ error, hits: proxy.hits.length }))
    )
    expect(error).toMatchObject({ failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload" })
    expect(hits).toBe(1)
  })

  it("503 SlowDown with Retry-After (HTTP date) → retryAfterMillis", async () => {
    // A date a minute ahead (HTTP dates have whole seconds): the margin absorbs
    // any time the setup below takes on a busy machine.
    const at = new Date(Date.now() + 60_000).toUTCString()
    const error = await withSink(
      [{ method: "PUT", fault: FaultProxy.slowDown({ "Retry-After": at }) }],
      (sink) => Effect.flip(sink.putObject(batch))
    )
    expect(error.failureClass).toBe("Throttled")
    expect(error.retryAfterMillis).toBeGreaterThan(30_000)
    expect(error.retryAfterMillis).toBeLessThanOrEqual(60_000)
  })

  it("429 with Retry-After: 2 → Throttled, retryAfterMillis 2000", async () => {
    const error = await withSink(
      [{ method: "PUT", fault: FaultProxy.tooManyRequests("2") }],
      (sink) => Effect.flip(sink.putObject(batch))
    )
    expect(error).toMatchObject({ failureClass: "Throttled", status: 429, retryAfterMillis: 2000 })
  })

  it("500 InternalError → Transient", async () => {
    const error = await withSink(
      [{ method: "PUT", fault: FaultProxy.internalError }],
      (sink) => Effect.flip(sink.putObject(batch))
    )
    expect(error).toMatchObject({ failureClass: "Transient", code: "InternalError", status: 500 })
  })

  it("bare 503 on HEAD (name Unknown) → Throttled, stage verify", async () => {
    const error = await withSink(
      [{ method: "HEAD", fault: FaultProxy.bare503 }],
      (sink) => Effect.flatMap(sink.putObject(batch), (receipt) => Effect.flip(sink.verify(receipt)))
    )
    expect(error).toMatchObject({ _tag: "SinkFailure", failureClass: "Throttled", status: 503, stage: "verify" })
  })

  it("connection reset → Transient", async () => {
    const error = await withSink(
      [{ method: "PUT", fault: FaultProxy.reset }],
      (sink) => Effect.flip(sink.putObject(batch))
    )
    expect(error.failureClass).toBe("Transient")
    expect(error.status).toBeUndefined()
  })

  it("a request that outlives requestTimeout → Transient", async () => {
    // The proxy never answers, so only the request timeout can end the request.
    const { error, hits } = await withSink(
      [{ method: "PUT", fault: FaultProxy.hold }],
      (sink, proxy) => Effect.map(Effect.flip(sink.putObject(batch)), (error) => ({ error, hits: proxy.hits.map((h) => h.fault) })),
      { requestTimeout: 300 }
    )
    expect(error).toMatchObject({ failureClass: "Transient", status: undefined, stage: "object_upload" })
    expect(hits).toEqual(["Hold"])
  })

  it("added latency delays but succeeds", async () => {
    const { ms, verified } = await withSink(
      [{ method: "PUT", fault: FaultProxy.latency(300) }],
      (sink) =>
        Effect.gen(function*() {
          const t = Date.now()
          const receipt = yield* sink.putObject(batch)
          const ms = Date.now() - t
          const verified = yield* sink.verify(receipt)
          return { ms, verified }
        })
    )
    expect(ms).toBeGreaterThanOrEqual(280)
    expect(verified.objectBytes).toBeGreaterThan(0)
  })

  it("403 AccessDenied → Fatal", async () => {
    const error = await withSink(
      [{ method: "PUT", fault: FaultProxy.accessDenied }],
      (sink) => Effect.flip(sink.putObject(batch))
    )
    expect(error).toMatchObject({ failureClass: "Fatal", code: "AccessDenied", status: 403 })
  })

  it("manifest upload failures carry stage manifest_upload", async () => {
    const error = await withSink(
      [{ method: "PUT", path: /manifest\.json/, fault: FaultProxy.slowDown() }],
      (sink) =>
        Effect.gen(function*() {
          const receipt = yield* sink.putObject(batch)
          const { Batch } = yield* Effect.promise(() => import("@sluice/core"))
          return yield* Effect.flip(sink.putManifest(Batch.manifestOf(batch, receipt.checksum)))
        })
    )
    expect(error).toMatchObject({ failureClass: "Throttled", stage: "manifest_upload" })
  })

  it("connection refused (a closed port on 127.0.0.1) → Transient ECONNREFUSED, on put and on verify", async () => {
    const port = await closedPort()
    const { put, verify } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig("unreachable", {}, `http://127.0.0.1:${port}`))
      const put = yield* Effect.flip(sink.putObject(batch))
      const verify = yield* Effect.flip(sink.verify({ key: batch.key, objectBytes: 1, checksum: { algorithm: "CRC64NVME", value: "x" } }))
      return { put, verify }
    })))
    expect(put).toMatchObject({ _tag: "SinkFailure", failureClass: "Transient", code: "ECONNREFUSED", status: undefined, stage: "object_upload" })
    expect(verify).toMatchObject({ _tag: "SinkFailure", failureClass: "Transient", code: "ECONNREFUSED", stage: "verify" })
    expect(S3Errors.isUnreachable(put)).toBe(true)
  })

  it("a host name that does not resolve → Transient ENOTFOUND (or EAI_AGAIN without a resolver)", async () => {
    const error = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* S3Sink.make(Env.sinkConfig("unresolvable", {}, "http://sluice-no-such-host.invalid:9000"))
      return yield* Effect.flip(sink.putObject(batch))
    })))
    expect(error).toMatchObject({ failureClass: "Transient", status: undefined })
    expect(["ENOTFOUND", "EAI_AGAIN"]).toContain(error.code)
    expect(S3Errors.isUnreachable(error)).toBe(true)
  })
})

/** A port on 127.0.0.1 that nothing listens on (bound, then closed). */
const closedPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
