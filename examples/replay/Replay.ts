/**
 * replay — a scenario file run in real time through the real pipeline: a
 * synthetic source at the scenario's inflow, the real `S3Sink`, versitygw
 * (keep-alive) behind toxiproxy, the scenario's store mapped onto toxics and
 * its events applied at their wall-clock times; judged, per phase, against an
 * oracle measured on the real stack (a calibration sweep in each phase's
 * conditions; its bytes counted when a batch of them would be verified,
 * `MeasuredOracle`), with the fields of `sluice-sim run --json` computed from
 * outside the pipeline.
 *
 * The path: the sink → the store proxy (`store-proxy.ts`, its own process)
 * → toxiproxy → versitygw. What is mapped: `baseLatency` → a latency toxic
 * on responses; `bandwidthPerRequest` → a bandwidth toxic on request bodies
 * (the sink's agent runs one request per connection at a time, so it is per
 * request); `knee`, `throttleAbove`/`throttleProbability`, `errorRate` and
 * `rateLimit` → the store proxy (`StoreFaults`: the simulator's fault model,
 * seeded with the scenario's seed; in front of toxiproxy, so a request
 * waiting for a slot does not move its body through the bandwidth toxic, and
 * its own answers wait the base latency as the server's do). Where the
 * host's own knee is lower than the scenario's, the measured oracle sees it
 * and each phase's `measuredKnee` says so. What is
 * not mapped: `jitter`, and `kneeQueue: "shared"` (the proxy queues above the
 * knee in arrival order, `"arrival"`; the result lists both under
 * `notMapped`, and `--write-sim` writes `"arrival"`). `--scale X` multiplies the inflow and every
 * per-request bandwidth by X (latencies stay), so the store's capacity against
 * the inflow is the scenario's where this machine cannot carry its bytes;
 * `--record-bytes N` carries the same bytes in records of N bytes.
 */
import { CommitGuard, Runner, Scenario, Trace } from "@sluice/testkit"
import type { Store, Summary } from "@sluice/testkit"
import { Calibrate, S3Config, S3Sink } from "@sluice/adapter-s3"
import type { Calibration } from "@sluice/adapter-s3"
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { Failure, Pipeline } from "@sluice/core"
import type { Sink } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { Cause, Effect, Exit, Fiber, Result, Scope, Stream } from "effect"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as SyntheticSource from "../soak/SyntheticSource.ts"
import * as MeasuredOracle from "./MeasuredOracle.ts"
import * as StoreFaults from "./StoreFaults.ts"
import * as StoreProxy from "./StoreProxy.ts"

/** What `replay` takes. */
export interface ReplayOptions {
  readonly scenario: string
  readonly policy: string
  readonly scale: number
  /** Record size to carry the scenario's bytes with (default the scenario's): fewer, larger records where the per-record CPU would bind. */
  readonly recordBytes?: number | undefined
  /** Seconds per oracle cell. */
  readonly cellSeconds: number
  /** Measurements of each store's best cell (≥ 1): their spread is reported. */
  readonly oracleRepeats: number
  /** A directory to keep measured oracles in and reuse them from (per store state, scale and grid); none: measure every run. */
  readonly oracleCache?: string | undefined
  readonly s3: { readonly endpoint: string; readonly region: string; readonly accessKeyId: string; readonly secretAccessKey: string }
  readonly toxiproxy: string
  readonly log: (line: string) => void
  /** Every signal the pipeline published (but `Lag`), as it came: to replay through a policy's pure core (`Policy.replay`) offline. */
  readonly onSignal?: ((signal: unknown) => void) | undefined
}

/** The order of the replay's path, part of a cached oracle's key: oracles measured behind another path are measured again. */
const PATH = "store-proxy, then toxiproxy"

/** The most in-flight the oracle's grid measures at (the grid's top). */
const MAX_ORACLE_INFLIGHT = 64

/** One store's measured capacity: the best cell of the sweep, every cell, the best cell's repeats and their spread ((max − min) ÷ mean). */
export interface Measured {
  readonly best: number
  readonly cells: ReadonlyArray<Calibration.Cell>
  readonly repeats: ReadonlyArray<number>
  readonly spread: number
  readonly measuredAt: string
}

