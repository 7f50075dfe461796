/**
 * Group mode against the real broker, under each group protocol (classic, and
 * KIP-848's consumer protocol): a second member joins mid-run; the first
 * revokes partitions (open batches abandoned, no commit for a partition it no
 * longer owns) and no committed offset ever points past an unverified batch.
 * Every record archived twice (counted in the two sinks, from outside) is one a
 * member named as left on revoke (its `LeftOnRevoke` signals and
 * `recordsLeftOnRevoke`), and every record it named was archived twice.
 */
import { Fixed, Memory, Pipeline } from "@sluice/core"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as KafkaSource from "../src/KafkaSource.ts"
import {
  archived,
  backlogTopic,
  brokers,
  checkingSource,
  closeClients,
  commitsOf,
  complete,
  endOffsets,
  FULL_HISTORY,
  groupOffsets,
  groupTypeOf,
  partitionsOf,
  Ranges,
  verifyingSink,
  waitFor
} from "./support.ts"

const RECORD_BYTES = 100
/**
 * How long the group waits for a member to give up revoked partitions before
 * it fences the member (consumer protocol) or drops it (classic).
 */
const REBALANCE_TIMEOUT_MS = 20_000
/**
 * A member that gives up its revoked partitions hands them over within this
 * long of the new member's start: two heartbeat intervals of the broker under
 * the consumer protocol (5 s, its default: the old member learns of the new
 * one at its next heartbeat, the new one of its partitions at its own next),
 * and 2 s for the join, the pipeline's acknowledgement and a loaded machine;
 * under the rebalance timeout, so a member fenced at it cannot pass.
 */
const HANDOVER_MS = 2 * 5_000 + 2_000
/**
 * Each upload of member A takes this long, two at a time: A is still
 * uploading when B joins, so the revoke finds batches in flight, which a
 * revoke leaves stored and uncommitted (archived twice, and named). Under
 * the consumer protocol A learns of B up to a broker heartbeat (5 s) later,
 * so its backlog must take longer than that.
 */
const UPLOAD_A_MS = 60
/**
 * Each fetch takes about one batch (150 records of 100 B) of each partition,
 * so batches are sealed, and uploaded, partition after partition in turn
 * (with the 1 MiB default a fetch takes a partition's whole backlog, and A
 * uploads partition 0's before partition 1's).
 */
const FETCH_PARTITION_BYTES = 16 * 1024

afterAll(closeClients)

