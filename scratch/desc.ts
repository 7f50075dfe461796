import { Effect, Scope, Exit, Stream } from "effect"
import * as KafkaSource from "../packages/adapters-kafka/src/KafkaSource.ts"
import { backlogTopic, brokers, getAdmin } from "../packages/adapters-kafka/test/support.ts"
const topic = await backlogTopic("kipdesc", 4, { count: 10, recordBytes: 100 })
const scope = Effect.runSync(Scope.make())
const src = await Effect.runPromise(KafkaSource.make({ brokers: brokers(), topic, mode: { kind: "group", groupId: topic + "-g", protocol: "consumer", instanceId: "i-0" } }).pipe(Scope.provide(scope)))
Effect.runFork(Stream.runForEach(src.events, (e) => e._tag === "PartitionsRevoked" ? e.acknowledge : Effect.void))
await new Promise((r) => setTimeout(r, 2000))
try { const d = await getAdmin().describeGroups({ groups: [topic + "-g"] }); console.log("describe", JSON.stringify([...d.values()].map((g) => ({ ...g, members: [...g.members.values()].map((m) => ({ ...m, assignments: [...(m.assignments?.entries() ?? [])] })) })), (k, v) => typeof v === "bigint" ? String(v) : v)) } catch (e) { console.log("describe failed", String(e), JSON.stringify((e as any).errors?.map((x: any) => x.message))) }
await Effect.runPromise(Scope.close(scope, Exit.void)); process.exit(0)
