/**
 * The commit guard: wraps a sink and a source so a test can prove Sluice's first
 * invariant — no position is committed before its batch is verified in storage —
 * against any real or simulated sink and source.
 *
 * The sink wrapper remembers each batch's offset range when it is uploaded and
 * marks it verified when `verify` succeeds; the source wrapper checks, at every
 * commit, that every offset from the previous commit point (or `from`) up to the
 * new one is verified or was reported lost by a retention gap, and that commits
 * never move backwards. Violations are collected, not thrown, so a test asserts
 * `violations` is empty.
 *
 * @since 0.1.0
 */
import type { Sink, Source } from "@sluice/core"
import { Effect, Stream } from "effect"

/**
 * Half-open offset ranges `[from, to)` per partition, merged as they are added.
 *
 * @since 0.1.0
 */
export class Ranges {
  private readonly byPartition = new Map<number, Array<[number, number]>>()

  /** Adds `[from, to)`. */
  add(partition: number, from: number, to: number): void {
    if (to <= from) return
    const list = this.byPartition.get(partition) ?? []
    const last = list[list.length - 1]
    // The common case, offsets in order: extend the last range.
    if (last !== undefined && from >= last[0] && from <= last[1]) {
      last[1] = Math.max(last[1], to)
      this.byPartition.set(partition, list)
      return
    }
    list.push([from, to])
    list.sort((a, b) => a[0] - b[0])
    const merged: Array<[number, number]> = []
    for (const r of list) {
      const last = merged[merged.length - 1]
      if (last !== undefined && r[0] <= last[1]) last[1] = Math.max(last[1], r[1])
      else merged.push([r[0], r[1]])
    }
    this.byPartition.set(partition, merged)
  }

  /** The merged ranges of `partition`, in order. */
  of(partition: number): ReadonlyArray<readonly [number, number]> {
    return this.byPartition.get(partition) ?? []
  }

  /** Whether `[from, to)` is covered. */
  covers(partition: number, from: number, to: number): boolean {
    if (to <= from) return true
    return (this.byPartition.get(partition) ?? []).some(([a, b]) => a <= from && to <= b)
  }

  /** How many offsets of `[from, to)` neither these ranges nor `also` cover. */
  uncovered(partition: number, from: number, to: number, also?: Ranges): number {
    if (to <= from) return 0
    const list = [...(this.byPartition.get(partition) ?? []), ...(also?.byPartition.get(partition) ?? [])]
    list.sort((a, b) => a[0] - b[0])
    let at = from
    let missing = 0
    for (const [a, b] of list) {
      if (at >= to) break
      if (b <= at) continue
      if (a > at) missing += Math.min(a, to) - at
      at = Math.max(at, b)
    }
    if (at < to) missing += to - at
    return missing
  }
}

/** The most recent commits a checked source keeps (older ones are only counted). */
const COMMITS_KEPT = 10_000
/** The first violations a checked source keeps in full (the rest are counted). */
const VIOLATIONS_KEPT = 100

/**
 * Wraps a sink: a batch's offsets count as verified in `verified` once its
 * `verify` succeeded (and before the pipeline can commit them). The wrapper keeps
 * the sink's own type, so e.g. a `Memory.MemorySink` stays inspectable. Several
 * sinks (runs) may share one `verified`.
 *
 * @since 0.1.0
 */
export const verifying = <K extends Sink.Sink>(sink: K, verified: Ranges, verifiedKeys: Set<string> = new Set()): K => {
  const ranges = new Map<string, { readonly partition: number; readonly first: number; readonly last: number }>()
  return {
    ...sink,
    putObject: (batch: Parameters<Sink.Sink["putObject"]>[0]) => {
      ranges.set(batch.key, { partition: batch.partition, first: batch.firstOffset, last: batch.lastOffset })
      return sink.putObject(batch)
    },
    verify: (receipt: Parameters<Sink.Sink["verify"]>[0]) =>
      Effect.tap(sink.verify(receipt), () =>
        Effect.sync(() => {
          const r = ranges.get(receipt.key)
          if (r === undefined) return
          // Forget it once verified: the map holds only batches in flight.
          ranges.delete(receipt.key)
          verified.add(r.partition, r.first, r.last + 1)
          verifiedKeys.add(receipt.key)
        }))
  }
}

