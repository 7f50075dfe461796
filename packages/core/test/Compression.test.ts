import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Stream } from "effect"
import { Batch, Compression, Config, Failure, Memory, Pipeline, Replicated, SignalBus } from "../src/index.ts"
import { readableReplica } from "./support.ts"

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64")

/** The upload samples a run publishes, collected from the pipeline's own bus. */
const collectSamples = (into: Array<SignalBus.UploadSample>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const bus = yield* SignalBus.SignalBus
    const subscription = yield* bus.subscribe
    yield* Stream.fromSubscription(subscription).pipe(
      Stream.runForEach((s) => Effect.sync(() => s._tag === "UploadSample" && s.stage === "object_upload" && void into.push(s))),
      Effect.forkScoped
    )
  }))

/** Runs an in-memory pipeline with `compression`; what it stored and sampled. */
const archive = (config: Pipeline.PipelineConfigInput) =>
  Effect.gen(function*() {
    const source = Memory.source({ name: "orders", partitions: 2, records: 3_000, recordBytes: 120, chunkRecords: 250 })
    const sink = Memory.sink()
    const samples: Array<SignalBus.UploadSample> = []
    const stats = yield* Pipeline.run({ source, sink, config: { batch: { records: 1_000 }, ...config }, policies: collectSamples(samples) })
    return { source, sink, samples, stats }
  })

describe("Compression through the in-memory pipeline", () => {
  for (const codec of ["none", "gzip", "zstd"] as const) {
    it.live(`${codec}: every record read back equals the record produced; the manifest names the codec; the checksum and objectBytes are over the stored bytes; samples report them`, () =>
      Effect.gen(function*() {
        const { sink, samples, stats } = yield* archive({ compression: codec })
        expect(stats.recordsCommitted).toBe(6_000)
        const encoder = new TextEncoder()
        let records = 0
        const stored = new Map<string, number>()
        for (const [key, object] of sink.objects) {
          const manifest = sink.manifests.get(key)
          if (manifest === undefined) throw new Error(`no manifest for ${key}`)
          expect(manifest.compression).toBe(codec)
          expect(manifest.version).toBe(codec === "none" ? 1 : 2)
          // The checksum and size are the stored bytes', not the framed body's.
          expect(manifest.checksum.value).toBe(sha256(object.body))
          expect(manifest.objectBytes).toBe(object.body.byteLength)
          expect(manifest.bodyBytes).toBe(manifest.payloadBytes + 4 * manifest.records)
          if (codec === "none") expect(manifest.objectBytes).toBe(manifest.bodyBytes)
          else expect(manifest.objectBytes).toBeLessThan((manifest.bodyBytes ?? 0) / 4)
          const payloads = Batch.decodeObject(manifest, object.body)
          const offsets = Batch.recordOffsets(manifest)
          expect(payloads.length).toBe(manifest.records)
          payloads.forEach((payload, i) =>
            expect(payload).toEqual(Memory.recordPayload(encoder, "orders", manifest.partition, offsets[i] ?? -1, 120))
          )
          records += payloads.length
          stored.set(key, object.body.byteLength)
        }
        expect(records).toBe(6_000)
        // What the policies saw: one object_upload sample per object, of its stored size.
        expect(samples.map((s) => s.bytes).sort((a, b) => a - b)).toEqual([...stored.values()].sort((a, b) => a - b))
      }))
  }

  it.live("a level is used: zstd 19 stores fewer bytes than zstd 1 on the same records", () =>
    Effect.gen(function*() {
      const total = (sink: Memory.MemorySink) => [...sink.objects.values()].reduce((n, o) => n + o.body.byteLength, 0)
      const fast = yield* archive({ compression: "zstd", compressionLevel: 1 })
      const small = yield* archive({ compression: "zstd", compressionLevel: 19 })
      expect(total(small.sink)).toBeLessThan(total(fast.sink))
    }))
})

describe("Compression config", () => {
  const decode = (input: unknown) => Config.decodeResult("pipeline", Pipeline.PipelineConfig, input)

  it("defaults to none with the codec's own level", () => {
    const result = decode({})
    expect(result._tag === "Success" && [result.success.compression, result.success.compressionLevel]).toEqual(["none", null])
  })

  it("a codec name that is not one is a ConfigError naming the field", async () => {
    const exit = await Effect.runPromiseExit(Pipeline.run({ source: Memory.source({ name: "t", partitions: 1, records: 1, recordBytes: 1 }), sink: Memory.sink(), config: JSON.parse('{"compression":"lz4"}') }))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
    const failure = error?._tag === "Fail" ? error.error : undefined
    expect(failure).toBeInstanceOf(Config.ConfigError)
    expect(failure instanceof Config.ConfigError ? failure.message : "").toBe(`pipeline: Expected "none" | "gzip" | "zstd"\n  at ["compression"]`)
  })

  it("a level out of its codec's range, or a level with none, is a ConfigError at compressionLevel", () => {
    for (const [input, text] of [
      [{ compression: "gzip", compressionLevel: 10 }, "Expected a gzip level from 1 to 9, got 10"],
      [{ compression: "zstd", compressionLevel: 0 }, "Expected a zstd level from 1 to 22, got 0"],
      [{ compression: "none", compressionLevel: 3 }, `Expected no level with compression "none", got 3`]
    ] as const) {
      const result = decode(input)
      expect(result._tag).toBe("Failure")
      const message = result._tag === "Failure" ? result.failure.message : ""
      expect(message).toContain(text)
      expect(message).toContain(`["compressionLevel"]`)
    }
    expect(decode({ compression: "zstd", compressionLevel: 22 })._tag).toBe("Success")
  })
})