/** The smallest in-flight of a sweep within 10 % of its best cell (the repeats of the best cell may measure higher: not compared). */
const kneeOf = (cells: ReadonlyArray<Calibration.Cell>): number => {
  const top = Math.max(0, ...cells.map((c) => c.bytesPerSecond))
  return Math.min(...cells.filter((c) => c.bytesPerSecond >= top * 0.9).map((c) => c.inflight))
}

/** The file of a cached oracle: one per store state and grid (`key`), named by its hash. */
const cacheFile = (dir: string, key: string): string => join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 32)}.json`)

/** A cached oracle (in `dir`, one file per store state and grid), if any. */
const readCached = (dir: string | undefined, key: string): Measured | undefined => {
  if (dir === undefined) return undefined
  const file = cacheFile(dir, key)
  if (!existsSync(file)) return undefined
  const stored = JSON.parse(readFileSync(file, "utf8")) as { readonly key: string; readonly measured: Measured }
  return stored.key === key ? stored.measured : undefined
}

const writeCached = (dir: string | undefined, key: string, measured: Measured): void => {
  if (dir === undefined) return
  mkdirSync(dir, { recursive: true })
  writeFileSync(cacheFile(dir, key), JSON.stringify({ key, measured }))
}

/** One phase of the run as judged (the simulator's fields, and the capacity measured in its conditions). */
export interface ReplayPhase extends Summary.PhaseSummary {
  /** The measured capacity in this phase's conditions (bytes/s, best oracle cell). */
  readonly capacityBytesPerSecond: number
  /** The smallest in-flight of the oracle's grid within 10 % of its best cell: below the scenario's `knee`, the host's knee binds. */
  readonly measuredKnee: number
  /** The scenario's knee in this phase. */
  readonly knee: number
}

const round = (x: number) => Math.round(x * 1000) / 1000

/** Store params in force at each phase boundary (ms). */
const phasesOf = (scenario: Scenario.Scenario) => {
  const base = Runner.storeParams(scenario.store)
  const out: Array<{ readonly at: number; readonly params: Store.StoreParams }> = [{ at: 0, params: base }]
  let current = base
  for (const e of [...scenario.events].sort((a, b) => a.at - b.at)) {
    const s = e.store
    if (s === undefined) continue
    current = { ...current, ...Runner.storeChange(s) }
    out.push({ at: e.at, params: current })
  }
  return out
}

/** The store fields a replay cannot impose (with the value the scenario asks for). */
const notMapped = (phases: ReadonlyArray<{ readonly params: Store.StoreParams }>): Array<string> => {
  const out = new Set<string>()
  for (const { params } of phases) {
    if (params.jitter > 0) out.add(`jitter ${params.jitter}`)
    if (params.kneeQueue === "shared") out.add(`kneeQueue shared (the store proxy queues in arrival order)`)
  }
  return [...out]
}

/** toxiproxy's HTTP API. */
const api = async (base: string, path: string, method: string, body?: unknown): Promise<unknown> => {
  const response = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  })
  if (!response.ok) throw new Error(`toxiproxy ${method} ${path}: ${response.status} ${await response.text()}`)
  return response.status === 204 ? undefined : response.json()
}

/** The store fields the store proxy imposes. */
const faultsOf = (params: Store.StoreParams): StoreFaults.FaultParams => ({
  knee: params.knee,
  throttleAbove: params.throttleAbove,
  throttleProbability: params.throttleProbability,
  errorRate: params.errorRate,
  rateLimit: params.rateLimit,
  answerLatencyMillis: Math.round(params.baseLatencyMillis)
})

/** toxiproxy proxies made by this process (each named by its pid and this count). */
let shapers = 0

/** A toxiproxy proxy to the S3 server whose toxics follow the store (latency on answers, bandwidth on bodies). */
const shaper = async (options: Pick<ReplayOptions, "toxiproxy" | "scale">, upstream: string) => {
  const name = `sluice-replay-${process.pid}-${++shapers}`
  const made = (await api(options.toxiproxy, "/proxies", "POST", { name, listen: "127.0.0.1:0", upstream: new URL(upstream).host })) as { readonly listen: string }
  let shaped = false
  const set = async (params: Store.StoreParams) => {
    const latency = { latency: Math.round(params.baseLatencyMillis), jitter: 0 }
    // toxiproxy's KB is 1000 bytes.
    const rate = { rate: Math.max(1, Math.round((params.bandwidthBytesPerSecond * options.scale) / 1000)) }
    if (!shaped) {
      await api(options.toxiproxy, `/proxies/${name}/toxics`, "POST", { name: "latency", type: "latency", stream: "downstream", attributes: latency })
      await api(options.toxiproxy, `/proxies/${name}/toxics`, "POST", { name: "bandwidth", type: "bandwidth", stream: "upstream", attributes: rate })
      shaped = true
    } else {
      await api(options.toxiproxy, `/proxies/${name}/toxics/latency`, "POST", { attributes: latency })
      await api(options.toxiproxy, `/proxies/${name}/toxics/bandwidth`, "POST", { attributes: rate })
    }
  }
  return { endpoint: `http://${made.listen}`, set, close: () => api(options.toxiproxy, `/proxies/${name}`, "DELETE").catch(() => undefined) }
}

