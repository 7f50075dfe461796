import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Result, Schema, Stream } from "effect"
import { Config, Fixed, Memory, Pipeline, Policy } from "../src/index.ts"
import type { SignalBus } from "../src/index.ts"
import { runVirtual } from "./support.ts"

const ProberConfig = Schema.Struct({ probe: Schema.Boolean })
interface ProberState {
  readonly mode: "steady" | "probing"
  readonly probe: boolean
}

/** Probes (pins concurrency at 1) from 200 ms to 400 ms of virtual time, unless its probe is disabled. */
const prober: Policy.Policy<typeof ProberConfig.Type, ProberState> = {
  name: "prober",
  config: ProberConfig,
  bounds: () => ({ concurrency: { floor: 1, ceiling: 4 } }),
  probe: (c) => c.probe ? { _tag: "RestoreProbe", afterMillis: 200 } : { _tag: "NoProbe", reason: "probe: false" },
  withoutProbe: (c) => ({ ...c, probe: false }),
  init: (c) => ({ mode: "steady", probe: c.probe }),
  initial: () => ({ concurrency: 4 }),
  step: (s, signal, now) => {
    if (signal._tag !== "Tick" || !s.probe) return { state: s }
    const next = now >= 200 && now < 400 ? "probing" : "steady"
    return next === s.mode ? { state: s } : { state: { ...s, mode: next }, proposal: { concurrency: next === "probing" ? 1 : 4 } }
  },
  mode: (s) => s.mode
}

const modesOf = (probe: boolean) =>
  Effect.gen(function*() {
    const source = Memory.source({ name: "t", partitions: 1, records: 3_000, recordBytes: 8, chunkRecords: 100, intervalMillis: 20 })
    const modes: Array<SignalBus.PolicyModeSignal> = []
    const exit = yield* runVirtual(Effect.scoped(Effect.gen(function*() {
      const policies = Policy.layer(prober, { probe: true }, { probe })
      const handle = yield* Pipeline.start({ source, sink: Memory.sink(), policies })
      const subscription = yield* handle.bus.subscribe
      yield* Stream.fromSubscription(subscription).pipe(
        Stream.runForEach((s) => Effect.sync(() => s._tag === "PolicyMode" && void modes.push(s))),
        Effect.forkScoped
      )
      return yield* handle.await
    })))
    expect(Exit.isSuccess(exit)).toBe(true)
    return modes.map((m) => [m.policy, m.mode, m.at])
  })

describe("Policy.layer", () => {
  it.effect("publishes a PolicyMode signal on every mode change", () =>
    Effect.gen(function*() {
      expect(yield* modesOf(true)).toEqual([["prober", "probing", 200], ["prober", "steady", 400]])
    }))

  it.effect("{ probe: false } runs the core with its probe disabled (the ablation)", () =>
    Effect.gen(function*() {
      expect(yield* modesOf(false)).toEqual([])
    }))
})

describe("Policy config is typed by its schema's encoded form", () => {
  it("a misspelled key fails tsc; the same data as unknown fails at run time with a ConfigError", () => {
    // @ts-expect-error — "concurency" is not a Fixed config key
    const typo = () => Fixed.layer({ concurency: 8 })
    // @ts-expect-error — the same through the generic shell
    const typo2 = () => Policy.layer(Fixed.policy, { concurency: 8 })
    expect(typeof typo).toBe("function")
    expect(typeof typo2).toBe("function")
    // Durations and sizes accept text or numbers; a typed input compiles.
    const ok = Fixed.layer({ concurrency: 8, batchBytes: "8 MiB", maxAge: "30s" })
    expect(ok).toBeDefined()
    const data: unknown = JSON.parse('{ "concurency": 8 }')
    const decoded = Config.decodeResult("fixed", Fixed.FixedConfig, data)
    expect(Result.isFailure(decoded) ? decoded.failure.message : "decoded").toContain("concurency")
  })
})

describe("Policy.layer supervision", () => {
  it.effect("a core whose step throws ends the run with PolicyFailed naming the policy (its pause does not stall the run)", () =>
    Effect.gen(function*() {
      const Breaks = Schema.Struct({})
      // Pauses the read gate, then throws on the first tick after 300 ms.
      const breaks: Policy.Policy<typeof Breaks.Type, null> = {
        name: "breaks",
        config: Breaks,
        bounds: () => ({}),
        probe: () => ({ _tag: "NoProbe", reason: "test" }),
        withoutProbe: (c) => c,
        init: () => null,
        initial: () => ({ readGate: "paused" }),
        step: (s, signal, now) => {
          if (signal._tag === "Tick" && now >= 300) throw new Error("step exploded")
          return { state: s }
        }
      }
      const source = Memory.source({ name: "t", partitions: 1, records: 100_000, recordBytes: 8, chunkRecords: 100, intervalMillis: 20 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink: Memory.sink(), policies: Policy.layer(breaks, {}) }), { maxMillis: 60_000 })
      expect(Exit.isFailure(exit)).toBe(true)
      const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      expect(failure?._tag === "Fail" ? failure.error : undefined).toMatchObject({ _tag: "PolicyFailed", policy: "breaks" })
      expect(failure?._tag === "Fail" && failure.error._tag === "PolicyFailed" ? failure.error.message : "").toContain("step exploded")
    }))
})

describe("Policy.ablate", () => {
  it("passes every config through withoutProbe: the probe is declared NoProbe and the core never probes", () => {
    const ablated = Policy.ablate(prober)
    expect(prober.probe({ probe: true })._tag).toBe("RestoreProbe")
    expect(ablated.probe({ probe: true })._tag).toBe("NoProbe")
    expect(Policy.probeDisabled(prober, { probe: true })).toBe(true)
    const tick = (at: number): SignalBus.Signal => ({
      _tag: "Tick",
      at,
      knobs: { concurrency: 4, batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 }, readGate: "open", rate: null }
    })
    const signals = [[tick(300), 300], [tick(500), 500]] as const
    expect(Policy.replay(prober, { probe: true }, signals).proposals).toEqual([[0, { concurrency: 4 }], [300, { concurrency: 1 }], [500, { concurrency: 4 }]])
    expect(Policy.replay(ablated, { probe: true }, signals).proposals).toEqual([[0, { concurrency: 4 }]])
  })

  it("a NoProbe policy is its own ablation; a policy without withoutProbe cannot be ablated", () => {
    expect(Policy.probeDisabled(Fixed.policy, { concurrency: 8 })).toBe(true)
    const { withoutProbe: _, ...opaque } = prober
    expect(Policy.ablate(opaque)).toBe(opaque)
    expect(Policy.probeDisabled(opaque, { probe: true })).toBe(false)
  })
})
