#!/usr/bin/env node
/**
 * The `sluice-sim` executable (see `Cli`).
 *
 * @since 0.1.0
 */
import { main } from "./Cli.ts"

process.exitCode = await main(process.argv.slice(2))
