/**
 * The ablations of the default composition (`Composition.defaults()`): each
 * switches off one rule or member, so that a run against the default on the
 * same scenarios says what that rule buys (`npm run ablation`). Only what the
 * composition's config and options can switch off is here; the rules inside a
 * policy without a switch are not (the closing note lists them).
 */
import { Layer } from "effect"
import { AdaptiveBatch, Composition, DeliveryRate, SharedPressure, Throttle } from "@sluice/policies"
import type { Runner } from "@sluice/testkit"

/** One variant: its name, the rule it switches off, its policies. */
export interface Ablation {
  readonly name: string
  readonly switchesOff: string
  readonly policies: Runner.PoliciesLayer<unknown>
  /**
   * The variant adds back a rule the default removed (its "cost" is then what
   * adding it back costs; the verdict says whether it would buy anything).
   */
  readonly addsBack?: true
}

const base = Composition.defaultsBase

/** The default, then one variant per rule (in the order the table prints them). */
export const ablations: ReadonlyArray<Ablation> = [
  { name: "default", switchesOff: "nothing: the reference", policies: Composition.defaults() },
  { name: "no-probes", switchesOff: "every probe (Policy.ablate; the delivery rate's PROBE_RTT among them)", policies: Composition.defaults({}, { probes: false }) },
  { name: "no-pending", switchesOff: "the delivery rate's running uploads raising its minimum (`pending`)", policies: Composition.defaults({ deliveryRate: { pending: false } }) },
  {
    name: "own-defaults",
    switchesOff: "`defaultsBase` (the members' own throttle answers: throttleBeta 0.7, firstBeta 0.5, a rate cut on the first)",
    policies: Layer.mergeAll(DeliveryRate.layer({}), Throttle.layer({}), AdaptiveBatch.layer({}))
  },
  {
    name: "no-throttle",
    switchesOff: "the Throttle member (classifier, short-term cut, rate)",
    policies: Layer.mergeAll(DeliveryRate.layer(base.deliveryRate), AdaptiveBatch.layer({}))
  },
  {
    name: "no-batch",
    switchesOff: "the AdaptiveBatch member (batch target)",
    policies: Layer.mergeAll(DeliveryRate.layer(base.deliveryRate), Throttle.layer(base.throttle))
  },
  { name: "throttle-no-restore", switchesOff: "Throttle's restore after an episode (`restore`)", policies: Composition.defaults({ throttle: { restore: false } }) },
  { name: "batch-no-restore", switchesOff: "AdaptiveBatch's restore (`restore`)", policies: Composition.defaults({ batch: { restore: false } }) },
  {
    name: "with-shared",
    switchesOff: "nothing: adds back the SharedPressure member (read gate on held bytes), removed from the default 2026-12-07",
    policies: Layer.merge(Composition.defaults(), SharedPressure.layer({})),
    addsBack: true
  }
]

/** The variant named `name`, or undefined. */
export const byName = (name: string): Ablation | undefined => ablations.find((a) => a.name === name)
