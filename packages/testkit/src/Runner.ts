/**
 * The runner: runs a scenario under `TestClock` with a policy composition and
 * returns its trace and summary. Virtual time advances in 100 ms steps; after
 * each step the runner samples the pipelines, the store and the source.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Fiber, References, Stream } from "effect"
import type { Layer, LogLevel } from "effect"
import { TestClock } from "effect/testing"
import { Pipeline } from "@sluice/core"
import type { Config, Knob, SignalBus } from "@sluice/core"
import * as CommitGuard from "./CommitGuard.ts"
import * as HeldBytes from "./HeldBytes.ts"
import * as Oracle from "./Oracle.ts"
import type { Scenario } from "./Scenario.ts"
import * as SimSource from "./SimSource.ts"
import * as Store from "./Store.ts"
import type { Phase, Summary } from "./Summary.ts"
import * as Summaries from "./Summary.ts"
import type { Trace, TraceRow } from "./Trace.ts"
import { quantile } from "./Trace.ts"

/**
 * The policies of one pipeline, as the core `Pipeline.start` takes them.
 *
 * @since 0.1.0
 */
export type PoliciesLayer<E = never> = Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>

/**
 * Declared floors the runner checks every sample (`floorViolations`).
 *
 * @since 0.1.0
 */
export interface Floors {
  readonly concurrency?: number | undefined
  readonly batchBytes?: number | undefined
}

/**
 * Options of a run.
 *
 * @since 0.1.0
 */
export interface RunOptions<E = never> {
  /** A label for the summary (e.g. the `--policy` spec). */
  readonly policy?: string | undefined
  /** The policies of each instance (a layer, or one per instance); none = the pipeline's base config. */
  readonly policies?: PoliciesLayer<E> | ((instance: number) => PoliciesLayer<E>) | undefined
  readonly floors?: Floors | undefined
  /** Sample period, virtual ms (default 100). */
  readonly sampleMillis?: number | undefined
  /**
   * The lowest level of the pipeline's log lines that are printed (default
   * `"Error"`): a simulated throttle storm retries thousands of batches, and
   * each retry is logged at `Warn`, which would drown a matrix's output. The
   * summary and the trace count retries and throttles instead.
   */
  readonly logLevel?: LogLevel.LogLevel | undefined
  /**
   * Called with each trace row as the run produces it (every `sampleMillis` of
   * virtual time), for live progress. It runs inside the simulation loop: keep
   * it cheap (print every Nth row, not every row).
   */
  readonly onRow?: ((row: TraceRow) => void) | undefined
}

/**
 * What a run returns.
 *
 * @since 0.1.0
 */
export interface RunResult {
  readonly summary: Summary
  readonly trace: Trace
  readonly store: Store.SimStore
  readonly log: SimSource.SimLog
}

/**
 * The store parameters a scenario starts with.
 *
 * @since 0.1.0
 */
export const storeParams = (s: Scenario["store"]): Store.StoreParams => ({
  baseLatencyMillis: s.baseLatency,
  bandwidthBytesPerSecond: s.bandwidthPerRequest,
  knee: s.knee,
  kneeQueue: s.kneeQueue,
  jitter: s.jitter,
  throttleAbove: s.throttleAbove,
  throttleProbability: s.throttleProbability,
  errorRate: s.errorRate,
  rateLimit: s.rateLimit
})

/**
 * The store parameters an event changes (its `store` section as `StoreParams` fields).
 *
 * @since 0.3.0
 */
