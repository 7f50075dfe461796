/**
 * Policy properties: the proofs every pressure policy must pass, as plain
 * functions returning a {@link Verdict} (so a test can also assert that a policy
 * *fails* one). `Conformance.conformance` wraps them in vitest tests.
 *
 * A policy's pure core is driven in closed loop against a small, seeded world
 * ({@link drive}): every 100 ms the world turns the knob values in force (the
 * policy's proposal combined over the pipeline's base values with the core
 * `Knob.combine`) into signals — upload samples (object, manifest, verify)
 * whose latency follows the simulated store's model, classified throttles,
 * bytes held, lag and a tick.
 *
 * **The standard world, and why it is shaped so.** 60 s normal (knee 32), 60 s
 * overloaded, then 90 s after. The recovery property is an *ablation*: each
 * policy runs as declared and with its probe disabled, and only the probed run
 * may recover within 60 s. A world whose store simply comes back as it was
 * cannot tell a probe from ordinary growth (every policy recovered there with
 * all probes disabled), so the overload leaves, for each kind of knob, an
 * over-correction that only a probe can undo:
 *
 * - **Concurrency from a latency baseline** (AIMD, Vegas, Gradient2): the
 *   store comes back *changed for good* — knee 32 again, but 40 ms and 8 MiB/s
 *   per request instead of 10 ms and 32 MiB/s (a failover to a farther
 *   region). A baseline that only moves down between probes (AIMD's minimum,
 *   Vegas's `noLoad`) reads the new store as congested forever and holds the
 *   limit at (or near) its floor; an average that moves only slowly (Gradient2's
 *   long RTT) holds it low. Only a probe — pinned low, stale samples discarded
 *   — re-learns the no-load latency.
 * - **Concurrency and rate after throttles** (Throttle): the overload is a
 *   throttle storm (503 SlowDown above 1 request in flight, probability 0.5),
 *   so the lowest throttled level remembered is 2. Without its restore probe
 *   the limit regrows to just below that level, plateaus there for
 *   `PROBE_ABOVE_AFTER` (72) successes and then climbs one step per round — and a
 *   round now takes a second (8 MiB at 8 MiB/s): back to 0.8 × the pre-storm
 *   32 takes over 70 s. The restore probe returns it 10 s after the last
 *   throttle (and releases the rate limit, which otherwise stays).
 * - **The read gate** (SharedPressure): the source prefetches when it lags
 *   (a Kafka consumer's fetch buffers fill while it is behind) and those bytes
 *   count against the budget (ARCHITECTURE, invariant 3) but drain only by
 *   reading. After the overload the prefetch (`prefetchBytes`, 62.5 % of the
 *   budget) alone keeps the bytes held above the low-water mark, so a paused
 *   gate never sees the pressure clear; only its re-open probe (after
 *   `maxPauseMillis` with uploads progressing) reads again.
 * - **The batch target** (AdaptiveBatch): during the overload 96 more
 *   partitions hold open batches (a peer instance failed with the store and
 *   this one took over its partitions): their open batches would fill the
 *   budget, so the target shrinks; afterwards they are gone. AdaptiveBatch
 *   regrows ×`growth` per window on its own — its restore probe only shortens
 *   that — and the property reports it as recovering without its probe.
 *
 * The properties read knob values (`DriveSample.knobs`), not a policy's own
 * counters.
 *
 * @since 0.1.0
 */
import { Knob, Policy } from "@sluice/core"
import type { SignalBus } from "@sluice/core"
import * as Rng from "./Rng.ts"
import * as Store from "./Store.ts"

/**
 * The outcome of one property.
 *
 * @since 0.1.0
 */
export interface Verdict {
  readonly property: string
  readonly pass: boolean
  readonly detail: string
}

/**
 * A phase of the standard world.
 *
 * @since 0.1.0
 */
export type WorldPhase = "normal" | "overloaded" | "after"

/**
 * The world of a closed-loop drive.
 *
 * @since 0.1.0
 */
