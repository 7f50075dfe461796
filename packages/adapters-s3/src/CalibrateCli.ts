/**
 * `sluice calibrate`: measures an S3-compatible store with a bounded sweep
 * (`Calibrate.sweep`), fits the testkit's store model to it
 * (`Calibration.fit`) and prints, per cell, what was measured beside what the
 * fitted model predicts, then the scenario `store` block:
 *
 * ```
 * sluice calibrate --bucket <b> [--endpoint <url>] [--region <r>] [--sizes 64KiB,1MiB,8MiB]
 *                  [--inflight 1,2,4,8,16,32] [--cell-seconds 3] [--json]
 * ```
 *
 * Exit codes: 0 fitted, 1 the sweep or the fit failed, 2 bad usage.
 *
 * @since 0.3.0
 */
import { Config } from "@sluice/core"
import { Effect, Result } from "effect"
import { parseArgs } from "node:util"
import { credentialsOf } from "./AuditCli.ts"
import * as Calibrate from "./Calibrate.ts"
import * as Calibration from "./Calibration.ts"
import * as S3Config from "./S3Config.ts"
import * as S3Sink from "./S3Sink.ts"

/**
 * The usage text (`sluice calibrate --help`).
 *
 * @since 0.3.0
 */
export const usage = `usage:
  sluice calibrate --bucket <bucket> [--endpoint <url>] [--region <region>] [--sizes <list>]
                   [--inflight <list>] [--cell-seconds <s>] [--json]

  calibrate: uploads objects of each size with each in-flight count in a closed loop for
  --cell-seconds (each worker overwrites one key; every key is deleted at the end), fits the
  simulator's store model (per-request latency, bandwidth per request, knee, jitter, throttle
  onset) and prints each cell's measured and modelled throughput, then a scenario "store" block.

  --bucket <bucket>      an existing bucket to write the sweep's objects in (required)
  --endpoint <url>       S3 endpoint, e.g. http://127.0.0.1:19000 (default: AWS); path-style addressing
  --region <region>      signing region (default: $SLUICE_S3_REGION, $AWS_REGION, else us-east-1)
  --sizes <list>         object sizes (default 64KiB,1MiB,8MiB; at least two)
  --inflight <list>      uploads at once (default 1,2,4,8,16,32; must include 1)
  --cell-seconds <s>     seconds per cell (default 3; at most ${Calibrate.Bounds.cellSeconds})
  --json                 print the fit as one JSON object on the last line

  bounds: at most ${Calibrate.Bounds.cells} cells, ${Calibrate.Bounds.inflight} in flight, objects of ${Calibrate.Bounds.objectBytes / 1024 / 1024} MiB
  credentials: $SLUICE_S3_ACCESS_KEY and $SLUICE_S3_SECRET_KEY when both are set, else the AWS SDK's chain

exit codes: 0 fitted, 1 the sweep or the fit failed, 2 bad usage`

/**
 * What the flags ask for.
 *
 * @since 0.3.0
 */
export interface CalibrateArgs {
  readonly bucket: string
  readonly endpoint: string | undefined
  readonly region: string
  readonly sizes: ReadonlyArray<number>
  readonly inflights: ReadonlyArray<number>
  readonly cellSeconds: number
  readonly json: boolean
}

/**
 * Parses the flags (after `calibrate`): the args, `"help"`, or a message
 * naming the bad flag and value.
 *
 * @since 0.3.0
 */
export const parse = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): CalibrateArgs | "help" | { readonly usageError: string } => {
  let values
  try {
    values = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        bucket: { type: "string" },
        endpoint: { type: "string" },
        region: { type: "string" },
        sizes: { type: "string", default: "64KiB,1MiB,8MiB" },
        inflight: { type: "string", default: "1,2,4,8,16,32" },
        "cell-seconds": { type: "string", default: "3" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false }
      }
    }).values
  } catch (error) {
    return { usageError: error instanceof Error ? error.message : String(error) }
  }
  if (values.help) return "help"
  if (values.bucket === undefined || values.bucket === "") return { usageError: "--bucket: required" }
  const sizes = values.sizes.split(",").map((t) => ({ t, n: Config.parseBytes(t) }))
  const badSize = sizes.find((s) => s.n === undefined || !(s.n >= 1 && s.n <= Calibrate.Bounds.objectBytes))
  if (badSize !== undefined) return { usageError: `--sizes: "${badSize.t}" is not a size of 1 B to 256 MiB (e.g. 64KiB, 8MiB)` }
  if (new Set(sizes.map((s) => s.n)).size < 2) return { usageError: `--sizes: at least two different sizes are needed to fit latency and bandwidth (got "${values.sizes}")` }
  const inflights = values.inflight.split(",").map((t) => ({ t, n: Number(t) }))
  const badInflight = inflights.find((i) => !Number.isInteger(i.n) || i.n < 1 || i.n > Calibrate.Bounds.inflight)
  if (badInflight !== undefined) return { usageError: `--inflight: "${badInflight.t}" is not a whole number of 1 to ${Calibrate.Bounds.inflight}` }
  if (!inflights.some((i) => i.n === 1)) return { usageError: `--inflight: must include 1 (the per-request cost is fitted there; got "${values.inflight}")` }
  if (sizes.length * inflights.length > Calibrate.Bounds.cells) {
    return { usageError: `--sizes × --inflight: ${sizes.length * inflights.length} cells, at most ${Calibrate.Bounds.cells}` }
  }
  const cellSeconds = Number(values["cell-seconds"])
  if (!(cellSeconds > 0 && cellSeconds <= Calibrate.Bounds.cellSeconds)) {
    return { usageError: `--cell-seconds: "${values["cell-seconds"]}" is not a number of seconds above 0 and at most ${Calibrate.Bounds.cellSeconds}` }
  }
  return {
    bucket: values.bucket,
    endpoint: values.endpoint,
    region: values.region ?? env["SLUICE_S3_REGION"] ?? env["AWS_REGION"] ?? "us-east-1",
    sizes: sizes.map((s) => s.n ?? 0),
    inflights: inflights.map((i) => i.n),
    cellSeconds,
    json: values.json
  }
}