/** The replay's store: an endpoint that imposes a simulated store's params on the S3 server behind it. */
export interface StorePath {
  readonly endpoint: string
  readonly set: (params: Store.StoreParams) => Promise<void>
  readonly close: () => Promise<void>
}

/**
 * The path a replay's requests take: the store proxy (faults and the serving
 * limit, drawn from `seed`) → toxiproxy (latency and bandwidth toxics) → the
 * S3 server. The proxy comes first so that a request waiting for a slot does
 * not move its body through the bandwidth toxic.
 */
export const storePath = async (options: Pick<ReplayOptions, "s3" | "toxiproxy" | "scale">, seed: number): Promise<StorePath> => {
  const shaped = await shaper(options, options.s3.endpoint)
  const faults = await StoreProxy.start(shaped.endpoint, seed).catch(async (error: unknown) => {
    await shaped.close()
    throw error
  })
  return {
    endpoint: faults.endpoint,
    set: async (params) => {
      await faults.set(faultsOf(params))
      await shaped.set(params)
    },
    close: async () => {
      await shaped.close()
      faults.close()
    }
  }
}

/**
 * The scenario the replay runs, for the simulator: inflow and every
 * per-request bandwidth × `scale`, records of `recordBytes` carrying the same
 * bytes — so `sluice-sim run` on it is the side-by-side of a replay with
 * `--scale` and `--record-bytes`.
 */
export const simScenario = async (file: string, scale: number, recordBytes: number | undefined): Promise<Record<string, unknown>> => {
  const scenario = await Effect.runPromise(Scenario.load(file))
  const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown> & {
    readonly source: Record<string, unknown>
    readonly store: Record<string, unknown>
    readonly events?: ReadonlyArray<Record<string, unknown> & { readonly store?: Record<string, unknown> }>
  }
  const bytes = recordBytes ?? scenario.source.recordBytes
  const { $schema: _schema, ...rest } = raw
  return {
    ...rest,
    name: `${scenario.name}-scaled`,
    source: { ...raw.source, recordBytes: bytes, recordsPerSecond: (scenario.source.recordsPerSecond * scenario.source.recordBytes * scale) / bytes },
    // The store proxy queues above the knee in arrival order (`StoreFaults`).
    store: { ...raw.store, bandwidthPerRequest: Runner.storeParams(scenario.store).bandwidthBytesPerSecond * scale, kneeQueue: "arrival" },
    events: scenario.events.map((e, i) => {
      const given = raw.events?.[i] ?? {}
      const change = e.store === undefined ? undefined : Runner.storeChange(e.store).bandwidthBytesPerSecond
      const store = given.store === undefined ? undefined : { ...given.store, ...(change === undefined ? {} : { bandwidthPerRequest: change * scale }), ...(given.store.kneeQueue === undefined ? {} : { kneeQueue: "arrival" }) }
      return store === undefined ? given : { ...given, store }
    })
  }
}

