/**
 * A test-only hook of the archiver (issue 27 item 4): SIGKILLs the process at
 * one of the gaps where a crash matters, so the fault runs (`npm run faults`)
 * can prove a kill there loses nothing. Inert unless `SLUICE_TEST_KILL_AT` is
 * set; `main.ts` refuses a value it does not know (exit 2).
 *
 *   SLUICE_TEST_KILL_AT=<gap>[:<n>]   kill at the n-th time (default 1) this process passes <gap>
 *
 * | gap | the process is killed |
 * |---|---|
 * | `after-put` | right after an object's PUT succeeded, before its manifest goes up |
 * | `after-manifest` | right after a manifest's PUT succeeded, before the object is verified |
 * | `after-verify` | right after an object was verified, before its offsets are committed |
 * | `mid-multipart` | right after a part of a multipart upload succeeded, the upload neither completed nor aborted |
 *
 * The kill is `process.kill(process.pid, "SIGKILL")`: no finalizer, no
 * drain, no abort of the multipart upload, as a crash or an OOM kill leaves
 * the process. The other uploads in flight at that moment die with it.
 */
import type { S3Sink } from "@sluice/adapter-s3"
import type { Sink } from "@sluice/core"
import { Effect } from "effect"

/** The environment variable that arms the hook. */
export const ENV = "SLUICE_TEST_KILL_AT"

/** The gaps the hook can kill at. */
export const GAPS = ["after-put", "after-manifest", "after-verify", "mid-multipart"] as const
export type Gap = (typeof GAPS)[number]

/** Where and when to kill. */
export interface KillAt {
  readonly gap: Gap
  /** Kill at this occurrence of the gap (1 = the first). */
  readonly nth: number
}

/** A malformed `SLUICE_TEST_KILL_AT`. */
export class KillHookInvalid extends Error {
  readonly _tag = "KillHookInvalid"
}

/** Parses `SLUICE_TEST_KILL_AT` (`undefined` when unset or empty: the hook is inert). */
export const parse = (value: string | undefined): KillAt | undefined => {
  if (value === undefined || value.trim() === "") return undefined
  const [gap, nth = "1", ...rest] = value.trim().split(":")
  const n = Number(nth)
  const known = GAPS.find((g) => g === gap)
  if (known === undefined || rest.length > 0 || !Number.isInteger(n) || n < 1) {
    throw new KillHookInvalid(`${ENV}=${value}: expected <gap>[:<n>], gap one of ${GAPS.join(", ")}, n ≥ 1`)
  }
  return { gap: known, nth: n }
}

const kill = (at: KillAt): void => {
  process.stderr.write(`kafka-to-s3: ${ENV}: SIGKILL at ${at.gap} #${at.nth}\n`)
  process.kill(process.pid, "SIGKILL")
}

/**
 * The sink with the hook armed: counts the passes through `at.gap` and kills
 * the process at the `at.nth`.
 */
export const wrap = (at: KillAt) => (sink: S3Sink.S3Sink): Sink.Sink => {
  let passes = 0
  const pass = (gap: Gap) => {
    if (gap !== at.gap) return
    passes++
    if (passes === at.nth) kill(at)
  }
  if (at.gap === "mid-multipart") {
    // After the SDK's UploadPart returns: the part is in the store, the upload open.
    sink.client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args)
        if (context.commandName === "UploadPartCommand") pass("mid-multipart")
        return result
      },
      { step: "initialize", name: "sluiceTestKillMidMultipart" }
    )
  }
  return {
    ...sink,
    putObject: (batch) => Effect.tap(sink.putObject(batch), () => Effect.sync(() => pass("after-put"))),
    putManifest: (manifest) => Effect.tap(sink.putManifest(manifest), () => Effect.sync(() => pass("after-manifest"))),
    verify: (receipt) => Effect.tap(sink.verify(receipt), () => Effect.sync(() => pass("after-verify")))
  }
}
