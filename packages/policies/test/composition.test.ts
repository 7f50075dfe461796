import { Knob, SignalBus } from "@sluice/core"
import { Composition } from "@sluice/policies"
import { conformanceLayer } from "@sluice/testkit/conformance"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Result } from "effect"

const base: Knob.KnobValues = {
  concurrency: 8,
  batchTarget: { records: 10_000, bytes: 8 << 20, maxAgeMillis: 60_000 },
  readGate: "open",
  rate: null
}

const knobsAfter = <E>(policies: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>) =>
  Effect.gen(function*() {
    const knobs = yield* Knob.Knobs
    yield* Layer.build(policies)
    return knobs.current()
  }).pipe(Effect.scoped, Effect.provide(Layer.merge(SignalBus.layer, Knob.layer(base))))

describe("Composition", () => {
  it("lists its names", () => {
    expect(Composition.names).toEqual(["default", "classic", "fixed", "aimd", "deliveryrate", "throttle", "shared", "batch", "gradient2", "vegas"])
  })

  it.effect("parses fixed:N", () =>
    Effect.gen(function*() {
      const values = yield* knobsAfter(Composition.parse("fixed:3"))
      expect(values.concurrency).toBe(3)
    }))

  it.effect("fixed:8 + aimd: the most conservative concurrency wins", () =>
    Effect.gen(function*() {
      const values = yield* knobsAfter(Composition.parse("aimd+fixed:4"))
      expect(values.concurrency).toBe(4)
    }))

  it.effect("default has no read gate: bytes held past the high-water mark leave reading open (classic's SharedPressure pauses it)", () =>
    Effect.gen(function*() {
      const gateAfterFill = <E>(policies: Layer.Layer<never, E, SignalBus.SignalBus | Knob.Knobs>) =>
        Effect.gen(function*() {
          const knobs = yield* Knob.Knobs
          const bus = yield* SignalBus.SignalBus
          yield* Layer.build(policies)
          yield* Effect.yieldNow
          // 95 % of the budget held, nothing open: SharedPressure's pause (high water 0.8).
          for (let at = 0; at < 5; at++) {
            yield* bus.publish({ _tag: "Inflight", at, batches: 4, bytes: 950, openBytes: 0, budgetBytes: 1000, medianUpload: undefined })
            yield* Effect.yieldNow
          }
          for (let i = 0; i < 10; i++) yield* Effect.yieldNow
          return knobs.current().readGate
        }).pipe(Effect.scoped, Effect.provide(Layer.merge(SignalBus.layer, Knob.layer(base))))
      expect(yield* gateAfterFill(Composition.classic())).toBe("paused")
      expect(yield* gateAfterFill(Composition.defaults())).toBe("open")
    }))

  it.effect("a config for a member the composition has not (untyped data) fails its layer with a ConfigError naming it", () =>
    Effect.gen(function*() {
      const data: Composition.DefaultsConfig = JSON.parse(`{ "deliveryRate": { "ceiling": 64 }, "shared": { "highWater": 0.8 } }`)
      const exit = yield* Effect.exit(knobsAfter(Composition.defaults(data)))
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain(`default: no member "shared" (its members: deliveryRate, throttle, batch)`)
      const classic: Composition.ClassicConfig = JSON.parse(`{ "deliveryRate": { "ceiling": 64 } }`)
      const refused = yield* Effect.exit(knobsAfter(Composition.classic(classic)))
      expect(Exit.isFailure(refused) && String(refused.cause)).toContain(`classic: no member "deliveryRate" (its members: aimd, throttle, shared, batch)`)
    }))

  it.effect("default builds delivery rate + throttle + batch (classic: AIMD in its place, and SharedPressure)", () =>
    Effect.gen(function*() {
      const values = yield* knobsAfter(Composition.parse("default"))
      expect(values.concurrency).toBe(8)
      expect(values.batchTarget.records).toBe(1_000_000)
      expect(values.readGate).toBe("open")
      // Told apart by their configs: a DeliveryRate field is accepted by default only.
      const dr = yield* Effect.exit(knobsAfter(Composition.defaults({ deliveryRate: { initial: 5 } })))
      expect(Exit.isSuccess(dr) && dr.value.concurrency).toBe(5)
      const aimd = yield* Effect.exit(knobsAfter(Composition.classic({ aimd: { initial: 6 } })))
      expect(Exit.isSuccess(aimd) && aimd.value.concurrency).toBe(6)
    }))

  it("every name parses", () => {
    for (const spec of ["aimd", "deliveryrate", "throttle", "shared", "batch", "gradient2", "vegas", "default", "classic", "fixed:8", "aimd+throttle+shared+batch"]) {
      expect(Result.isSuccess(Composition.parseResult(spec))).toBe(true)
    }
  })

  it.effect("an unknown name is a typed error", () =>
    Effect.gen(function*() {
      const r = Composition.parseResult("aimd+bogus")
      expect(Result.isFailure(r) && r.failure._tag).toBe("UnknownPolicy")
      expect(Result.isFailure(r) && r.failure.name).toBe("bogus")
      const exit = yield* Effect.exit(knobsAfter(Composition.parse("aimd+bogus")))
      expect(Exit.isFailure(exit)).toBe(true)
    }))

  it.effect("bad config fails the layer with a ConfigError naming the field", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(knobsAfter(Composition.defaults({ deliveryRate: { throttleBeta: 9 } })))
      expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/throttleBeta/)
      // The caller's key wins over defaultsBase's (firstBeta 0.7 there).
      const first = yield* Effect.exit(knobsAfter(Composition.defaults({ throttle: { firstBeta: 0.05 } })))
      expect(Exit.isFailure(first) && String(first.cause)).toMatch(/firstBeta/)
      const classic = yield* Effect.exit(knobsAfter(Composition.classic({ aimd: { beta: 3 } })))
      expect(Exit.isFailure(classic) && String(classic.cause)).toMatch(/beta/)
    }))
})

// The ablation of the default composition, in the simulated pipeline: built
// with every probe disabled ({ probes: false }) it does not get back to 90 % of
// the oracle within 60 s of the storm (the delivery-rate policy neither
// re-learns the slower store's latency nor probes above the bound the storm
// left); as declared it does.
conformanceLayer("default composition", (options) => Composition.defaults({}, { probes: options.probe !== false }), { floor: 1, ceiling: 256 })
