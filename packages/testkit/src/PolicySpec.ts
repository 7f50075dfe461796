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
 * **Checked before anything runs.** A module must see the same `effect` as the
 * testkit: a module that resolves another copy (after `npm install ../my-policy`,
 * say) fails with {@link DuplicateEffect} naming both, before it is imported. A
 * core `Policy`'s config is decoded with its schema when the spec is resolved,
 * and its floors (`Policy.bounds(config)`: `concurrency`, `batchTarget`) are
 * the ones the runner counts `floorViolations` against. Finally the spec's
 * layer is built once, on a bus and knobs of its own, and released: a layer
 * that cannot be built (bad config inside a `Policy.layer` export) fails here,
 * not when its run starts.
 *
 * @since 0.1.0
 */
import { readFileSync, realpathSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Cause, Effect, Layer, Result, Schema } from "effect"
import { Config, Fixed, Knob, Policy, SignalBus } from "@sluice/core"
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
 * A policy module resolves a different copy of `effect` than the testkit's
 * own (e.g. after `npm install ../my-policy`, which gives the policy its own
 * `node_modules/effect`). Its schemas and layers would then be values of the
 * other copy, which this one cannot run; the message names both copies (their
 * directories and versions) and how to dedupe them.
 *
 * @since 0.2.0
 */
