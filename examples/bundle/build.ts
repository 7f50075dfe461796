/**
 * `npm run bundle -w @sluice/examples` — each archiver of the examples built into one
 * ES module file with rolldown, as a service that starts often (a restart
 * loop, a scaled group) would be deployed:
 *
 * - `dist/bundle/kafka-to-s3.mjs`, from `kafka-to-s3/main.ts` (its
 *   `archiver.json` copied beside it, where `--config` looks by default);
 * - `dist/bundle/bench-e2e.mjs`, from `bench/e2e.ts`: `bench:peer` runs its
 *   Sluice contender (`--role sluice`) from it unless `--sluice-from sources`.
 *
 * **Why**: the start of an archiver is mostly Node's module loader, not the
 * modules' own code. Loading the workspace's ~1 000 module files (resolving
 * each import, reading `package.json`s, linking) cost 1.3–1.8 s of CPU here
 * with Node's compile cache warm, the one file 0.7–0.9 s, and 0.3–0.4 s with
 * the change below (`docs/design/real-path-cost.md`, 2026-12-08). A 1
 * M-record `bench:peer` run counts the start from the spawn: ~1 µs a record.
 *
 * The workspace's packages are bundled from their TypeScript sources (the
 * `@sluice/source` condition, as the benches run them), so no `npm run build`
 * is needed first. Left outside the file, loaded from `node_modules` at run
 * time: Node's built-ins; `@node-rs/crc32`, a native addon that
 * `createRequire` loads (a `.node` file cannot be inlined); and
 * `@platformatic/wasm-utils`, which reads its `.wasm` beside its own files.
 * So a bundle runs where it was built, inside this repo's tree.
 *
 * One change to what is bundled: the Kafka client's shared `ajv` instance
 * compiles its 38 option schemas when first used, not at import
 * (`LazyAjv2020.ts`, which says why); it uses them only with `strict: true`.
 *
 * ```sh
 * npm run bundle -w @sluice/examples
 * node examples/dist/bundle/kafka-to-s3.mjs <topic> <bucket> [flags]
 * ```
 */
import { copyFileSync, mkdirSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** This folder, and the examples folder above it. */
const bundleFolder = dirname(fileURLToPath(import.meta.url))
const here = join(bundleFolder, "..")

/** Where the bundles are written. */
export const bundleDir = join(here, "dist", "bundle")

/** The archiver of `kafka-to-s3/`, one file. */
export const kafkaToS3Bundle = join(bundleDir, "kafka-to-s3.mjs")

/** `bench:e2e`'s entry (its child roles: the Sluice contender, the plain loop), one file. */
export const benchE2eBundle = join(bundleDir, "bench-e2e.mjs")

/** The stand-in for `ajv/dist/2020.js` given to the Kafka client. */
const lazyAjv = join(bundleFolder, "LazyAjv2020.ts")

/** Packages loaded from `node_modules` at run time (see the module's comment). */
const EXTERNAL: ReadonlyArray<string | RegExp> = [/^node:/, "@node-rs/crc32", "@platformatic/wasm-utils"]

/** Resolution conditions: the workspace's TypeScript sources first, then what Node itself would pick. */
const CONDITIONS = ["@sluice/source", "node", "import", "default"]

/** A module of the Kafka client. */
const CLIENT_MODULE = /[/\\]@platformatic[/\\]kafka[/\\]dist[/\\]/
/** Where the Kafka client imports `ajv` for its shared instance: given `LazyAjv2020.ts` instead. */
const CLIENT_AJV_IMPORTER = /[/\\]@platformatic[/\\]kafka[/\\]dist[/\\]utils\.js$/
const CLIENT_AJV_SOURCE = "ajv/dist/2020.js"

/**
 * Builds `entry` into `file`. The Kafka client's shared `ajv` instance is
 * given `LazyAjv2020.ts` (its schemas compiled when first used, not at
 * import); the build fails when the client no longer imports `ajv` where
 * this expects, rather than ship a file that silently compiles them again.
 */
export const bundleOne = async (entry: string, file: string): Promise<void> => {
  // Imported here, not at the top: the benches import this module for its paths only.
  const { build } = await import("rolldown")
  // Whether the entry's graph holds the Kafka client (one of its modules imported something), and whether its `ajv` import was redirected.
  let client = false
  let redirected = 0
  await build({
    input: entry,
    platform: "node",
    external: [...EXTERNAL],
    plugins: [{
      name: "sluice-lazy-ajv",
      resolveId(source, importer) {
        if (importer !== undefined && CLIENT_MODULE.test(importer)) client = true
        if (source !== CLIENT_AJV_SOURCE || importer === undefined || !CLIENT_AJV_IMPORTER.test(importer)) return null
        redirected++
        return lazyAjv
      }
    }],
    resolve: { conditionNames: CONDITIONS },
    logLevel: "warn",
    // One file: the dynamic import of `kafka-to-s3/main.ts` (loading its
    // command after turning on the compile cache) is inlined too.
    output: { format: "esm", file, codeSplitting: false }
  })
  if (client && redirected === 0) {
    throw new Error(`${entry}: the Kafka client's ${CLIENT_AJV_SOURCE} import from dist/utils.js was not found; update examples/bundle/build.ts to the client's layout`)
  }
}

/**
 * Builds both bundles into `dir` (default {@link bundleDir}; elsewhere for a
 * test, inside the tree so that the packages left outside still resolve);
 * returns their paths: the archiver's, then the bench contender's.
 */
export const bundleAll = async (dir: string = bundleDir): Promise<ReadonlyArray<string>> => {
  mkdirSync(dir, { recursive: true })
  const archiver = join(dir, basename(kafkaToS3Bundle))
  const contender = join(dir, basename(benchE2eBundle))
  await bundleOne(join(here, "kafka-to-s3", "main.ts"), archiver)
  copyFileSync(join(here, "kafka-to-s3", "archiver.json"), join(dir, "archiver.json"))
  await bundleOne(join(here, "bench", "e2e.ts"), contender)
  return [archiver, contender]
}

if (import.meta.main) {
  bundleAll().then(
    (files) => {
      for (const file of files) process.stdout.write(`${file}\n`)
    },
    (error: unknown) => {
      console.error("bundle:", error instanceof Error ? error.message : error)
      process.exitCode = 1
    }
  )
}
