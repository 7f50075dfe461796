/**
 * The replay's path imposes the simulated store on the real S3 server: a
 * request waiting for the serving limit does not move its body through the
 * bandwidth toxic (the store proxy sits in front of toxiproxy), and the
 * proxy's own answers wait the store's base latency, as the server's do.
 * Timed from outside, with the real S3 client.
 */
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3"
import { S3Errors } from "@sluice/adapter-s3"
import { Store } from "@sluice/testkit"
import { describe, expect, it } from "vitest"
import { storePath } from "../replay/Replay.ts"
import { endpoints, s3Client } from "./services.ts"

const toxiproxyUrl = (): string => {
  const url = process.env["SLUICE_TOXIPROXY_URL"]
  if (url === undefined || url === "") throw new Error("SLUICE_TOXIPROXY_URL is not set: run `npm test` (scripts/services.sh up starts toxiproxy)")
  return url
}

describe("the replay's path (store proxy → toxiproxy → the real S3 server)", { timeout: 60_000 }, () => {
  it("serves no more than the serving limit through the bandwidth toxic, and delays its own answers by the base latency", async () => {
    const { s3 } = endpoints()
    const path = await storePath({ s3, toxiproxy: toxiproxyUrl(), scale: 1 }, 3)
    const client = s3Client(s3, path.endpoint)
    const bucket = `replay-path-${Date.now().toString(36)}`
    try {
      const store = (change: Partial<Store.StoreParams>): Store.StoreParams => ({ ...Store.defaultParams, jitter: 0, ...change })
      await path.set(store({ baseLatencyMillis: 10 }))
      await client.send(new CreateBucketCommand({ Bucket: bucket }))
      // 1 MB/s per request, one served at a time (it throttles above 1, never refusing).
      await path.set(store({ baseLatencyMillis: 10, bandwidthBytesPerSecond: 1_000_000, throttleAbove: 1, throttleProbability: 0 }))
      const body = Buffer.alloc(1_000_000, 0x61)
      const started = performance.now()
      const done = await Promise.all([1, 2, 3].map((i) =>
        client.send(new PutObjectCommand({ Bucket: bucket, Key: `k${i}`, Body: body })).then(() => (performance.now() - started) / 1000)
      ))
      done.sort((a, b) => a - b)
      // One after another through the toxic: ~1, ~2, ~3 s. With bodies moving
      // while they wait (the proxy behind toxiproxy) all three end at ~1 s.
      expect(done[0]).toBeGreaterThan(0.8)
      expect(done[1]).toBeGreaterThan(1.7)
      expect(done[2]).toBeGreaterThan(2.6)

      // Refused at once by the proxy, answered after the base latency.
      await path.set(store({ baseLatencyMillis: 400, throttleAbove: 0, throttleProbability: 1 }))
      const t0 = performance.now()
      const refused = await client.send(new PutObjectCommand({ Bucket: bucket, Key: "r", Body: "x" })).then(() => undefined, (e: unknown) => e)
      expect(S3Errors.codeOf(refused)).toBe("SlowDown")
      expect(performance.now() - t0).toBeGreaterThanOrEqual(390)
    } finally {
      client.destroy()
      await path.close()
    }
  })
})
