/**
 * The policies' config tables, generated from their schemas (`Field.table`:
 * each field's decoded default, its range and its `Field.doc` meaning) into
 * each policy's module doc and `packages/policies/README.md`, between
 * `<!-- config table… -->` and `<!-- end config table -->`.
 *
 * `npm run docs:config` writes them; `--check` writes nothing and exits 1
 * naming every file whose table differs from its schema
 * (`test/config-docs.test.ts` runs the same comparison in the suite).
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Field } from "@sluice/core"
import * as CommandLine from "@sluice/core/CommandLine"
import { AdaptiveBatch, Aimd, DeliveryRate, Gradient2, Probe, SharedPressure, Throttle, Vegas } from "../src/index.ts"

type Struct = Parameters<typeof Field.table>[0]

/** Each policy's config schema, its module (under `src/`) and its name in the README's markers. */
export const policies: ReadonlyArray<{ readonly name: string; readonly module: string; readonly schema: Struct }> = [
  { name: "Probe", module: "probe/Probe.ts", schema: Probe.ProbeConfig },
  { name: "Aimd", module: "aimd/Aimd.ts", schema: Aimd.AimdConfig },
  { name: "DeliveryRate", module: "deliveryrate/DeliveryRate.ts", schema: DeliveryRate.DeliveryRateConfig },
  { name: "Throttle", module: "throttle/Throttle.ts", schema: Throttle.ThrottleConfig },
  { name: "SharedPressure", module: "shared/SharedPressure.ts", schema: SharedPressure.SharedPressureConfig },
  { name: "AdaptiveBatch", module: "batch/AdaptiveBatch.ts", schema: AdaptiveBatch.AdaptiveBatchConfig },
  { name: "Gradient2", module: "gradient2/Gradient2.ts", schema: Gradient2.Gradient2Config },
  { name: "Vegas", module: "vegas/Vegas.ts", schema: Vegas.VegasConfig }
]

const root = fileURLToPath(new URL("..", import.meta.url))
const END = "<!-- end config table -->"

/**
 * `text` with the region opened by a line matching `open` (through the next
 * END line) holding `table`, each line behind `prefix`. Throws when the region
 * is missing: a table cannot silently stop being generated.
 */
const fill = (text: string, file: string, open: RegExp, table: string, prefix: string): string => {
  const lines = text.split("\n")
  const start = lines.findIndex((l) => open.test(l))
  const end = lines.findIndex((l, i) => i > start && l === `${prefix}${END}`)
  if (start < 0 || end < 0) throw new Error(`${file}: no config table region (${open.source} … ${END})`)
  const body = table.split("\n").map((l) => `${prefix}${l}`)
  return [...lines.slice(0, start + 1), ...body, ...lines.slice(end)].join("\n")
}

/** Every file holding a generated table: its path and its content as generated. */
export const generated = (): ReadonlyArray<{ readonly path: string; readonly content: string }> => {
  const out: Array<{ path: string; content: string }> = []
  const readme = `${root}README.md`
  let readmeText = readFileSync(readme, "utf8")
  for (const p of policies) {
    const table = Field.table(p.schema)
    const path = `${root}src/${p.module}`
    out.push({ path, content: fill(readFileSync(path, "utf8"), path, /^ \* <!-- config table/, table, " * ") })
    readmeText = fill(readmeText, readme, new RegExp(`^<!-- config table: ${p.name}\\b`), table, "")
  }
  out.push({ path: readme, content: readmeText })
  return out
}

/** The files whose content differs from what `generated` makes. */
export const stale = (): ReadonlyArray<string> =>
  generated().flatMap((g) => (readFileSync(g.path, "utf8") === g.content ? [] : [g.path]))

/** The command line of `npm run docs:config`, read with `effect/cli`. */
export const command = CommandLine.script("docs:config", {
  check: CommandLine.switchFlag("check", "write nothing; exit 1 naming every file whose table differs from its schema")
}, "Writes the policies' config tables, generated from their schemas, into each policy's module doc and the policies README.", {
  invocation: "npm run docs:config --"
})

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flags = CommandLine.settle(command.read(process.argv.slice(2)), command.help)
  if (flags?.check === true) {
    const files = stale()
    for (const f of files) process.stderr.write(`${f}: config table differs from the schema (npm run docs:config)\n`)
    process.exit(files.length === 0 ? 0 : 1)
  }
  if (flags !== undefined) for (const g of generated()) if (readFileSync(g.path, "utf8") !== g.content) writeFileSync(g.path, g.content)
}
