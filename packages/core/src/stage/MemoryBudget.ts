/**
 * The memory budget: how many bytes the pipeline holds, charged per chunk as it
 * is admitted and released per batch as it is verified (or dropped).
 *
 * **What a chunk costs** ({@link chargeOf}): its payload bytes plus, for chunks
 * that carry real payloads, a measured per-record overhead
 * ({@link RECORD_OVERHEAD_BYTES}) — the heap cost of one `Uint8Array` and its
 * slot in the chunk's array — and 8 bytes per record when the chunk lists its
 * offsets. A zero-byte record (a Kafka tombstone) therefore still costs budget.
 * A framed chunk (`RecordChunk.framed`, as the Kafka source delivers) holds one
 * buffer and no per-record object: it costs its framed bytes, each record's
 * payload and 4-byte length. Size-only (simulated) chunks hold no per-record
 * objects and cost their payload bytes.
 *
 * **How it is measured** (`node --expose-gc`, Node 24.21, x64): allocate one
 * million payloads into an array, `gc()` twice before and after, divide the
 * `heapUsed` delta by a million.
 *
 * | record | heap per record |
 * |---|---|
 * | `new Uint8Array(0)` (tombstone) | 208 B |
 * | `TextEncoder.encode` of 150 B (payload in its own buffer) | 207 B (+150 B array buffer) |
 * | `subarray` / `Buffer.subarray` view of a shared buffer | 112 B (+ payload) |
 *
 * The constant is the larger figure: a budget that over-counts a view by 96 B
 * is still a bound; one that under-counts a tombstone by 96 B is not.
 *
 * **The bound** ({@link MemoryBudget.fits}): a chunk (or a piece of one) is
 * admitted when the bytes held plus its charge plus a *reserve* — the largest
 * chunk the source delivered so far, at most half the budget — stay within
 * the limit, or when nothing is held at all (so a single record larger than
 * the budget still makes progress). The reserve is what lets the reader look
 * one event ahead for a revoke while a chunk waits: admitted (≤ limit −
 * reserve) + the chunk being admitted (≤ reserve) + the one pulled ahead stays
 * within the budget plus one chunk. The price: one chunk of the budget is kept
 * for that look-ahead (a chunk is normally a small fraction of the budget;
 * with chunks above half the budget the bound loosens by their excess).
 *
 * @since 0.2.0
 */
import { Effect } from "effect"
import type { SealedBatch } from "../Batch.ts"
import { ConfigError } from "../Config.ts"
import * as Record from "../Record.ts"
import type { RecordChunk } from "../Record.ts"

/**
 * Heap bytes one record costs in a chunk besides its payload (measured; see the
 * module doc). Defined in `Record.ts`.
 *
 * @since 0.2.0
 */
export const RECORD_OVERHEAD_BYTES = Record.RECORD_OVERHEAD_BYTES

/**
 * What a chunk costs the budget: `Record.heapBytes` — payload bytes, plus the
 * per-record overhead when it carries payloads (4 bytes a record when it is
 * framed), plus 8 bytes per listed
 * offset. Additive under `Record.splitAt`, so a batch costs the sum of its
 * chunks.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { chunkOf } from "./Record.ts"
 * import * as MemoryBudget from "./stage/MemoryBudget.ts"
 *
 * MemoryBudget.chargeOf(chunkOf("t", 0, 0, [new Uint8Array(0), new Uint8Array(0)])) // 416
 * ```
 *
 * @since 0.2.0
 */
export const chargeOf: (chunk: RecordChunk) => number = Record.heapBytes

/**
 * What a sealed batch costs: the sum of its chunks' charges — what is
 * released when it is verified or dropped.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Batch } from "./index.ts"
 * import * as MemoryBudget from "./stage/MemoryBudget.ts"
 *
 * MemoryBudget.chargeOfBatch(Batch.make({ source: "t", partition: 0, firstOffset: 0, payloads: [new Uint8Array(10)] })) // 218
 * ```
 *
 * @since 0.2.0
 */
export const chargeOfBatch = (batch: SealedBatch): number => {
  let charge = 0
  for (const chunk of batch.chunks) charge += chargeOf(chunk)
  return charge
}

