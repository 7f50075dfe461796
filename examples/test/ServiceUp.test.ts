/**
 * A service script's `up` that finds its service's process running but not
 * answering its health probe waits for it, within the bound a fresh start gets,
 * and keeps it: it does not kill and restart a service other test files are
 * using, nor refuse it. Found in CI on a loaded machine, where the suite's
 * on-demand services were probed while slow. A process still not answering at
 * the bound is restarted (kafka-sasl.sh, s3-tls.sh) or refused (s3-server.sh,
 * toxiproxy.sh) as before.
 *
 * "Not answering" is made from outside: the process is stopped with SIGSTOP
 * (its port accepts, nothing answers) and continued while `up` waits. Each run
 * uses its own services folder and a free port, so the suite's own instances
 * are never touched. Checked on the two fast-starting scripts (versitygw over
 * HTTPS, toxiproxy); the JVM brokers' `up`s call the same `await_healthy`.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { alive, REPO_ROOT } from "../../scripts/lib/LazyService.ts"

/** A port free now on 127.0.0.1 (the kernel's pick). */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

interface Instance {
  readonly script: string
  readonly env: NodeJS.ProcessEnv
  readonly pidFile: string
}

const run = (instance: Instance, command: string) =>
  spawnSync("bash", [join(REPO_ROOT, "scripts", instance.script), command], { cwd: REPO_ROOT, env: instance.env, encoding: "utf8", timeout: 120_000 })

/** `up` in the background; resolves with its exit code and stderr. */
const upAsync = (instance: Instance): Promise<{ readonly code: number | null; readonly stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn("bash", [join(REPO_ROOT, "scripts", instance.script), "up"], { cwd: REPO_ROOT, env: instance.env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("close", (code) => resolve({ code, stderr }))
  })

const pidOf = (instance: Instance): number => Number(readFileSync(instance.pidFile, "utf8").trim())

/** How long the stopped process stays stopped while `up` waits: longer than any one health probe (2 s). */
const STOPPED_MS = 4_000

const dirs: Array<string> = []
const started: Array<Instance> = []
/** A private instance made by `make` on a free port, brought up; returns it and its pid. */
const upInstance = async (make: (dir: string, port: number) => Instance): Promise<{ readonly instance: Instance; readonly pid: number }> => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-service-up-"))
  dirs.push(dir)
  const instance = make(dir, await freePort())
  const first = run(instance, "up")
  expect(first.status, first.stderr).toBe(0)
  started.push(instance)
  return { instance, pid: pidOf(instance) }
}

afterEach(() => {
  for (const instance of started.splice(0)) {
    if (alive(pidOf(instance))) process.kill(pidOf(instance), "SIGCONT")
    run(instance, "down")
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const instances: ReadonlyArray<{ readonly name: string; readonly make: (dir: string, port: number) => Instance }> = [
  {
    name: "s3-tls.sh",
    make: (dir, port) => ({
      script: "s3-tls.sh",
      env: { ...process.env, SLUICE_SERVICES_DIR: dir, SLUICE_S3_TLS_PORT: String(port), SLUICE_S3_START_TIMEOUT: "30" },
      pidFile: join(dir, "s3-tls", "pid")
    })
  },
  {
    name: "toxiproxy.sh",
    make: (dir, port) => ({
      script: "toxiproxy.sh",
      env: { ...process.env, SLUICE_SERVICES_DIR: dir, SLUICE_TOXIPROXY_PORT: String(port) },
      pidFile: join(dir, "toxiproxy.pid")
    })
  }
]

describe("a service script's up on a running service that does not answer yet", () => {
  for (const { name, make } of instances) {
    it(`${name}: waits for it and keeps the same process`, { timeout: 120_000 }, async () => {
      const { instance, pid } = await upInstance(make)

      process.kill(pid, "SIGSTOP")
      const second = upAsync(instance)
      await new Promise((resolve) => setTimeout(resolve, STOPPED_MS))
      process.kill(pid, "SIGCONT")
      const { code, stderr } = await second

      expect(code, stderr).toBe(0)
      expect(pidOf(instance), stderr).toBe(pid)
      expect(alive(pid)).toBe(true)
      expect(run(instance, "status").status).toBe(0)
    })
  }

  it("s3-tls.sh: restarts one still not answering at the start bound", { timeout: 120_000 }, async () => {
    const { instance: base, pid } = await upInstance(make3sTls)

    process.kill(pid, "SIGSTOP")
    const second = run(base, "up")

    expect(second.status, second.stderr).toBe(0)
    expect(second.stderr).toMatch(/not answering after 3s; restarting it/)
    expect(pidOf(base)).not.toBe(pid)
    expect(alive(pid)).toBe(false)
    expect(run(base, "status").status).toBe(0)
  })
})

/** s3-tls.sh with a 3 s start bound, so that a never-answering process is given up on quickly. */
const make3sTls = (dir: string, port: number): Instance => ({
  script: "s3-tls.sh",
  env: { ...process.env, SLUICE_SERVICES_DIR: dir, SLUICE_S3_TLS_PORT: String(port), SLUICE_S3_START_TIMEOUT: "3" },
  pidFile: join(dir, "s3-tls", "pid")
})
