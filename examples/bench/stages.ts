/**
 * Where an archiver's main thread spends its CPU, per stage, from a V8 CPU
 * profile (`bench:e2e --cpu-prof DIR` writes one per contender run):
 *
 * ```sh
 * npm run bench:e2e -- --rounds 1 --cpu-prof /tmp/prof
 * npm run bench:stages -- /tmp/prof/<the Sluice run's>.cpuprofile --records 1000000
 * ```
 *
 * Each sample's time goes to the stage of the nearest frame, from the leaf up,
 * that names one ({@link stageOf}: by the frame's script and function), so a
 * native call (`Uint8Array.set`, a hash) counts for the stage that made it.
 * The profile covers the whole child process, its start included (loading and
 * type-stripping the sources, `@platformatic/kafka` compiling its option
 * schemas): that stage is listed, and the total is also given without it.
 * Prints a Markdown table: per stage, its share of the busy time (idle left
 * out) and microseconds per record (`--records`: the records the run
 * archived). Only the main thread is sampled: the threads libuv and V8 run
 * beside it (the GC's helpers, the thread pool) are not in the profile, so
 * the total is below what `/proc` counts for the process.
 *
 * The command line is read with `effect/cli` ({@link command}, {@link decode}).
 */
import { readFileSync } from "node:fs"
import * as CommandLine from "@sluice/core/CommandLine"
import { Result } from "effect"
import { Argument, Flag } from "effect/cli"
import { readLine } from "./cli.ts"

/** The stages, in the order the table lists them. */
export const stages = [
  "process start (module loading, type stripping, ajv schema compiling)",
  "Kafka read (fetch, decode, envelopes)",
  "body encoding (framing, copy)",
  "CRC32 (@node-rs/crc32; node:zlib, core's Crc32 where it does not load)",
  "S3 client (AWS SDK, Smithy, the S3 adapter)",
  "HTTP and sockets (node:http, net, tls, streams)",
  "pipeline stages (core: admission, sealer, limiter, uploader, committer)",
  "policies",
  "Effect runtime (fibers, scheduling)",
  "garbage collection",
  "V8 and native, unattributed ((program))",
  "other"
] as const
/** A stage. */
export type Stage = (typeof stages)[number]