/**
 * The pipeline's budget: `memoryBudget` less what the source declares it
 * holds read ahead (`Source.readAheadBytes`), so that the configured budget
 * bounds the source's buffer and the pipeline's batches together. Fails with
 * a `ConfigError` when the read-ahead leaves nothing for batches.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import * as MemoryBudget from "./stage/MemoryBudget.ts"
 *
 * MemoryBudget.make(256 * 2 ** 20, 16 * 2 ** 20) // Effect of a budget of 240 MiB for batches
 * MemoryBudget.make(8 * 2 ** 20, 16 * 2 ** 20)   // fails: ConfigError (the read-ahead takes the whole budget)
 * ```
 *
 * @since 0.2.0
 */
export const make = (memoryBudget: number, readAheadBytes: number | undefined): Effect.Effect<MemoryBudget, ConfigError> =>
  Effect.suspend(() => {
    const ahead = readAheadBytes ?? 0
    if (!Number.isFinite(ahead) || ahead < 0) {
      return Effect.fail(new ConfigError({ component: "pipeline", message: `pipeline: the source's readAheadBytes must be a finite number ≥ 0, got ${ahead}` }))
    }
    if (memoryBudget <= ahead) {
      return Effect.fail(
        new ConfigError({
          component: "pipeline",
          message: `pipeline: memoryBudget ${memoryBudget} B leaves nothing for batches after the source's read-ahead of ${ahead} B (Source.readAheadBytes); raise memoryBudget or lower the source's read-ahead (e.g. Kafka prefetchBytes)`
        })
      )
    }
    return Effect.succeed(new MemoryBudget(memoryBudget - ahead))
  })

/**
 * The budget's accounting, with a wait for room.
 *
 * **When to use**
 *
 * Admission charges each chunk before the sealer sees it; the uploader and
 * the committer release a batch's charge when it is verified or dropped.
 *
 * **Example**
 *
 * ```ts
 * // inside packages/core/src
 * import { Effect } from "effect"
 * import * as MemoryBudget from "./stage/MemoryBudget.ts"
 *
 * const budget = new MemoryBudget.MemoryBudget(1 << 20)
 * const admit = (charge: number) =>
 *   Effect.gen(function*() {
 *     budget.delivered(charge)
 *     while (!budget.fits(charge)) yield* budget.awaitRelease
 *     budget.charge(charge)
 *   })
 * ```
 *
 * @since 0.2.0
 */
export class MemoryBudget {
  /** Bytes charged now. */
  held = 0
  /** The highest `held` so far. */
  maxHeld = 0
  /** The largest chunk charge delivered so far (capped at half the limit). */
  reserve = 0
  readonly limit: number
  private waiters: Array<() => void> = []

  constructor(limit: number) {
    this.limit = Math.max(1, limit)
  }

  /** Whether a chunk costing `charge` may be admitted now (see the module doc). */
  fits(charge: number): boolean {
    return this.held === 0 || this.held + charge + this.reserve <= this.limit
  }

  /**
   * Notes a chunk as delivered by the source (before any split): the reserve
   * becomes the largest such charge, at most half the limit.
   */
  delivered(charge: number): void {
    const capped = Math.min(charge, Math.floor(this.limit / 2))
    if (capped > this.reserve) this.reserve = capped
  }

  /** Charges `charge` bytes (after {@link fits}, or unconditionally). */
  charge(charge: number): void {
    this.held += charge
    if (this.held > this.maxHeld) this.maxHeld = this.held
  }

  /** Releases `charge` bytes and wakes whoever waits for room. */
  release(charge: number): void {
    if (charge <= 0) return
    this.held = Math.max(0, this.held - charge)
    this.poke()
  }

  /** Wakes the waiters without releasing anything (e.g. after a revoke). */
  poke(): void {
    if (this.waiters.length === 0) return
    const waiters = this.waiters
    this.waiters = []
    for (const wake of waiters) wake()
  }

  /** Completes at the next {@link release} or {@link poke}. */
  readonly awaitRelease: Effect.Effect<void> = Effect.callback<void>((resume) => {
    const wake = () => resume(Effect.void)
    this.waiters.push(wake)
    return Effect.sync(() => {
      this.waiters = this.waiters.filter((w) => w !== wake)
    })
  })
}
