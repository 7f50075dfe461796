/**
 * The vitest run's `globalSetup`: notes which on-demand services
 * (`scripts/lib/LazyService.ts`) were stopped when the run began, and stops, when
 * it ends, those a test started meanwhile. Services already running (started by
 * hand, or by another run) are left alone.
 */
import { down, isRunning, LAZY_SERVICES } from "./scripts/lib/LazyService.ts"

export default function setup(): () => void {
  const stoppedAtStart = LAZY_SERVICES.filter((name) => !isRunning(name))
  return () => {
    for (const name of stoppedAtStart) if (isRunning(name)) down(name)
  }
}
