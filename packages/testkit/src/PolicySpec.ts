/**
 * Policy specs: the `--policy` text of the CLI (`fixed:8`, `aimd+throttle+shared+batch`,
 * `./my-policy.js+throttle+shared`) turned into a policies layer.
 *
 * `fixed:N` (and `base`, the pipeline's configured knobs) are built in; N must
 * be a whole number ≥ 1 (`fixed:-3` fails with `N must be a whole number ≥ 1,
 * got -3`, also as a member of a `+` spec). Every
 * other spec is handed to `Composition.parse(spec)` of `@sluice/policies`, loaded
 * at run time so that the testkit does not depend on it. `parse` may return a
 * layer, or `{ layer, floors }` to let the runner check declared floors.
 *
 * **Policies from their own module.** A member of a `+` spec that is a path
 * (`./arc.js`, `../x/policy.mjs`, `/abs/policy.js`, `file:…`; relative to the
 * current directory) or a package name that is not a built-in policy
 * (`some-package`, `@scope/policy`; resolved from the current directory) is
 * imported, and its **default export** is used:
 *
 * - a policies `Layer` (e.g. `Policy.layer(myPolicy, config)`), or
 *   `{ layer, floors? }`;
 * - a core `Policy` (`{ name, config, init, initial, step, … }`), run with
 *   `Policy.layer(policy, config)` where `config` is the module's named export
 *   `config` (default `{}`), or `{ policy, config }`.
 *
 * Members are merged with `Layer.mergeAll`, so module policies compose with
 * built-ins (`./arc.js+throttle+shared`): each proposes, and the most
 * conservative proposal wins per knob. Module paths keep their case (built-in
 * names are case-insensitive).
 *
 * @since 0.1.0
 */
import { createRequire } from "node:module"
import { isAbsolute, join, resolve as resolvePath } from "node:path"
import { pathToFileURL } from "node:url"
import { Effect, Layer, Result, Schema } from "effect"
import { Fixed, Policy } from "@sluice/core"
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
  const members = trimmed.split("+").map((m) => m.trim())
  const badFixed = members.map((m) => checkFixed(spec, m, members.length > 1)).find((e) => e !== undefined)
  if (badFixed !== undefined) return Effect.fail(badFixed)
  if (!members.some(isModuleSpecifier)) {
    return Effect.catchTag(builtIn(spec, trimmed), "PolicySpecError", (error) =>
      !error.message.includes("unknown")
        ? Effect.fail(error)
        : members.length === 1
        // A single unknown name may be a package: try it before reporting.
        ? isPackageName(trimmed)
          ? Effect.mapError(fromModule(spec, trimmed), (e) => new PolicySpecError({ spec, message: `${error.message}; as a package: ${e.message}` }))
          : Effect.fail(error)
        : withPackages(spec, trimmed, members, error))
  }
  return Effect.gen(function*() {
    const resolved: Array<ResolvedPolicy> = []
    for (const member of members) {
      resolved.push(yield* (isModuleSpecifier(member) ? fromModule(spec, member) : builtIn(spec, member)))
    }
    return combine(trimmed, resolved)
  })
}

/** The members' policies merged (each proposes; the knobs' combiners decide) and their floors. */
const combine = (label: string, resolved: ReadonlyArray<ResolvedPolicy>): ResolvedPolicy => {
  const layers = resolved.flatMap((r) => (r.policies === undefined ? [] : [r.policies]))
  const [first, ...rest] = layers
  const floors = resolved.reduce<Floors | undefined>((acc, r) => mergeFloors(acc, r.floors), undefined)
  return { label, policies: first === undefined ? undefined : rest.length === 0 ? first : Layer.mergeAll(first, ...rest), floors }
}

/**
 * A composition with a name the built-ins do not know (`some-policy+throttle+shared`):
 * the members the built-ins know are composed together (as `Composition.parse`
 * composes them), every other one that can be a package name is imported as a
 * package; a member that is neither fails with the built-ins' message
 * (`unknown`) and the import's.
 */
const withPackages = (spec: string, label: string, members: ReadonlyArray<string>, unknown: PolicySpecError) =>
  Effect.gen(function*() {
    const known: Array<string> = []
    const packages: Array<{ readonly member: string; readonly notBuiltIn: string }> = []
    for (const member of members) {
      const alone = yield* Effect.result(builtIn(spec, member))
      if (Result.isSuccess(alone)) known.push(member)
      else if (isPackageName(member)) packages.push({ member, notBuiltIn: alone.failure.message })
      else return yield* unknown
    }
    const resolved: Array<ResolvedPolicy> = known.length === 0 ? [] : [yield* builtIn(spec, known.join("+"))]
    for (const { member, notBuiltIn } of packages) {
      resolved.push(yield* Effect.mapError(fromModule(spec, member), (e) =>
        new PolicySpecError({ spec, message: `${notBuiltIn.replace(`in "${member}"`, `in "${spec}"`)}; as a package: ${e.message}` })))
    }
    return combine(label, resolved)
  })

/**
 * `fixed:N` must carry a whole N ≥ 1: `fixed:-3`, `fixed:2.5` and `fixed:abc`
 * are refused here, naming the value, rather than reported as unknown policies.
 */
const checkFixed = (spec: string, member: string, inComposition: boolean): PolicySpecError | undefined => {
  const m = /^fixed:(.*)$/is.exec(member)
  if (m === null) return undefined
  const n = m[1] ?? ""
  if (/^\d+$/.test(n) && Number.isSafeInteger(Number(n)) && Number(n) >= 1) return undefined
  const got = /^\S+$/.test(n) ? n : JSON.stringify(n)
  return new PolicySpecError({ spec, message: `${inComposition ? `${member}: ` : ""}N must be a whole number ≥ 1, got ${got}` })
}

