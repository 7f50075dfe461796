/**
 * The real services the examples' end-to-end tests talk to, from the env that
 * `npm test` sets (scripts/services.sh). A missing variable or a service that
 * does not answer fails the test with a message saying how to start them; no
 * test is ever skipped for it.
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Producer } from "@platformatic/kafka"
import type { Admin } from "@platformatic/kafka"

export const HOW = "this test needs the real Kafka broker and S3 server (run `npm test`, or `bash scripts/services.sh up` and source .services/*.env)"

/** A required variable, trimmed; throws naming it when unset. */
export const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value.trim() === "") throw new Error(`${name} is not set: ${HOW}`)
  return value.trim()
}

/** Fails with a clear message when a service does not answer (never skips). */
export const reachable = <A>(what: string, request: Promise<A>): Promise<A> =>
  request.catch((cause: unknown) => {
    throw new Error(`${what} did not answer (${cause instanceof Error ? cause.message : String(cause)}): ${HOW}`, { cause })
  })

/** The brokers and the S3 endpoint and credentials. */
export const endpoints = () => {
  const [broker, ...moreBrokers] = env("SLUICE_KAFKA_BROKERS").split(",").map((b) => b.trim())
  const brokers: [string, ...Array<string>] = [broker ?? "", ...moreBrokers]
  const s3 = {
    endpoint: env("SLUICE_S3_ENDPOINT"),
    region: process.env["SLUICE_S3_REGION"] ?? "us-east-1",
    accessKeyId: env("SLUICE_S3_ACCESS_KEY"),
    secretAccessKey: env("SLUICE_S3_SECRET_KEY")
  }
  return { brokers, s3 }
}

/** An S3 client for `endpoint` with the S3 server's credentials, one attempt per request (a test sees every answer). */
export const s3Client = (s3: ReturnType<typeof endpoints>["s3"], endpoint: string): S3Client =>
  new S3Client({
    endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    maxAttempts: 1
  })

/**
 * The producer the examples' tests fill their topics with: idempotent, so the
 * broker appends a request the client retries only once. A plain producer
 * (`@platformatic/kafka`'s default) sends one Produce request per broker for
 * every partition of a `send` and retries it whole on a retriable error — a
 * lost answer, or an error for one partition only — so the partitions that
 * had been appended get every record again: that is how a topic of 2 × 500 records came to hold 1 000 in
 * partition 0 and the archiver rightly committed 1 500 (issue 24). The
 * client's idempotence keeps one sequence per partition, read when a request
 * is built and advanced when it is answered: at most one `send` at a time per
 * producer, or two requests would carry the same sequence (and the broker
 * would drop the second as a duplicate).
 */
export const testProducer = (brokers: ReadonlyArray<string>, clientId: string, options: { readonly retryDelay?: number } = {}): Producer =>
  new Producer({ clientId, bootstrapBrokers: [...brokers], idempotent: true, retries: 3, ...options })

/** The next offset of every partition of `topic` (its log end), read from the broker. */
export const logEnds = async (admin: Admin, topic: string, partitions: number): Promise<Array<number>> => {
  const listed = await admin.listOffsets({
    topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp: -1n })) }]
  })
  const ends = new Array<number>(partitions).fill(-1)
  for (const t of listed) for (const p of t.partitions) ends[p.partitionIndex] = Number(p.offset)
  return ends
}