export class DuplicateEffect extends Schema.TaggedError<DuplicateEffect>()("DuplicateEffect", {
  spec: Schema.String,
  /** The testkit's `effect`: its directory and version. */
  ours: Schema.String,
  /** The policy module's `effect`: its directory and version. */
  theirs: Schema.String,
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
export const resolve = (spec: string): Effect.Effect<ResolvedPolicy, PolicySpecError | DuplicateEffect> =>
  Effect.flatMap(resolveMembers(spec), (resolved) => checkBuilds(spec, resolved))

const resolveMembers = (spec: string): Effect.Effect<ResolvedPolicy, PolicySpecError | DuplicateEffect> => {
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
          ? Effect.catchTag(fromModule(spec, trimmed), "PolicySpecError", (e) =>
            Effect.fail(new PolicySpecError({ spec, message: `${error.message}; as a package: ${e.message}` })))
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
      resolved.push(yield* Effect.catchTag(fromModule(spec, member), "PolicySpecError", (e) =>
        Effect.fail(
          new PolicySpecError({ spec, message: `${notBuiltIn.replace(`in "${member}"`, `in "${spec}"`)}; as a package: ${e.message}` })
        )))
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

/**
 * The floors of two members composed: per knob the lower of the declared ones.
 * The knobs' combiners take the minimum of the proposals (core `Knob`), so a
 * composition holds only its lowest member's floor; the higher one would count
 * every sample where a lower-floored member rightly cut below it. A member that
 * declares no floor for a knob does not lower it.
 */
const mergeFloors = (a: Floors | undefined, b: Floors | undefined): Floors | undefined => {
  if (a === undefined) return b
  if (b === undefined) return a
  const lower = (x: number | undefined, y: number | undefined) => (x === undefined ? y : y === undefined ? x : Math.min(x, y))
  const concurrency = lower(a.concurrency, b.concurrency)
  const batchBytes = lower(a.batchBytes, b.batchBytes)
  return { ...(concurrency === undefined ? {} : { concurrency }), ...(batchBytes === undefined ? {} : { batchBytes }) }
}

/**
 * The knobs the build check starts from. Any values do: the check only builds
 * the policies' layer (decoding their config, taking their subscriptions) and
 * releases it; no signal is published, so no policy steps.
 */
const BUILD_CHECK_KNOBS: Knob.KnobValues = {
  concurrency: 1,
  batchTarget: { records: 1, bytes: 1, maxAgeMillis: 1 },
  readGate: "open",
  rate: null
}

const messageOf = (e: unknown): string => (isRecord(e) && typeof e["message"] === "string" ? e["message"] : String(e))

/**
 * Builds the spec's layer once, on a bus and knobs of its own, and releases
 * it: a layer that fails to build (bad config) fails the spec now, before any
 * run starts. A `ConfigError` keeps its message (it names the policy and the
 * field); any other failure is reported as the layer's.
 */
const checkBuilds = (spec: string, resolved: ResolvedPolicy): Effect.Effect<ResolvedPolicy, PolicySpecError> => {
  const policies = resolved.policies
  if (policies === undefined) return Effect.succeed(resolved)
  return Effect.scoped(Effect.gen(function*() {
    const bus = yield* SignalBus.make
    const knobs = yield* Knob.make(BUILD_CHECK_KNOBS)
    yield* Layer.build(policies).pipe(
      Effect.provideService(SignalBus.SignalBus, bus),
      Effect.provideService(Knob.Knobs, knobs)
    )
  })).pipe(
    Effect.catchCause((cause) => {
      const error = Cause.squash(cause)
      return Effect.fail(
        new PolicySpecError({
          spec,
          message: error instanceof Config.ConfigError ? error.message : `its layer failed to build: ${messageOf(error)}`
        })
      )
    }),
    Effect.as(resolved)
  )
}

/** The directory and version of the `effect` package that `from` (a file) resolves; `undefined` when it resolves none. */
const effectCopy = (from: string): { readonly dir: string; readonly version: string } | undefined => {
  try {
    const pkg = realpathSync(createRequire(from).resolve("effect/package.json"))
    const parsed: unknown = JSON.parse(readFileSync(pkg, "utf8"))
    const version = isRecord(parsed) && typeof parsed["version"] === "string" ? parsed["version"] : "unknown version"
    return { dir: dirname(pkg), version }
  } catch {
    return undefined
  }
}

/**
 * Fails with {@link DuplicateEffect} when the module at `url` resolves another
 * copy of `effect` than this module does. Compared by real path: a linked
 * (symlinked) copy of the same directory is the same module instance to Node,
 * so it passes. A module that resolves no `effect` (it does not import it), or
 * that is no file, is not checked.
 */
const checkOneEffect = (spec: string, url: string): Effect.Effect<void, DuplicateEffect> => {
  if (!url.startsWith("file:")) return Effect.void
  const ours = effectCopy(fileURLToPath(import.meta.url))
  const theirs = effectCopy(fileURLToPath(url))
  if (ours === undefined || theirs === undefined || ours.dir === theirs.dir) return Effect.void
  const a = `${ours.dir} (${ours.version})`
  const b = `${theirs.dir} (${theirs.version})`
  return Effect.fail(
    new DuplicateEffect({
      spec,
      ours: a,
      theirs: b,
      message: `two copies of effect: ${a} and ${b} — dedupe (npm dedupe, or make effect a peer dependency of the policy)`
    })
  )
}

/**
 * The floors a core policy declares for `config` (`Policy.bounds`): the
 * `concurrency` floor, and the `batchTarget` floor as `batchBytes`.
 */
const declaredFloors = (policy: Policy.Policy<unknown, unknown, unknown>, config: unknown): Floors | undefined => {
  const bounds = policy.bounds(config)
  const concurrency = bounds.concurrency?.floor
  const batchBytes = bounds.batchTarget?.floor
  if (concurrency === undefined && batchBytes === undefined) return undefined
  return { ...(concurrency !== undefined ? { concurrency } : {}), ...(batchBytes !== undefined ? { batchBytes } : {}) }
}

/**
 * A core policy with its config input: the input decoded with the policy's
 * schema now (bad config fails the spec before anything runs), its declared
 * floors read from the decoded config, and the layer built from the input.
 */
const fromPolicy = (
  spec: string,
  member: string,
  policy: Policy.Policy<unknown, unknown, unknown>,
  input: unknown
): Effect.Effect<ResolvedPolicy, PolicySpecError> => {
  const decoded = Config.decodeResult(policy.name, policy.config, input ?? {})
  if (Result.isFailure(decoded)) return Effect.fail(new PolicySpecError({ spec, message: decoded.failure.message }))
  return Effect.succeed({ label: member, policies: Policy.layer(policy, input), floors: declaredFloors(policy, decoded.success) })
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
const fromModule = (spec: string, member: string): Effect.Effect<ResolvedPolicy, PolicySpecError | DuplicateEffect> =>
  Effect.gen(function*() {
    const url = moduleUrl(member)
    yield* checkOneEffect(spec, url)
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
    if (isPolicy(exported)) return yield* fromPolicy(spec, member, exported, isRecord(mod) ? mod["config"] : undefined)
    if (isRecord(exported) && isPolicy(exported["policy"])) {
      return yield* fromPolicy(spec, member, exported["policy"], exported["config"])
    }
    return yield* new PolicySpecError({
      spec,
      message: `"${member}": its default export must be a policies Layer, { layer, floors? }, a Policy, or { policy, config }`
    })
  })

/**
 * The floors `@sluice/policies` declares for a composition of its built-ins
 * (`Composition.floorsResult`: each member's `Policy.bounds`, the lowest per
 * knob), or `undefined` when it does not say (an older version).
 */
const builtInFloors = (composition: unknown, spec: string): Floors | undefined => {
  const floorsResult = isRecord(composition) ? composition["floorsResult"] : undefined
  if (typeof floorsResult !== "function") return undefined
  const floors: unknown = (floorsResult as (s: string) => unknown)(spec)
  if (!Result.isResult(floors) || Result.isFailure(floors) || !isRecord(floors.success)) return undefined
  const { concurrency, batchBytes } = floors.success
  return {
    ...(typeof concurrency === "number" ? { concurrency } : {}),
    ...(typeof batchBytes === "number" ? { batchBytes } : {})
  }
}

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
    const result: unknown = Result.isResult(parsed)
      ? Result.isSuccess(parsed) ? parsed.success : yield* new PolicySpecError({ spec, message: messageOf(parsed.failure) })
      : Effect.isEffect(parsed)
      ? yield* Effect.mapError(parsed as Effect.Effect<unknown, unknown>, (e) => new PolicySpecError({ spec, message: messageOf(e) }))
      : parsed
    if (Layer.isLayer(result)) return { label: trimmed, policies: result as PoliciesLayer<unknown>, floors: builtInFloors(composition, trimmed) }
    if (isRecord(result) && Layer.isLayer(result["layer"])) {
      const floors = isRecord(result["floors"]) ? (result["floors"] as Floors) : builtInFloors(composition, trimmed)
      return { label: trimmed, policies: result["layer"] as PoliciesLayer<unknown>, floors }
    }
    return yield* new PolicySpecError({ spec, message: "Composition.parse did not return a Layer" })
  })
}
