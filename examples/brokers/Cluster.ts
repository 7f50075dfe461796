/**
 * brokers — the 3-node cluster `scripts/kafka-cluster.sh up` started, seen
 * through the Kafka admin API (@platformatic/kafka): where it is (from the
 * environment `.services/kafka-cluster.env` exports), topics with a chosen
 * replica placement, the ISR of each partition, each replica's size on each
 * broker, end offsets and a group's committed offsets, and the replication
 * throttle as dynamic configs. Every call is bounded by the client's timeout.
 */
import { Admin, ConfigResourceTypes, FindCoordinatorKeyTypes, IncrementalAlterConfigOperationTypes } from "@platformatic/kafka"
import { readFileSync } from "node:fs"
import { endOffsets } from "../bench/services.ts"
import { committedOffsets } from "../soak/KillRuns.ts"

/** Where the cluster and its certificates are. */
export interface ClusterEnv {
  /** PLAINTEXT listeners, node 1 first. */
  readonly brokers: [string, ...Array<string>]
  /** SSL (mTLS) listeners, same order. */
  readonly tlsBrokers: [string, ...Array<string>]
  /** Folder with ca.pem, client.pem, client.key. */
  readonly certs: string
  /** The JVM pid of node 1, 2, 3. */
  readonly pids: ReadonlyArray<number>
}

const list = (text: string): [string, ...Array<string>] => {
  const [first, ...rest] = text.split(",").map((s) => s.trim())
  return [first ?? "", ...rest]
}

/** The cluster named by the environment; throws naming the missing variable. */
export const fromEnv = (): ClusterEnv => {
  const env = (name: string): string => {
    const value = process.env[name]
    if (value === undefined || value.trim() === "") {
      throw new Error(`${name} is not set: run \`npm run brokers\` (it starts the cluster), or \`bash scripts/kafka-cluster.sh up\` and source .services/kafka-cluster.env`)
    }
    return value.trim()
  }
  return {
    brokers: list(env("SLUICE_KAFKA_CLUSTER_BROKERS")),
    tlsBrokers: list(env("SLUICE_KAFKA_CLUSTER_TLS_BROKERS")),
    certs: env("SLUICE_KAFKA_CLUSTER_CERTS"),
    pids: env("SLUICE_KAFKA_CLUSTER_PIDS").split(",").map(Number)
  }
}

/** The CA and client certificate PEM texts (`cert`/`key` left out for a client that has none). */
export const tlsOf = (cluster: ClusterEnv, withCertificate: boolean) => ({
  ca: readFileSync(`${cluster.certs}/ca.pem`, "utf8"),
  ...(withCertificate
    ? { cert: readFileSync(`${cluster.certs}/client.pem`, "utf8"), key: readFileSync(`${cluster.certs}/client.key`, "utf8") }
    : {})
})

/** An admin client on the PLAINTEXT listeners. */
export const admin = (cluster: ClusterEnv): Admin =>
  new Admin({ clientId: "sluice-brokers-admin", bootstrapBrokers: [...cluster.brokers], timeout: 15_000, retries: 3 })

/**
 * Creates `topic` with `replicas[p]` as partition p's replicas (the first is
 * its preferred leader) and `configs` as topic configs.
 */
export const createTopic = async (
  a: Admin,
  topic: string,
  replicas: ReadonlyArray<ReadonlyArray<number>>,
  configs: Readonly<Record<string, string>> = {}
): Promise<void> => {
  await a.createTopics({
    topics: [topic],
    assignments: replicas.map((brokers, partition) => ({ partition, brokers: [...brokers] })),
    configs: Object.entries(configs).map(([name, value]) => ({ name, value }))
  })
}

/** A partition's leader and ISR, fresh from the brokers. */
export interface PartitionState {
  readonly leader: number
  readonly isr: ReadonlyArray<number>
}

/** Every partition's leader and ISR (metadata asked afresh, not cached). */
export const partitions = async (a: Admin, topic: string): Promise<Array<PartitionState>> => {
  const metadata = await a.metadata({ topics: [topic], forceUpdate: true })
  const t = metadata.topics.get(topic)
  if (t === undefined) throw new Error(`topic ${topic} is not in the metadata`)
  return t.partitions.map((p) => ({ leader: p.leader, isr: [...p.isr] }))
}