export interface World {
  readonly seed: number
  /** The store until `overloadFrom`. */
  readonly normal: Store.StoreParams
  /** The store from `overloadFrom` to `overloadUntil`. */
  readonly overloaded: Store.StoreParams
  /**
   * The store after the overload. Its lasting changes are what make the
   * recovery property an ablation: see {@link standardWorld}.
   */
  readonly after: Store.StoreParams
  readonly overloadFrom: number
  readonly overloadUntil: number
  readonly duration: number
  /** The recovery bound: a knob must be back within this long after the overload. */
  readonly recoveryMillis: number
  readonly budgetBytes: number
  /** Inflow, bytes per second. */
  readonly inflowBytesPerSecond: number
  /**
   * Bytes a lagging source fetches ahead of the pipeline (at most the lag),
   * counted against the budget and in the `Inflight` signal. They drain only
   * by reading: while the read gate is paused they stay.
   */
  readonly prefetchBytes: number
  /**
   * Partitions whose open batches the drive models, per phase: each holds half
   * a batch target on average while reading (sealed when the gate pauses, and
   * all at once when open batches would fill the budget).
   */
  readonly openPartitions: { readonly [P in WorldPhase]: number }
  readonly base: Knob.KnobValues
}

/**
 * The standard world (see the module doc for why each phase is shaped so):
 * inflow 400 MB/s, 8 MiB batches (the base target), 512 MiB budget of which a
 * lagging source may prefetch 320 MiB, base concurrency 32.
 *
 * @since 0.1.0
 */
