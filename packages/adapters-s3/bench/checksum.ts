/**
 * Checksum benchmark: MB/s on one core (10^6 bytes per second, the main thread)
 * of every checksum the S3 sink could send, over 16 MiB buffers, and each one's
 * ratio to the SDK's pure-JS CRC-64/NVME measured in the same run.
 *
 * Why it matters: the sink computes the checksum on the event loop inside the
 * `object_upload` call the pipeline times, so a slow checksum reads as store
 * latency to the policies.
 *
 * Candidates:
 * - `CRC64NVME js`: `Crc64NvmeJs` from `@aws-sdk/checksums/crc` (what the SDK
 *   and the sink use unless the CRT is installed).
 * - `CRC32C js`: `Crc32c` from `@aws-sdk/checksums/crc` (pure JS).
 * - `SHA256 node:crypto`: `createHash("sha256")` (OpenSSL).
 * - `CRC32 node:zlib`: `zlib.crc32` (native, Node ≥ 22.2).
 * - `CRC32 @node-rs/crc32` and `CRC32C @node-rs/crc32`: the CPU's CRC
 *   instructions (what the sink uses where that module loads).
 * - `CRC32 sink multipart`: what the sink does for a multipart upload with
 *   8 MiB parts: one CRC-32 per part, with what `Checksums.digest` computes
 *   it with (`@node-rs/crc32`, else `zlib.crc32`; called directly, as the
 *   round is synchronous), plus `Checksums.fullObjectOf`.
 * - `CRC64NVME crt`: `CrtCrc64Nvme` from `@aws-sdk/crc64-nvme-crt` (native,
 *   `aws-crt`), only if it resolves (it is not a dependency: 73 packages and
 *   66 MB installed); `--crt-dir <dir>` names a folder where it is installed.
 *
 * Each round runs every candidate in turn (interleaved, so drift hits them
 * alike) for at least `--millis` (default 300) ms; a candidate's figure is the
 * median of its rounds (`--rounds`, default 5, at least 3), after one warm-up
 * round that is not counted.
 *
 *   npm run bench:checksum
 *   npm run bench:checksum -- --json            # last line: one JSON object
 *   npm run bench:checksum -- --crt-dir /tmp/crt # with the CRT candidate
 *
 * The command line is read with `effect/cli` ({@link command}: `-- --help`).
 */
import { createHash, randomFillSync } from "node:crypto"
import { createRequire } from "node:module"
import { join, resolve } from "node:path"
import { crc32 } from "node:zlib"
import { Crc32c, Crc64NvmeJs } from "@aws-sdk/checksums/crc"
import * as CommandLine from "@sluice/core/CommandLine"
import { Option } from "effect"
import { Flag } from "effect/cli"
import * as Checksums from "../src/Checksums.ts"
import * as SimdCrc from "../src/internal/SimdCrc.ts"

const MiB = 1024 * 1024
const BUFFER_BYTES = 16 * MiB
const PART_BYTES = 8 * MiB
/** Fewest rounds: a median of fewer says little. */
const MIN_ROUNDS = 3
/** Shortest round: below it a round is a few buffers and the timer's resolution shows. */
const MIN_MILLIS = 50

/** `bench:checksum`'s command line. */
export const command = CommandLine.script("bench:checksum", {
  json: CommandLine.switchFlag("json", "after the table, one JSON object on the last line"),
  rounds: Flag.Int("rounds").pipe(
    Flag.withMetavar("n"),
    Flag.withDescription(`timed rounds, a candidate's figure their median (default 5; fewer than ${MIN_ROUNDS} count as ${MIN_ROUNDS})`),
    Flag.withDefault(5)
  ),
  millis: Flag.Finite("millis").pipe(
    Flag.withMetavar("ms"),
    Flag.withDescription(`run each candidate for at least this many ms per round (default 300; below ${MIN_MILLIS} counts as ${MIN_MILLIS})`),
    Flag.withDefault(300)
  ),
  crtDir: Flag.String("crt-dir").pipe(
    Flag.withMetavar("dir"),
    Flag.withDescription("a folder where @aws-sdk/crc64-nvme-crt is installed: adds the CRT CRC-64/NVME (not a dependency: aws-crt, 66 MB)"),
    Flag.optional
  )
}, "MB/s on one core of every checksum the S3 sink could send, over 16 MiB buffers, each one's ratio to the SDK's pure-JS CRC-64/NVME.", { invocation: "npm run bench:checksum --" })

/** The flags as `effect/cli` read them. */
type Flags = typeof command extends CommandLine.Script<infer A> ? A : never

/** The SDK's incremental checksum interface (`update`, then `digest`). */
interface Incremental {
  update(data: Uint8Array): void
  digest(): Promise<Uint8Array>
}

interface Candidate {
  readonly name: string
  /** Hashes the whole buffer once; returns something derived from the result (so it is not optimised away). */
  readonly run: (data: Uint8Array) => number
}

const viaIncremental = (make: () => Incremental) => (data: Uint8Array): number => {
  const c = make()
  c.update(data)
  // The SDK's digest() is async but only formats the state computed by update().
  void c.digest()
  return data.byteLength
}

/** The sink's CRC-32 of one part, as `Checksums.digest` computes it (synchronously, whatever its promise). */
const partCrc32 = SimdCrc.crc32 ?? crc32