/** A member to import: a path (relative to the current directory) or a file URL. */
const isModuleSpecifier = (member: string): boolean =>
  /^(\.{1,2}\/|\/|file:)/.test(member) || /\.(m?js|cjs|ts)$/.test(member)

/** Could be an npm package name (a built-in name also could: those are tried first). */
const isPackageName = (member: string): boolean => /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w./-]+)?$/i.test(member)

const mergeFloors = (a: Floors | undefined, b: Floors | undefined): Floors | undefined =>
  a === undefined ? b : b === undefined ? a : {
    ...(a.concurrency !== undefined || b.concurrency !== undefined ? { concurrency: Math.max(a.concurrency ?? 1, b.concurrency ?? 1) } : {}),
    ...(a.batchBytes !== undefined || b.batchBytes !== undefined ? { batchBytes: Math.max(a.batchBytes ?? 1, b.batchBytes ?? 1) } : {})
  }

/** The URL to import for a member: a path from the current directory, or a package resolved from it. */
const moduleUrl = (member: string): string => {
  if (member.startsWith("file:")) return member
  if (/^(\.{1,2}\/|\/)/.test(member) || /\.(m?js|cjs|ts)$/.test(member)) {
    return pathToFileURL(isAbsolute(member) ? member : resolvePath(process.cwd(), member)).href
  }
  try {
    return pathToFileURL(createRequire(join(process.cwd(), "package.json")).resolve(member)).href
  } catch {
    return member // an ESM-only package without a "require" export: let import() resolve it
  }
}

const isPolicy = (u: unknown): u is Policy.Policy<unknown, unknown, unknown> =>
  isRecord(u) && typeof u["name"] === "string" && typeof u["init"] === "function" && typeof u["step"] === "function" &&
  typeof u["initial"] === "function" && Schema.isSchema(u["config"])

/** Imports a policy module and reads its default export (see the module doc). */
const fromModule = (spec: string, member: string): Effect.Effect<ResolvedPolicy, PolicySpecError> =>
  Effect.gen(function*() {
    const url = moduleUrl(member)
    const mod: unknown = yield* Effect.tryPromise({
      try: () => import(url) as Promise<unknown>,
      catch: (cause) =>
        new PolicySpecError({ spec, message: `could not import policy module "${member}": ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    const exported = isRecord(mod) ? mod["default"] : undefined
    if (Layer.isLayer(exported)) return { label: member, policies: exported as PoliciesLayer<unknown>, floors: undefined }
    if (isRecord(exported) && Layer.isLayer(exported["layer"])) {
      const floors = isRecord(exported["floors"]) ? (exported["floors"] as Floors) : undefined
      return { label: member, policies: exported["layer"] as PoliciesLayer<unknown>, floors }
    }
    if (isPolicy(exported)) {
      const config = isRecord(mod) ? mod["config"] : undefined
      return { label: member, policies: Policy.layer(exported, config), floors: undefined }
    }
    if (isRecord(exported) && isPolicy(exported["policy"])) {
      return { label: member, policies: Policy.layer(exported["policy"], exported["config"]), floors: undefined }
    }
    return yield* new PolicySpecError({
      spec,
      message: `"${member}": its default export must be a policies Layer, { layer, floors? }, a Policy, or { policy, config }`
    })
  })

/** `base`, `fixed:N`, or a composition of `@sluice/policies`' built-ins. */
const builtIn = (spec: string, trimmed: string): Effect.Effect<ResolvedPolicy, PolicySpecError> => {
  if (trimmed === "base") return Effect.succeed({ label: "base", policies: undefined, floors: undefined })
  const fixed = /^fixed:(\d+)$/.exec(trimmed)
  if (fixed !== null) {
    const concurrency = Number(fixed[1]) // checked by checkFixed: a whole number >= 1
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
    const parse = isRecord(composition) ? composition["parseResult"] ?? composition["parse"] : undefined
    if (typeof parse !== "function") {
      return yield* new PolicySpecError({ spec, message: "@sluice/policies does not export Composition.parse(spec)" })
    }
    const parsed: unknown = yield* Effect.try({
      try: () => (parse as (s: string) => unknown)(trimmed),
      catch: (cause) => new PolicySpecError({ spec, message: cause instanceof Error ? cause.message : String(cause) })
    })
    const messageOf = (e: unknown) => (isRecord(e) && typeof e["message"] === "string" ? e["message"] : String(e))
    const result: unknown = Result.isResult(parsed)
      ? Result.isSuccess(parsed) ? parsed.success : yield* new PolicySpecError({ spec, message: messageOf(parsed.failure) })
      : Effect.isEffect(parsed)
      ? yield* Effect.mapError(parsed as Effect.Effect<unknown, unknown>, (e) => new PolicySpecError({ spec, message: messageOf(e) }))
      : parsed
    if (Layer.isLayer(result)) return { label: trimmed, policies: result as PoliciesLayer<unknown>, floors: undefined }
    if (isRecord(result) && Layer.isLayer(result["layer"])) {
      const floors = isRecord(result["floors"]) ? (result["floors"] as Floors) : undefined
      return { label: trimmed, policies: result["layer"] as PoliciesLayer<unknown>, floors }
    }
    return yield* new PolicySpecError({ spec, message: "Composition.parse did not return a Layer" })
  })
}