export const standardWorld: World = {
  seed: 42,
  normal: { ...Store.defaultParams, baseLatencyMillis: 10, bandwidthBytesPerSecond: 32 * 1024 * 1024, knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
  overloaded: { ...Store.defaultParams, baseLatencyMillis: 40, bandwidthBytesPerSecond: 32 * 1024 * 1024, knee: 4, jitter: 0.1, throttleAbove: 1, throttleProbability: 0.5 },
  after: { ...Store.defaultParams, baseLatencyMillis: 40, bandwidthBytesPerSecond: 8 * 1024 * 1024, knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
  overloadFrom: 60_000,
  overloadUntil: 120_000,
  duration: 210_000,
  recoveryMillis: 60_000,
  budgetBytes: 512 * 1024 * 1024,
  inflowBytesPerSecond: 400e6,
  prefetchBytes: 320 * 1024 * 1024,
  openPartitions: { normal: 0, overloaded: 96, after: 0 },
  base: {
    concurrency: 32,
    batchTarget: { records: 50_000, bytes: 8 * 1024 * 1024, maxAgeMillis: 5_000 },
    readGate: "open",
    rate: null
  }
}

/**
 * One sample of a drive: the knob values in force at `t`.
 *
 * @since 0.1.0
 */
export interface DriveSample {
  readonly t: number
  readonly knobs: Knob.KnobValues
  readonly phase: WorldPhase
  readonly overloaded: boolean
  /** Bytes uploaded in the 100 ms before `t`, per second. */
  readonly goodputBytesPerSecond: number
  /** Bytes held (the pipeline's and the source's prefetch) at `t`. */
  readonly heldBytes: number
}

/**
 * What a drive returns.
 *
 * @since 0.1.0
 */
export interface Drive {
  readonly samples: ReadonlyArray<DriveSample>
  /** Every proposal the core made, with its time. */
  readonly proposals: ReadonlyArray<readonly [number, Knob.Proposal]>
}

/**
 * The world's phase at `t`.
 *
 * @since 0.1.0
 */
export const phaseAt = (world: World, t: number): WorldPhase =>
  t <= world.overloadFrom ? "normal" : t <= world.overloadUntil ? "overloaded" : "after"

const TICK = 100

/**
 * Drives a policy core through `world`, purely and deterministically.
 *
 * **Details**
 *
 * Every 100 ms: the source produces `inflowBytesPerSecond`; a lagging source
 * holds up to `prefetchBytes` of it fetched ahead; while the read gate is open
 * the pipeline reads what the budget allows; uploads run
 * `min(concurrency, batches held)` slots of the batch target, each finishing
 * `100 / latency` requests (the store's model, `Store.serviceMillis`), within
 * the rate knob; a request above the store's `throttleAbove` in flight is
 * throttled with its probability. Each completion is an `UploadSample` or a
 * `Failure`; then `Inflight`, `Lag` and `Tick` follow.
 *
 * **Example**
 *
 * ```ts
 * import { Fixed } from "@sluice/core"
 * import { Properties } from "@sluice/testkit"
 *
 * const drive = Properties.drive(Fixed.policy, { concurrency: 8 })
 * drive.samples.at(-1)?.knobs.concurrency // 8
 * ```
 *
 * @since 0.1.0
 */
export const drive = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld): Drive => {
  const rng = Rng.make(world.seed)
  let state = policy.init(config)
  let proposal: Knob.Proposal = policy.initial(state)
  const proposals: Array<readonly [number, Knob.Proposal]> = [[0, proposal]]
  const samples: Array<DriveSample> = []
  // Bytes the pipeline read and has not uploaded; bytes produced and not read.
  let held = 0
  let lag = 0
  let completions = 0
  let tokens = 0
  const feed = (signal: SignalBus.Signal, now: number) => {
    const next = policy.step(state, signal, now)
    state = next.state
    if (next.proposal !== undefined) {
      proposal = mergeProposal(proposal, next.proposal)
      proposals.push([now, next.proposal])
    }
  }
  for (let t = TICK; t <= world.duration; t += TICK) {
    const phase = phaseAt(world, t)
    const params = world[phase]
    const knobs = Knob.combine(world.base, [proposal])
    const limit = knobs.concurrency
    const batch = knobs.batchTarget.bytes
    const reading = knobs.readGate === "open"
    lag += (world.inflowBytesPerSecond * TICK) / 1000
    // The source fetches ahead (at most the lag) within the budget's room; the
    // pipeline reads what the budget leaves.
    const prefetch = Math.min(world.prefetchBytes, lag, Math.max(0, world.budgetBytes - held))
    if (reading) {
      const read = Math.min(lag, Math.max(0, world.budgetBytes - prefetch - held))
      lag -= read
      held += read
    }
    // Open batches fill while reading (half a target each on average); the
    // pipeline seals them when the gate pauses, and all at once when they would
    // fill the budget (pressure seals, so uploads still get them).
    const wanted = (world.openPartitions[phase] * batch) / 2
    const open = reading ? Math.min(wanted, held) : 0
    const sealed = wanted >= world.budgetBytes - prefetch - batch ? held : held - open
    const inflight = sealed <= 0 ? 0 : Math.min(limit, Math.max(1, Math.ceil(sealed / batch)))
    // Completions this tick: `inflight` slots each finishing 100 / latency requests, within the rate.
    const meanLatency = Store.serviceMillis(params, batch, inflight, 1)
    let due = inflight === 0 ? 0 : (inflight * TICK) / meanLatency
    if (knobs.rate !== null) {
      tokens = Math.min(knobs.rate, tokens + (knobs.rate * TICK) / 1000)
      due = Math.min(due, tokens)
      tokens -= due
    }
    completions += due
    let good = 0
    while (completions >= 1) {
      completions -= 1
      const latency = Store.serviceMillis(params, batch, inflight, rng.exponential())
      const throttled = params.throttleAbove !== null && inflight > params.throttleAbove && rng.uniform() < params.throttleProbability
      const startedAt = t - latency
      if (throttled) {
        feed({
          _tag: "Failure",
          at: t,
          failure: { failureClass: "Throttled", code: "SlowDown", status: 503, stage: "object_upload", retryAfterMillis: undefined },
          startedAt,
          latencyMillis: params.baseLatencyMillis,
          inflightAtStart: inflight,
          limitAtStart: limit,
          attempt: 1
        }, t)
      } else {
        const bytes = Math.min(batch, sealed - good)
        if (bytes <= 0) continue
        good += bytes
        feed({ _tag: "UploadSample", at: t, stage: "object_upload", startedAt, latencyMillis: latency, bytes: batch, inflightAtStart: inflight, limitAtStart: limit }, t)
        // Its manifest upload and verification: bodiless requests under the same load.
        for (const stage of ["manifest_upload", "verify"] as const) {
          const millis = Store.serviceMillis(params, 0, inflight, rng.exponential())
          feed({ _tag: "UploadSample", at: t, stage, startedAt: t - millis, latencyMillis: millis, bytes: 0, inflightAtStart: inflight, limitAtStart: limit }, t)
        }
      }
    }
    held -= good
    const heldBytes = held + Math.min(world.prefetchBytes, lag, Math.max(0, world.budgetBytes - held))
    feed({ _tag: "Inflight", at: t, batches: inflight, bytes: heldBytes, openBytes: Math.min(open, held), budgetBytes: world.budgetBytes }, t)
    feed({ _tag: "Lag", at: t, lag: new Map([[0, Math.round(lag / 150)]]), totalRecords: Math.round(lag / 150) }, t)
    feed({ _tag: "Tick", at: t, knobs }, t)
    samples.push({
      t,
      knobs: Knob.combine(world.base, [proposal]),
      phase,
      overloaded: phase === "overloaded",
      goodputBytesPerSecond: (good * 1000) / TICK,
      heldBytes
    })
  }
  return { samples, proposals }
}

const mergeProposal = (a: Knob.Proposal, b: Knob.Proposal): Knob.Proposal => ({
  ...a,
  ...b,
  ...(b.batchTarget !== undefined ? { batchTarget: { ...a.batchTarget, ...b.batchTarget } } : {})
})

/**
 * Random signals (seeded) for fuzzing: samples with any latency, throttles,
 * transient and fatal failures, in-flight, lag and ticks.
 *
 * @since 0.1.0
 */
export const randomSignals = (seed: number, count: number): Array<readonly [SignalBus.Signal, number]> => {
  const rng = Rng.make(seed)
  const out: Array<readonly [SignalBus.Signal, number]> = []
  let t = 0
  for (let i = 0; i < count; i++) {
    t += Math.floor(rng.uniform() * 50)
    const kind = Math.floor(rng.uniform() * 6)
    const latency = rng.uniform() < 0.05 ? 0 : rng.exponential() * 200 * (rng.uniform() < 0.1 ? 100 : 1)
    const inflight = Math.floor(rng.uniform() * 100)
    const classes = ["Throttled", "Transient", "Fatal"] as const
    const signal: SignalBus.Signal = kind <= 1
      ? { _tag: "UploadSample", at: t, stage: "object_upload", startedAt: t - latency, latencyMillis: latency, bytes: Math.floor(rng.uniform() * 64e6), inflightAtStart: inflight, limitAtStart: inflight }
      : kind === 2
      ? {
        _tag: "Failure",
        at: t,
        failure: {
          failureClass: classes[Math.floor(rng.uniform() * 3)] ?? "Throttled",
          code: "SlowDown",
          status: 503,
          stage: "object_upload",
          retryAfterMillis: rng.uniform() < 0.3 ? 1000 : undefined
        },
        startedAt: t - latency,
        latencyMillis: latency,
        inflightAtStart: inflight,
        limitAtStart: inflight,
        attempt: 1 + Math.floor(rng.uniform() * 5)
      }
      : kind === 3
      ? { _tag: "Inflight", at: t, batches: inflight, bytes: Math.floor(rng.uniform() * 512e6), openBytes: 0, budgetBytes: 256e6 }
      : kind === 4
      ? { _tag: "Lag", at: t, lag: new Map([[0, Math.floor(rng.uniform() * 1e7)]]), totalRecords: Math.floor(rng.uniform() * 1e7) }
      : { _tag: "Tick", at: t, knobs: standardWorld.base }
    out.push([signal, t])
  }
  return out
}

const numericFields = (p: Knob.Proposal): Array<readonly [string, number]> => {
  const out: Array<readonly [string, number]> = []
  if (p.concurrency !== undefined) out.push(["concurrency", p.concurrency])
  if (p.rate !== undefined && p.rate !== null) out.push(["rate", p.rate])
  if (p.batchTarget?.records !== undefined) out.push(["batchTarget.records", p.batchTarget.records])
  if (p.batchTarget?.bytes !== undefined) out.push(["batchTarget.bytes", p.batchTarget.bytes])
  if (p.batchTarget?.maxAgeMillis !== undefined) out.push(["batchTarget.maxAgeMillis", p.batchTarget.maxAgeMillis])
  return out
}

const boundedValue = (p: Knob.Proposal, knob: Knob.KnobName): number | undefined =>
  knob === "concurrency" ? p.concurrency : knob === "rate" ? (p.rate ?? undefined) : knob === "batchTarget" ? p.batchTarget?.bytes : undefined

/**
 * Never below floor, never above ceiling: every proposal to a bounded numeric
 * knob (concurrency, rate, batch target bytes) stays within the declared bounds,
 * in the standard drive and under `fuzz` random signals.
 *
 * @since 0.1.0
 */
export const withinBounds = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld, fuzz = 5_000): Verdict => {
  const bounds = policy.bounds(config)
  const all = [...drive(policy, config, world).proposals, ...Policy.replay(policy, config, randomSignals(world.seed, fuzz)).proposals]
  for (const [t, p] of all) {
    for (const knob of ["concurrency", "rate", "batchTarget"] as const) {
      const b = bounds[knob]
      const v = boundedValue(p, knob)
      if (b === undefined || v === undefined) continue
      if (v < b.floor) return { property: "withinBounds", pass: false, detail: `${knob} ${v} below floor ${b.floor} at ${t} ms` }
      if (v > b.ceiling) return { property: "withinBounds", pass: false, detail: `${knob} ${v} above ceiling ${b.ceiling} at ${t} ms` }
    }
  }
  return { property: "withinBounds", pass: true, detail: `${all.length} proposals within ${JSON.stringify(bounds)}` }
}