export const storeChange = (c: NonNullable<Scenario["events"][number]["store"]>): Partial<Store.StoreParams> => ({
  ...(c.baseLatency !== undefined ? { baseLatencyMillis: c.baseLatency } : {}),
  ...(c.bandwidthPerRequest !== undefined ? { bandwidthBytesPerSecond: c.bandwidthPerRequest } : {}),
  ...(c.knee !== undefined ? { knee: c.knee } : {}),
  ...(c.kneeQueue !== undefined ? { kneeQueue: c.kneeQueue } : {}),
  ...(c.jitter !== undefined ? { jitter: c.jitter } : {}),
  ...(c.throttleAbove !== undefined ? { throttleAbove: c.throttleAbove } : {}),
  ...(c.throttleProbability !== undefined ? { throttleProbability: c.throttleProbability } : {}),
  ...(c.errorRate !== undefined ? { errorRate: c.errorRate } : {}),
  ...(c.rateLimit !== undefined ? { rateLimit: c.rateLimit } : {})
})

const eventLabel = (e: Scenario["events"][number]): string => {
  const parts: Array<string> = []
  for (const [k, v] of Object.entries(e.store ?? {})) parts.push(`${k}=${String(v)}`)
  for (const [k, v] of Object.entries(e.source ?? {})) parts.push(`${k}=${String(v)}`)
  return parts.join(" ")
}

/**
 * What the oracle may choose from in `scenario` (see `Oracle`): the memory
 * budget of all instances, the record size, the partitions and `maxAge`.
 *
 * @since 0.2.0
 */
export const oracleWorld = (scenario: Scenario): Oracle.OracleWorld => ({
  recordBytes: scenario.source.recordBytes,
  budgetBytes: scenario.instances * scenario.pipeline.memoryBudget,
  partitions: scenario.source.partitions,
  maxAgeMillis: scenario.pipeline.batch.maxAge
})

/**
 * Runs `scenario` under its own `TestClock` and returns the trace and summary.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Fixed } from "@sluice/core"
 * import { Runner, Scenario } from "@sluice/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const scenario = yield* Scenario.load("packages/testkit/scenarios/knee-24.json")
 *   const { summary } = yield* Runner.run(scenario, { policy: "fixed:8", policies: Fixed.layer({ concurrency: 8 }) })
 *   console.log(summary.goodputRatio)
 * })
 * ```
 *
 * @since 0.1.0
 */
export const run = <E = never>(
  scenario: Scenario,
  options: RunOptions<E> = {}
): Effect.Effect<RunResult, Config.ConfigError | E> =>
  Effect.scoped(runScoped(scenario, options)).pipe(
    Effect.provide(TestClock.layer({ warningDelay: "1 hour" })),
    Effect.provideService(References.MinimumLogLevel, options.logLevel ?? "Error")
  )

/** One simulated instance: its pipeline and the observers around it. */
interface Instance {
  readonly handle: Pipeline.PipelineHandle
  readonly consumer: SimSource.SimConsumer
  /** Bytes held, from outside: source deliveries minus store verifications. */
  readonly meter: HeldBytes.HeldBytesMeter
  /** Commit-after-verify, checked at every commit. */
  readonly guard: CommitGuard.Checked
  /** Which of its policies are probing now (from their `PolicyMode` signals). */
  readonly probing: Set<string>
}

/** Starts instance `i` on its share of the partitions (round robin), in the run's scope. */
const startInstance = <E>(
  scenario: Scenario,
  options: RunOptions<E>,
  log: SimSource.SimLog,
  store: Store.SimStore,
  i: number,
  failures: Array<string>
) =>
  Effect.gen(function*() {
    const assigned: Array<number> = []
    for (let p = i; p < scenario.source.partitions; p += scenario.instances) assigned.push(p)
    const consumer = log.consumer(assigned)
    const meter = HeldBytes.make()
    const guard = CommitGuard.guard(meter.sink(store.sink(i)), meter.source(consumer), { from: consumer.startPositions })
    const policies = typeof options.policies === "function" ? options.policies(i) : options.policies
    const handle = yield* Pipeline.start({
      source: guard.source,
      sink: guard.sink,
      config: scenario.pipeline,
      ...(policies !== undefined ? { policies } : {})
    })
    const probing = new Set<string>()
    const modes = yield* handle.bus.subscribe
    yield* Stream.fromSubscription(modes).pipe(
      Stream.runForEach((signal) =>
        Effect.sync(() => {
          if (signal._tag !== "PolicyMode") return
          if (signal.mode === "probing") probing.add(signal.policy)
          else probing.delete(signal.policy)
        })
      ),
      Effect.forkScoped
    )
    yield* Effect.forkScoped(
      Effect.catchCause(handle.await, (cause) => Effect.sync(() => failures.push(`instance ${i}: ${String(cause)}`)))
    )
    const instance: Instance = { handle, consumer, meter, guard, probing }
    return instance
  })

