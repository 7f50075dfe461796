/**
 * Reused connections on the real S3 server (`scripts/s3-server.sh` starts
 * versitygw with `--keep-alive`, as real S3 keeps connections open): the sink's
 * client sends many requests over few sockets, and a request that timed out or
 * was aborted in the middle of its body does not poison the socket it ran on —
 * the requests after it succeed, each object reads back as written, and the
 * broken upload leaves no object.
 *
 * Sockets are counted from outside the client, on Node's `net.client.socket`
 * diagnostics channel (every client socket the process opens).
 */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { Effect } from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import type { Socket } from "node:net"
import { Readable } from "node:stream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { S3Config, S3Sink } from "../src/index.ts"
import { env, newBucket, requireServer, sinkConfig } from "./support/Env.ts"

/** Client sockets opened to the S3 server's port since `start`. */
const socketCounter = () => {
  const port = Number(new URL(env().endpoint).port)
  let opened = 0
  const onSocket = (message: unknown) => {
    const socket = (message as { readonly socket: Socket }).socket
    // The remote port is known once connected; count at connect.
    socket.once("connect", () => {
      if (socket.remotePort === port) opened++
    })
  }
  DiagnosticsChannel.subscribe("net.client.socket", onSocket)
  return { opened: () => opened, stop: () => DiagnosticsChannel.unsubscribe("net.client.socket", onSocket) }
}

/** A body that sends `sent` bytes of the `declared` it announces, then stalls (never ends). */
const stallingBody = (sent: number) => {
  const body = new Readable({ read() {} })
  body.push(Buffer.alloc(sent, 0x61))
  return body
}

const REQUEST_TIMEOUT_MILLIS = 500

let bucket = ""
beforeAll(async () => {
  await requireServer()
  bucket = await newBucket("keepalive")
})

const client = () =>
  S3Sink.makeClient(Effect.runSync(S3Config.decode(sinkConfig(bucket, { requestTimeout: REQUEST_TIMEOUT_MILLIS }))))

const putAndRead = async (c: ReturnType<typeof client>, key: string) => {
  const body = Buffer.from(`object ${key}`)
  await c.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }))
  const got = await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  return Buffer.from(await got.Body?.transformToByteArray() ?? new Uint8Array(0)).toString()
}

const notFound = async (c: ReturnType<typeof client>, key: string) =>
  c.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(() => false, (e: unknown) => (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404)

describe("keep-alive against the real S3 server", () => {
  let counter = { opened: () => 0, stop: () => {} }
  beforeAll(() => {
    counter = socketCounter()
  })
  afterAll(() => counter.stop())

  it("20 sequential PUT + GET pairs go over one or two sockets, not one per request", async () => {
    const c = client()
    try {
      const before = counter.opened()
      for (let i = 0; i < 20; i++) expect(await putAndRead(c, `seq-${i}`)).toBe(`object seq-${i}`)
      // 40 requests: without keep-alive on the server (Connection: close) this is 40.
      expect(counter.opened() - before).toBeLessThanOrEqual(2)
    } finally {
      c.destroy()
    }
  })

  it("a PUT that times out mid-body, and one aborted mid-body, leave no object and no poisoned socket", async () => {
    const c = client()
    try {
      const before = counter.opened()
      // Warm: one socket in the pool, reused by what follows.
      expect(await putAndRead(c, "warm")).toBe("object warm")

      const timedOut = await c.send(new PutObjectCommand({ Bucket: bucket, Key: "timed-out", Body: stallingBody(4096), ContentLength: 1 << 20 }))
        .then(() => "succeeded", (e: unknown) => (e as Error).name)
      expect(timedOut).toBe("TimeoutError")

      const abort = new AbortController()
      setTimeout(() => abort.abort(), 100)
      const aborted = await c.send(new PutObjectCommand({ Bucket: bucket, Key: "aborted", Body: stallingBody(4096), ContentLength: 1 << 20 }), { abortSignal: abort.signal })
        .then(() => "succeeded", (e: unknown) => (e as Error).name)
      expect(aborted).toBe("AbortError")

      // Every request after them succeeds and reads back its own bytes.
      for (let i = 0; i < 10; i++) expect(await putAndRead(c, `after-${i}`)).toBe(`object after-${i}`)
      expect(await notFound(c, "timed-out")).toBe(true)
      expect(await notFound(c, "aborted")).toBe(true)
      // The 24 good requests ran over reused sockets: the two broken ones were
      // dropped (at most one new socket each), not every request a new one.
      expect(counter.opened() - before).toBeLessThanOrEqual(4)
    } finally {
      c.destroy()
    }
  })
})