/**
 * What a checked source saw.
 *
 * @since 0.1.0
 */
export interface Checked {
  /** Violations of the commit invariant, in order (empty when it holds; the first 100). */
  readonly violations: Array<string>
  /** The most recent commits (at least the last 10 000, at most 20 000), in order. */
  readonly commits: Array<{ readonly partition: number; readonly nextOffset: number }>
  /**
   * Records committed while neither verified nor reported lost, summed over
   * every commit (0 when the invariant holds).
   */
  readonly committedNotVerified: () => number
  /** Offsets reported lost by retention gaps. */
  readonly lost: Ranges
  /** Non-record source events (gaps, revokes), in order. */
  readonly events: Array<Source.SourceEvent>
}

/**
 * Wraps a source: at every commit, checks that every offset from the previous
 * commit point (or `from`) up to the new one is in `verified` or was reported
 * lost by a retention gap, and that commits never move back.
 *
 * @since 0.1.0
 */
export const checking = <S extends Source.Source>(
  source: S,
  verified: Ranges,
  from: ReadonlyMap<number, number> = new Map()
): { readonly source: S } & Checked => {
  const lost = new Ranges()
  const violations: Array<string> = []
  const commits: Array<{ partition: number; nextOffset: number }> = []
  const events: Array<Source.SourceEvent> = []
  const last = new Map(from)
  let uncovered = 0
  const violate = (message: string) => {
    if (violations.length < VIOLATIONS_KEPT) violations.push(message)
  }
  const checked: S = {
    ...source,
    events: source.events.pipe(
      Stream.tap((event) =>
        Effect.sync(() => {
          if (event._tag === "RecordChunk") return
          events.push(event)
          if (event._tag === "RetentionGap") lost.add(event.partition, event.expected, event.logStart)
        })
      )
    ),
    commit: (partition: number, nextOffset: number) =>
      Effect.suspend(() => {
        const start = last.get(partition) ?? 0
        if (nextOffset < start) violate(`commit ${partition}@${nextOffset} moves back from ${start}`)
        const missing = verified.uncovered(partition, start, nextOffset, lost)
        if (missing > 0) {
          uncovered += missing
          violate(`commit ${partition}@${nextOffset}: ${missing} offsets in [${start}, ${nextOffset}) are not verified`)
        }
        last.set(partition, Math.max(start, nextOffset))
        if (commits.length >= 2 * COMMITS_KEPT) commits.splice(0, COMMITS_KEPT)
        commits.push({ partition, nextOffset })
        return source.commit(partition, nextOffset)
      })
  }
  return { source: checked, violations, commits, lost, events, committedNotVerified: () => uncovered }
}

/**
 * A guarded sink and source, with what the guard saw.
 *
 * @since 0.1.0
 */
export interface Guarded<K extends Sink.Sink, S extends Source.Source> extends Checked {
  readonly sink: K
  readonly source: S
  /** Offsets verified in storage. */
  readonly verified: Ranges
  /** Keys verified. */
  readonly verifiedKeys: Set<string>
}

/**
 * Wraps `sink` and `source` together ({@link verifying} + {@link checking}).
 * `from` gives each partition's starting commit point (default 0), for a run
 * that resumes from earlier commits.
 *
 * **Example**
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Memory, Pipeline } from "@sluice/core"
 * import { CommitGuard } from "@sluice/testkit"
 *
 * const g = CommitGuard.guard(Memory.sink(), Memory.source({ name: "t", partitions: 2, records: 1000, recordBytes: 10 }))
 * await Effect.runPromise(Pipeline.run({ source: g.source, sink: g.sink }))
 * // expect(g.violations).toEqual([])
 * ```
 *
 * @since 0.1.0
 */
export const guard = <K extends Sink.Sink, S extends Source.Source>(
  sink: K,
  source: S,
  options: { readonly from?: ReadonlyMap<number, number> } = {}
): Guarded<K, S> => {
  const verified = new Ranges()
  const verifiedKeys = new Set<string>()
  const checked = checking(source, verified, options.from)
  return { ...checked, sink: verifying(sink, verified, verifiedKeys), verified, verifiedKeys }
}
