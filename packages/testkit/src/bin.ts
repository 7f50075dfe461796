#!/usr/bin/env node
/**
 * The `sluice-sim` entry point (see `Cli`). The executable npm links is the
 * committed shim `bin/sluice-sim.js`, which imports this module once it is built
 * to `dist/src/bin.js`.
 *
 * @since 0.1.0
 */
import { main } from "./Cli.ts"

process.exitCode = await main(process.argv.slice(2))
