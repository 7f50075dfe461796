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
