/**
 * Property test of the pipeline's invariants over random sequences of upload /
 * verify successes, failures, throttles, corruptions and restarts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { Batch, Failure, Fixed, Memory, Pipeline } from "../src/index.ts"

type Outcome = "ok" | "throttle" | "transient" | "corrupt"

const failure = (failureClass: Failure.FailureClass, stage: Failure.Stage) =>
  new Failure.SinkFailure({ failureClass, code: failureClass, status: 503, stage, retryAfterMillis: undefined, message: "injected" })

const Plan = fc.record({
  partitions: fc.integer({ min: 1, max: 3 }),
  records: fc.integer({ min: 1, max: 400 }),
  batchRecords: fc.integer({ min: 1, max: 60 }),
  chunkRecords: fc.integer({ min: 1, max: 80 }),
  concurrency: fc.integer({ min: 1, max: 4 }),
  outcomes: fc.array(fc.constantFrom<Outcome>("ok", "ok", "ok", "throttle", "transient", "corrupt"), { minLength: 1, maxLength: 40 }),
  stages: fc.array(fc.constantFrom("putObject", "putManifest", "verify"), { minLength: 1, maxLength: 40 }),
  /** Interrupt the run after this many virtual ms (a crash), then restart from the committed offsets. */
  crashes: fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 3 })
})

describe("pipeline invariants (property)", () => {
  it("nothing committed before verified; commits contiguous; every record committed exactly once; in-flight ≤ gate", async () => {
    await fc.assert(
      fc.asyncProperty(Plan, async (plan) => {
        let request = 0
        const verified = new Set<string>()
        /** Every [first, last] range verified, per partition. */
        const verifiedRanges = new Map<number, Array<[number, number]>>()
        const commits: Array<{ partition: number; nextOffset: number }> = []
        let committed = new Map<number, number>()
        const violations: Array<string> = []
        let maxUploading = 0

        const runOnce = (crashAfter: number | undefined) =>
          Effect.gen(function*() {
            const source = Memory.source({
              name: "p",
              partitions: plan.partitions,
              records: plan.records,
              recordBytes: 8,
              chunkRecords: plan.chunkRecords,
              startOffsets: committed,
              intervalMillis: 1
            })
            const memory = Memory.sink({
              latencyMillis: () => 3,
              fault: (op) => {
                const stage = plan.stages[request % plan.stages.length]
                const outcome = plan.outcomes[request++ % plan.outcomes.length]
                if (stage !== op) return undefined
                if (outcome === "throttle") return failure("Throttled", "object_upload")
                if (outcome === "transient") return failure("Transient", "object_upload")
                if (outcome === "corrupt" && op === "putObject") return "corrupt"
                return undefined
              }
            })
            // Wrap the sink to observe verification; wrap the source to check every commit.
            const sink = {
              ...memory,
              verify: (receipt: Parameters<typeof memory.verify>[0]) =>
                memory.verify(receipt).pipe(Effect.tap(() =>
                  Effect.sync(() => {
                    verified.add(receipt.key)
                    const m = /p=(\d+)\/(\d+)-(\d+)\.rec$/.exec(receipt.key)
                    if (m !== null) {
                      const p = Number(m[1])
                      const list = verifiedRanges.get(p) ?? []
                      list.push([Number(m[2]), Number(m[3])])
                      verifiedRanges.set(p, list)
                    }
                  })
                ))
            }
            const checkedSource = {
              ...source,
              commit: (partition: number, nextOffset: number) =>
                Effect.sync(() => {
                  // Every offset below nextOffset must be covered by verified ranges.
                  const ranges = [...(verifiedRanges.get(partition) ?? [])].sort((a, b) => a[0] - b[0])
                  let covered = 0
                  for (const [first, last] of ranges) if (first <= covered && last + 1 > covered) covered = last + 1
                  if (covered < nextOffset) violations.push(`commit ${partition}@${nextOffset} but verified only to ${covered}`)
                  const previous = committed.get(partition) ?? 0
                  if (nextOffset <= previous) violations.push(`commit ${partition}@${nextOffset} not above ${previous}`)
                  commits.push({ partition, nextOffset })
                }).pipe(Effect.andThen(source.commit(partition, nextOffset)))
            }
            const exit = yield* Effect.scoped(Effect.gen(function*() {
              const handle = yield* Pipeline.start({
                source: checkedSource,
                sink,
                config: { batch: { records: plan.batchRecords }, concurrency: plan.concurrency },
                policies: Fixed.layer({ concurrency: plan.concurrency })
              })
              const fiber = yield* Effect.forkChild(handle.await)
              for (let t = 0; t < 100_000; t++) {
                maxUploading = Math.max(maxUploading, handle.stats().uploading)
                if (handle.stats().uploading > plan.concurrency) violations.push("in-flight above gate")
                const done = fiber.pollUnsafe()
                if (done !== undefined) return done
                if (crashAfter !== undefined && t >= crashAfter) return undefined
                yield* TestClock.adjust(1)
              }
              return undefined
            }))
            committed = new Map(source.committed.size > 0 ? [...committed, ...source.committed] : committed)
            return { exit, memory }
          })

        const program = Effect.gen(function*() {
          const sinks: Array<Memory.MemorySink> = []
          for (const crash of plan.crashes) {
            const { memory } = yield* runOnce(crash)
            sinks.push(memory)
          }
          // The last run has no crash and must complete.
          for (let attempt = 0; attempt < 3; attempt++) {
            const { exit, memory } = yield* runOnce(undefined)
            sinks.push(memory)
            if (exit !== undefined && Exit.isSuccess(exit)) break
            // A corruption fails the run (fatal): restart, as an operator would.
          }
          return sinks
        }).pipe(Effect.provide(TestClock.layer()))

        const sinks = await Effect.runPromise(Effect.scoped(program))
        expect(violations).toEqual([])
        // Commits per partition strictly increase across runs: each record committed once.
        for (let p = 0; p < plan.partitions; p++) {
          const offsets = commits.filter((c) => c.partition === p).map((c) => c.nextOffset)
          for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBeGreaterThan(offsets[i - 1] ?? -1)
        }
        // Every record is either committed (and then in storage) or still pending.
        const stored = new Set<string>()
        const decoder = new TextDecoder()
        for (const sink of sinks) {
          for (const [key, { body }] of sink.objects) {
            if (!verified.has(key)) continue
            for (const payload of Batch.decodeBody(body)) stored.add(decoder.decode(payload).replace(/\.+$/, ""))
          }
        }
        for (let p = 0; p < plan.partitions; p++) {
          const upTo = committed.get(p) ?? 0
          for (let o = 0; o < upTo; o++) expect(stored.has(`p/${p}/${o}`)).toBe(true)
        }
        expect(maxUploading).toBeLessThanOrEqual(plan.concurrency)
      }),
      { numRuns: 60, seed: 42 }
    )
  }, 120_000)
})