const mb = (bytesPerSecond: number) => (bytesPerSecond / 1e6).toFixed(1)
const size = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${+(bytes / 1024 / 1024).toFixed(2)} MiB` : bytes >= 1024 ? `${+(bytes / 1024).toFixed(1)} KiB` : `${bytes} B`

/**
 * Runs `sluice calibrate`; returns the exit code.
 *
 * @since 0.3.0
 */
export const main = async (
  argv: ReadonlyArray<string>,
  print: (line: string) => void = (l) => console.log(l),
  printError: (line: string) => void = (l) => console.error(l),
  env: Readonly<Record<string, string | undefined>> = process.env
): Promise<number> => {
  const args = parse(argv, env)
  if (args === "help") {
    print(usage)
    return 0
  }
  if ("usageError" in args) {
    printError(`sluice calibrate: ${args.usageError}\n\n${usage}`)
    return 2
  }
  const credentials = credentialsOf(env)
  const decoded = Effect.runSync(Effect.result(S3Config.decode({
    bucket: args.bucket,
    region: args.region,
    maxAttempts: 1,
    ...(args.endpoint !== undefined ? { endpoint: args.endpoint, forcePathStyle: true } : {}),
    ...(credentials !== undefined ? { credentials } : {})
  })))
  if (Result.isFailure(decoded)) {
    printError(`sluice calibrate: ${decoded.failure.message}\n\n${usage}`)
    return 2
  }
  const config = decoded.success
  const client = S3Sink.makeClient(config)
  try {
    const cells = await Calibrate.sweep({
      client,
      bucket: args.bucket,
      prefix: `sluice-calibrate/${Date.now().toString(36)}`,
      sizes: args.sizes,
      inflights: args.inflights,
      cellSeconds: args.cellSeconds,
      onCell: (c) => printError(`calibrate: ${c.inflight} × ${size(c.objectBytes)}: ${mb(c.bytesPerSecond)} MB/s, ${c.latencyMeanMillis.toFixed(1)} ms, ${c.throttles}/${c.requests} throttled`)
    })
    const fit = Calibration.fit(cells)
    const m = fit.model
    print(`model: a = ${m.baseLatencyMillis.toFixed(2)} ms per request, b = 1 / (${mb(m.bandwidthBytesPerSecond)} MB/s), knee ${m.knee}, jitter ${m.jitter.toFixed(3)}, ` +
      (m.throttleAbove === null ? "no throttles" : `throttles above ${m.throttleAbove} in flight (${(100 * m.throttleProbability).toFixed(1)} %)`))
    print("in-flight  object     measured MB/s  model MB/s  error   mean ms  throttled")
    for (const f of fit.cells) {
      const c = f.cell
      print(`${String(c.inflight).padStart(9)}  ${size(c.objectBytes).padEnd(9)}  ${mb(c.bytesPerSecond).padStart(13)}  ${mb(f.modelBytesPerSecond).padStart(10)}  ${(100 * f.error).toFixed(1).padStart(5)} %  ${c.latencyMeanMillis.toFixed(1).padStart(7)}  ${c.throttles}/${c.requests}`)
    }
    print(`error: mean ${(100 * fit.meanError).toFixed(1)} %, max ${(100 * fit.maxError).toFixed(1)} %`)
    const store = Calibration.storeBlock(m)
    print(`"store": ${JSON.stringify(store)}`)
    if (args.json) print(JSON.stringify({ store, model: m, cells: fit.cells, meanError: fit.meanError, maxError: fit.maxError }))
    return 0
  } catch (error) {
    printError(`sluice calibrate: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  } finally {
    client.destroy()
  }
}
