/**
 * `@sluice/testkit`: the virtual-clock simulator (store, source), scenario files,
 * the runner with its trace and summary, assertions, the policy conformance
 * suite and plots.
 *
 * @since 0.1.0
 * @module @sluice/testkit
 */
export * as Rng from "./Rng.ts"
export * as Scenario from "./Scenario.ts"
export * as SimSource from "./SimSource.ts"
export * as Store from "./Store.ts"
export * as Runner from "./Runner.ts"
export * as Summary from "./Summary.ts"
export * as Trace from "./Trace.ts"
export * as PolicySpec from "./PolicySpec.ts"
export * as Plot from "./Plot.ts"
export * as PlotOnFailure from "./PlotOnFailure.ts"
export * as Cli from "./Cli.ts"
export * as Properties from "./Properties.ts"
export * as LayerProperties from "./LayerProperties.ts"
export * as Assert from "./Assert.ts"
export * as CommitGuard from "./CommitGuard.ts"
export * as HeldBytes from "./HeldBytes.ts"
export * as Oracle from "./Oracle.ts"
export * as Family from "./Family.ts"