/**
 * No NaN or Infinity in any proposal (standard drive and fuzz).
 *
 * @since 0.1.0
 */
export const finiteProposals = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld, fuzz = 5_000): Verdict => {
  const all = [...drive(policy, config, world).proposals, ...Policy.replay(policy, config, randomSignals(world.seed + 1, fuzz)).proposals]
  for (const [t, p] of all) {
    for (const [name, v] of numericFields(p)) {
      if (!Number.isFinite(v)) return { property: "finiteProposals", pass: false, detail: `${name} = ${v} at ${t} ms` }
    }
  }
  return { property: "finiteProposals", pass: true, detail: `${all.length} proposals, all finite` }
}

/**
 * Same seed, same proposals.
 *
 * @since 0.1.0
 */
export const deterministic = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld): Verdict => {
  const a = drive(policy, config, world).proposals.map((p) => JSON.stringify(p))
  const b = drive(policy, config, world).proposals.map((p) => JSON.stringify(p))
  const i = a.findIndex((p, k) => p !== b[k])
  const at = i >= 0 ? i : a.length !== b.length ? Math.min(a.length, b.length) : -1
  return at < 0
    ? { property: "deterministic", pass: true, detail: "two drives with one seed gave identical proposals" }
    : {
      property: "deterministic",
      pass: false,
      detail: `two drives with one seed gave different proposals (${a.length} and ${b.length}), first at #${at}: ${a[at] ?? "none"} vs ${b[at] ?? "none"}`
    }
}

