/**
 * brokers — the verdicts: pure functions from a scenario's measured figures
 * to named checks, each passed or failed with the numbers that decided it.
 * A scenario passes when every one of its checks does. Thresholds are
 * declared here, beside the checks that use them, so a reader sees at once
 * what "bounded" or "held back" means.
 */

/** One check of a scenario. */
export interface Check {
  readonly name: string
  readonly ok: boolean
  /** The figures behind it. */
  readonly detail: string
}

/** A scenario's verdict: `pass` when it has checks and every one passed. */
export interface Verdict {
  readonly pass: boolean
  readonly checks: ReadonlyArray<Check>
}

const verdict = (checks: ReadonlyArray<Check>): Verdict => ({ pass: checks.length > 0 && checks.every((c) => c.ok), checks })

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
const n = (x: number) => Math.round(x).toLocaleString("en-US")

/** What an archiver left, read from outside after it drained: the bucket's audit and the group's offsets. */
export interface Archived {
  /** `npx sluice audit`'s `ok` (no hole, failure, conflict, missing object or orphaned upload). */
  readonly auditOk: boolean
  /** Records the audit found in valid objects (each offset once). */
  readonly records: number
  /** Records in the topic: the sum of the partitions' end offsets. */
  readonly expected: number
  readonly holes: number
  readonly conflicts: number
  readonly checksumFailures: number
  readonly orphanedUploads: number
  /** The group's committed offset equals the end offset on every partition. */
  readonly committedAtEnd: boolean
  /** The archiver's exit code after SIGTERM (0: drained cleanly); null when it had to be killed. */
  readonly archiverExit: number | null
}

/** The checks every archiver of every scenario must pass; `label` names it. */
export const archivedChecks = (label: string, a: Archived): Array<Check> => [
  {
    name: `${label}: audit clean`,
    ok: a.auditOk && a.holes === 0 && a.conflicts === 0 && a.checksumFailures === 0 && a.orphanedUploads === 0,
    detail: `audit ok ${a.auditOk}, holes ${a.holes}, conflicts ${a.conflicts}, checksum failures ${a.checksumFailures}, orphaned uploads ${a.orphanedUploads}`
  },
  { name: `${label}: every record archived`, ok: a.records === a.expected && a.expected > 0, detail: `${n(a.records)} found of ${n(a.expected)} in the topic` },
  { name: `${label}: committed offsets = ends`, ok: a.committedAtEnd, detail: a.committedAtEnd ? "every partition" : "some partition's committed offset is not its end" },
  { name: `${label}: drained cleanly on SIGTERM`, ok: a.archiverExit === 0, detail: `exit ${String(a.archiverExit)}` }
]

/** Produce and archive rates over one phase (records/s). */
export interface PhaseRates {
  readonly producedPerSecond: number
  readonly archivedPerSecond: number
}

/** replication-throttle's figures. */
export interface ThrottleFigures {
  readonly baseline: PhaseRates
  readonly throttled: PhaseRates & {
    /** Share of the phase's samples in which the slowed follower was out of the ISR of every partition. */
    readonly followerOutOfIsrShare: number
    /** How fast the slowed follower's replicas grew (bytes/s, all partitions), and the leaders'. */
    readonly followerBytesPerSecond: number
    readonly leaderBytesPerSecond: number
  }
  /** The throttle rate set on the follower (bytes/s). */
  readonly throttleBytesPerSecond: number
  /** Smallest ISR seen on any partition in any sample. */
  readonly minIsr: number
  readonly minInsyncReplicas: number
  /** Seconds from removing the throttle until the follower was back in every ISR; undefined: not within the bound. */
  readonly rejoinSeconds: number | undefined
  readonly archive: Archived
}

/** The slowed follower may outpace the throttle by this factor plus one burst (quota windows are 1 s, sampled 11 times). */
export const THROTTLE_SLACK = { factor: 1.5, burstBytesPerSecond: 256 * 1024 }
/** The follower counts as held back when it was out of the ISR in at least this share of the throttled phase. */
export const OUT_OF_ISR_SHARE = 0.8

