/**
 * Policy supervision: a policy whose fiber dies must end the run, loudly.
 *
 * Each policy shell runs its core in a fiber of its own. If the core's `step`
 * throws, that fiber dies; without supervision its last proposal stays in force
 * (a paused read gate stays paused) and the run never ends. The pipeline
 * therefore provides a {@link PolicySupervisor} to the policies' layers; a
 * shell runs its fiber through {@link supervised}, which reports any failure
 * (not an interruption) to it, and the pipeline ends the run with
 * {@link PolicyFailed} naming the policy and the cause.
 *
 * Outside a pipeline (a policy layer built on its own), the default supervisor
 * logs the failure at error level, so nothing dies silently.
 *
 * @since 0.2.0
 */
import { Cause, Context, Deferred, Effect, Schema } from "effect"

/**
 * A policy's fiber died: the run ended because a policy can no longer steer
 * its knobs. `policy` names it; `message` is the cause, printed; `cause` is the
 * original error or defect.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Pipeline } from "@sluice/core"
 * declare const options: Pipeline.PipelineOptions
 *
 * const program = Pipeline.run(options).pipe(
 *   Effect.catchTag("PolicyFailed", (e) => Effect.logError(`policy ${e.policy} failed: ${e.message}`))
 * )
 * ```
 *
 * @since 0.2.0
 */
export class PolicyFailed extends Schema.TaggedError<PolicyFailed>()("PolicyFailed", {
  policy: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/**
 * What a supervisor offers: `report` a policy's failure, and `failed`, which
 * waits for the first one.
 *
 * **When to use**
 *
 * To supervise policies outside `Pipeline.start` (which builds its own): build
 * one with {@link make}, provide it as {@link PolicySupervisor}, watch `failed`.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { PolicySupervisor } from "@sluice/core"
 *
 * const watch = Effect.gen(function*() {
 *   const supervisor = yield* PolicySupervisor.make
 *   const failed = yield* supervisor.failed // waits for the first policy failure
 *   yield* Effect.logError(`${failed.policy}: ${failed.message}`)
 * })
 * ```
 *
 * @since 0.2.0
 */
export interface Supervisor {
  /** Records that `policy`'s fiber failed with `cause` (only the first report counts). */
  readonly report: (policy: string, cause: Cause.Cause<unknown>) => Effect.Effect<void>
  /** Completes with the first failure reported. */
  readonly failed: Effect.Effect<PolicyFailed>
}

/**
 * The supervisor in force, as a `Context.Reference`: a policy shell reads it
 * without adding a requirement to its layer's type. The pipeline provides its
 * own when it builds the policies; the default logs the failure at error level.
 *
 * **When to use**
 *
 * In a policy shell (`Policy.layer` or a hand-written layer), run the fiber
 * that steps the core through {@link supervised}; it reads this reference.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { PolicySupervisor } from "@sluice/core"
 *
 * const program = Effect.gen(function*() {
 *   const supervisor = yield* PolicySupervisor.make
 *   const failure = yield* Effect.forkChild(supervisor.failed)
 *   yield* Effect.die("boom").pipe(
 *     PolicySupervisor.supervised("my-policy"),
 *     Effect.provideService(PolicySupervisor.PolicySupervisor, supervisor)
 *   )
 * })
 * ```
 *
 * @since 0.2.0
 */
export const PolicySupervisor = Context.Reference<Supervisor>("@sluice/core/PolicySupervisor", {
  defaultValue: () => ({
    report: (policy, cause) => Effect.logError(`policy ${policy} failed; no pipeline supervises it`, cause),
    failed: Effect.never
  })
})

/**
 * Builds a supervisor backed by a `Deferred`: the first report completes
 * `failed`; later reports are ignored (the run is already ending).
 *
 * **Example**
 *
 * ```ts
 * import { Cause, Effect } from "effect"
 * import { PolicySupervisor } from "@sluice/core"
 *
 * const program = Effect.gen(function*() {
 *   const supervisor = yield* PolicySupervisor.make
 *   yield* supervisor.report("aimd", Cause.die(new Error("step threw")))
 *   return (yield* supervisor.failed).policy // "aimd"
 * })
 * ```
 *
 * @since 0.2.0
 */
export const make: Effect.Effect<Supervisor> = Effect.map(Deferred.make<PolicyFailed>(), (first) => ({
  report: (policy, cause) => Effect.asVoid(Deferred.succeed(first, policyFailed(policy, cause))),
  failed: Deferred.await(first)
}))

/**
 * Runs a policy's fiber under supervision: if it fails or dies (for any reason
 * but interruption), the failure is reported to the {@link PolicySupervisor}
 * in force, naming `policy`.
 *
 * **Details**
 *
 * Interruption (the pipeline closing its scope) is not a failure and is passed
 * on. A fiber that completes normally reports nothing.
 *
 * **Example**
 *
 * ```ts
 * import { Effect, Layer, Stream } from "effect"
 * import { PolicySupervisor, SignalBus } from "@sluice/core"
 *
 * // A hand-written policy shell whose fiber is supervised.
 * const watcher = Layer.effectDiscard(Effect.gen(function*() {
 *   const bus = yield* SignalBus.SignalBus
 *   const signals = yield* bus.subscribe
 *   yield* Stream.fromSubscription(signals).pipe(
 *     Stream.runForEach((signal) => Effect.sync(() => { if (signal._tag === "Failure") throw new Error("unexpected") })),
 *     PolicySupervisor.supervised("watcher"),
 *     Effect.forkScoped
 *   )
 * }))
 * ```
 *
 * @since 0.2.0
 */
export const supervised = (policy: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A | void, never, R> =>
  Effect.catchCause(self, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.interrupt
      : Effect.flatMap(PolicySupervisor, (supervisor) => supervisor.report(policy, cause)))

const policyFailed = (policy: string, cause: Cause.Cause<unknown>): PolicyFailed =>
  new PolicyFailed({
    policy,
    message: firstLine(Cause.pretty(cause)),
    cause: Cause.squash(cause)
  })

const firstLine = (text: string): string => {
  const line = text.split("\n").find((l) => l.trim().length > 0) ?? text
  return line.trim()
}