describe.each(["classic", "consumer"] as const)("consumer-group rebalance (%s protocol)", { timeout: 180_000 }, (protocol) => {
  it("two members: revoked partitions are never committed past an unverified batch", async () => {
    const partitions = 4
    const perPartition = 3000
    const topic = await backlogTopic(`rebalance-${protocol}`, partitions, { count: perPartition, recordBytes: RECORD_BYTES })
    const groupId = `${topic}-g`
    // The consumer protocol's session timeout and heartbeat interval are the broker's.
    const timing = protocol === "classic" ? { heartbeatInterval: 200, sessionTimeout: 6000 } : {}
    const mode = { kind: "group", groupId, protocol, ...timing, rebalanceTimeout: REBALANCE_TIMEOUT_MS } as const
    const config = { batch: { records: 150, maxAge: "100 millis" }, tick: 20 }
    const verified = new Ranges()

    const startMember = async (label: string, sink: Memory.MemorySink, concurrency: number) => {
      const scope = Effect.runSync(Scope.make())
      const kafka = await Effect.runPromise(
        KafkaSource.make({ brokers: brokers(), topic, clientId: label, mode, fetch: { maxWait: 100, partitionMaxBytes: FETCH_PARTITION_BYTES }, statsHistory: FULL_HISTORY }).pipe(Scope.provide(scope))
      )
      // Commits made by the owner of a partition before this member got it
      // were checked when they were made: start each check at 0 and let the
      // verified ranges (shared by both members) decide.
      const source = checkingSource(kafka, verified)
      const handle = await Effect.runPromise(Pipeline.start({ source, sink, config, policies: Fixed.layer({ concurrency }) }).pipe(Scope.provide(scope)))
      // What this member says a revoke left stored and not committed.
      const left = new Set<string>()
      await Effect.runPromise(Stream.runForEach(handle.bus.stream, (signal) =>
        Effect.sync(() => {
          if (signal._tag !== "LeftOnRevoke") return
          for (const r of signal.ranges) for (let o = r.firstOffset; o <= r.lastOffset; o++) left.add(`${signal.partition}/${o}`)
        })).pipe(Effect.forkIn(scope)))
      const fiber = Effect.runFork(handle.await)
      const stop = async () => {
        await Effect.runPromise(Fiber.interrupt(fiber))
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
      return { kafka, source, fiber, stop, left, stats: handle.stats }
    }

    // A: slow uploads, so that it is mid-way when B joins, with uploads in flight at the revoke.
    const sinkA = verifyingSink(verified, Memory.sink({ latencyMillis: () => UPLOAD_A_MS }))
    const a = await startMember("member-a", sinkA, 2)
    await waitFor("A owns every partition and committed some", () =>
      a.kafka.owned().length === partitions && a.kafka.stats.commits >= 4)
    const committedBeforeB = a.kafka.stats.commits

    const sinkB = verifyingSink(verified)
    const bStarted = Date.now()
    const b = await startMember("member-b", sinkB, 4)
    try {
      await waitFor("the rebalance", () => a.kafka.stats.revokes > 0 && b.kafka.owned().length > 0)
      const splitMs = Date.now() - bStarted
      const revokedFromA = partitionsOf(a.kafka, "Revoked").flat()
      const commitsAtRevoke = a.kafka.stats.commits
      await waitFor("every offset committed", async () => {
        const [committed, ends] = await Promise.all([groupOffsets(groupId, topic, partitions), endOffsets(topic, partitions)])
        return committed.every((o, p) => o === ends[p])
      })

      if (process.env["SLUICE_DEBUG"]) console.log(JSON.stringify({ revoked: partitionsOf(a.kafka, "Revoked"), skipped: a.kafka.stats.commitsSkipped, aCommits: a.kafka.stats.commits, bCommits: b.kafka.stats.commits, aOwned: a.kafka.owned(), bOwned: b.kafka.owned(), rebalances: a.kafka.stats.rebalances, seen: a.source.seen.map((e) => e._tag) }))
      // The group ran the protocol asked for (the broker says).
      expect(await groupTypeOf(groupId)).toBe(protocol)
      // A gave up its revoked partitions (the broker did not have to fence it at the rebalance timeout).
      expect(splitMs).toBeLessThan(HANDOVER_MS)
      // The rebalance happened mid-run and split the partitions.
      expect(committedBeforeB).toBeGreaterThan(0)
      expect(revokedFromA.length).toBeGreaterThan(0)
      expect(new Set([...a.kafka.owned(), ...b.kafka.owned()]).size).toBe(partitions)
      expect(a.kafka.owned().filter((p) => b.kafka.owned().includes(p))).toEqual([])
      // A never committed a partition after it lost it.
      expect(complete(a.kafka)).toBe(true)
      const lateCommits = commitsOf(a.kafka).slice(commitsAtRevoke).filter((c) => !a.kafka.owned().includes(c.partition))
      expect(lateCommits).toEqual([])
      // Every commit, by either member, covered only verified offsets.
      expect(a.source.violations).toEqual([])
      expect(b.source.violations).toEqual([])
      // The pipeline saw the revoke as an event (and acknowledged it).
      expect(a.source.seen.some((e) => e._tag === "PartitionsRevoked")).toBe(true)
      // No loss: every offset archived at least once, with the right bytes.
      const { counts, wrong } = archived(topic, [sinkA, sinkB], RECORD_BYTES)
      expect(wrong).toEqual([])
      for (let p = 0; p < partitions; p++) {
        for (let o = 0; o < perPartition; o++) expect(counts.get(`${p}/${o}`) ?? 0).toBeGreaterThanOrEqual(1)
      }
      // The duplicates, named: archived twice exactly where a member said a revoke left records.
      const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id).sort()
      const named = [...a.left, ...b.left].sort()
      if (process.env["SLUICE_DEBUG"]) console.log(JSON.stringify({ twice: twice.length, named: named.length, leftA: a.stats().recordsLeftOnRevoke, leftB: b.stats().recordsLeftOnRevoke }))
      expect(twice).toEqual(named)

      expect([...counts.values()].reduce((n, c) => n + c - 1, 0)).toBe(a.stats().recordsLeftOnRevoke + b.stats().recordsLeftOnRevoke)
      expect(a.fiber.pollUnsafe()).toBeUndefined()
      expect(b.fiber.pollUnsafe()).toBeUndefined()
    } finally {
      await b.stop()
      await a.stop()
    }
  })
})