const sinkMultipart = (data: Uint8Array): number => {
  const parts = Checksums.partRanges(data.byteLength, PART_BYTES).map((r) => {
    const part = data.subarray(r.start, r.end)
    const v = partCrc32(part)
    return { raw: new Uint8Array([v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff]), bytes: part.byteLength }
  })
  return Checksums.fullObjectOf("CRC32", parts).length
}

/** The CRT CRC-64/NVME, from `crtDir` if given, or why it is not measured. */
const loadCrt = (crtDir: string | undefined): Candidate | string => {
  const from = crtDir !== undefined ? join(resolve(crtDir), "package.json") : import.meta.filename
  try {
    const required: unknown = createRequire(from)("@aws-sdk/crc64-nvme-crt")
    const Crt = typeof required === "object" && required !== null && "CrtCrc64Nvme" in required
      ? required.CrtCrc64Nvme
      : undefined
    if (typeof Crt !== "function") return "@aws-sdk/crc64-nvme-crt has no CrtCrc64Nvme export"
    const make = (): Incremental => Reflect.construct(Crt, [])
    return { name: "CRC64NVME crt", run: viaIncremental(make) }
  } catch (e) {
    return `@aws-sdk/crc64-nvme-crt not installed (${e instanceof Error ? e.message.split("\n")[0] : String(e)}); ` +
      "it pulls aws-crt (73 packages, 66 MB); pass --crt-dir <dir> where it is installed to measure it"
  }
}

const BASELINE = "CRC64NVME js"

/** MB/s of one round of `candidate` over `data`: repeats until `minMillis` elapsed. */
const round = (candidate: Candidate, data: Uint8Array, minMillis: number): number => {
  let sink = 0
  let bytes = 0
  const start = performance.now()
  let elapsed = 0
  do {
    sink ^= candidate.run(data)
    bytes += data.byteLength
    elapsed = performance.now() - start
  } while (elapsed < minMillis)
  if (sink === 0.5) console.log("unreachable") // keep `sink` live
  return bytes / 1e6 / (elapsed / 1000)
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

/** Times every candidate (the CRT one from `crtDir` if it loads) and prints the table, and with `json` the JSON line. */
const main = (flags: Flags): void => {
  const rounds = Math.max(MIN_ROUNDS, flags.rounds)
  const minMillis = Math.max(MIN_MILLIS, flags.millis)
  const candidates: Array<Candidate> = [
    { name: BASELINE, run: viaIncremental(() => new Crc64NvmeJs()) },
    { name: "CRC32C js", run: viaIncremental(() => new Crc32c()) },
    { name: "SHA256 node:crypto", run: (data) => createHash("sha256").update(data).digest().length },
    { name: "CRC32 node:zlib", run: (data) => crc32(data) },
    ...(SimdCrc.crc32 === undefined || SimdCrc.crc32c === undefined ? [] : [
      { name: "CRC32 @node-rs/crc32", run: SimdCrc.crc32 },
      { name: "CRC32C @node-rs/crc32", run: SimdCrc.crc32c }
    ]),
    { name: "CRC32 sink multipart (8 MiB parts + combine)", run: sinkMultipart }
  ]
  const skipped: Array<{ readonly name: string; readonly reason: string }> = []
  if (SimdCrc.loadFailure !== undefined) skipped.push({ name: "@node-rs/crc32", reason: SimdCrc.loadFailure })
  const crt = loadCrt(Option.getOrUndefined(flags.crtDir))
  if (typeof crt === "string") skipped.push({ name: "CRC64NVME crt", reason: crt })
  else candidates.push(crt)

  // Random bytes, written before timing (first writes to fresh memory are slow here).
  const data = randomFillSync(new Uint8Array(BUFFER_BYTES))

  for (const c of candidates) round(c, data, minMillis) // warm-up: JIT, tables, pages
  const samples = new Map<string, Array<number>>(candidates.map((c) => [c.name, []]))
  for (let r = 0; r < rounds; r++) {
    for (const c of candidates) samples.get(c.name)?.push(round(c, data, minMillis))
  }

  const baseline = median(samples.get(BASELINE) ?? [])
  const results = candidates.map((c) => {
    const xs = samples.get(c.name) ?? []
    const mbPerSec = median(xs)
    return {
      name: c.name,
      mbPerSec: Math.round(mbPerSec),
      ratio: Math.round((mbPerSec / baseline) * 100) / 100,
      min: Math.round(Math.min(...xs)),
      max: Math.round(Math.max(...xs))
    }
  })

  const nameWidth = Math.max(...results.map((r) => r.name.length))
  const row = (name: string, mbPerSec: string, ratio: string, range: string) =>
    `${name.padEnd(nameWidth)}  ${mbPerSec.padStart(7)}  ${ratio.padStart(14)}  ${range.padStart(15)}`
  console.log(
    `checksums over ${BUFFER_BYTES / MiB} MiB, one core, Node ${process.version}: ` +
      `median of ${rounds} rounds of ≥ ${minMillis} ms (MB = 10^6 bytes)`
  )
  console.log(row("candidate", "MB/s", `× ${BASELINE}`, "min..max MB/s"))
  for (const r of results) console.log(row(r.name, String(r.mbPerSec), r.ratio.toFixed(2), `${r.min}..${r.max}`))
  for (const s of skipped) console.log(`skipped ${s.name}: ${s.reason}`)
  if (flags.json) {
    console.log(JSON.stringify({
      bufferBytes: BUFFER_BYTES,
      rounds,
      minMillis,
      node: process.version,
      baseline: BASELINE,
      results,
      skipped
    }))
  }
}

if (import.meta.main) {
  const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
  if (flags !== undefined) main(flags)
}