interface CallFrame {
  readonly functionName: string
  readonly url: string
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
/** The parts of a `.cpuprofile` read here. */
export interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The stage a frame names, or `undefined` (a native frame: its caller's stage). "idle" and "root" are not stages. */
export const stageOf = (frame: CallFrame): Stage | "idle" | "root" | undefined => {
  const { functionName: fn, url } = frame
  if (fn === "(idle)") return "idle"
  if (fn === "(root)") return "root"
  if (fn === "(garbage collector)") return "garbage collection"
  if (fn === "(program)") return "V8 and native, unattributed ((program))"
  if (/^node:internal\/(modules|bootstrap|deps\/amaro)/.test(url) || url.includes("node_modules/ajv/") || url.startsWith("wasm://")) {
    return "process start (module loading, type stripping, ajv schema compiling)"
  }
  if (/crc32/i.test(fn) || url === "node:zlib" || /core\/(src|dist\/src)\/(Crc32|internal\/crcHelper)\./.test(url)) return "CRC32 (@node-rs/crc32; node:zlib, core's Crc32 where it does not load)"
  if (url.includes("@platformatic/kafka") || url.includes("@platformatic/dynamic-buffer") || url.includes("adapters-kafka/") || url.includes("adapter-kafka/")) return "Kafka read (fetch, decode, envelopes)"
  if (/core\/(src|dist\/src)\/(Batch|internal\/bodies|internal\/frames|Compression)\./.test(url)) return "body encoding (framing, copy)"
  if (url.includes("@aws-sdk") || url.includes("@smithy") || url.includes("adapters-s3/") || url.includes("adapter-s3/")) return "S3 client (AWS SDK, Smithy, the S3 adapter)"
  if (/^node:(_http|http|https|net|tls|_tls|stream|internal\/streams|internal\/http|internal\/stream_base_commons)/.test(url)) {
    return "HTTP and sockets (node:http, net, tls, streams)"
  }
  if (url.includes("policies/src/") || url.includes("policies/dist/")) return "policies"
  if (url.includes("core/src/") || url.includes("core/dist/")) return "pipeline stages (core: admission, sealer, limiter, uploader, committer)"
  if (url.includes("node_modules/effect/")) return "Effect runtime (fibers, scheduling)"
  // Natives and Node's helpers (a copy, a decode, a URL): the caller's stage.
  if (url === "" || /^node:(buffer|internal\/encoding|internal\/url|internal\/buffer|internal\/util)/.test(url)) return undefined
  return "other"
}

/** Busy microseconds per stage, and the idle time, from a profile. */
export const byStage = (profile: Profile): { readonly busy: Map<Stage, number>; readonly idleMicros: number } => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const stageOfNode = new Map<number, Stage | "idle">()
  const resolve = (id: number): Stage | "idle" => {
    const known = stageOfNode.get(id)
    if (known !== undefined) return known
    const node = byId.get(id)
    const own = node === undefined ? "root" : stageOf(node.callFrame)
    const up = parent.get(id)
    const stage: Stage | "idle" = own === "root" ? "other" : own ?? (up === undefined ? "other" : resolve(up))
    stageOfNode.set(id, stage)
    return stage
  }
  const busy = new Map<Stage, number>()
  let idleMicros = 0
  profile.samples.forEach((id, i) => {
    // V8 gives each sample the time since the previous one.
    const micros = profile.timeDeltas[i] ?? 0
    const stage = resolve(id)
    if (stage === "idle") idleMicros += micros
    else busy.set(stage, (busy.get(stage) ?? 0) + micros)
  })
  return { busy, idleMicros }
}

/** The Markdown table of {@link byStage} for `records` records. */
export const table = (profile: Profile, records: number): string => {
  const { busy, idleMicros } = byStage(profile)
  const total = [...busy.values()].reduce((a, b) => a + b, 0)
  const rows = stages.filter((s) => (busy.get(s) ?? 0) > 0).map((s) => {
    const micros = busy.get(s) ?? 0
    return `| ${s} | ${((100 * micros) / total).toFixed(1)} % | ${(micros / records).toFixed(3)} |`
  })
  const start = busy.get("process start (module loading, type stripping, ajv schema compiling)") ?? 0
  return [
    "| stage | share of the main thread's busy time | µs per record |",
    "|---|---:|---:|",
    ...rows,
    `| **main thread, busy** | 100 % | **${(total / records).toFixed(3)}** |`,
    `| **main thread, busy, the process start left out** | ${((100 * (total - start)) / total).toFixed(1)} % | **${((total - start) / records).toFixed(3)}** |`,
    `| (idle, not counted) | ${((100 * idleMicros) / (total + idleMicros)).toFixed(1)} % of the profile | |`
  ].join("\n")
}

/** The command line: the profile, and the records the run archived. */
export const command = CommandLine.script("stages", {
  profile: Argument.String("profile").pipe(
    Argument.withDescription("a V8 CPU profile (.cpuprofile), e.g. one bench:e2e --cpu-prof wrote for a Sluice run")
  ),
  records: Flag.Finite("records").pipe(Flag.withMetavar("n"), Flag.withDescription("the records the profiled run archived (µs per record divide by it)"))
}, "Where an archiver's main thread spends its CPU, per stage, from a V8 CPU profile: a Markdown table of each stage's share of the busy time and µs per record.", { invocation: "npm run bench:stages --" })

/** Reads the argument list: the profile's path and the records (a number > 0), the help, a completion script, or what is wrong. */
export const decode = (argv: ReadonlyArray<string>): CommandLine.ScriptLine<{ readonly profile: string; readonly records: number }> =>
  readLine(command, argv, (flags) =>
    flags.records > 0 ? Result.succeed(flags) : Result.fail("usage: npm run bench:stages -- PROFILE.cpuprofile --records N"))

if (import.meta.main) {
  const options = CommandLine.settle(decode(process.argv.slice(2)), command.help)
  if (options !== undefined) {
    process.stdout.write(`${table(JSON.parse(readFileSync(options.profile, "utf8")) as Profile, options.records)}\n`)
  }
}
