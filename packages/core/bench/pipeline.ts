/**
 * bench:pipeline launcher. The benchmark runs the pipeline with the default
 * policies, so it lives in `@sluice/policies` (`packages/policies/bench/pipeline.ts`):
 * `@sluice/core` must not depend on the policies. This file only starts it, on
 * the workspace's sources (`--conditions=@sluice/source`) with `--expose-gc`,
 * passing the arguments through.
 *
 *   npm run bench:pipeline [-- --records 2000000 --rounds 5 --json]
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const bench = fileURLToPath(new URL("../../policies/bench/pipeline.ts", import.meta.url))
const child = spawnSync(process.execPath, ["--conditions=@sluice/source", "--expose-gc", bench, ...process.argv.slice(2)], {
  stdio: "inherit"
})
if (child.error !== undefined) throw child.error
process.exitCode = child.status ?? 1
