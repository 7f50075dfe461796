/**
 * The simulated source: a Kafka-like log of size-only records (never a payload
 * byte is allocated), partitions produced at a configurable rate, optional
 * retention that moves the log start offset, and consumer views that implement
 * the core `Source` over a subset of the partitions (one per pipeline instance,
 * as a consumer group would assign them).
 *
 * **The model**
 *
 * - Each partition's log end grows at `recordsPerSecond / partitions` records per
 *   second (changeable with {@link SimLog.setRate}); `backlogRecords` (split over
 *   the partitions) are already in the log at time 0, as if produced at the
 *   initial rate before it.
 * - With `retention`, a record is deleted `retention` after it was produced: the
 *   log start offset is the log end of `retention` ago.
 * - A consumer fetches every `fetchIntervalMillis` (virtual) one chunk per
 *   partition of what is new, at most `fetchMaxBytes` per partition; while it is
 *   behind it fetches again at once. When it finds its next offset below the log
 *   start, it emits a core `RetentionGap` and jumps to the log start: those
 *   records are counted as lost.
 * - `pause` stops fetching (lag grows); `resume` restarts it.
 * - As the Kafka source does, a consumer announces `Source.CaughtUp` for a
 *   partition once it has delivered the backlog it started behind (the log end
 *   of time 0, when it started behind it) and, after a resume that found it
 *   behind, the log end at the resume, with when reading paused (one still
 *   pending keeps its earlier end).
 *
 * @since 0.1.0
 */
import { Clock, Effect, Stream } from "effect"
import { Record } from "@sluice/core"
import type { Source } from "@sluice/core"

/**
 * The source's parameters.
 *
 * @since 0.1.0
 */
export interface SourceParams {
  readonly name: string
  readonly recordsPerSecond: number
  readonly recordBytes: number
  readonly partitions: number
  /** Records are deleted this long after being produced; `null` keeps them. */
  readonly retentionMillis: number | null
  /** Records already in the log at time 0 (over all partitions). */
  readonly backlogRecords: number
  /** Period of a consumer's fetch (virtual ms). */
  readonly fetchIntervalMillis: number
  /** Largest chunk per partition per fetch, in bytes. */
  readonly fetchMaxBytes: number
}

/**
 * Defaults for the optional parameters.
 *
 * @since 0.1.0
 */
export const defaults = {
  name: "sim",
  retentionMillis: null,
  backlogRecords: 0,
  fetchIntervalMillis: 100,
  fetchMaxBytes: 8 * 1024 * 1024
} as const

interface Segment {
  readonly at: number
  /** Log end per partition at `at` (real-valued). */
  readonly end: number
  /** Records per partition per ms from `at`. */
  readonly rate: number
}

/**
 * The shared log (the topic).
 *
 * @since 0.1.0
 */
export interface SimLog {
  readonly params: SourceParams
  /** Log end offset (next offset to be produced) of any partition at `now`. */
  readonly endOffset: (now: number) => number
  /** Log start offset (oldest retained record) of any partition at `now`. */
  readonly startOffset: (now: number) => number
  /**
   * When the record at `offset` of any partition was produced (ms; negative for
   * the initial backlog, `Infinity` if the production rate stays 0 before it).
   */
  readonly producedAt: (offset: number) => number
  /** Changes the production rate from `now` on (records/s over all partitions). */
  readonly setRate: (now: number, recordsPerSecond: number) => void
  /** Inflow in payload bytes per second at `now`. */
  readonly inflowBytesPerSecond: (now: number) => number
  /** A consumer of `partitions` (a pipeline instance's assignment). */
  readonly consumer: (partitions: ReadonlyArray<number>) => SimConsumer
  /** Every consumer made, in order. */
  readonly consumers: ReadonlyArray<SimConsumer>
}

/**
 * A consumer: a core `Source` with the simulator's view of it.
 *
 * @since 0.1.0
 */
