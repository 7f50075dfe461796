// Debug: runs a scenario with DeliveryRate wrapped to print its state every `every` ms.
import { Effect, Layer } from "effect"
import { Policy } from "@sluice/core"
import { Runner, Scenario, PolicySpec } from "@sluice/testkit"
import { DeliveryRate } from "@sluice/policies"
import { bdp } from "../src/internal/deliveryrate/Bdp.ts"
import type { DeliveryRateState } from "../src/internal/deliveryrate/State.ts"
const [file, from = "0", to = "1e9", every = "1000", extra = ""] = process.argv.slice(2)
let next = Number(from) * 1000
let knobs = ""
const wrapped: Policy.Policy<DeliveryRate.DeliveryRateConfig, DeliveryRateState> = {
  ...DeliveryRate.policy,
  step: (s, signal, now) => {
    if (signal._tag === "Tick") knobs = `c=${signal.knobs.concurrency} rate=${signal.knobs.rate} gate=${signal.knobs.readGate} batch=${(signal.knobs.batchTarget.bytes / 1048576).toFixed(1)}`
    const r = DeliveryRate.policy.step(s, signal, now)
    const x = r.state
    if (now >= next && now <= Number(to) * 1000) {
      next = now + Number(every) * 1000
      const rate = Math.max(x.round.rate, ...x.rates)
      console.log(`${(now / 1000).toFixed(1)} ${x.mode} prop=${x.proposed} bdp=${bdp(x)?.toFixed(1)} rate=${(rate / 1e6).toFixed(0)}MB/s min=${x.minLatency.toFixed(1)} ref=${(x.reference.bytes / 1048576).toFixed(2)}MiB obj=${(x.objectBytes / 1048576).toFixed(1)} k=${x.bodilessPerObject.toFixed(2)} hi=${x.inflightHi.toFixed(1)} rounds=${x.rounds} last(n=${x.lastRound.samples} inf=${x.lastRound.inflight} min=${x.lastRound.minLatency.toFixed(1)} rate=${(x.lastRound.rate / 1e6).toFixed(0)} lim=${x.lastRound.limited}) probes=${x.probes} | ${knobs}`)
    }
    return r
  }
}
const program = Effect.gen(function*() {
  const scenario = yield* Scenario.load(file ?? "")
  const others = extra === "" ? undefined : (yield* PolicySpec.resolve(extra)).policies
  const layer = others === undefined ? Policy.layer(wrapped, {}) : Layer.merge(Policy.layer(wrapped, {}), others)
  const { summary } = yield* Runner.run(scenario, { policy: "debug", policies: layer })
  console.log(JSON.stringify({ goodput: summary.goodputRatio, worst: summary.worstPhaseGoodput, lag: summary.maxLagSeconds, phases: summary.phases }))
})
await Effect.runPromise(program)
