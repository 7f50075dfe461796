/**
 * Tuning aid: runs scenario files with `deliveryrate` (config as JSON) plus
 * the other default members, on tuning seeds only (≤ 16), and prints the
 * headline metrics. `npx node packages/policies/bench/variant.ts '{"throttleBeta":0.85}' 1,2,3 files…`
 */
import { Effect, Layer } from "effect"
import { Runner, Scenario } from "@sluice/testkit"
import { AdaptiveBatch, DeliveryRate, SharedPressure, Throttle } from "@sluice/policies"
const [json = "{}", seedList = "tuned", ...files] = process.argv.slice(2)
const input: unknown = JSON.parse(json)
const members = process.env["MEMBERS"] ?? "throttle+shared+batch"
for (const file of files) {
  for (const seedText of seedList.split(",")) {
    const line = await Effect.runPromise(Effect.gen(function*() {
      const loaded = yield* Scenario.load(file)
      const seed = seedText === "tuned" ? loaded.seed : Number(seedText)
      if (seed > 16) return `refused: seed ${seed} is held out`
      const layers = [DeliveryRate.layer(input)]
      if (members.includes("throttle")) layers.push(Throttle.layer())
      if (members.includes("shared")) layers.push(SharedPressure.layer())
      if (members.includes("batch")) layers.push(AdaptiveBatch.layer())
      const [first, ...rest] = layers
      const { summary: s } = yield* Runner.run({ ...loaded, seed }, { policy: "variant", policies: rest.length === 0 || first === undefined ? first : Layer.mergeAll(first, ...rest) })
      return `${loaded.name}@${seed} goodput ${s.goodputRatio} worst ${s.worstPhaseGoodput} lag ${s.maxLagSeconds} thr ${s.throttleRate} rec ${s.recoverySeconds} fair ${s.fairness}`
    }))
    console.log(line)
  }
}
