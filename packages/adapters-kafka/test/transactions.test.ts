/**
 * Reading what a real broker stores besides plain batches: transactions
 * (committed, aborted, and their control markers) under both isolation levels,
 * and compressed batches (gzip, zstd), through `KafkaSource.events`.
 */
import { Producer } from "@platformatic/kafka"
import { Record } from "@sluice/core"
import { Effect, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as KafkaSource from "../src/KafkaSource.ts"
import { brokers, closeClients, createTopic, endOffsets, requireBroker, topicName } from "./support.ts"

afterAll(closeClients)

const text = new TextDecoder()

/** Every record value the source reads to the end, with its offset. */
const readAll = (topic: string, isolation: "read_committed" | "read_uncommitted") =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const source = yield* KafkaSource.make({
      brokers: brokers(),
      topic,
      clientId: `txn-${isolation}`,
      mode: { kind: "assign" },
      until: "caught-up",
      recordFormat: "value",
      isolation
    })
    const out: Array<readonly [number, string]> = []
    yield* Stream.runForEach(source.events, (event) =>
      Effect.sync(() => {
        if (event._tag !== "RecordChunk") return
        Record.payloadsOf(event)?.forEach((p, i) => out.push([event.offsets?.[i] ?? event.firstOffset + i, text.decode(p)]))
      }))
    return out
  })))

describe("KafkaSource on the real broker: transactions and compression", () => {
  it("read_committed drops an aborted transaction and the markers; read_uncommitted keeps its records; compressed batches read", async () => {
    await requireBroker()
    const topic = topicName("txn")
    await createTopic(topic, 1)
    const producer = new Producer({
      clientId: "sluice-test-txn",
      bootstrapBrokers: brokers(),
      idempotent: true,
      transactionalId: `${topic}-tx`,
      retries: 3
    })
    const plain = new Producer({ clientId: "sluice-test-zip", bootstrapBrokers: brokers(), idempotent: true, retries: 3 })
    const messages = (values: ReadonlyArray<string>) => values.map((v) => ({ topic, partition: 0, value: Buffer.from(v) }))
    try {
      const committed = await producer.beginTransaction()
      await committed.send({ messages: messages(["c0", "c1", "c2"]) })
      await committed.commit()
      const aborted = await producer.beginTransaction()
      await aborted.send({ messages: messages(["a0", "a1"]) })
      await aborted.abort()
      const again = await producer.beginTransaction()
      await again.send({ messages: messages(["c3", "c4"]) })
      await again.commit()
      await plain.send({ messages: messages(["g0", "g1", "g2"]), compression: "gzip" })
      await plain.send({ messages: messages(["z0", "z1"]), compression: "zstd" })
    } finally {
      await producer.close()
      await plain.close()
    }
    // 12 records and 3 transaction markers.
    expect(await endOffsets(topic, 1)).toEqual([15])
    const committedRead = await readAll(topic, "read_committed")
    expect(committedRead.map(([, v]) => v)).toEqual(["c0", "c1", "c2", "c3", "c4", "g0", "g1", "g2", "z0", "z1"])
    // Offsets from the log: c0–c2 at 0–2, marker 3, a0–a1 at 4–5, marker 6, c3–c4 at 7–8, marker 9.
    expect(committedRead.map(([o]) => o)).toEqual([0, 1, 2, 7, 8, 10, 11, 12, 13, 14])
    const everything = await readAll(topic, "read_uncommitted")
    expect(everything.map(([, v]) => v)).toEqual(["c0", "c1", "c2", "a0", "a1", "c3", "c4", "g0", "g1", "g2", "z0", "z1"])
  })
})
