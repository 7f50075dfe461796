/**
 * Policy properties: the proofs every pressure policy must pass, as plain
 * functions returning a {@link Verdict} (so a test can also assert that a policy
 * *fails* one). `Conformance.conformance` wraps them in vitest tests.
 *
 * A policy's pure core is driven in closed loop against a small, seeded world:
 * every 100 ms the world turns the knob values in force (the policy's proposal
 * combined over the pipeline's base values with the core `Knob.combine`) into
 * signals — upload samples whose latency follows the simulated store's model,
 * classified throttles, in-flight bytes, lag and a tick. The standard run is
 * 60 s normal, 60 s overloaded (knee 4, 503 SlowDown above 4 in flight with
 * probability 0.5, 4× base latency), then 90 s normal again.
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
 * The world of a closed-loop drive.
 *
 * @since 0.1.0
 */
export interface World {
  readonly seed: number
  readonly normal: Store.StoreParams
  readonly overloaded: Store.StoreParams
  readonly overloadFrom: number
  readonly overloadUntil: number
  readonly duration: number
  readonly batchBytes: number
  readonly budgetBytes: number
  /** Inflow, bytes per second. */
  readonly inflowBytesPerSecond: number
  readonly base: Knob.KnobValues
}

/**
 * The standard world (see the module doc).
 *
 * @since 0.1.0
 */
export const standardWorld: World = {
  seed: 42,
  normal: { ...Store.defaultParams, baseLatencyMillis: 10, knee: 32, jitter: 0.1, throttleAbove: 64, throttleProbability: 0.5 },
  overloaded: { ...Store.defaultParams, baseLatencyMillis: 40, knee: 4, jitter: 0.1, throttleAbove: 4, throttleProbability: 0.5 },
  overloadFrom: 60_000,
  overloadUntil: 120_000,
  duration: 210_000,
  batchBytes: 8 * 1024 * 1024,
  budgetBytes: 256 * 1024 * 1024,
  inflowBytesPerSecond: 2e9,
  base: {
    concurrency: 8,
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
  readonly overloaded: boolean
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
 * Drives a policy core through `world`, purely and deterministically.
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
  let held = 0
  let lag = 0
  let completions = 0
  const feed = (signal: SignalBus.Signal, now: number) => {
    const next = policy.step(state, signal, now)
    state = next.state
    if (next.proposal !== undefined) {
      proposal = mergeProposal(proposal, next.proposal)
      proposals.push([now, next.proposal])
    }
  }
  for (let t = 100; t <= world.duration; t += 100) {
    const overloaded = t > world.overloadFrom && t <= world.overloadUntil
    const params = overloaded ? world.overloaded : world.normal
    const knobs = Knob.combine(world.base, [proposal])
    const limit = knobs.concurrency
    const inflight = knobs.readGate === "paused" && held === 0 ? 0 : limit
    const batch = Math.min(world.batchBytes, knobs.batchTarget.bytes)
    // Completions this tick: `inflight` slots each finishing 100 / latency requests.
    const meanLatency = Store.serviceMillis(params, batch, inflight, 1)
    completions += inflight === 0 ? 0 : (inflight * 100) / meanLatency
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
        good += batch
        feed({ _tag: "UploadSample", at: t, stage: "object_upload", startedAt, latencyMillis: latency, bytes: batch, inflightAtStart: inflight, limitAtStart: limit }, t)
      }
    }
    const inflow = knobs.readGate === "paused" ? 0 : (world.inflowBytesPerSecond * 100) / 1000
    held = Math.max(0, Math.min(world.budgetBytes, held + inflow - good))
    lag = Math.max(0, lag + (world.inflowBytesPerSecond * 100) / 1000 - good)
    feed({ _tag: "Inflight", at: t, batches: inflight, bytes: held, openBytes: 0, budgetBytes: world.budgetBytes }, t)
    feed({ _tag: "Lag", at: t, lag: new Map([[0, Math.round(lag / 150)]]), totalRecords: Math.round(lag / 150) }, t)
    feed({ _tag: "Tick", at: t, knobs }, t)
    samples.push({ t, knobs: Knob.combine(world.base, [proposal]), overloaded })
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
  const a = JSON.stringify(drive(policy, config, world).proposals)
  const b = JSON.stringify(drive(policy, config, world).proposals)
  return a === b
    ? { property: "deterministic", pass: true, detail: "two drives with one seed gave identical proposals" }
    : { property: "deterministic", pass: false, detail: "two drives with one seed gave different proposals" }
}

