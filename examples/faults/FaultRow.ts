/**
 * One line of the fault report (`npm run faults`, issue 27): what was done to a
 * dependency, and what the bucket and the committed offsets say afterwards,
 * read from outside the archiver (`sluice audit`, the Kafka admin API).
 */
export interface FaultRow {
  /** The fault, named for what it does: `s3-kill`, `stall`, `kill-after-verify`, `sasl-scram`, … */
  readonly name: string
  /** How many times the fault was injected in this run. */
  readonly injected: number
  /** Records produced to the topic. */
  readonly records: number
  /** Produced records the audit found in verified objects. */
  readonly found: number
  /** Records committed but not in any verified object — the audit's holes, gone for good (must be 0). */
  readonly lost: number
  /**
   * Records in verified objects that overlap earlier ones with equal content
   * (harmless: a batch verified but not committed before a kill, archived again
   * after the restart). Counted over whole overlapping objects, so an upper bound.
   */
  readonly duplicates: number
  /** Seconds from the fault's end to the next commit (the worst over injections), `null` when nothing was committed after it. */
  readonly recoverySeconds: number | null
  /** The last archiver run's exit status (`null`: killed by a signal). */
  readonly exit: number | null
  /** Whether every expectation of this fault held (see `detail` when not). */
  readonly ok: boolean
  /** What was checked, and what failed, in one line. */
  readonly detail: string
}
