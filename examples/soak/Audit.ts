/**
 * soak — the audit: counts what happened to every record **from outside the
 * pipeline**, by wrapping its source and sink the way the testkit's
 * `CommitGuard` does, never from the pipeline's own counters.
 *
 * - the source wrapper sees every chunk handed to the pipeline (records
 *   **read**, as offset ranges per partition), every retention gap, every
 *   source error, and every commit (records **committed**; a commit over an
 *   offset not verified is counted as a violation);
 * - the sink wrapper sees every object uploaded and every successful verify
 *   (records **verified**, as offset ranges).
 *
 * **Lost** records are the ones the source will not deliver again and that
 * are not in storage: offsets committed while not verified, plus the ones a
 * retention gap deleted before they were read. Records read and not committed
 * at the end (a drain abandons the chunk its reader holds) are not lost: the
 * commit point is before them, so the source delivers them again after a
 * restart; they are counted apart (`uncommitted`). Memory is
 * bounded: ranges merge (a partition read and verified in order is one
 * range), and verified batches are forgotten once committed.
 */
import type { Batch, Record, Sink, Source } from "@sluice/core"
import { CommitGuard } from "@sluice/testkit"
import { Effect, Stream } from "effect"

interface PartitionAudit {
  /** Next offset committed (starts at the first offset read). */
  committed: number | undefined
  /** Records committed (commit advances over records read). */
  committedRecords: number
  /** Last offsets of verified batches not yet committed, in order. */
  readonly verifiedAhead: Array<number>
}

/** What the audit counted so far. */
export interface AuditCounts {
  /** Records handed to the pipeline by the source. */
  readonly read: number
  /** Records in objects verified in storage. */
  readonly verified: number
  /** Records whose position was committed to the source. */
  readonly committed: number
  /** Records deleted by retention before they were read (gaps the source reported). */
  readonly retentionGapRecords: number
  readonly retentionGaps: number
  /** Source errors seen on the source's stream (each ends the run). */
  readonly sourceErrors: number
  /** Objects uploaded (put) and verified. */
  readonly objectsPut: number
  readonly objectsVerified: number
  /** Verified batches committed (each leaves the pipeline's commit ledger). */
  readonly batchesCommitted: number
  /** Verified batches waiting for a commit now. */
  readonly verifiedNotCommitted: number
  /** Records committed while not verified (0 when the pipeline keeps its first guarantee). */
  readonly committedNotVerified: number
}

/** The audit of one run. */
export interface Audit {
  readonly source: <S extends Source.Source>(source: S) => S
  readonly sink: <K extends Sink.Sink>(sink: K) => K
  readonly counts: () => AuditCounts
  /** Records committed while not verified, plus records lost to retention gaps. */
  readonly lost: () => number
  /** Records read and not committed (past each partition's commit point): delivered again after a restart. */
  readonly uncommitted: () => number
}

/**
 * A fresh audit; wrap the run's source and sink with it.
 *
 * **Example**
 *
 * ```ts
 * const audit = Audit.make()
 * const handle = yield* Pipeline.start({ source: audit.source(source), sink: audit.sink(sink) })
 * // … after the drain: audit.counts().verified === audit.counts().committed, audit.lost() === 0
 * ```
 */
export const make = (): Audit => {
  const partitions = new Map<number, PartitionAudit>()
  // Offset ranges per partition: read, verified, deleted by retention gaps.
  const read = new CommitGuard.Ranges()
  const verified = new CommitGuard.Ranges()
  const gaps = new CommitGuard.Ranges()
  const put = new Map<string, { readonly partition: number; readonly first: number; readonly last: number; readonly records: number }>()
  const n = {
    read: 0,
    verified: 0,
    committed: 0,
    retentionGapRecords: 0,
    retentionGaps: 0,
    sourceErrors: 0,
    objectsPut: 0,
    objectsVerified: 0,
    batchesCommitted: 0,
    committedNotVerified: 0
  }
  const of = (partition: number): PartitionAudit => {
    let p = partitions.get(partition)
    if (p === undefined) {
      p = { committed: undefined, committedRecords: 0, verifiedAhead: [] }
      partitions.set(partition, p)
    }
    return p
  }

  const onChunk = (chunk: Record.RecordChunk) => {
    const p = of(chunk.partition)
    if (p.committed === undefined) p.committed = chunk.firstOffset
    if (chunk.offsets === undefined) {
      read.add(chunk.partition, chunk.firstOffset, chunk.firstOffset + chunk.count)
    } else {
      for (const offset of chunk.offsets) read.add(chunk.partition, offset, offset + 1)
    }
    n.read += chunk.count
  }
  const onEvent = (event: Source.SourceEvent) => {
    if (event._tag === "RecordChunk") onChunk(event)
    else if (event._tag === "RetentionGap") {
      of(event.partition)
      gaps.add(event.partition, event.expected, event.logStart)
      n.retentionGaps++
      n.retentionGapRecords += event.lostRecords
    }
    return event
  }

  const onCommit = (partition: number, nextOffset: number) => {
    const p = of(partition)
    const from = p.committed ?? nextOffset
    if (nextOffset > from) {
      // Offsets neither verified nor deleted by a gap (a gap's offsets are never verified).
      n.committedNotVerified += verified.uncovered(partition, from, nextOffset, gaps)
      const records = nextOffset - from - read.uncovered(partition, from, nextOffset)
      p.committedRecords += records
      n.committed += records
      p.committed = nextOffset
      while (p.verifiedAhead.length > 0 && (p.verifiedAhead[0] ?? 0) < nextOffset) {
        p.verifiedAhead.shift()
        n.batchesCommitted++
      }
    }
  }

  return {
    source: <S extends Source.Source>(source: S): S => ({
      ...source,
      events: source.events.pipe(
        Stream.map(onEvent),
        Stream.tapError(() => Effect.sync(() => void n.sourceErrors++))
      ),
      commit: (partition: number, nextOffset: number) =>
        // Counted once the source took it (a refused commit committed nothing).
        Effect.tap(source.commit(partition, nextOffset), (outcome) => Effect.sync(() => {
          if (outcome === undefined) onCommit(partition, nextOffset)
        }))
    }),
    sink: <K extends Sink.Sink>(sink: K): K => ({
      ...sink,
      putObject: (batch: Batch.SealedBatch) => {
        put.set(batch.key, { partition: batch.partition, first: batch.firstOffset, last: batch.lastOffset, records: batch.records })
        n.objectsPut++
        return sink.putObject(batch)
      },
      verify: (receipt: Sink.PutReceipt) =>
        Effect.tap(sink.verify(receipt), () =>
          Effect.sync(() => {
            const b = put.get(receipt.key)
            if (b === undefined) return
            put.delete(receipt.key)
            const p = of(b.partition)
            verified.add(b.partition, b.first, b.last + 1)
            p.verifiedAhead.push(b.last)
            if (p.verifiedAhead.length > 1) p.verifiedAhead.sort((x, y) => x - y)
            n.verified += b.records
            n.objectsVerified++
          }))
    }),
    counts: () => {
      let ahead = 0
      for (const p of partitions.values()) ahead += p.verifiedAhead.length
      return { ...n, verifiedNotCommitted: ahead }
    },
    lost: () => n.committedNotVerified + n.retentionGapRecords,
    uncommitted: () => {
      let out = 0
      for (const [partition, p] of partitions) {
        const committed = p.committed ?? 0
        for (const [from, to] of read.of(partition)) out += Math.max(0, to - Math.max(from, committed))
      }
      return out
    }
  }
}
