/**
 * Which records archived twice a rebalance explains (`scaleout.ts`). After a
 * partition changes hands, its new owner reads from the group's committed
 * offset: what the old owner had uploaded past that offset (its open and
 * verified-but-uncommitted batches) is archived again. So every duplicated
 * offset of a partition must lie in the uncommitted window of a step in which
 * that partition moved: at or above its committed offset when the step
 * began, below its committed offset when the step ended. A duplicate outside
 * every such window is one no rebalance explains (a commit that went
 * backwards, a re-read of committed records): the run fails.
 */

/** One step as the run saw it from outside. */
export interface StepWindow {
  readonly step: string
  /** Partitions whose owner changed during the step. */
  readonly moved: ReadonlyArray<number>
  /** The group's committed offsets (next offset to read) per partition when the step began and when it ended. */
  readonly committedBefore: ReadonlyArray<number>
  readonly committedAfter: ReadonlyArray<number>
}

/** A range of one partition held by two objects (`sluice audit`'s `overlaps`, `kind: "duplicate"`), offsets inclusive. */
export interface DuplicateRange {
  readonly partition: number
  readonly from: number
  readonly to: number
}

/** The duplicates counted per step that explains them, and the ranges none explains. */
export interface Attribution {
  /** Records archived twice, in all. */
  readonly records: number
  /** Records per step (by step name), for the steps that explain some. */
  readonly byStep: ReadonlyMap<string, number>
  readonly unexplained: ReadonlyArray<DuplicateRange>
}

/** Attributes each duplicated range to the first step whose moved partition's uncommitted window holds it. */
export const attribute = (steps: ReadonlyArray<StepWindow>, duplicates: ReadonlyArray<DuplicateRange>): Attribution => {
  const byStep = new Map<string, number>()
  const unexplained: Array<DuplicateRange> = []
  let records = 0
  for (const d of duplicates) {
    const count = d.to - d.from + 1
    records += count
    const owner = steps.find((s) =>
      s.moved.includes(d.partition) &&
      d.from >= Math.max(0, s.committedBefore[d.partition] ?? 0) &&
      d.to < (s.committedAfter[d.partition] ?? 0)
    )
    if (owner === undefined) unexplained.push(d)
    else byStep.set(owner.step, (byStep.get(owner.step) ?? 0) + count)
  }
  return { records, byStep, unexplained }
}

/**
 * A range an archiver announced as left on revoke (its `left on revoke` stderr
 * line, from the pipeline's `LeftOnRevoke` signal), offsets inclusive: stored,
 * never committed by it, so the partition's next owner archives it again.
 */
export interface AnnouncedRange {
  readonly instance: string
  readonly partition: number
  readonly from: number
  readonly to: number
}

/** How the audit's duplicates compare with what the archivers announced. */
export interface Naming {
  /** Duplicated records inside an announced range. */
  readonly named: number
  /** Records the archivers announced. */
  readonly announced: number
  /** The parts of duplicated ranges no announcement covers. */
  readonly unnamed: ReadonlyArray<DuplicateRange>
  /** The parts of announced ranges the audit does not find duplicated (an announcement that was wrong). */
  readonly notDuplicated: ReadonlyArray<DuplicateRange>
}

/** `ranges` minus `minus`, per partition, offsets inclusive. */
const subtract = (ranges: ReadonlyArray<DuplicateRange>, minus: ReadonlyArray<DuplicateRange>): Array<DuplicateRange> => {
  const out: Array<DuplicateRange> = []
  for (const r of ranges) {
    let pieces: Array<DuplicateRange> = [r]
    for (const m of minus) {
      if (m.partition !== r.partition) continue
      pieces = pieces.flatMap((p) => {
        if (m.to < p.from || m.from > p.to) return [p]
        const left = m.from > p.from ? [{ partition: p.partition, from: p.from, to: m.from - 1 }] : []
        const right = m.to < p.to ? [{ partition: p.partition, from: m.to + 1, to: p.to }] : []
        return [...left, ...right]
      })
    }
    out.push(...pieces)
  }
  return out
}

/** Offsets in `ranges` (each inclusive). */
export const size = (ranges: ReadonlyArray<DuplicateRange>): number => ranges.reduce((n, r) => n + r.to - r.from + 1, 0)

/**
 * Compares the audit's duplicated ranges with the announced ones, from both
 * sides: what was duplicated and not announced, and what was announced and
 * not duplicated. (Records announced by two archivers count twice in
 * `announced`: each stored them.)
 */
export const name = (duplicates: ReadonlyArray<DuplicateRange>, announced: ReadonlyArray<AnnouncedRange>): Naming => {
  const unnamed = subtract(duplicates, announced)
  return {
    named: size(duplicates) - size(unnamed),
    announced: size(announced),
    unnamed,
    notDuplicated: subtract(announced.map(({ partition, from, to }) => ({ partition, from, to })), duplicates)
  }
}

/** Parses an archiver's `left on revoke` line (see `kafka-to-s3/Command.ts`); `undefined` for any other line. */
export const parseLeftOnRevoke = (instance: string, line: string): ReadonlyArray<AnnouncedRange> | undefined => {
  const m = /^kafka-to-s3: left on revoke: partition (\d+), \d+ records at offsets ([\d,-]+) /.exec(line)
  if (m === null) return undefined
  const partition = Number(m[1])
  return (m[2] ?? "").split(",").map((range) => {
    const [from, to] = range.split("-").map(Number)
    return { instance, partition, from: from ?? NaN, to: to ?? NaN }
  })
}