export interface SimConsumer extends Source.Source {
  readonly partitions: ReadonlyArray<number>
  /** Next offset to deliver, per partition. */
  readonly positions: ReadonlyMap<number, number>
  /** Offset the consumer started from, per partition. */
  readonly startPositions: ReadonlyMap<number, number>
  /** Committed next offset, per partition. */
  readonly committed: ReadonlyMap<number, number>
  /** Retention gaps found: `[partition, expected, logStart]`. */
  readonly gaps: ReadonlyArray<readonly [number, number, number]>
  /** Records lost to retention found so far. */
  readonly lostFound: () => number
  /** Records lost to retention, found or not yet found, at `now`. */
  readonly lostAt: (now: number) => number
  /** Total lag at `now` (records behind the log end). */
  readonly lagAt: (now: number) => number
  /**
   * Freshness at `now`: the age (ms) of the oldest record of these partitions
   * that is still in the log and not yet committed; 0 when all are committed.
   */
  readonly uncommittedAgeAt: (now: number) => number
  /** Whether the pipeline's read gate has this consumer paused. */
  readonly isPaused: () => boolean
}

/**
 * Builds the log.
 *
 * **Example**
 *
 * ```ts
 * import { SimSource } from "@sluice/testkit"
 *
 * const log = SimSource.make({
 *   ...SimSource.defaults, recordsPerSecond: 1_000_000, recordBytes: 150, partitions: 24
 * })
 * const source = log.consumer([0, 1, 2, 3]) // a core Source over 4 partitions
 * ```
 *
 * @since 0.1.0
 */
export const make = (params: SourceParams): SimLog => {
  const partitions = Math.max(1, params.partitions)
  const backlogPerPartition = params.backlogRecords / partitions
  const segments: Array<Segment> = [{ at: 0, end: backlogPerPartition, rate: params.recordsPerSecond / partitions / 1000 }]
  let rateNow = params.recordsPerSecond

  const segmentAt = (t: number): Segment => {
    // Segments are few (one per rate event): a backward scan is fastest.
    for (let i = segments.length - 1; i > 0; i--) {
      const s = segments[i]
      if (s !== undefined && s.at <= t) return s
    }
    return segments[0] as Segment
  }

  const endReal = (t: number): number => {
    if (t < 0) {
      const first = segments[0] as Segment
      // The backlog was produced at the initial rate before time 0 (all at
      // once at time 0 when that rate is 0).
      return first.rate > 0 ? Math.max(0, first.end + first.rate * t) : 0
    }
    const s = segmentAt(t)
    return s.end + s.rate * (t - s.at)
  }

  const endOffset = (now: number) => Math.floor(endReal(now))
  const startOffset = (now: number) =>
    params.retentionMillis === null ? 0 : Math.min(endOffset(now), Math.floor(endReal(now - params.retentionMillis)))

  // Record `offset` exists once the real-valued log end reaches offset + 1.
  const producedAt = (offset: number): number => {
    const target = offset + 1
    const first = segments[0] as Segment
    if (target <= first.end) return first.rate > 0 ? (target - first.end) / first.rate : 0
    for (let i = segments.length - 1; i >= 0; i--) {
      const s = segments[i] as Segment
      if (s.end > target) continue
      if (s.end === target) return s.at
      return s.rate > 0 ? s.at + (target - s.end) / s.rate : Infinity
    }
    return Infinity
  }

  const consumers: Array<SimConsumer> = []

  const log: SimLog = {
    params,
    endOffset,
    startOffset,
    producedAt,
    setRate: (now, recordsPerSecond) => {
      segments.push({ at: now, end: endReal(now), rate: recordsPerSecond / partitions / 1000 })
      rateNow = recordsPerSecond
    },
    inflowBytesPerSecond: () => rateNow * params.recordBytes,
    consumer: (assigned) => {
      const c = makeConsumer(log, assigned)
      consumers.push(c)
      return c
    },
    consumers
  }
  return log
}

/** What a consumer's stream carries. */
type SimEvent = Record.RecordChunk | Source.RetentionGap | Source.CaughtUp