/** The pressure a policy exerts on its knobs, higher = more load. */
const pressure = (k: Knob.KnobValues, knob: "concurrency" | "rate" | "readGate"): number =>
  knob === "concurrency" ? k.concurrency : knob === "rate" ? (k.rate ?? Infinity) : k.readGate === "open" ? 1 : 0

const movedKnobs = <C>(policy: Policy.Policy<C, unknown>, config: C): Array<"concurrency" | "rate" | "readGate"> => {
  const bounds = policy.bounds(config)
  return (["concurrency", "rate", "readGate"] as const).filter((k) => bounds[k] !== undefined)
}

/**
 * Backs off under sustained overload: during the overload, some knob the policy
 * bounds (concurrency, rate or read gate) drops below its value when the overload
 * began. Not applicable (passes) to policies that bound none of them.
 *
 * @since 0.1.0
 */
export const backsOffUnderOverload = <C, S>(policy: Policy.Policy<C, S>, config: C, world: World = standardWorld): Verdict => {
  const knobs = movedKnobs(policy as Policy.Policy<C, unknown>, config)
  if (knobs.length === 0) return { property: "backsOffUnderOverload", pass: true, detail: "not applicable: moves no load knob" }
  const { samples } = drive(policy, config, world)
  const before = samples.filter((s) => s.t <= world.overloadFrom).at(-1)
  const during = samples.filter((s) => s.overloaded)
  const details: Array<string> = []
  for (const knob of knobs) {
    if (before === undefined) break
    const start = pressure(before.knobs, knob)
    const lowest = Math.min(...during.map((s) => pressure(s.knobs, knob)))
    if (lowest < start) return { property: "backsOffUnderOverload", pass: true, detail: `${knob} ${start} -> ${lowest} under overload` }
    details.push(`${knob} stayed at ${start}`)
  }
  return { property: "backsOffUnderOverload", pass: false, detail: `did not back off under ${(world.overloadUntil - world.overloadFrom) / 1000} s of overload: ${details.join(", ")}` }
}

/**
 * Recovers through its probe after the overload clears: the policy backed off,
 * declares a probe, and within `withinMillis` after the overload ends is back to
 * at least `fraction` of its pre-overload value.
 *
 * @since 0.1.0
 */
export const recoversAfterOverload = <C, S>(
  policy: Policy.Policy<C, S>,
  config: C,
  world: World = standardWorld,
  options: { readonly withinMillis?: number; readonly fraction?: number } = {}
): Verdict => {
  const name = "recoversAfterOverload"
  const knobs = movedKnobs(policy as Policy.Policy<C, unknown>, config)
  if (knobs.length === 0) return { property: name, pass: true, detail: "not applicable: moves no load knob" }
  const probe = policy.probe(config)
  const within = options.withinMillis ?? 60_000
  const fraction = options.fraction ?? 0.8
  const { samples } = drive(policy, config, world)
  const before = samples.filter((s) => s.t <= world.overloadFrom).at(-1)
  const during = samples.filter((s) => s.overloaded)
  const after = samples.filter((s) => s.t > world.overloadUntil && s.t <= world.overloadUntil + within)
  const problems: Array<string> = []
  for (const knob of knobs) {
    if (before === undefined) break
    const start = pressure(before.knobs, knob)
    const lowest = Math.min(...during.map((s) => pressure(s.knobs, knob)))
    if (lowest >= start) {
      problems.push(`${knob} never backed off (stayed ${start}), so there was nothing to recover`)
      continue
    }
    const back = after.find((s) => pressure(s.knobs, knob) >= fraction * start)
    if (back !== undefined && probe._tag !== "NoProbe") {
      return { property: name, pass: true, detail: `${knob} back to ${pressure(back.knobs, knob)} (>= ${fraction} x ${start}) ${(back.t - world.overloadUntil) / 1000} s after the overload cleared` }
    }
    problems.push(back === undefined ? `${knob} still below ${fraction} x ${start} ${within / 1000} s after the overload cleared` : `${knob} recovered without a declared probe`)
  }
  if (probe._tag === "NoProbe") problems.push(`declares NoProbe (${probe.reason})`)
  return { property: name, pass: false, detail: problems.join("; ") }
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