/** The knobs the properties read, each as a number. */
type LoadKnob = "concurrency" | "rate" | "readGate" | "batchTarget"

/**
 * A knob as a number, higher = more load (or, for the batch target, bigger
 * objects): the read gate is 1 open, 0 paused; no rate limit is `Infinity`.
 */
const pressure = (k: Knob.KnobValues, knob: LoadKnob): number =>
  knob === "concurrency"
    ? k.concurrency
    : knob === "rate"
    ? (k.rate ?? Infinity)
    : knob === "readGate"
    ? (k.readGate === "open" ? 1 : 0)
    : k.batchTarget.bytes

const movedKnobs = <C>(policy: Policy.Policy<C, unknown>, config: C): Array<LoadKnob> => {
  const bounds = policy.bounds(config)
  return (["concurrency", "rate", "readGate", "batchTarget"] as const).filter((k) => bounds[k] !== undefined)
}

const show = (knob: LoadKnob, v: number): string =>
  knob === "readGate"
    ? (v >= 1 ? "open" : "paused")
    : knob === "batchTarget"
    ? `${(v / 1048576).toFixed(1)} MiB`
    : knob === "rate"
    ? (v === Infinity ? "unlimited" : `${v.toFixed(1)}/s`)
    : `${v}`

/** What "back" means for a knob that started at `start`. */
const backTo = (knob: LoadKnob, start: number, fraction: number): string =>
  knob === "readGate" || start === Infinity ? show(knob, start) : `>= ${fraction} x ${show(knob, start)}`