describe("Manifests and bodies", () => {
  it("a manifest written before compression (no compression, no bodyBytes) decodes as none and reads its body", () => {
    const batch = Batch.make({ source: "t", partition: 0, firstOffset: 7, payloads: [new Uint8Array([1, 2]), new Uint8Array([3])] })
    const old = {
      version: 1,
      key: batch.key,
      source: "t",
      partition: 0,
      firstOffset: 7,
      lastOffset: 8,
      records: 2,
      objectBytes: 11,
      payloadBytes: 3,
      checksum: { algorithm: "SHA256", value: "x" },
      sealReason: "records",
      openedAt: 0,
      sealedAt: 0
    }
    const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Batch.Manifest))(JSON.stringify(old))
    expect(manifest.compression).toBe("none")
    expect(manifest.bodyBytes).toBeUndefined()
    expect(Batch.decodeObject(manifest, Batch.encodeBody(batch))).toEqual([new Uint8Array([1, 2]), new Uint8Array([3])])
  })

  it("a reader of version 1 only (before compression) refuses a compressed object's manifest", () => {
    const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(10)], compression: { codec: "gzip" } })
    const OldManifest = Schema.Struct({ ...Batch.Manifest.fields, version: Schema.Literal(1) })
    const json = JSON.stringify(Schema.encodeSync(Batch.Manifest)(Batch.manifestOf(batch, { algorithm: "SHA256", value: "x" })))
    expect(() => Schema.decodeUnknownSync(Schema.fromJsonString(OldManifest))(json)).toThrow()
    const plain = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(10)] })
    const plainJson = JSON.stringify(Schema.encodeSync(Batch.Manifest)(Batch.manifestOf(plain, { algorithm: "SHA256", value: "x" })))
    expect(Schema.decodeUnknownSync(Schema.fromJsonString(OldManifest))(plainJson).version).toBe(1)
  })

  it.live("a large body compresses off the event loop once: encodeBody then returns the same bytes, and they read back", () =>
    Effect.gen(function*() {
      const payloads = Array.from({ length: 4_000 }, (_, i) => new TextEncoder().encode(`{"order":${i},"status":"paid"}`.padEnd(100, " ")))
      const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads, compression: { codec: "zstd", level: 3 } })
      expect(Batch.bodyBytes(batch)).toBeGreaterThanOrEqual(Compression.ASYNC_FROM_BYTES)
      yield* Batch.prepareBody(batch)
      const body = Batch.encodeBody(batch)
      expect(Batch.encodeBody(batch)).toBe(body)
      expect(Batch.objectBytes(batch)).toBe(body.byteLength)
      Batch.releaseBody(batch)
      // The size outlives the body, for the manifest written after the put.
      expect(Batch.manifestOf(batch, { algorithm: "SHA256", value: sha256(body) }).objectBytes).toBe(body.byteLength)
      const manifest = Batch.manifestOf(batch, { algorithm: "SHA256", value: sha256(body) })
      const back = Batch.decodeObject(manifest, body)
      expect(back.length).toBe(payloads.length)
      expect(back.every((p, i) => Buffer.compare(p, payloads[i] ?? new Uint8Array(0)) === 0)).toBe(true)
    }))

  it("a body that does not decompress, or decompresses to another size, throws DecompressionFailed", () => {
    const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(100)], compression: { codec: "zstd" } })
    const body = Batch.encodeBody(batch)
    const manifest = Batch.manifestOf(batch, { algorithm: "SHA256", value: "x" })
    expect(() => Batch.decodeObject(manifest, body.subarray(0, body.byteLength - 3))).toThrow(Compression.DecompressionFailed)
    expect(() => Batch.decodeObject({ ...manifest, compression: "gzip" }, body)).toThrow(Compression.DecompressionFailed)
    expect(() => Batch.decodeObject({ ...manifest, bodyBytes: 50 }, body)).toThrow(/Expected 50 bytes|larger than|Cannot create/)
  })
})

describe("Replicated repair of a compressed object", () => {
  const failure = (failureClass: Failure.FailureClass, code: string): Failure.SinkFailure =>
    new Failure.SinkFailure({ failureClass, code, status: 503, stage: "object_upload", retryAfterMillis: undefined, message: code })

  it("copies the stored (compressed) bytes byte for byte, with the same checksum and manifest", async () => {
    let down = true
    const a = Memory.sink()
    const c = Memory.sink({ fault: () => (down ? failure("Throttled", "SlowDown") : undefined) })
    const payloads = Array.from({ length: 200 }, (_, i) => new TextEncoder().encode(`record ${i} `.repeat(5)))
    const batch = Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads, compression: { codec: "gzip", level: 9 } })
    const report = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sink = yield* Replicated.make([readableReplica("a", a), { ...Memory.sink(), name: "b" }, { ...c, name: "c" }], { quorum: 2 })
      yield* sink.verify(yield* sink.putObject(batch))
      down = false
      return yield* sink.repair
    })))
    expect(report).toEqual({ repaired: [{ key: batch.key, replica: "c" }], failed: [] })
    expect(c.objects.get(batch.key)?.body).toEqual(a.objects.get(batch.key)?.body)
    expect(c.manifests.get(batch.key)).toEqual(a.manifests.get(batch.key))
    expect(c.manifests.get(batch.key)?.compression).toBe("gzip")
  })
})