const makeConsumer = (log: SimLog, partitions: ReadonlyArray<number>): SimConsumer => {
  const { params } = log
  const maxRecords = Math.max(1, Math.floor(params.fetchMaxBytes / Math.max(1, params.recordBytes)))
  const positions = new Map<number, number>()
  const startPositions = new Map<number, number>()
  const committed = new Map<number, number>()
  const gaps: Array<readonly [number, number, number]> = []
  let lost = 0
  let paused = false
  let nextFetchAt = 0
  /** Per partition, the end of the backlog to announce once delivered (`Source.CaughtUp`), and when reading paused if a pause left it. */
  const backlogEnds = new Map<number, { readonly end: number; readonly pausedAt: number | undefined }>()
  let pausedAt = 0
  // auto.offset.reset = earliest: start at the log start of time 0 (consumers
  // are made when the simulation starts).
  const from = log.startOffset(0)
  const startEnd = log.endOffset(0)
  for (const p of partitions) {
    positions.set(p, from)
    startPositions.set(p, from)
    if (from < startEnd) backlogEnds.set(p, { end: startEnd, pausedAt: undefined })
  }

  /** One fetch at `now`: a retention gap and a chunk per partition, as needed. */
  const fetch = (now: number): { readonly events: Array<SimEvent>; readonly behind: boolean } => {
    const end = log.endOffset(now)
    const logStart = log.startOffset(now)
    const events: Array<SimEvent> = []
    let behind = false
    for (const p of partitions) {
      let pos = positions.get(p) ?? 0
      if (pos < logStart) {
        events.push({ _tag: "RetentionGap", source: params.name, partition: p, expected: pos, logStart, lostRecords: logStart - pos })
        gaps.push([p, pos, logStart])
        lost += logStart - pos
        pos = logStart
      }
      const count = Math.min(maxRecords, end - pos)
      if (count > 0) {
        events.push(Record.syntheticChunk(params.name, p, pos, count, params.recordBytes, now))
        pos += count
      }
      const backlog = backlogEnds.get(p)
      if (backlog !== undefined && pos >= backlog.end) {
        events.push({ _tag: "CaughtUp", partition: p, nextOffset: backlog.end, pausedAt: backlog.pausedAt })
        backlogEnds.delete(p)
      }
      if (pos < end) behind = true
      positions.set(p, pos)
    }
    return { events, behind }
  }

  const pull: Effect.Effect<Array<SimEvent>> = Effect.gen(function*() {
    while (true) {
      const now = yield* Clock.currentTimeMillis
      if (paused) {
        yield* Effect.sleep(params.fetchIntervalMillis)
        continue
      }
      // Virtual time is fractional (store latencies): a wake-up a hair early must
      // not become a zero-length sleep loop.
      if (nextFetchAt - now > 0.001) {
        yield* Effect.sleep(nextFetchAt - now)
        continue
      }
      const { events, behind } = fetch(now)
      // Behind: fetch again at once; caught up: wait for the next interval.
      if (!behind) nextFetchAt = now + params.fetchIntervalMillis
      if (events.length > 0) return events
    }
  })

  return {
    name: params.name,
    partitions,
    events: Stream.fromEffectRepeat(pull).pipe(Stream.flattenIterable),
    commit: (partition, nextOffset) =>
      Effect.sync(() => {
        committed.set(partition, nextOffset)
      }),
    pause: Effect.map(Clock.currentTimeMillis, (now) => {
      if (!paused) pausedAt = now
      paused = true
    }),
    resume: Effect.map(Clock.currentTimeMillis, (now) => {
      if (!paused) return
      paused = false
      const end = log.endOffset(now)
      for (const p of partitions) {
        if (!backlogEnds.has(p) && (positions.get(p) ?? end) < end) backlogEnds.set(p, { end, pausedAt })
      }
    }),
    lag: Effect.map(Clock.currentTimeMillis, (now) => {
      const end = log.endOffset(now)
      const lag = new Map<number, number>()
      for (const p of partitions) lag.set(p, Math.max(0, end - (positions.get(p) ?? log.startOffset(now))))
      return lag
    }),
    positions,
    startPositions,
    committed,
    gaps,
    lostFound: () => lost,
    lostAt: (now) => {
      const logStart = log.startOffset(now)
      let unseen = 0
      for (const p of partitions) unseen += Math.max(0, logStart - (positions.get(p) ?? logStart))
      return lost + unseen
    },
    lagAt: (now) => {
      const end = log.endOffset(now)
      let total = 0
      for (const p of partitions) total += Math.max(0, end - (positions.get(p) ?? log.startOffset(now)))
      return total
    },
    uncommittedAgeAt: (now) => {
      const end = log.endOffset(now)
      const logStart = log.startOffset(now)
      let oldest = Infinity
      for (const p of partitions) {
        const first = Math.max(committed.get(p) ?? startPositions.get(p) ?? logStart, logStart)
        if (first < end) oldest = Math.min(oldest, log.producedAt(first))
      }
      return oldest === Infinity ? 0 : Math.max(0, now - oldest)
    },
    isPaused: () => paused
  }
}

