/**
 * `sluice-policy-example`: a third-party Sluice policy in its own package — ARC,
 * Vector's Adaptive Request Concurrency, on upload concurrency — written only
 * against the public API of `@sluice/core` and proved with `@sluice/testkit`.
 *
 * The **default export** is what `sluice-sim --policy` loads: ARC's core with
 * its config (`{ policy, config }`), so
 * `npx sluice-sim run <scenario> --policy ./examples/custom-policy/dist/index.js`
 * runs it, and `…/dist/index.js+throttle+shared` composes it with built-ins.
 *
 * @since 0.1.0
 */
import * as Arc from "./Arc.ts"

export * as Arc from "./Arc.ts"

/**
 * The module's default export, in the shape the `sluice-sim` CLI and
 * `PolicySpec.resolve` of `@sluice/testkit` accept: a core `Policy` with the
 * config it runs with (decoded by `Policy.layer` when the layer is built).
 *
 * **Example**
 *
 * ```ts
 * import { Policy } from "@sluice/core"
 * import arc from "sluice-policy-example"
 *
 * const policies = Policy.layer(arc.policy, arc.config)
 * ```
 *
 * @since 0.1.0
 */
const cli: { readonly policy: typeof Arc.policy; readonly config: Arc.ArcInput } = {
  policy: Arc.policy,
  config: {}
}

export default cli
