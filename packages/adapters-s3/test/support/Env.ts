/**
 * The real S3 server the integration tests run against (started by
 * `scripts/s3-server.sh up`, which writes `.services/s3.env`). A test that
 * cannot reach it fails with a message saying how to start it; none is skipped.
 */
import { CreateBucketCommand, ListBucketsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { Effect } from "effect"

export interface S3Env {
  readonly endpoint: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly region: string
}

const HOW = "start it with `bash scripts/s3-server.sh up && set -a && . .services/s3.env && set +a` " +
  "(or run `npm test`, which does both)"

export const env = (): S3Env => {
  const endpoint = process.env["SLUICE_S3_ENDPOINT"]
  const accessKeyId = process.env["SLUICE_S3_ACCESS_KEY"]
  const secretAccessKey = process.env["SLUICE_S3_SECRET_KEY"]
  if (endpoint === undefined || accessKeyId === undefined || secretAccessKey === undefined) {
    throw new Error(`S3 integration tests need SLUICE_S3_ENDPOINT, SLUICE_S3_ACCESS_KEY and SLUICE_S3_SECRET_KEY: ${HOW}`)
  }
  return { endpoint, accessKeyId, secretAccessKey, region: process.env["SLUICE_S3_REGION"] ?? "us-east-1" }
}

/** A plain client (SDK retries off) for test setup and inspection. */
export const client = (endpoint?: string): S3Client => {
  const e = env()
  return new S3Client({
    endpoint: endpoint ?? e.endpoint,
    region: e.region,
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: { accessKeyId: e.accessKeyId, secretAccessKey: e.secretAccessKey }
  })
}

/** Fails with a clear message when the server does not answer. */
export const requireServer = async (): Promise<void> => {
  const e = env()
  const c = client()
  try {
    await c.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(10_000) })
  } catch (cause) {
    throw new Error(`S3 server at ${e.endpoint} is not reachable (${String(cause)}): ${HOW}`)
  } finally {
    c.destroy()
  }
}

let counter = 0
/** Creates a fresh bucket with a unique name. */
export const newBucket = async (label: string): Promise<string> => {
  const name = `${label}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`.toLowerCase().slice(0, 63)
  const c = client()
  try {
    await c.send(new CreateBucketCommand({ Bucket: name }))
  } finally {
    c.destroy()
  }
  return name
}

/** Sink config for `bucket`, through `endpoint` (a fault proxy) or straight to the server. */
export const sinkConfig = (bucket: string, extra: Record<string, unknown> = {}, endpoint?: string) => {
  const e = env()
  return {
    bucket,
    endpoint: endpoint ?? e.endpoint,
    region: e.region,
    forcePathStyle: true,
    credentials: { accessKeyId: e.accessKeyId, secretAccessKey: e.secretAccessKey },
    ...extra
  }
}

/** Every key in a bucket. */
export const listKeys = async (bucket: string): Promise<Array<string>> => {
  const c = client()
  const keys: Array<string> = []
  try {
    let token: string | undefined
    do {
      const out = await c.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
      for (const o of out.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key)
      token = out.IsTruncated === true ? out.NextContinuationToken : undefined
    } while (token !== undefined)
  } finally {
    c.destroy()
  }
  return keys.sort()
}

/** Polls `check` every 20 ms until it holds; fails naming `what` after `timeoutMs` (generous: a bound, not a measurement). */
export const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

export const promise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)
