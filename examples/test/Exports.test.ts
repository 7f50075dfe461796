/**
 * What the packages' `exports` let a third party import: the public modules,
 * and not the internals the READMEs say are not exported (core's `stage/*` and
 * `internal/*`, the policies' `internal/*`, where each policy's state lives).
 * Resolved as Node resolves them for an installed package (`import.meta.resolve`
 * from this workspace, whose `@sluice/*` are the packages themselves).
 */
import { describe, expect, it } from "@effect/vitest"

const resolves = (specifier: string): boolean => {
  try {
    import.meta.resolve(specifier)
    return true
  } catch {
    return false
  }
}

describe("package exports", () => {
  it.each(["@sluice/core", "@sluice/core/Policy", "@sluice/policies", "@sluice/policies/deliveryrate/DeliveryRate", "@sluice/testkit"])("%s resolves", (specifier) => {
    expect(resolves(specifier)).toBe(true)
  })
  it.each(["@sluice/core/stage/Limiter", "@sluice/core/stage/Uploader", "@sluice/core/internal/Version", "@sluice/policies/internal/deliveryrate/State", "@sluice/policies/internal/aimd/State"])("%s does not", (specifier) => {
    expect(resolves(specifier)).toBe(false)
  })
})
