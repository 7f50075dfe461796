/**
 * A consumer-protocol group (KIP-848) as its coordinator describes it
 * (ConsumerGroupDescribe): the classic DescribeGroups answers such a group as
 * `Dead` with no members, and the admin client has no call for this one.
 * Used by `npm run scaleout -- --protocol consumer` to see the group from
 * outside the archivers.
 */
import { Admin, FindCoordinatorKeyTypes, findErrorBy, kGetApi, kGetConnection } from "@platformatic/kafka"
import type { API, consumerGroupDescribeV0 } from "@platformatic/kafka"

/** One member: its instance id (static membership) or null, its member id, the partitions it holds (reconciled). */
export interface Member {
  readonly instanceId: string | null
  readonly id: string
  readonly partitions: ReadonlyArray<number>
}

/** The group: its state as the broker names it (`Stable`, `Reconciling`, `Assigning`, `Empty`, `Dead`) and its members. */
export interface Described {
  readonly state: string
  readonly members: ReadonlyArray<Member>
}

type Args = [groupIds: Array<string>, includeAuthorizedOperations: boolean]
type Response = consumerGroupDescribeV0.ConsumerGroupDescribeResponse
type Connection = Parameters<Parameters<Admin[typeof kGetConnection]>[1]>[1]

const callback = <A>(f: (cb: (error: Error | null, value?: A) => void) => void): Promise<A> =>
  new Promise<A>((resolve, reject) =>
    f((error, value) => {
      if (error) reject(error)
      else resolve(value as A)
    })
  )

/** Describes `group` (its partitions of `topic` only); a group the broker does not know is `Dead` with no members. */
export const describe = async (admin: Admin, group: string, topic: string): Promise<Described> => {
  const [coordinator] = await admin.findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [group] })
  if (coordinator === undefined) throw new Error(`no coordinator for group ${group}`)
  const connection = await callback<Connection>((cb) => admin[kGetConnection]({ host: coordinator.host, port: coordinator.port }, cb))
  if (connection === undefined) throw new Error(`no connection to the coordinator of ${group}`)
  const api = await callback<API<Args, Response>>((cb) => admin[kGetApi]<Args, Response>("ConsumerGroupDescribe", cb))
  let response: Response
  try {
    response = await api.async(connection, [group], false)
  } catch (error) {
    // A group not created yet (no member joined) is answered GROUP_ID_NOT_FOUND, thrown by the client.
    if (findErrorBy(error instanceof Error ? error : null, "apiId", "GROUP_ID_NOT_FOUND") !== null) return { state: "Dead", members: [] }
    throw error
  }
  const found = response.groups.find((g) => g.groupId === group)
  if (found === undefined) return { state: "Dead", members: [] }
  return {
    state: found.groupState,
    members: found.members.map((m) => ({
      instanceId: m.instanceId ?? null,
      id: m.memberId,
      partitions: m.assignment.topicPartitions.filter((t) => t.topicName === topic).flatMap((t) => [...t.partitions])
    }))
  }
}