/** replication-throttle's verdict. */
export const replicationThrottle = (f: ThrottleFigures): Verdict => {
  const followerCap = f.throttleBytesPerSecond * THROTTLE_SLACK.factor + THROTTLE_SLACK.burstBytesPerSecond
  return verdict([
    {
      name: "the throttle held the follower back",
      ok: f.throttled.followerOutOfIsrShare >= OUT_OF_ISR_SHARE && f.throttled.followerBytesPerSecond <= followerCap &&
        f.throttled.followerBytesPerSecond < f.throttled.leaderBytesPerSecond,
      detail: `out of the ISR ${(100 * f.throttled.followerOutOfIsrShare).toFixed(0)}% of the phase (≥ ${100 * OUT_OF_ISR_SHARE}%); ` +
        `follower +${mib(f.throttled.followerBytesPerSecond)}/s (≤ ${mib(followerCap)}/s) vs leaders +${mib(f.throttled.leaderBytesPerSecond)}/s`
    },
    {
      name: "acks=all kept producing with the ISR at min.insync.replicas",
      ok: f.throttled.producedPerSecond > 0 && f.minIsr >= f.minInsyncReplicas,
      detail: `${n(f.throttled.producedPerSecond)} records/s under the throttle (${n(f.baseline.producedPerSecond)} without); smallest ISR ${f.minIsr} (min.insync.replicas ${f.minInsyncReplicas})`
    },
    {
      name: "the archiver kept reading from the leaders",
      ok: f.throttled.archivedPerSecond > 0,
      detail: `${n(f.throttled.archivedPerSecond)} records/s committed under the throttle (${n(f.baseline.archivedPerSecond)} without)`
    },
    {
      name: "the follower rejoined the ISR once the throttle was removed",
      ok: f.rejoinSeconds !== undefined,
      detail: f.rejoinSeconds === undefined ? "not within the bound" : `after ${f.rejoinSeconds.toFixed(1)} s`
    },
    ...archivedChecks("archiver", f.archive)
  ])
}

/** producer-flood's figures. */
export interface FloodFigures {
  readonly budgetBytes: number
  /** Samples of the archiver's held-bytes gauge (`sluice_inflight_bytes`) during the flood. */
  readonly heldSamples: number
  readonly heldMaxBytes: number
  readonly rssMaxBytes: number
  /** Lag (records in the topic not committed) at the flood's first and last sample, and its fitted slope (records/s). */
  readonly lagFirst: number
  readonly lagLast: number
  readonly lagSlope: number
  readonly rates: PhaseRates
  readonly archive: Archived
}

/** A loose RSS ceiling that catches runaway growth, not a tight bound: Node, the AWS SDK and the Kafka client cost ~200-400 MiB besides the budget. */
export const rssCeiling = (budgetBytes: number): number => 3 * budgetBytes + 384 * 2 ** 20

/** producer-flood's verdict. */
export const producerFlood = (f: FloodFigures): Verdict =>
  verdict([
    {
      name: "held bytes stayed within the memory budget",
      ok: f.heldSamples >= 3 && f.heldMaxBytes > 0 && f.heldMaxBytes <= f.budgetBytes,
      detail: `max ${mib(f.heldMaxBytes)} of a ${mib(f.budgetBytes)} budget over ${f.heldSamples} samples of the gauge`
    },
    {
      name: "RSS under its ceiling",
      ok: f.rssMaxBytes > 0 && f.rssMaxBytes <= rssCeiling(f.budgetBytes),
      detail: `max ${mib(f.rssMaxBytes)} (ceiling 3 × budget + 384 MiB = ${mib(rssCeiling(f.budgetBytes))})`
    },
    {
      name: "the producer outran the archiver: lag grew",
      ok: f.rates.producedPerSecond > f.rates.archivedPerSecond && f.lagLast > f.lagFirst && f.lagSlope > 0,
      detail: `produced ${n(f.rates.producedPerSecond)}/s, archived ${n(f.rates.archivedPerSecond)}/s; lag ${n(f.lagFirst)} → ${n(f.lagLast)} (+${n(f.lagSlope)}/s)`
    },
    ...archivedChecks("archive", f.archive)
  ])

