/**
 * The real services the examples' end-to-end tests talk to, from the env that
 * `npm test` sets (scripts/services.sh). A missing variable or a service that
 * does not answer fails the test with a message saying how to start them; no
 * test is ever skipped for it.
 */
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