/** Applies the scenario's events at their times (store changes are recorded as phases). */
const applyEvents = (events: Scenario["events"], store: Store.SimStore, log: SimSource.SimLog, phases: Array<Phase>) =>
  Effect.gen(function*() {
    for (const event of events) {
      const now = yield* Clock.currentTimeMillis
      if (event.at > now) yield* Effect.sleep(event.at - now)
      if (event.store !== undefined) {
        store.update(storeChange(event.store))
        phases.push({ at: event.at, params: store.params() })
      }
      if (event.source?.recordsPerSecond !== undefined) log.setRate(event.at, event.source.recordsPerSecond)
    }
  })

/** The instances' knobs and counters at `t`, summed (lag: records; floors: whether any is below). */
const observe = (instances: ReadonlyArray<Instance>, t: number, floors: { readonly concurrency: number; readonly batchBytes: number }) => {
  const o = { concurrency: 0, inflightBatches: 0, inflightBytes: 0, verified: 0, paused: 0, lag: 0, belowFloor: false }
  for (const { handle, meter, consumer } of instances) {
    const stats = handle.stats()
    const knobs = handle.knobs.current()
    o.concurrency += knobs.concurrency
    o.inflightBatches += stats.uploading
    o.inflightBytes += stats.inflightBytes
    o.verified += meter.verified()
    if (stats.readGate === "paused") o.paused++
    o.lag += consumer.lagAt(t)
    if (knobs.concurrency < floors.concurrency || knobs.batchTarget.bytes < floors.batchBytes) o.belowFloor = true
  }
  return o
}

/** The row's store columns: latencies and bytes of the requests completed since the last row. */
const storeColumns = (store: Store.SimStore, paramsAtStart: Store.StoreParams) => {
  const completed = store.drainLatencies()
  const latencies = completed.map((c) => c.millis)
  let bytes = 0
  for (const c of completed) bytes += c.bytes
  const p95 = quantile(latencies, 0.95)
  return {
    p50Millis: round3(quantile(latencies, 0.5)),
    p95Millis: round3(p95),
    latencyInflation: p95 === null ? null : round3(p95 / Store.unloadedMillis(paramsAtStart, bytes / completed.length))
  }
}

