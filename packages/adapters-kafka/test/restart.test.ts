/**
 * Restarts of a group member against the real broker, each member in its own
 * process (`fixtures/group-member.ts`) so that a crash is a real SIGKILL:
 *
 * - a member that drains (SIGTERM) leaves the group as its source closes: the
 *   next member gets every partition at once, not after the session timeout;
 * - a killed member with static membership (`instanceId`) is replaced by its
 *   restart at once;
 * - without an instance id the killed member holds its partitions until the
 *   session timeout expires it (the wait the two above remove);
 * - under KIP-848's consumer protocol, the drains are as prompt, but a killed
 *   static member is not replaced: its restart waits for the session timeout.
 *
 * Timed from outside: from the restart's spawn until the process reports
 * every partition owned, and the group's description (admin API) shows it
 * stable with that one member holding them all.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { closeClients, createTopic, getAdmin, requireBroker, sleep, topicName, waitFor } from "./support.ts"

afterAll(closeClients)

/** The broker expires a silent member after this long (its `group.min.session.timeout.ms` is 6 s). */
const SESSION_TIMEOUT_MS = 12_000
/**
 * A restart that does not wait for the session timeout owns its partitions
 * within this long of its spawn: the process's start (~1.5 s of module
 * loading on this machine) and one join, with room for a loaded machine;
 * half the session timeout, so a restart that waits it out cannot pass.
 */
const PROMPT_MS = SESSION_TIMEOUT_MS / 2
const PARTITIONS = 4
const fixture = fileURLToPath(new URL("./fixtures/group-member.ts", import.meta.url))

interface Member {
  readonly child: ChildProcess
  /** The partitions it reported owning last. */
  owned: ReadonlyArray<number>
  stderr: string
}

const running = new Set<ChildProcess>()
afterEach(() => {
  for (const child of running) child.kill("SIGKILL")
  running.clear()
})

type Protocol = "classic" | "consumer"

const startMember = (topic: string, group: string, instanceId: string | undefined, protocol: Protocol): Member => {
  const child = spawn(
    process.execPath,
    ["--conditions=@sluice/source", fixture, topic, group, String(SESSION_TIMEOUT_MS), ...(instanceId === undefined ? [] : [instanceId])],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, SLUICE_GROUP_PROTOCOL: protocol } }
  )
  running.add(child)
  const member: Member = { child, owned: [], stderr: "" }
  let line = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (line + chunk.toString("utf8")).split("\n")
    line = lines.pop() ?? ""
    // Its log lines (a warning of a failed heartbeat) go to stdout too: keep the last report.
    const last = lines.filter((l) => l.startsWith("{\"owned\"")).at(-1)
    if (last !== undefined) member.owned = (JSON.parse(last) as { owned: ReadonlyArray<number> }).owned
    for (const l of lines) if (!l.startsWith("{\"owned\"")) member.stderr = (member.stderr + l + "\n").slice(-4096)
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    member.stderr = (member.stderr + chunk.toString("utf8")).slice(-4096)
  })
  return member
}

const exited = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((resolve) => child.once("exit", (code) => resolve(code)))

/** Ms from `since` until `member` owns every partition; fails after `limitMs` or if it exits. */
const ownsAll = async (member: Member, since: number, limitMs: number): Promise<number> => {
  for (;;) {
    if (member.owned.length === PARTITIONS) return Date.now() - since
    if (member.child.exitCode !== null) throw new Error(`the member exited (${member.child.exitCode}): ${member.stderr}`)
    if (Date.now() - since > limitMs) throw new Error(`the member owned ${JSON.stringify(member.owned)} after ${limitMs} ms: ${member.stderr}`)
    await sleep(25)
  }
}

/** The group, from outside: its state, and each member's instance id and partition count. */
const describeGroup = async (group: string) => {
  const described = (await getAdmin().describeGroups({ groups: [group] })).get(group)
  const members = [...(described?.members.values() ?? [])].map((m) => ({
    instanceId: m.groupInstanceId,
    partitions: [...(m.assignments?.values() ?? [])].reduce((n, a) => n + a.partitions.length, 0)
  }))
  return { state: String(described?.state).toUpperCase(), members }
}

/** One restart: the first member owns everything, is stopped with `signal`, and a second starts at once. */
const restart = async (label: string, signal: "SIGTERM" | "SIGKILL", instanceId: string | undefined, protocol: Protocol = "classic") => {
  await requireBroker()
  const topic = topicName(label)
  await createTopic(topic, PARTITIONS)
  const group = `${topic}-g`
  const first = startMember(topic, group, instanceId, protocol)
  await ownsAll(first, Date.now(), 30_000)
  first.child.kill(signal)
  const code = await exited(first.child)
  const spawned = Date.now()
  const second = startMember(topic, group, instanceId, protocol)
  const ownedAfterMs = await ownsAll(second, spawned, SESSION_TIMEOUT_MS * 3)
  return { code, ownedAfterMs, second, group }
}