/** One consumer group's figures in slow-beside-fast. */
export interface GroupFigures {
  readonly archivedPerSecond: number
  readonly lagMax: number
  readonly lagLast: number
  readonly lagSlope: number
}

/** slow-beside-fast's figures. */
export interface SlowFastFigures {
  readonly producedPerSecond: number
  readonly fast: GroupFigures
  readonly slow: GroupFigures
  readonly fastArchive: Archived
  readonly slowArchive: Archived
}

/** The fast group's lag is bounded when it stays under this many seconds of the produce rate (batches seal within 5 s). */
export const FAST_LAG_SECONDS = 15
/** …and it keeps up when it commits at least this share of the produce rate. */
export const KEEP_UP_SHARE = 0.9

/** …and the slow group is slow when it commits at most this share (so its lag grows). */
export const SLOW_SHARE = 0.5

/** slow-beside-fast's verdict. Rates and slopes are over the measured (second) phase, the lag bound over the whole run. */
export const slowBesideFast = (f: SlowFastFigures): Verdict => {
  const bound = f.producedPerSecond * FAST_LAG_SECONDS
  return verdict([
    {
      name: "the fast group's lag stayed bounded",
      ok: f.fast.lagMax <= bound,
      detail: `max ${n(f.fast.lagMax)} records (bound ${FAST_LAG_SECONDS} s of the produce rate = ${n(bound)}); at the end ${n(f.fast.lagLast)}`
    },
    {
      name: "the fast group kept up (not dragged by the slow one)",
      ok: f.fast.archivedPerSecond >= KEEP_UP_SHARE * f.producedPerSecond,
      detail: `${n(f.fast.archivedPerSecond)} records/s committed for ${n(f.producedPerSecond)} produced (≥ ${100 * KEEP_UP_SHARE}%)`
    },
    {
      name: "the slow group really was slow: it fell behind",
      ok: f.slow.archivedPerSecond <= SLOW_SHARE * f.producedPerSecond && f.slow.lagSlope > 0,
      detail: `${n(f.slow.archivedPerSecond)} records/s committed (≤ ${100 * SLOW_SHARE}% of the produce rate); lag ${n(f.slow.lagLast)} at the end (+${n(f.slow.lagSlope)}/s)`
    },
    ...archivedChecks("fast group", f.fastArchive),
    ...archivedChecks("slow group", f.slowArchive)
  ])
}

/** mtls-long's figures. */
export interface MtlsFigures {
  readonly durationSeconds: number
  /** A client with the CA but no certificate was refused, and how. */
  readonly noCertRefused: boolean
  readonly noCertError: string
  readonly rates: PhaseRates
  readonly archive: Archived
}

/** Over mTLS the archiver keeps up when it commits at least this share of the produce rate over the run (its first commit comes a few seconds in). */
export const MTLS_KEEP_UP_SHARE = 0.8

/** mtls-long's verdict. */
export const mtlsLong = (f: MtlsFigures): Verdict =>
  verdict([
    { name: "a client without a certificate is refused", ok: f.noCertRefused, detail: f.noCertError },
    {
      name: "the archiver kept up over mTLS for the whole run",
      ok: f.rates.producedPerSecond > 0 && f.rates.archivedPerSecond >= MTLS_KEEP_UP_SHARE * f.rates.producedPerSecond,
      detail: `${f.durationSeconds} s: produced ${n(f.rates.producedPerSecond)}/s, archived ${n(f.rates.archivedPerSecond)}/s (≥ ${100 * MTLS_KEEP_UP_SHARE}%)`
    },
    ...archivedChecks("archiver over mTLS", f.archive)
  ])
