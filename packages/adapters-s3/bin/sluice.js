#!/usr/bin/env node
// The `sluice` executable (`sluice audit ...`, `sluice calibrate ...`). It is committed (not
// built) so that `npm ci` links `node_modules/.bin/sluice` on a fresh clone, before `dist/`
// exists; without a linked bin, `npx sluice` would ask the public registry for a package of
// that name.
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const argv = process.argv.slice(2)
const calibrate = argv[0] === "calibrate"
const entry = new URL(calibrate ? "../dist/src/CalibrateCli.js" : "../dist/src/AuditCli.js", import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    `sluice: ${fileURLToPath(entry)} is missing: @sluice/adapter-s3 is not built; run \`npm run build\` first\n`
  )
  process.exit(2)
}
const { main } = await import(entry.href)
process.exitCode = await main(calibrate ? argv.slice(1) : argv)