const runScoped = <E>(scenario: Scenario, options: RunOptions<E>) =>
  Effect.gen(function*() {
    const wallStart = performance.now()
    const sampleMillis = options.sampleMillis ?? 100
    const floors = { concurrency: options.floors?.concurrency ?? 1, batchBytes: options.floors?.batchBytes ?? 1 }
    const store = Store.make(storeParams(scenario.store), scenario.seed)
    const log = SimSource.make({
      name: "sim",
      recordsPerSecond: scenario.source.recordsPerSecond,
      recordBytes: scenario.source.recordBytes,
      partitions: scenario.source.partitions,
      retentionMillis: scenario.source.retention,
      backlogRecords: scenario.source.backlogRecords,
      fetchIntervalMillis: Math.max(1, scenario.source.fetchInterval),
      fetchMaxBytes: Math.max(1, scenario.source.fetchMaxBytes)
    })
    const world = oracleWorld(scenario)
    const phases: Array<Phase> = [{ at: 0, params: store.params() }]
    const failures: Array<string> = []
    const instances: Array<Instance> = []
    for (let i = 0; i < scenario.instances; i++) instances.push(yield* startInstance(scenario, options, log, store, i, failures))

    const events = [...scenario.events].sort((a, b) => a.at - b.at)
    const applier = yield* Effect.forkScoped(applyEvents(events, store, log, phases))

    const rows: Array<TraceRow> = []
    // The world in force during each row (for phases).
    const rowWorld: Array<{ readonly params: Store.StoreParams; readonly inflow: number }> = []
    let lastVerified = 0
    let lastRequests = 0
    let lastThrottles = 0
    let floorViolations = 0
    const steps = Math.ceil(scenario.duration / sampleMillis)
    // The oracle is an ideal pipeline (see `Oracle`): a fluid queue fed by the
    // inflow (and the initial backlog) and served at the best capacity the store
    // and the memory budget allow in the current phase. Bytes it cannot serve in
    // a degraded phase carry over and are served later, so a pipeline gets no
    // credit beyond what an ideal one could have done.
    // Its goodput counts when the store would verify what it serves, as the
    // pipeline's does (`Oracle.advance`).
    let oracleQueue = scenario.source.backlogRecords * scenario.source.recordBytes
    let oracleInFlight: ReadonlyArray<Oracle.InFlight> = []
    for (let step = 1; step <= steps; step++) {
      const inflow = log.inflowBytesPerSecond((step - 1) * sampleMillis)
      oracleQueue += (inflow * sampleMillis) / 1000
      const paramsAtStart = store.params()
      const servable = (Oracle.capacity(paramsAtStart, world, oracleQueue, inflow) * sampleMillis) / 1000
      const served = Math.min(oracleQueue, servable)
      if (served > 0) {
        const rate = (served * 1000) / sampleMillis
        oracleInFlight = [...oracleInFlight, Oracle.sent(paramsAtStart, world, oracleQueue, inflow, served, rate)]
      }
      oracleQueue -= served
      const oracle = Oracle.advance(paramsAtStart, world, oracleInFlight, sampleMillis)
      oracleInFlight = oracle.inFlight
      rowWorld.push({ params: paramsAtStart, inflow })
      yield* TestClock.adjust(sampleMillis)
      if (failures.length > 0) break
      const t = step * sampleMillis
      const o = observe(instances, t, floors)
      if (o.belowFloor) floorViolations++
      const throttles = store.counters.throttled + store.counters.rateLimited
      rows.push({
        t,
        concurrency: o.concurrency,
        inflightBatches: o.inflightBatches,
        inflightBytes: o.inflightBytes,
        goodputBytesPerSecond: Math.round(((o.verified - lastVerified) * 1000) / sampleMillis),
        oracleBytesPerSecond: Math.round((served * 1000) / sampleMillis),
        ...storeColumns(store, paramsAtStart),
        requests: store.counters.requests - lastRequests,
        throttles: throttles - lastThrottles,
        batchTargetBytes: (instances[0] as Instance).handle.knobs.current().batchTarget.bytes,
        readGatePaused: o.paused,
        lagRecords: o.lag,
        probing: instances.filter((x) => x.probing.size > 0).length,
        lagSeconds: Math.round(Math.max(0, ...instances.map((x) => x.consumer.uncommittedAgeAt(t)))) / 1000,
        heldBytes: Math.max(0, ...instances.map((x) => x.meter.held())),
        oracleVerifiedBytesPerSecond: Math.round((oracle.verifiedBytes * 1000) / sampleMillis)
      })
      options.onRow?.(rows[rows.length - 1] as TraceRow)
      lastVerified = o.verified
      lastRequests = store.counters.requests
      lastThrottles = throttles
    }
    yield* Fiber.interrupt(applier)

    const now = yield* Clock.currentTimeMillis
    const summary = summarize(scenario, options, { instances, store, phases, rows, rowWorld, events, world, failures, floorViolations, sampleMillis, now, wallStart })
    const trace: Trace = { sampleMillis, rows, events: events.map((e) => ({ at: e.at, label: eventLabel(e) })) }
    return { summary, trace, store, log }
  })

