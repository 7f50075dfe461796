/**
 * The services a test starts only when it needs them, unlike those of
 * `scripts/services.sh` that `npm test` starts for every run: the SASL_SSL
 * Kafka broker (`scripts/kafka-sasl.sh`, a JVM) and the S3 server over HTTPS
 * with a private CA (`scripts/s3-tls.sh`).
 *
 * A test calls {@link up} in its `beforeAll`: the script starts the service
 * unless it runs already (its `up` holds a lock, so test files running in
 * parallel start it once) and the test reads the endpoints from the env file
 * the script wrote. The vitest run stops, at its end, every one it found
 * stopped at its start (`vitest.services.ts`, the config's `globalSetup`); a
 * standalone program stops what it started with {@link down}. A service that
 * cannot start fails the test with the script's own words; none is skipped.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** A service started on demand: `scripts/<name>.sh up|down|status`, endpoints in `.services/<name>.env`. */
export type LazyServiceName = "kafka-sasl" | "s3-tls"

/** Every service started on demand, for the run's teardown. */
export const LAZY_SERVICES: ReadonlyArray<LazyServiceName> = ["kafka-sasl", "s3-tls"]

/** The repository root (this file is `scripts/lib/LazyService.ts`). */
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url))
/** Where the scripts keep pid and env files: `SLUICE_SERVICES_DIR` when set (as `scripts/faults.sh` sets it), else `.services/`. */
const SERVICES_DIR = process.env["SLUICE_SERVICES_DIR"] ?? join(REPO_ROOT, ".services")

/**
 * How long `up` may take: the broker's own readiness bound (90 s,
 * SLUICE_KAFKA_SASL_START_TIMEOUT) plus a format JVM and the wait for another
 * test file's `up` holding the lock. A bound, not an estimate (it takes ~5 s).
 */
const UP_TIMEOUT_MS = 180_000
/** `down`: the scripts' TERM-then-KILL bound (30 s) and some. */
const DOWN_TIMEOUT_MS = 60_000
/** `status`: one metadata request or health probe (each bounded at 2–5 s in the scripts). */
const STATUS_TIMEOUT_MS = 15_000

const script = (name: LazyServiceName, command: "up" | "down" | "status", timeout: number) =>
  spawnSync("bash", [join(REPO_ROOT, "scripts", `${name}.sh`), command], { cwd: REPO_ROOT, encoding: "utf8", timeout })

/**
 * Whether the service's process runs, answering or not yet: `status` says
 * "running" or "starting or unhealthy". Its exit code alone also reads a live
 * service whose health probe is slow under load as stopped; the run's teardown
 * would then leave it running, or a caller take a service another started for
 * its own. (`scripts/lib/service-running.sh` reads the same lines.)
 */
export const isRunning = (name: LazyServiceName): boolean => /^(running|starting or unhealthy)/.test(script(name, "status", STATUS_TIMEOUT_MS).stdout ?? "")

/** The variables of `.services/<name>.env` (`KEY=value` lines). */
export const readEnv = (name: LazyServiceName): Readonly<Record<string, string>> => {
  const vars: Record<string, string> = {}
  for (const line of readFileSync(join(SERVICES_DIR, `${name}.env`), "utf8").split("\n")) {
    const at = line.indexOf("=")
    if (at > 0) vars[line.slice(0, at)] = line.slice(at + 1)
  }
  return vars
}

/**
 * Starts the service unless it runs (bounded), and returns its env file's
 * variables; throws with the script's last lines when it cannot start.
 */
export const up = (name: LazyServiceName): Readonly<Record<string, string>> => {
  const run = script(name, "up", UP_TIMEOUT_MS)
  if (run.status !== 0) {
    const why = run.error !== undefined ? run.error.message : `exit ${run.status ?? run.signal}`
    throw new Error(`scripts/${name}.sh up failed (${why}):\n${(run.stderr ?? "").split("\n").slice(-20).join("\n")}`)
  }
  return readEnv(name)
}

/** Stops the service (bounded); a failure to stop is thrown. */
export const down = (name: LazyServiceName): void => {
  const run = script(name, "down", DOWN_TIMEOUT_MS)
  if (run.status !== 0) throw new Error(`scripts/${name}.sh down failed: ${(run.stderr ?? "").trim()}`)
}

/**
 * The lock a test holds while it logs in wrongly at the SASL broker and
 * counts the failed logins the broker logged ({@link exclusive}).
 */
export const LOGIN_COUNT_LOCK = "kafka-sasl-logins"

/** How long {@link exclusive} waits for another holder: longer than any section it guards (a few seconds). */
const LOCK_WAIT_MS = 120_000
/** How often a waiter looks again. */
const LOCK_POLL_MS = 50

/** Whether process `pid` exists (signal 0). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Runs `f` while holding the lock `name` (`.services/<name>.lock.d`, a folder
 * made atomically, holding the owner's pid), across processes: for a section
 * that counts what a shared service logged (failed logins at the SASL
 * broker), so that test files running in parallel do not count each other's.
 * A lock whose owner died is taken over; waiting is bounded.
 */
export const exclusive = async <A>(name: string, f: () => Promise<A>): Promise<A> => {
  const dir = join(SERVICES_DIR, `${name}.lock.d`)
  const deadline = Date.now() + LOCK_WAIT_MS
  mkdirSync(SERVICES_DIR, { recursive: true })
  while (true) {
    try {
      mkdirSync(dir)
      writeFileSync(join(dir, "pid"), String(process.pid))
      break
    } catch {
      let owner = Number.NaN
      try {
        owner = Number(readFileSync(join(dir, "pid"), "utf8"))
      } catch {
        // Made but its pid not written yet: wait.
      }
      if (Number.isInteger(owner) && owner > 0 && !alive(owner)) rmSync(dir, { recursive: true, force: true })
      else if (Date.now() > deadline) throw new Error(`lock ${dir} still held by pid ${owner} after ${LOCK_WAIT_MS} ms`)
      else await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS))
    }
  }
  try {
    return await f()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
