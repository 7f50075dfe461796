#!/usr/bin/env node
// The `sluice-sim` executable. It is committed (not built) so that `npm ci` links
// `node_modules/.bin/sluice-sim` on a fresh clone, before `dist/` exists; without a
// linked bin, `npx sluice-sim` would ask the public registry for a package of that name.
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const entry = new URL("../dist/src/bin.js", import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    `sluice-sim: ${fileURLToPath(entry)} is missing: @sluice/testkit is not built; run \`npm run build\` first\n`
  )
  process.exit(2)
}
await import(entry.href)