/**
 * Backs off under sustained overload: during the overload, some knob the policy
 * bounds (concurrency, rate, read gate or batch target) drops below its value
 * when the overload began. Not applicable (passes) to policies that bound none
 * of them.
 *
 * @since 0.1.0
 */
export const backsOffUnderOverload = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld): Verdict => {
  const knobs = movedKnobs(policy as Policy.Policy<C, unknown>, config)
  if (knobs.length === 0) return { property: "backsOffUnderOverload", pass: true, detail: "not applicable: moves no load knob" }
  const { samples } = drive(policy, config, world)
  const details: Array<string> = []
  for (const knob of knobs) {
    const r = recovery(samples, world, knob, 0.8)
    if (r === undefined) break
    if (r.lowest < r.start) {
      return { property: "backsOffUnderOverload", pass: true, detail: `${knob} ${show(knob, r.start)} -> ${show(knob, r.lowest)} under overload` }
    }
    details.push(`${knob} stayed at ${show(knob, r.start)}`)
  }
  return { property: "backsOffUnderOverload", pass: false, detail: `did not back off under ${(world.overloadUntil - world.overloadFrom) / 1000} s of overload: ${details.join(", ")}` }
}

/** One knob through one drive: its value before the overload, lowest during, and when (if) it was back. */
interface KnobRecovery {
  readonly start: number
  readonly lowest: number
  /** Seconds after the overload until the knob was back to `fraction × start`, within the bound; `null` if not. */
  readonly backAfter: number | null
  /** Its value at the bound. */
  readonly atBound: number
}

const recovery = (samples: ReadonlyArray<DriveSample>, world: World, knob: LoadKnob, fraction: number): KnobRecovery | undefined => {
  const before = samples.filter((s) => s.t <= world.overloadFrom).at(-1)
  if (before === undefined) return undefined
  const start = pressure(before.knobs, knob)
  const during = samples.filter((s) => s.phase === "overloaded")
  const lowest = Math.min(start, ...during.map((s) => pressure(s.knobs, knob)))
  const after = samples.filter((s) => s.t > world.overloadUntil && s.t <= world.overloadUntil + world.recoveryMillis)
  const back = after.find((s) => pressure(s.knobs, knob) >= fraction * start)
  const last = after.at(-1)
  return {
    start,
    lowest,
    backAfter: back === undefined ? null : (back.t - world.overloadUntil) / 1000,
    atBound: last === undefined ? start : pressure(last.knobs, knob)
  }
}

/**
 * Recovers **through its probe** after the overload clears — the ablation.
 *
 * **Details**
 *
 * The policy is driven twice through `world`: as declared, and with its probe
 * disabled (`Policy.ablate`, from the policy's `withoutProbe`). For a knob it
 * bounds that backed off under the overload, "recovered" means back to at
 * least `fraction` of its pre-overload value within `world.recoveryMillis`
 * after the overload ends (for the read gate: open again).
 *
 * - Every knob that backed off must recover with the probe (a policy that
 *   never backed off, or left a knob down, fails).
 * - A policy declaring a probe passes only if, besides, some of those knobs
 *   do **not** recover without it: the probe is what recovers. It fails if
 *   they all recover without the probe too ("recovers without its probe"), or
 *   if its probe cannot be disabled (no `withoutProbe`, or
 *   `probe(withoutProbe(c))` is not `NoProbe`).
 * - A policy declaring `NoProbe` that recovers anyway passes, reported as
 *   "recovers without a probe"; one that does not recover fails.
 * - Not applicable (passes) to policies that bound no load knob.
 *
 * **Example**
 *
 * ```ts
 * import { Fixed } from "@sluice/core"
 * import { Properties } from "@sluice/testkit"
 *
 * Properties.recoversAfterOverload(Fixed.policy, { concurrency: 8 }).pass // false: it never backs off
 * ```
 *
 * @since 0.1.0
 */
