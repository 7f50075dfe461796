/**
 * Policy specs: the `--policy` text of the CLI (`fixed:8`, `aimd+throttle+shared+batch`)
 * turned into a policies layer.
 *
 * `fixed:N` (and `base`, the pipeline's configured knobs) are built in; every
 * other spec is handed to `Composition.parse(spec)` of `@sluice/policies`, loaded
 * at run time so that the testkit does not depend on it. `parse` may return a
 * layer, or `{ layer, floors }` to let the runner check declared floors.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Schema } from "effect"
import { Fixed } from "@sluice/core"
import type { Floors, PoliciesLayer } from "./Runner.ts"

/**
 * A spec could not be turned into policies.
 *
 * @since 0.1.0
 */
export class PolicySpecError extends Schema.TaggedError<PolicySpecError>()("PolicySpecError", {
  spec: Schema.String,
  message: Schema.String
}) {}

/**
 * A resolved spec.
 *
 * @since 0.1.0
 */
export interface ResolvedPolicy {
  readonly label: string
  readonly policies: PoliciesLayer<unknown> | undefined
  readonly floors: Floors | undefined
}

const isRecord = (u: unknown): u is { readonly [k: string]: unknown } => typeof u === "object" && u !== null

/**
 * Resolves a spec.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { PolicySpec } from "@sluice/testkit"
 *
 * const fixed8 = Effect.runPromise(PolicySpec.resolve("fixed:8")) // Fixed at concurrency 8, floor 8
 * ```
 *
 * @since 0.1.0
 */
export const resolve = (spec: string): Effect.Effect<ResolvedPolicy, PolicySpecError> => {
  const trimmed = spec.trim()
  if (trimmed === "base") return Effect.succeed({ label: "base", policies: undefined, floors: undefined })
  const fixed = /^fixed:(\d+)$/.exec(trimmed)
  if (fixed !== null) {
    const concurrency = Number(fixed[1])
    if (concurrency < 1) return Effect.fail(new PolicySpecError({ spec, message: "fixed:N needs N >= 1" }))
    return Effect.succeed({ label: trimmed, policies: Fixed.layer({ concurrency }), floors: { concurrency } })
  }
  return Effect.gen(function*() {
    // A non-literal specifier: tsc must not require @sluice/policies.
    const name = ["@sluice", "policies"].join("/")
    const mod: unknown = yield* Effect.tryPromise({
      try: () => import(name) as Promise<unknown>,
      catch: (cause) =>
        new PolicySpecError({
          spec,
          message: `"${trimmed}" is not built in (built in: fixed:N, base) and @sluice/policies could not be loaded: ${
            cause instanceof Error ? cause.message : String(cause)
          }`
        })
    })
    const composition = isRecord(mod) ? mod["Composition"] : undefined
    const parse = isRecord(composition) ? composition["parse"] : undefined
    if (typeof parse !== "function") {
      return yield* new PolicySpecError({ spec, message: "@sluice/policies does not export Composition.parse(spec)" })
    }
    const parsed: unknown = yield* Effect.try({
      try: () => (parse as (s: string) => unknown)(trimmed),
      catch: (cause) => new PolicySpecError({ spec, message: cause instanceof Error ? cause.message : String(cause) })
    })
    const result: unknown = Effect.isEffect(parsed)
      ? yield* Effect.mapError(parsed as Effect.Effect<unknown, unknown>, (e) =>
        new PolicySpecError({ spec, message: isRecord(e) && typeof e["message"] === "string" ? e["message"] : String(e) }))
      : parsed
    if (Layer.isLayer(result)) return { label: trimmed, policies: result as PoliciesLayer<unknown>, floors: undefined }
    if (isRecord(result) && Layer.isLayer(result["layer"])) {
      const floors = isRecord(result["floors"]) ? (result["floors"] as Floors) : undefined
      return { label: trimmed, policies: result["layer"] as PoliciesLayer<unknown>, floors }
    }
    return yield* new PolicySpecError({ spec, message: "Composition.parse did not return a Layer" })
  })
}
