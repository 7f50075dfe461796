/**
 * bench:e2e — what one contender's run is given and what it reports, and the
 * process-level measures both contenders share (CPU, event-loop utilization,
 * peak RSS). Each run happens in its own child process, so its peak RSS and
 * heap are its own.
 */
import { performance } from "node:perf_hooks"

/** What starts the one stdout line of a contender's child that carries its result as JSON (the Python peer prints it too). */
export const RESULT = "RESULT "

/** One archiving run: read the whole topic, write it to `bucket`, commit under `groupId`. */
export interface Job {
  readonly topic: string
  readonly partitions: number
  readonly records: number
  readonly groupId: string
  readonly bucket: string
  /** The plain loop's records per object (Sluice sizes its own objects). */
  readonly recordsPerObject: number
  /** Sluice's policies: a composition string (`Composition.parse`), `"default"` for `Composition.defaults()`. */
  readonly policies: string
}

/** What a run reports (timed from building the consumer to the last commit). */
export interface Result {
  readonly records: number
  readonly seconds: number
  readonly objects: number
  readonly peakRssBytes: number
  /** CPU seconds of the contender's process (user + system) during the run. */
  readonly cpuSeconds: number
  /** Share of the run the event loop was busy (1: the process is CPU-bound). */
  readonly eventLoopUtilization: number
  /** Contender-specific observations (fractions of samples, means). */
  readonly detail: Readonly<Record<string, number>>
}

/** Starts the process-level measures; `stop` returns them for the time since. */
export const measure = () => {
  const elu = performance.eventLoopUtilization()
  const cpu = process.cpuUsage()
  const started = performance.now()
  return {
    stop: () => {
      const seconds = (performance.now() - started) / 1000
      const used = process.cpuUsage(cpu)
      return {
        seconds,
        cpuSeconds: (used.user + used.system) / 1e6,
        eventLoopUtilization: performance.eventLoopUtilization(elu).utilization,
        peakRssBytes: process.resourceUsage().maxRSS * 1024
      }
    }
  }
}