/** The run's summary, from the trace, the observers and the simulators' ground truth. */
const summarize = <E>(
  scenario: Scenario,
  options: RunOptions<E>,
  run: {
    readonly instances: ReadonlyArray<Instance>
    readonly store: Store.SimStore
    readonly phases: ReadonlyArray<Phase>
    readonly rows: ReadonlyArray<TraceRow>
    readonly rowWorld: ReadonlyArray<{ readonly params: Store.StoreParams; readonly inflow: number }>
    readonly events: Scenario["events"]
    readonly world: Oracle.OracleWorld
    readonly failures: ReadonlyArray<string>
    readonly floorViolations: number
    readonly sampleMillis: number
    readonly now: number
    readonly wallStart: number
  }
): Summary => {
  const { instances, store, rows, sampleMillis, world } = run
  const perInstance = instances.map((x) => x.meter.verified())
  let bytesVerified = 0
  for (const b of perInstance) bytesVerified += b
  let committedNotVerified = 0
  let lostRecords = 0
  let foundLost = 0
  let reportedLost = 0
  for (const x of instances) {
    committedNotVerified += x.guard.committedNotVerified()
    lostRecords += x.consumer.lostAt(run.now)
    foundLost += x.consumer.lostFound()
    reportedLost += x.handle.stats().retentionGapRecords
  }
  const boundaries = run.events.map((e) => e.at).filter((at) => at > 0 && at < scenario.duration)
  const phaseSummaries = Summaries.phases(rows, run.rowWorld, [0, ...boundaries, scenario.duration], world)
  const probe = Summaries.probeCost(rows, sampleMillis)
  const requests = store.requests.length
  const throttled = store.counters.throttled + store.counters.rateLimited
  return {
    scenario: scenario.name,
    policy: options.policy ?? "base",
    seed: scenario.seed,
    durationSeconds: scenario.duration / 1000,
    instances: instances.length,
    goodputRatio: round3(Summaries.goodputRatio(rows, sampleMillis, bytesVerified)) ?? 0,
    latencyInflation: round3(Summaries.latencyInflation(rows)) ?? 1,
    throttleRate: requests === 0 ? 0 : round3(throttled / requests) ?? 0,
    floorViolations: run.floorViolations,
    recoverySeconds: Summaries.recoverySeconds(rows, sampleMillis, Summaries.lastRevert(run.phases, world)),
    maxInflightBytes: Math.max(0, ...instances.map((x) => x.handle.stats().maxInflightBytes)),
    lostRecords,
    undetectedLostRecords: foundLost - reportedLost,
    committedNotVerified,
    fairness: round3(Summaries.jain(perInstance)) ?? 1,
    probeSeconds: probe.probeSeconds,
    probeCost: round3(probe.probeCost) ?? 0,
    bytesVerified,
    requests,
    maxLagSeconds: round3(Math.max(0, ...rows.map((r) => r.lagSeconds))) ?? 0,
    meanLagSeconds: round3(rows.length === 0 ? 0 : rows.reduce((sum, r) => sum + r.lagSeconds, 0) / rows.length) ?? 0,
    phases: phaseSummaries,
    worstPhaseGoodput: Summaries.worstPhaseGoodput(phaseSummaries),
    heldBytesMax: Math.max(0, ...instances.map((x) => x.meter.max())),
    largestChunkBytes: Math.max(0, ...instances.map((x) => x.meter.largestChunk())),
    failure: run.failures[0] ?? null,
    wallMillis: Math.round(performance.now() - run.wallStart)
  }
}

const round3 = (x: number | null): number | null => (x === null ? null : Math.round(x * 1000) / 1000)