export const recoversAfterOverload = <C, S>(
  policy: Policy.Policy<C, S>,
  config: C,
  world: World = standardWorld,
  options: { readonly fraction?: number } = {}
): Verdict => {
  const name = "recoversAfterOverload"
  const knobs = movedKnobs(policy as Policy.Policy<C, unknown>, config)
  if (knobs.length === 0) return { property: name, pass: true, detail: "not applicable: moves no load knob" }
  const fraction = options.fraction ?? 0.8
  const bound = world.recoveryMillis / 1000
  const declared = policy.probe(config)
  const probed = drive(policy, config, world).samples
  const ablatable = policy.withoutProbe !== undefined && Policy.probeDisabled(policy, config)
  const ablated = declared._tag !== "NoProbe" && ablatable ? drive(Policy.ablate(policy), config, world).samples : undefined
  const stuck: Array<string> = []
  const back: Array<string> = []
  const byProbe: Array<string> = []
  const alsoWithout: Array<string> = []
  for (const knob of knobs) {
    const r = recovery(probed, world, knob, fraction)
    if (r === undefined || r.lowest >= r.start) continue
    if (r.backAfter === null) {
      stuck.push(`${knob} still ${show(knob, r.atBound)}, not back ${backTo(knob, r.start, fraction)}, ${bound} s after the overload cleared`)
      continue
    }
    back.push(`${knob} back ${backTo(knob, r.start, fraction)} ${r.backAfter} s after the overload cleared`)
    const a = ablated === undefined ? undefined : recovery(ablated, world, knob, fraction)
    if (a === undefined) continue
    if (a.lowest < a.start && a.backAfter === null) byProbe.push(`${knob} still ${show(knob, a.atBound)}`)
    else alsoWithout.push(`${knob} back ${r.backAfter} s after with it, ${a.lowest < a.start ? `${a.backAfter} s after` : "never backed off"} without it`)
  }
  const fail = (detail: string): Verdict => ({ property: name, pass: false, detail })
  // Every knob that backed off must come back…
  if (back.length === 0 && stuck.length === 0) {
    const stayed = knobs.flatMap((knob) => {
      const r = recovery(probed, world, knob, fraction)
      return r === undefined ? [] : [`${knob} stayed at ${show(knob, r.start)}`]
    })
    return fail(
      `never backed off (${stayed.join(", ")} through ${(world.overloadUntil - world.overloadFrom) / 1000} s of overload), so there was nothing to recover${
        declared._tag === "NoProbe" ? `; declares NoProbe (${declared.reason})` : ""
      }`
    )
  }
  if (stuck.length > 0) return fail(`${stuck.join("; ")}${declared._tag === "NoProbe" ? `; declares NoProbe (${declared.reason})` : ""}`)
  if (declared._tag === "NoProbe") {
    return { property: name, pass: true, detail: `recovers without a probe (declares NoProbe: ${declared.reason}): ${back.join("; ")}` }
  }
  // …and, with the probe disabled, some of them must not.
  if (ablated === undefined) {
    return fail(
      `declares a ${declared._tag} but it cannot be disabled (${
        policy.withoutProbe === undefined ? "no withoutProbe" : "probe(withoutProbe(config)) is not NoProbe"
      }): the ablation cannot show that the probe is what recovers`
    )
  }
  if (byProbe.length === 0) return fail(`recovers without its probe: the probe is not what recovers (${alsoWithout.join("; ")})`)
  return {
    property: name,
    pass: true,
    detail: `${back.join("; ")} with its ${declared._tag}; with the probe disabled, after ${bound} s: ${byProbe.join("; ")}`
  }
}

/**
 * Every property, in order.
 *
 * **Example**
 *
 * ```ts
 * import { Fixed } from "@sluice/core"
 * import { Properties } from "@sluice/testkit"
 *
 * const verdicts = Properties.all(Fixed.policy, { concurrency: 8 })
 * verdicts.filter((v) => !v.pass).map((v) => v.property) // ["backsOffUnderOverload", "recoversAfterOverload"]
 * ```
 *
 * @since 0.1.0
 */
export const all = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld): Array<Verdict> => [
  withinBounds(policy, config, world),
  backsOffUnderOverload(policy, config, world),
  recoversAfterOverload(policy, config, world),
  deterministic(policy, config, world),
  finiteProposals(policy, config, world)
]