describe("restarts of a group member", { timeout: 120_000 }, () => {
  it("SIGTERM: the drained member left the group, so the next one owns every partition at once", async () => {
    const { code, ownedAfterMs, group } = await restart("restart-term", "SIGTERM", undefined)
    expect(code).toBe(0)
    expect(ownedAfterMs).toBeLessThan(PROMPT_MS)
    const seen = await describeGroup(group)
    expect(seen.state).toBe("STABLE")
    expect(seen.members).toEqual([{ instanceId: null, partitions: PARTITIONS }])
  })

  it("SIGKILL with static membership: the restart replaces the dead member at once", async () => {
    const { ownedAfterMs, group } = await restart("restart-static", "SIGKILL", "archiver-0")
    expect(ownedAfterMs).toBeLessThan(PROMPT_MS)
    const seen = await describeGroup(group)
    expect(seen.state).toBe("STABLE")
    expect(seen.members).toEqual([{ instanceId: "archiver-0", partitions: PARTITIONS }])
  })

  it("SIGTERM with static membership: the drained static member left, and its restart owns every partition at once", async () => {
    const { code, ownedAfterMs, group } = await restart("restart-static-term", "SIGTERM", "archiver-0")
    expect(code).toBe(0)
    expect(ownedAfterMs).toBeLessThan(PROMPT_MS)
    const seen = await describeGroup(group)
    expect(seen.members).toEqual([{ instanceId: "archiver-0", partitions: PARTITIONS }])
  })

  it("SIGKILL without an instance id: the restart waits until the session timeout expires the dead member", async () => {
    const { ownedAfterMs } = await restart("restart-kill", "SIGKILL", undefined)
    // The dead member's last heartbeat came at most one heartbeat interval (500 ms) before the kill.
    expect(ownedAfterMs).toBeGreaterThan(SESSION_TIMEOUT_MS - 1000)
  })
})

/** The broker's heartbeat interval under the consumer protocol (`group.consumer.heartbeat.interval.ms`, its default: `scripts/kafka-broker.sh` keeps it). */
const CONSUMER_HEARTBEAT_MS = 5_000

/** The group as the broker lists it (ListGroups: state and type), from outside. */
const listedGroup = async (group: string) => {
  const listed = (await getAdmin().listGroups({ types: ["classic", "consumer"] })).get(group)
  return { state: String(listed?.state).toUpperCase(), type: listed?.groupType }
}

/**
 * The same restarts under KIP-848's consumer protocol, whose session timeout
 * is the broker's (`group.consumer.session.timeout.ms`, 12 s on the test
 * broker, the classic tests' own).
 */
describe("restarts of a group member (consumer protocol)", { timeout: 120_000 }, () => {
  it("SIGTERM: the drained member left the group (a heartbeat at epoch -1), so the next one owns every partition at once", async () => {
    const { code, group, ownedAfterMs } = await restart("restart-kip848-term", "SIGTERM", undefined, "consumer")
    expect(code).toBe(0)
    expect(ownedAfterMs).toBeLessThan(PROMPT_MS)
    expect(await listedGroup(group)).toEqual({ state: "STABLE", type: "consumer" })
  })

  it("SIGTERM with static membership: the drained static member left, and its restart owns every partition at once", async () => {
    const { code, group, ownedAfterMs } = await restart("restart-kip848-static-term", "SIGTERM", "archiver-0", "consumer")
    expect(code).toBe(0)
    expect(ownedAfterMs).toBeLessThan(PROMPT_MS)
    expect(await listedGroup(group)).toEqual({ state: "STABLE", type: "consumer" })
  })

  it("a member paused past the session timeout is fenced: it gives up every partition and rejoins, and the group splits them again", async () => {
    await requireBroker()
    const topic = topicName("restart-kip848-fence")
    await createTopic(topic, PARTITIONS)
    const group = `${topic}-g`
    const first = startMember(topic, group, undefined, "consumer")
    await ownsAll(first, Date.now(), 30_000)
    const second = startMember(topic, group, undefined, "consumer")
    const split = () => first.owned.length > 0 && second.owned.length > 0 && first.owned.length + second.owned.length === PARTITIONS
    await waitFor("the first split", split, 30_000)
    // Frozen (no heartbeat) past the session timeout: the broker expires it and gives its partitions to the other.
    first.child.kill("SIGSTOP")
    await waitFor("the other member owns every partition", () => second.owned.length === PARTITIONS, SESSION_TIMEOUT_MS * 3)
    first.child.kill("SIGCONT")
    // Back: its next heartbeat is refused (its member is gone), it rejoins, and the group splits again.
    await waitFor("the second split", () => /fenced by the group coordinator/.test(first.stderr) && split(), SESSION_TIMEOUT_MS * 3)
    expect(first.owned.filter((p) => second.owned.includes(p))).toEqual([])
    expect(first.child.exitCode).toBeNull()
    expect(await listedGroup(group)).toEqual({ state: "STABLE", type: "consumer" })
  })

  it("SIGKILL with static membership: unlike the classic protocol, the restart waits until the session timeout expires the dead member", async () => {
    // The broker refuses the instance id while the dead member holds it (UNRELEASED_INSTANCE_ID); the source retries.
    const { ownedAfterMs } = await restart("restart-kip848-static-kill", "SIGKILL", "archiver-0", "consumer")
    // The dead member's last heartbeat came at most one broker heartbeat interval before the kill.
    expect(ownedAfterMs).toBeGreaterThan(SESSION_TIMEOUT_MS - CONSUMER_HEARTBEAT_MS - 1000)
  })
})
