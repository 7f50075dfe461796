import { Effect, Fiber } from "effect"
import type { Exit } from "effect"
import { TestClock } from "effect/testing"

/**
 * Runs `effect` under the TestClock in the current test, advancing virtual time
 * by `stepMillis` until it completes (at most `maxMillis` of virtual time).
 */
export const runVirtual = <A, E>(
  effect: Effect.Effect<A, E>,
  options: { readonly stepMillis?: number; readonly maxMillis?: number } = {}
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.gen(function*() {
    const step = options.stepMillis ?? 10
    const max = options.maxMillis ?? 600_000
    const fiber = yield* Effect.forkChild(effect)
    for (let t = 0; t <= max; t += step) {
      const exit = fiber.pollUnsafe()
      if (exit !== undefined) return exit
      yield* TestClock.adjust(step)
    }
    yield* Fiber.interrupt(fiber)
    return yield* Effect.die(new Error(`did not complete within ${max} virtual ms`))
  })
