import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Stream } from "effect"
import { Knob, Memory, Pipeline, PolicySupervisor, SignalBus } from "../src/index.ts"
import { runVirtual } from "./support.ts"

/**
 * A hand-written policy shell (it does not depend on `Policy.layer`): it pauses
 * the read gate, then its core throws on the third tick. Its fiber runs through
 * `PolicySupervisor.supervised`, as the shell of `Policy.layer` is to.
 */
const failingPolicy = Layer.effectDiscard(Effect.gen(function*() {
  const bus = yield* SignalBus.SignalBus
  const knobs = yield* Knob.Knobs
  const signals = yield* bus.subscribe
  yield* knobs.propose("bad", { readGate: "paused" })
  let ticks = 0
  yield* Stream.fromSubscription(signals).pipe(
    Stream.runForEach((signal) =>
      Effect.sync(() => {
        if (signal._tag === "Tick" && ++ticks === 3) throw new Error("boom: step failed")
      })
    ),
    PolicySupervisor.supervised("bad"),
    Effect.forkScoped
  )
}))

describe("PolicySupervisor", () => {
  it.effect("a policy whose fiber dies ends the run with PolicyFailed naming it and the cause", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 1_000_000, recordBytes: 16, intervalMillis: 100 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink: Memory.sink(), config: { tick: 100 }, policies: failingPolicy }), {
        maxMillis: 60_000
      })
      expect(Exit.isFailure(exit)).toBe(true)
      const reason = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      const error = reason?._tag === "Fail" ? reason.error : undefined
      expect(error?._tag).toBe("PolicyFailed")
      if (error?._tag === "PolicyFailed") {
        expect(error.policy).toBe("bad")
        expect(error.message).toContain("boom: step failed")
      }
    }))

  it.effect("interruption is not a failure: a run that completes closes its policies without PolicyFailed", () =>
    Effect.gen(function*() {
      const calm = Layer.effectDiscard(Effect.gen(function*() {
        const bus = yield* SignalBus.SignalBus
        const signals = yield* bus.subscribe
        yield* Stream.fromSubscription(signals).pipe(Stream.runDrain, PolicySupervisor.supervised("calm"), Effect.forkScoped)
      }))
      const source = Memory.source({ name: "t", partitions: 2, records: 1_000, recordBytes: 16 })
      const exit = yield* runVirtual(Pipeline.run({ source, sink: Memory.sink(), policies: calm }))
      expect(Exit.isSuccess(exit)).toBe(true)
    }))

  it.effect("outside a pipeline the default supervisor logs, and `make` reports the first failure only", () =>
    Effect.gen(function*() {
      const supervisor = yield* PolicySupervisor.make
      yield* Effect.die(new Error("first")).pipe(
        PolicySupervisor.supervised("a"),
        Effect.provideService(PolicySupervisor.PolicySupervisor, supervisor)
      )
      yield* Effect.die(new Error("second")).pipe(
        PolicySupervisor.supervised("b"),
        Effect.provideService(PolicySupervisor.PolicySupervisor, supervisor)
      )
      const failed = yield* supervisor.failed
      expect(failed.policy).toBe("a")
      expect(failed.message).toContain("first")
      // The default reference only logs: this completes.
      yield* Effect.die(new Error("unsupervised")).pipe(PolicySupervisor.supervised("c"))
    }))
})