/** Runs the replay; returns the summary (the last line of `--json`) and the per-second trace (the simulator's columns). */
export const replay = async (options: ReplayOptions) => {
  const scenario = await Effect.runPromise(Scenario.load(options.scenario))
  const policies = Composition.parseResult(options.policy)
  if (Result.isFailure(policies)) throw new Error(policies.failure.message)
  const phases = phasesOf(scenario)
  const inflow = scenario.source.recordsPerSecond * scenario.source.recordBytes * options.scale
  const recordBytes = options.recordBytes ?? scenario.source.recordBytes
  const recordsPerSecond = inflow / recordBytes
  const budget = scenario.pipeline.memoryBudget
  const batchBytes = scenario.pipeline.batch.bytes
  const proxy = await storePath(options, scenario.seed)
  const bucket = `replay-${Date.now().toString(36)}`
  // One config for the sweep's client and the sink (the sink uses the same client).
  const config = await Effect.runPromise(S3Config.decode({
    bucket,
    endpoint: proxy.endpoint,
    forcePathStyle: true,
    region: options.s3.region,
    checksumAlgorithm: "CRC32",
    credentials: { accessKeyId: options.s3.accessKeyId, secretAccessKey: options.s3.secretAccessKey }
  }))
  const client = S3Sink.makeClient(config)
  await client.send(new CreateBucketCommand({ Bucket: bucket }))
  try {
    // The oracle, measured: the best (in-flight × size) cell the memory budget allows, per distinct store.
    const capacities = new Map<string, Measured>()
    const keyOf = (p: Store.StoreParams) =>
      [p.baseLatencyMillis, p.bandwidthBytesPerSecond, p.knee, p.throttleAbove, p.throttleProbability, p.errorRate, p.rateLimit].join("/")
    for (const { params } of phases) {
      if (capacities.has(keyOf(params))) continue
      await proxy.set(params)
      const sizes = [batchBytes, Math.max(1 << 20, Math.floor(batchBytes / 4))]
      // The grid up to the most the store proxy forwards at once (its serving
      // limit: the knee, or the in-flight it throttles above when lower), and
      // that limit itself. Above it requests only queue there: a cell of 64
      // uploads of 18 MiB at 0.58 MB/s each, five served at a time, takes 64 ÷ 5
      // rounds of ~31 s — over six minutes — and measures nothing the cell at
      // five does not.
      const most = Math.min(StoreFaults.servingLimit(faultsOf(params)) ?? MAX_ORACLE_INFLIGHT, MAX_ORACLE_INFLIGHT)
      const inflights = [...new Set([4, 8, 16, 32, 64, most])].sort((a, b) => a - b)
        .filter((n) => n <= most && n * Math.min(...sizes) <= budget)
      const cacheKey = JSON.stringify({ path: PATH, store: keyOf(params), scale: options.scale, sizes, inflights, cellSeconds: options.cellSeconds, repeats: options.oracleRepeats })
      const cached = readCached(options.oracleCache, cacheKey)
      if (cached !== undefined) {
        capacities.set(keyOf(params), cached)
        options.log(`replay: oracle for ${params.baseLatencyMillis} ms + ${(params.bandwidthBytesPerSecond * options.scale / 1e6).toFixed(2)} MB/s per request from the cache (measured ${cached.measuredAt}): ${(cached.best / 1e6).toFixed(1)} MB/s`)
        continue
      }
      options.log(`replay: oracle for ${params.baseLatencyMillis} ms + ${(params.bandwidthBytesPerSecond * options.scale / 1e6).toFixed(2)} MB/s per request: ${sizes.length * inflights.length} cells of ${options.cellSeconds} s`)
      const cells = (await Calibrate.sweep({ client, bucket, prefix: "oracle", sizes, inflights, cellSeconds: options.cellSeconds }))
        .filter((c) => c.inflight * c.objectBytes <= budget)
      const top = cells.reduce((a, b) => (b.bytesPerSecond > a.bytesPerSecond ? b : a))
      // The best cell again, to say how much the measurement moves.
      const again = options.oracleRepeats > 1
        ? await Calibrate.sweep({ client, bucket, prefix: "oracle", sizes: [top.objectBytes], inflights: Array(options.oracleRepeats - 1).fill(top.inflight), cellSeconds: options.cellSeconds })
        : []
      const repeats = [top.bytesPerSecond, ...again.map((c) => c.bytesPerSecond)]
      const mean = repeats.reduce((a, b) => a + b, 0) / repeats.length
      const measured: Measured = {
        best: Math.max(...repeats),
        cells,
        repeats,
        spread: mean === 0 ? 0 : (Math.max(...repeats) - Math.min(...repeats)) / mean,
        measuredAt: new Date().toISOString()
      }
      capacities.set(keyOf(params), measured)
      writeCached(options.oracleCache, cacheKey, measured)
      options.log(`replay: capacity ${(measured.best / 1e6).toFixed(1)} MB/s at ${top.inflight} × ${(top.objectBytes / 1048576).toFixed(1)} MiB` +
        `${repeats.length > 1 ? `, ${repeats.length} measurements, spread ${(measured.spread * 100).toFixed(1)} %` : ""} (inflow ${(inflow / 1e6).toFixed(1)} MB/s)`)
    }
    await proxy.set(phases[0]?.params ?? Runner.storeParams(scenario.store))

    // The run: what is verified, committed and held is counted here, outside the pipeline.
    const t0 = { at: 0 }
    const source = SyntheticSource.make({
      name: scenario.name,
      rate: recordsPerSecond,
      partitions: scenario.source.partitions,
      recordBytes,
      now: () => {
        const t = performance.now()
        if (t0.at === 0) t0.at = t
        return t
      }
    })
    const verified = new CommitGuard.Ranges()
    let verifiedBytes = 0
    let requests = 0
    let throttles = 0
    const base = S3Sink.fromClient(config, client)
    // Payload bytes per object in flight (an entry lives from its put to its verify or failure: bounded by in-flight).
    const payload = new Map<string, number>()
    // Every request counts, object uploads, manifests and verifies, and every
    // throttle of any of them, as the simulated store counts its requests (a
    // rate over object uploads alone read the real store as refusing twice the
    // model's share: 0.08 against 0.04 on slower-throttle).
    const request = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        requests++
        return Effect.tapError(effect, (e) =>
          Effect.sync(() => {
            if (e instanceof Failure.SinkFailure && e.failureClass === "Throttled") throttles++
          }))
      })
    const counted: Sink.Sink = {
      ...base,
      putObject: (batch) => {
        payload.set(batch.key, batch.bytes)
        return Effect.tapError(request(base.putObject(batch)), () => Effect.sync(() => payload.delete(batch.key)))
      },
      putManifest: (manifest) => request(base.putManifest(manifest)),
      verify: (receipt) =>
        Effect.tap(request(base.verify(receipt)), () =>
          Effect.sync(() => {
            verifiedBytes += payload.get(receipt.key) ?? 0
            payload.delete(receipt.key)
          }))
    }
    const sink = CommitGuard.verifying(counted, verified)
    const checked = CommitGuard.checking(source, verified)
    const scope = Effect.runSync(Scope.make())
    const handle = await Effect.runPromise(Pipeline.start({ source: checked.source, sink, config: scenario.pipeline, policies: policies.success }).pipe(Scope.provide(scope)))
    const ended = Effect.runFork(handle.await)
    const started = performance.now()
    // What the policies saw, per trace row: object-upload latencies, throttles, modes (from the bus, as the simulator's trace has them).
    let windowLatencies: Array<number> = []
    let windowThrottles = 0
    const modes = new Map<string, string>()
    const listening = Effect.runFork(Stream.runForEach(handle.bus.stream, (signal) =>
      Effect.sync(() => {
        if (signal._tag !== "Lag") options.onSignal?.(signal)
        if (signal._tag === "UploadSample" && signal.stage === "object_upload") windowLatencies.push(signal.latencyMillis)
        else if (signal._tag === "Failure" && signal.failure.failureClass === "Throttled") windowThrottles++
        else if (signal._tag === "PolicyMode") {
          if (modes.get(signal.policy) !== signal.mode) options.log(`replay: ${((performance.now() - started) / 1000).toFixed(1)} s: ${signal.policy} → ${signal.mode}`)
          modes.set(signal.policy, signal.mode)
        }
      })))
    const traceRows: Array<Trace.TraceRow> = []
    let requestsBefore = 0
    const rows: Array<{ readonly t: number; readonly goodput: number; readonly oracle: number; readonly lag: number; readonly held: number; readonly params: Store.StoreParams }> = []
    let lastVerified = 0
    let backlog = 0
    // The oracle's bytes served and not yet verified (one entry per second served, each leaving after one batch's store time; bounded by the run's seconds).
    let oracleInFlight: ReadonlyArray<MeasuredOracle.InFlight> = []
    let lagSum = 0
    const duration = scenario.duration
    for (let t = 1000; t <= duration; t += 1000) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + t - performance.now())))
      const phase = [...phases].reverse().find((p) => p.at < t) ?? phases[0]
      if (phase === undefined) break
      const next = phases.find((p) => p.at === t)
      if (next !== undefined) await proxy.set(next.params)
      // The measured oracle: a fluid queue fed by the inflow, served at the phase's measured capacity.
      const measured = capacities.get(keyOf(phase.params))
      const measuredPhase: MeasuredOracle.MeasuredPhase = { cells: measured?.cells ?? [], requestMillis: phase.params.baseLatencyMillis }
      const capacity = measured?.best ?? 0
      backlog += inflow
      const served = Math.min(capacity, backlog)
      backlog -= served
      // Its bytes count when a batch of them would be verified, as the pipeline's do (`MeasuredOracle`).
      const sent = served > 0 ? MeasuredOracle.sent(measuredPhase, served, served) : null
      const oracleStep = MeasuredOracle.advance(measuredPhase, sent === null ? oracleInFlight : [...oracleInFlight, sent], 1000)
      oracleInFlight = oracleStep.inFlight
      const goodput = verifiedBytes - lastVerified
      lastVerified = verifiedBytes
      // Freshness from the log's schedule: the oldest record not committed was produced at t0 + offset·P / rate.
      const committed = Math.min(...Array.from({ length: scenario.source.partitions }, (_, p) => source.committed.get(p) ?? 0))
      const producedAt = t0.at === 0 ? performance.now() : t0.at + (committed * scenario.source.partitions * 1000) / recordsPerSecond
      const lag = Math.max(0, (performance.now() - producedAt) / 1000)
      lagSum += lag
      const held = source.progress().read * recordBytes - verifiedBytes
      rows.push({ t, goodput, oracle: oracleStep.verifiedBytes, lag, held, params: phase.params })
      const knobs = handle.knobs.current()
      const stats = handle.stats()
      const p95 = Trace.quantile(windowLatencies, 0.95)
      traceRows.push({
        t,
        concurrency: knobs.concurrency,
        inflightBatches: stats.uploading,
        inflightBytes: stats.inflightBytes,
        goodputBytesPerSecond: goodput,
        oracleBytesPerSecond: served,
        oracleVerifiedBytesPerSecond: oracleStep.verifiedBytes,
        p50Millis: Trace.quantile(windowLatencies, 0.5),
        p95Millis: p95,
        latencyInflation: null,
        requests: requests - requestsBefore,
        throttles: windowThrottles,
        batchTargetBytes: knobs.batchTarget.bytes,
        readGatePaused: knobs.readGate === "open" ? 0 : 1,
        lagRecords: 0,
        probing: [...modes.values()].includes("probing") ? 1 : 0,
        lagSeconds: lag,
        heldBytes: held
      })
      requestsBefore = requests
      windowLatencies = []
      windowThrottles = 0
      options.log(`replay: ${t / 1000} s: ${(goodput / 1e6).toFixed(1)} MB/s verified, oracle ${(served / 1e6).toFixed(1)}, lag ${lag.toFixed(1)} s; ` +
        `p50 ${traceRows.at(-1)?.p50Millis?.toFixed(0) ?? "-"} ms, concurrency ${knobs.concurrency}, uploading ${stats.uploading}, queued ${stats.queued}, batch target ${(knobs.batchTarget.bytes / 1048576).toFixed(1)} MiB, held ${(stats.inflightBytes / 1048576).toFixed(0)} MiB, read gate ${knobs.readGate}; ` +
        `proposed ${[...handle.knobs.proposals()].filter(([, p]) => p.concurrency !== undefined).map(([name, p]) => `${name} ${p.concurrency}`).join(", ")}`)
    }
    source.stop()
    const early = ended.pollUnsafe()
    const failure = early === undefined ? null : Exit.isFailure(early) ? Cause.pretty(early.cause) : "the pipeline ended before the scenario did"
    await Effect.runPromise(Fiber.interrupt(ended))
    await Effect.runPromise(Fiber.interrupt(listening))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    const edges = [...new Set([0, ...phases.map((p) => p.at), duration])].sort((a, b) => a - b)
    const baseCapacity = capacities.get(keyOf(phases[0]?.params ?? Runner.storeParams(scenario.store)))?.best ?? 0
    const judged: Array<ReplayPhase> = []
    for (let k = 0; k + 1 < edges.length; k++) {
      const from = edges[k] ?? 0
      const to = edges[k + 1] ?? 0
      const inside = rows.filter((r) => r.t > from && r.t <= to)
      const first = inside[0]
      if (first === undefined) continue
      const measured = capacities.get(keyOf(first.params))
      const capacity = measured?.best ?? 0
      const good = inside.reduce((s, r) => s + r.goodput, 0)
      const oracle = inside.reduce((s, r) => s + r.oracle, 0)
      judged.push({
        from: from / 1000,
        to: to / 1000,
        degraded: capacity < baseCapacity * 0.999,
        oracleKeepsUp: capacity >= inflow,
        goodputRatio: round(oracle === 0 ? 1 : good / oracle),
        maxLagSeconds: round(Math.max(...inside.map((r) => r.lag))),
        capacityBytesPerSecond: Math.round(capacity),
        measuredKnee: kneeOf(measured?.cells ?? []),
        knee: first.params.knee
      })
    }
    const degraded = judged.filter((p) => p.degraded && p.oracleKeepsUp)
    const totalOracle = rows.reduce((s, r) => s + r.oracle, 0)
    const trace: Trace.Trace = {
      sampleMillis: 1000,
      rows: traceRows,
      events: phases.filter((p) => p.at > 0).map((p) => ({ at: p.at, label: `${p.params.baseLatencyMillis} ms + ${(p.params.bandwidthBytesPerSecond * options.scale / 1e6).toFixed(2)} MB/s` }))
    }
    const summary = {
      mode: "real" as const,
      scenario: scenario.name,
      policy: options.policy,
      scale: options.scale,
      recordBytes,
      durationSeconds: duration / 1000,
      goodputRatio: round(totalOracle === 0 ? 1 : rows.reduce((s, r) => s + r.goodput, 0) / totalOracle),
      phases: judged,
      worstPhaseGoodput: degraded.length === 0 ? null : Math.min(...degraded.map((p) => p.goodputRatio)),
      maxLagSeconds: round(Math.max(0, ...rows.map((r) => r.lag))),
      meanLagSeconds: round(rows.length === 0 ? 0 : lagSum / rows.length),
      heldBytesMax: Math.max(0, ...rows.map((r) => r.held)),
      throttleRate: round(requests === 0 ? 0 : throttles / requests),
      lostRecords: 0,
      committedNotVerified: checked.committedNotVerified(),
      failure,
      oracle: {
        measured: true,
        inflowBytesPerSecond: inflow,
        capacities: Object.fromEntries([...capacities].map(([k, v]) => [k, { bytesPerSecond: Math.round(v.best), repeats: v.repeats.map(Math.round), spread: round(v.spread), measuredAt: v.measuredAt }]))
      },
      notMapped: notMapped(phases)
    }
    return { summary, trace }
  } finally {
    client.destroy()
    await proxy.close()
  }
}
