import { Effect, Fiber, Stream } from "effect"
import type { Exit } from "effect"
import { TestClock } from "effect/testing"
import { Failure } from "../src/index.ts"
import type { Memory, Replicated, Source } from "../src/index.ts"

const noSuchKey = () =>
  new Failure.SinkFailure({ failureClass: "Fatal", code: "NoSuchKey", status: undefined, stage: "object_upload", retryAfterMillis: undefined, message: "NoSuchKey" })

/** A memory sink as a named replica that can be read back (the source of a repair). */
export const readableReplica = (name: string, sink: Memory.MemorySink): Replicated.Replica => ({
  ...sink,
  name,
  readObject: (key) =>
    Effect.suspend(() => {
      const object = sink.objects.get(key)
      return object === undefined ? Effect.fail(noSuchKey()) : Effect.succeed(object.body)
    }),
  readManifest: (key) =>
    Effect.suspend(() => {
      const manifest = sink.manifests.get(key)
      return manifest === undefined ? Effect.fail(noSuchKey()) : Effect.succeed(manifest)
    })
})

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

/** A source over a fixed list of events, recording commits. */
export const listSource = (events: ReadonlyArray<Source.SourceEvent>) => {
  const committed = new Map<number, number>()
  const source: Source.Source = {
    name: "s",
    events: Stream.fromIterable(events),
    commit: (p, o) => Effect.sync(() => void committed.set(p, o)),
    pause: Effect.void,
    resume: Effect.void,
    lag: Effect.succeed(new Map())
  }
  return { source, committed }
}

/**
 * `bytes` of deterministic content in shared memory, different for each
 * `seed` (the top byte of a multiplicative hash of the position).
 */
export const sharedBytes = (bytes: number, seed: number): Uint8Array => {
  const out = new Uint8Array(new SharedArrayBuffer(bytes))
  for (let i = 0; i < bytes; i++) out[i] = Math.imul(i + seed, 0x9e3779b1) >>> 24
  return out
}
