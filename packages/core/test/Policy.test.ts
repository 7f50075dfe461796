import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema, Stream } from "effect"
import { Memory, Pipeline, Policy } from "../src/index.ts"
import type { SignalBus } from "../src/index.ts"
import { runVirtual } from "./support.ts"

/** Probes (pins concurrency at 1) from 200 ms to 400 ms of virtual time. */
const prober: Policy.Policy<{}, "steady" | "probing"> = {
  name: "prober",
  config: Schema.Struct({}),
  bounds: () => ({ concurrency: { floor: 1, ceiling: 4 } }),
  probe: () => ({ _tag: "RestoreProbe", afterMillis: 200 }),
  init: () => "steady",
  initial: () => ({ concurrency: 4 }),
  step: (mode, signal, now) => {
    if (signal._tag !== "Tick") return { state: mode }
    const next = now >= 200 && now < 400 ? "probing" : "steady"
    return next === mode ? { state: mode } : { state: next, proposal: { concurrency: next === "probing" ? 1 : 4 } }
  },
  mode: (mode) => mode
}

describe("Policy.layer", () => {
  it.effect("publishes a PolicyMode signal on every mode change", () =>
    Effect.gen(function*() {
      const source = Memory.source({ name: "t", partitions: 1, records: 3_000, recordBytes: 8, chunkRecords: 100, intervalMillis: 20 })
      const modes: Array<SignalBus.PolicyModeSignal> = []
      const exit = yield* runVirtual(Effect.scoped(Effect.gen(function*() {
        const handle = yield* Pipeline.start({ source, sink: Memory.sink(), policies: Policy.layer(prober, {}) })
        const subscription = yield* handle.bus.subscribe
        yield* Stream.fromSubscription(subscription).pipe(
          Stream.runForEach((s) => Effect.sync(() => s._tag === "PolicyMode" && void modes.push(s))),
          Effect.forkScoped
        )
        return yield* handle.await
      })))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(modes.map((m) => [m.policy, m.mode, m.at])).toEqual([["prober", "probing", 200], ["prober", "steady", 400]])
    }))
})
