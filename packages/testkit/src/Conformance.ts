/**
 * The conformance suite: `conformance(policy, config)` generates vitest tests
 * that any policy core must pass (see `Properties` for what each proves). Import
 * it from `@sluice/testkit/conformance` inside a test file.
 *
 * The recovery test is an ablation: the policy runs as declared and with its
 * probe disabled (its `withoutProbe`), and passes only if the probed run
 * recovers and the other does not.
 *
 * @since 0.1.0
 * @module @sluice/testkit/conformance
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { Config } from "@sluice/core"
import type { Policy } from "@sluice/core"
import { Effect } from "effect"
import * as LayerProperties from "./LayerProperties.ts"
import * as Properties from "./Properties.ts"

/**
 * Options of the suite.
 *
 * @since 0.1.0
 */
export interface ConformanceOptions {
  /** The world to drive in (default `Properties.standardWorld`). */
  readonly world?: Properties.World
  /** Properties expected to fail (e.g. `Fixed` fails backoff and recovery by design). */
  readonly expectFailure?: ReadonlyArray<string>
}

/**
 * The longest config text in a `describe` name: enough for a few settings
 * (`{"floor":2,"ceiling":48,"initial":4}` is 36), short enough that the
 * reporter's line stays readable; longer configs end with `…`.
 */
const DESCRIBE_CONFIG_CHARS = 60

/** The config as a `describe` name shows it: its JSON, shortened. */
const configLabel = (input: unknown): string => {
  const json = JSON.stringify(input ?? {}) ?? String(input)
  return json.length <= DESCRIBE_CONFIG_CHARS ? json : `${json.slice(0, DESCRIBE_CONFIG_CHARS - 1)}…`
}

/**
 * Generates a `describe` block with one test per property.
 *
 * **When to use**: in a test file of a policy, once per config to prove.
 *
 * **Details**: `input` is what a user of the policy would write: the encoded
 * side of its config schema (`Config.Input` of it, as the policies' `layer`
 * takes), so a misspelled key fails `tsc`; it is decoded with the schema, and
 * "config decodes" fails, naming the field, if it is refused. A policy typed
 * without its input (`Policy<C, S>`) takes any value, checked at run time
 * only. The block is named by the policy and the config (`conformance: arc
 * {"floor":2,"ceiling":48,"initial":4}`), so two configs of one policy are
 * told apart. A failing property's message carries its numbers (the knob's
 * values and times, see `Properties`).
 *
 * **Example** (a test file of a third-party policy)
 *
 * ```ts
 * import { conformance } from "@sluice/testkit/conformance"
 * import { Aimd } from "@sluice/policies" // your policy's module instead
 *
 * conformance(Aimd.policy, { floor: 1, ceiling: 64 })
 * ```
 *
 * @since 0.1.0
 */
export const conformance = <C, S, I>(
  policy: Policy.Policy<C, S, I>,
  input?: NoInfer<I>,
  options: ConformanceOptions = {}
): void => {
  const world = options.world ?? Properties.standardWorld
  const expectFailure = new Set(options.expectFailure ?? [])
  describe(`conformance: ${policy.name} ${configLabel(input)}`, () => {
    const raw: unknown = input ?? {}
    const decoded = Config.decodeResult(policy.name, policy.config, raw)
    it("config decodes", () => {
      expect(Result.isSuccess(decoded) ? "ok" : decoded.failure.message).toBe("ok")
    })
    if (Result.isFailure(decoded)) return
    const config = decoded.success
    const properties: ReadonlyArray<readonly [string, () => Properties.Verdict]> = [
      ["never below floor, never above ceiling", () => Properties.withinBounds(policy, config, world)],
      ["backs off under sustained overload", () => Properties.backsOffUnderOverload(policy, config, world)],
      ["recovers through its probe after the overload clears, and not without it", () => Properties.recoversAfterOverload(policy, config, world)],
      ["is deterministic for a seed", () => Properties.deterministic(policy, config, world)],
      ["proposes no NaN or Infinity", () => Properties.finiteProposals(policy, config, world)]
    ]
    for (const [title, check] of properties) {
      it(title, () => {
        const verdict = check()
        if (expectFailure.has(verdict.property)) {
          expect(verdict.pass, `${verdict.property} was expected to fail: ${verdict.detail}`).toBe(false)
        } else {
          expect(verdict.pass, `${verdict.property}: ${verdict.detail}`).toBe(true)
        }
      })
    }
  })
}

/**
 * The suite for a policy shipped only as a layer: it runs in the simulated
 * pipeline through `LayerProperties.standardScenario` (twice, for determinism),
 * and each property is checked on the trace against the stated `bounds`.
 *
 * **Details**
 *
 * Pass a builder `(options) => layer` rather than a layer to make the recovery
 * test an ablation: the builder is also called with `{ probe: false }`, and
 * only the run with the probe may recover. Given a plain layer, recovery is
 * checked on the probed run alone (and its detail says it was not ablated).
 *
 * **Example**
 *
 * ```ts
 * import { conformanceLayer } from "@sluice/testkit/conformance"
 * import { Aimd } from "@sluice/policies"
 *
 * conformanceLayer("aimd", (options) => Aimd.layer({ ceiling: 64 }, options), { floor: 1, ceiling: 64 })
 * ```
 *
 * @since 0.1.0
 */
export const conformanceLayer = <E>(
  name: string,
  policies: LayerProperties.PoliciesLayer<E> | LayerProperties.LayerBuilder<E>,
  bounds: LayerProperties.LayerBounds,
  options: Pick<ConformanceOptions, "expectFailure"> = {}
): void => {
  const expectFailure = new Set(options.expectFailure ?? [])
  describe(`conformance (layer): ${name}`, () => {
    let verdicts: Promise<Array<Properties.Verdict>> | undefined
    const all = () => (verdicts ??= Effect.runPromise(LayerProperties.verdicts(policies, bounds)))
    for (const property of ["withinBounds", "backsOffUnderOverload", "recoversAfterOverload", "deterministic", "finiteProposals"]) {
      it(property, async () => {
        const verdict = (await all()).find((v) => v.property === property)
        expect(verdict, `no verdict for ${property}`).toBeDefined()
        if (verdict === undefined) return
        if (expectFailure.has(property)) {
          expect(verdict.pass, `${property} was expected to fail: ${verdict.detail}`).toBe(false)
        } else {
          expect(verdict.pass, `${property}: ${verdict.detail}`).toBe(true)
        }
      }, 60_000)
    }
  })
}