/** Bytes of `topic`'s replicas held by each broker (`DescribeLogDirs`), summed over partitions. */
export const replicaBytes = async (a: Admin, topic: string, partitionCount: number): Promise<Map<number, number>> => {
  const answer = await a.describeLogDirs({ topics: [{ name: topic, partitions: Array.from({ length: partitionCount }, (_, i) => i) }] })
  const out = new Map<number, number>()
  for (const broker of answer) {
    let bytes = 0
    for (const dir of broker.results) {
      for (const t of dir.topics) if (t.name === topic) for (const p of t.partitions) if (!p.isFutureKey) bytes += Number(p.partitionSize)
    }
    out.set(broker.broker, bytes)
  }
  return out
}

/** Records in the topic now: the sum of the end offsets (topics here start at offset 0), and the ends. */
export const ends = (a: Admin, topic: string, partitionCount: number): Promise<Array<number>> => endOffsets(a, topic, partitionCount)

/** The group's committed offsets (-1: none), per partition. */
export const committed = (a: Admin, group: string, topic: string, partitionCount: number): Promise<Array<number>> =>
  committedOffsets(a, group, topic, partitionCount)

/** Records in the topic not committed by the group (ends − committed, summed). */
export const lagOf = (endsNow: ReadonlyArray<number>, committedNow: ReadonlyArray<number>): number =>
  endsNow.reduce((sum, end, p) => sum + Math.max(0, end - Math.max(0, committedNow[p] ?? 0)), 0)

/** The node that coordinates `group` (the leader of its `__consumer_offsets` partition). */
export const coordinatorOf = async (a: Admin, group: string): Promise<number> => {
  const [found] = await a.findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [group] })
  if (found === undefined) throw new Error(`no coordinator for group ${group}`)
  return found.nodeId
}

const set = (name: string, value: string) => ({ name, value, configOperation: IncrementalAlterConfigOperationTypes.SET })
const remove = (name: string) => ({ name, configOperation: IncrementalAlterConfigOperationTypes.DELETE })

/**
 * Throttles replication of `topic` to `follower`: on the topic,
 * `follower.replication.throttled.replicas` lists the follower's replica of
 * every partition and `leader.replication.throttled.replicas` every other
 * replica (the leaders it fetches from); on the follower,
 * `follower.replication.throttled.rate = followerBytesPerSecond`, and on the
 * others `leader.replication.throttled.rate = leaderBytesPerSecond`. Kafka
 * applies the throttle only to replicas out of the ISR (the reassignment
 * use): a follower that fell out stays out while the throttle is slower than
 * the produce rate. The leader-side quota counts the bytes of *every*
 * follower fetching a throttled partition, in-sync ones too, so a leader rate
 * below the in-sync replication traffic stops the out-of-sync follower
 * altogether (measured: 0 B/s at 512 KiB/s); give the leaders headroom to
 * slow it to the follower rate instead.
 */
export const setThrottle = async (
  a: Admin,
  topic: string,
  replicas: ReadonlyArray<ReadonlyArray<number>>,
  follower: number,
  followerBytesPerSecond: number,
  leaderBytesPerSecond: number
): Promise<void> => {
  const followerReplicas = replicas.map((_, p) => `${p}:${follower}`).join(",")
  const leaderReplicas = replicas.flatMap((brokers, p) => brokers.filter((b) => b !== follower).map((b) => `${p}:${b}`)).join(",")
  const brokers = [...new Set(replicas.flat())]
  await a.incrementalAlterConfigs({
    resources: [
      {
        resourceType: ConfigResourceTypes.TOPIC,
        resourceName: topic,
        configs: [set("follower.replication.throttled.replicas", followerReplicas), set("leader.replication.throttled.replicas", leaderReplicas)]
      },
      ...brokers.map((b) => ({
        resourceType: ConfigResourceTypes.BROKER,
        resourceName: String(b),
        configs: [
          b === follower
            ? set("follower.replication.throttled.rate", String(followerBytesPerSecond))
            : set("leader.replication.throttled.rate", String(leaderBytesPerSecond))
        ]
      }))
    ]
  })
}

/** Removes what {@link setThrottle} set. */
export const clearThrottle = async (a: Admin, topic: string, brokers: ReadonlyArray<number>): Promise<void> => {
  await a.incrementalAlterConfigs({
    resources: [
      {
        resourceType: ConfigResourceTypes.TOPIC,
        resourceName: topic,
        configs: [remove("follower.replication.throttled.replicas"), remove("leader.replication.throttled.replicas")]
      },
      ...brokers.map((b) => ({
        resourceType: ConfigResourceTypes.BROKER,
        resourceName: String(b),
        configs: [remove("follower.replication.throttled.rate"), remove("leader.replication.throttled.rate")]
      }))
    ]
  })
}
