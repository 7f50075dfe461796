import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Fixed } from "@sluice/core"
import * as Cli from "../src/Cli.ts"
import * as Family from "../src/Family.ts"
import * as Oracle from "../src/Oracle.ts"
import * as Runner from "../src/Runner.ts"
import * as Scenario from "../src/Scenario.ts"
import * as Store from "../src/Store.ts"

type Raw = Record<string, unknown> & { readonly events: ReadonlyArray<{ readonly at: string; readonly store: Record<string, unknown> }> }
const gen = (kind: Family.Kind, count: number, seed: number) => Effect.runSync(Family.generate(kind, count, seed)) as unknown as ReadonlyArray<Raw>
const millis = (s: unknown) => Number(String(s).replace(" millis", ""))

describe("Family (scenario families)", () => {
  it("a seed fixes the family; another seed draws another one; every scenario decodes", () => {
    expect(gen("mixed", 6, 3)).toEqual(gen("mixed", 6, 3))
    expect(gen("mixed", 6, 3)).not.toEqual(gen("mixed", 6, 4))
    for (const raw of gen("mixed", 6, 3)) expect(Effect.runSync(Effect.result(Scenario.decode(raw)))._tag).toBe("Success")
  })

  it("each kind degrades the store as it says", () => {
    for (const s of gen("slower", 4, 1)) {
      const [down, up] = s.events
      expect(millis(down?.store["baseLatency"])).toBeGreaterThan(2.9 * millis((s["store"] as Record<string, unknown>)["baseLatency"]))
      // The last event restores the base store.
      const base = s["store"] as Record<string, unknown>
      expect([up?.store["baseLatency"], up?.store["bandwidthPerRequest"], up?.store["knee"]]).toEqual([base["baseLatency"], base["bandwidthPerRequest"], base["knee"]])
    }
    for (const s of gen("rate-limit", 4, 1)) expect(s.events.map((e) => e.store["rateLimit"] === null)).toEqual([false, true])
    // The store queues as drawn in every phase (both ways occur in 40 draws).
    const queues = gen("mixed", 40, 1).map((s) => [(s["store"] as Record<string, unknown>)["kneeQueue"], ...s.events.map((e) => e.store["kneeQueue"])])
    for (const q of queues) expect(new Set(q).size).toBe(1)
    expect(new Set(queues.map((q) => q[0]))).toEqual(new Set(["shared", "arrival"]))
    for (const s of gen("slower-throttle", 4, 1)) expect(Number(s.events[0]?.store["throttleAbove"])).toBeLessThanOrEqual(16)
    for (const s of gen("ramp", 4, 1)) {
      const steps = s.events.slice(0, 3).map((e) => millis(e.store["baseLatency"]))
      expect(steps[0]).toBeLessThan(steps[1] ?? 0)
      expect(steps[1]).toBeLessThan(steps[2] ?? 0)
    }
    for (const s of gen("flapping", 12, 1)) {
      const latencies = s.events.map((e) => millis(e.store["baseLatency"]))
      // Slow, normal, slow, … then normal at the end.
      for (let i = 1; i < latencies.length - 1; i++) expect(latencies[i] === latencies[i - 1]).toBe(false)
      // Each phase holds FLAP_UPLOADS uploads of the slow store (the largest objects the pipeline can seal there).
      const scenario = Effect.runSync(Scenario.decode(s))
      const slow = { ...Runner.storeParams(scenario.store), ...Runner.storeChange(scenario.events[0]?.store ?? {}) }
      const objectBytes = Math.min(scenario.pipeline.batch.bytes, Oracle.largestObjectBytes(Runner.oracleWorld(scenario), scenario.store.knee, Infinity, Infinity))
      // Every phase, the last one before the store is back included (it was cut
      // short at the degradation's end: 2 s of a store that took 3.7 s per upload).
      for (let i = 0; i + 1 < scenario.events.length; i++) {
        const period = (scenario.events[i + 1]?.at ?? 0) - (scenario.events[i]?.at ?? 0)
        expect(period, `${scenario.name}, phase ${i}`).toBeGreaterThanOrEqual(Family.FLAP_UPLOADS * Store.unloadedMillis(slow, objectBytes) - 1e-6)
      }
    }
  })

  it("every scenario kept has a degraded phase the oracle keeps up with: the simulator judges one (worstPhaseGoodput not null)", () =>
    Effect.gen(function*() {
      for (const kind of ["slower-throttle", "rate-limit", "knee-drop"] as const) {
        for (const raw of gen(kind, 2, 5)) {
          const scenario = yield* Scenario.decode(raw)
          const { summary } = yield* Runner.run(scenario, { policy: "fixed:8", policies: Fixed.layer({ concurrency: 8 }) })
          expect(summary.worstPhaseGoodput, `${scenario.name}`).not.toBeNull()
        }
      }
    }).pipe(Effect.runPromise), 120_000)

  it("the distribution: share of good worst phases, nearest-rank quantiles, the worst named", () => {
    const runs = [0.9, 0.5, 0.95, null, 0.85].map((w, i) => ({ scenario: `s${i}`, worstPhaseGoodput: w, maxLagSeconds: i * 10, throttleRate: i / 100 }))
    const d = Family.distribution("p", runs)
    expect(d).toMatchObject({ policy: "p", scenarios: 5, judged: 4, goodShare: 0.75, worstPhaseP10: 0.5, worstPhaseMedian: 0.85, maxLagP90: 40, maxLagMax: 40, throttleRateP90: 0.04 })
    expect(d.worst.map(([name]) => name)).toEqual(["s1", "s4", "s0", "s2"])
  })

  it("sluice-sim generate writes the family, family reports the distribution per policy; bad usage names the flag", async () => {
    const out = mkdtempSync(join(tmpdir(), "sluice-family-"))
    const lines: Array<string> = []
    const errors: Array<string> = []
    expect(await Cli.main(["generate", "--family", "slower", "--count", "3", "--seed", "9", "--out", out], (l) => lines.push(l), (l) => errors.push(l))).toBe(0)
    expect(readdirSync(out).sort()).toEqual(["slower-9-0.json", "slower-9-1.json", "slower-9-2.json"])
    lines.length = 0
    expect(await Cli.main(["family", out, "--policy", "fixed:8", "--json"], (l) => lines.push(l), (l) => errors.push(l))).toBe(0)
    const [d] = JSON.parse(lines.at(-1) ?? "[]") as Array<Family.Distribution>
    expect(d).toMatchObject({ policy: "fixed:8", scenarios: 3, judged: 3 })
    expect(errors.filter((l) => l.startsWith("[")).length).toBe(3)
    const bad = async (argv: ReadonlyArray<string>) => {
      const err: Array<string> = []
      return { code: await Cli.main(argv, () => undefined, (l) => err.push(l)), err: err.join("\n") }
    }
    expect(await bad(["generate", "--family", "slowr", "--count", "3", "--seed", "1", "--out", out])).toMatchObject({ code: 2, err: expect.stringContaining("did you mean slower?") })
    expect(await bad(["generate", "--family", "ramp", "--count", "0", "--seed", "1", "--out", out])).toMatchObject({ code: 2, err: expect.stringContaining("--count needs a whole number from 1 to 10000, got \"0\"") })
    expect(await bad(["generate", "--family", "ramp", "--count", "2", "--seed", "1"])).toMatchObject({ code: 2, err: expect.stringContaining("--out") })
  }, 120_000)
})
