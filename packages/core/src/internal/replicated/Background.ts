/**
 * Replications running in the background (after their batch reached quorum, or
 * a repair), forked in the sink's scope and counted from the moment they are
 * forked, so "nothing runs any more" is never seen in a gap.
 *
 * @internal
 */
import { Effect } from "effect"
import type { Fiber, Scope } from "effect"

/** The background work of one replicated sink. */
export class Background {
  private inflight = 0
  private readonly idle: Array<() => void> = []

  private readonly scope: Scope.Scope

  constructor(scope: Scope.Scope) {
    this.scope = scope
  }

  /** Replications running now. */
  get running(): number {
    return this.inflight
  }

  /** Forks `effect` in the sink's scope (closing the scope interrupts it). */
  fork<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Fiber.Fiber<A, E>> {
    return Effect.suspend(() => {
      this.inflight++
      return Effect.forkIn(
        effect.pipe(Effect.ensuring(Effect.sync(() => {
          this.inflight--
          if (this.inflight === 0) for (const wake of this.idle.splice(0)) wake()
        }))),
        this.scope
      )
    })
  }

  /** Completes when nothing runs in the background. */
  readonly whenIdle: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.inflight === 0) resume(Effect.void)
    else this.idle.push(() => resume(Effect.void))
  })
}
