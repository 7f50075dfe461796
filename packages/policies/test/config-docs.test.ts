/**
 * The config tables in each policy's module doc cannot drift from its schema:
 * every field the schema decodes is in the table, every row names a field, and
 * each documented scalar default is the decoded default (numbers, booleans,
 * durations like `10 s`, sizes like `1 MiB`). The DeliveryRate table had 4 of
 * 21 defaults wrong and missed a field before this test (issue 26).
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { AdaptiveBatch, Aimd, DeliveryRate, Gradient2, Probe, SharedPressure, Throttle, Vegas } from "../src/index.ts"

const modules = [
  ["aimd/Aimd.ts", Aimd.AimdConfig],
  ["batch/AdaptiveBatch.ts", AdaptiveBatch.AdaptiveBatchConfig],
  ["deliveryrate/DeliveryRate.ts", DeliveryRate.DeliveryRateConfig],
  ["gradient2/Gradient2.ts", Gradient2.Gradient2Config],
  ["shared/SharedPressure.ts", SharedPressure.SharedPressureConfig],
  ["throttle/Throttle.ts", Throttle.ThrottleConfig],
  ["vegas/Vegas.ts", Vegas.VegasConfig],
  ["probe/Probe.ts", Probe.ProbeConfig]
] as const

/** The first `| field | default | …` table of a module's source: field → documented default. */
const table = (file: string): Map<string, string> => {
  const lines = readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8").split("\n")
  const start = lines.findIndex((l) => /^ \* \| field \| default \|/.test(l))
  const rows = new Map<string, string>()
  for (const line of lines.slice(start + 2)) {
    const m = /^ \* \| `(\w+)` \| ([^|]*) \|/.exec(line)
    if (m === null) break
    rows.set(m[1] ?? "", (m[2] ?? "").trim())
  }
  return rows
}

const units: Record<string, number> = { ms: 1, s: 1000, min: 60_000, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

/** A documented default as a value, when it is a scalar (`undefined`: prose, checked by name only). */
const scalar = (text: string): number | boolean | undefined => {
  if (text === "true" || text === "false") return text === "true"
  const m = /^(-?[\d ]*\d(?:\.\d+)?)\s*(ms|s|min|B|KiB|MiB|GiB)?$/.exec(text)
  if (m === null) return undefined
  return Number((m[1] ?? "").replace(/ /g, "")) * (m[2] === undefined ? 1 : units[m[2]] ?? NaN)
}

describe("each policy's config table matches its schema", () => {
  for (const [file, schema] of modules) {
    it(file, () => {
      const decoded = Schema.decodeUnknownSync(schema as Schema.Codec<Record<string, unknown>, unknown>)({})
      const rows = table(file)
      expect([...rows.keys()].sort(), "documented fields = the schema's fields").toEqual(Object.keys(decoded).sort())
      for (const [field, text] of rows) {
        const value = scalar(text)
        const actual = decoded[field]
        if (value !== undefined && (typeof actual === "number" || typeof actual === "boolean")) {
          expect(actual, `${file}: ${field} documented as ${text}`).toBe(value)
        }
      }
    })
  }
})
