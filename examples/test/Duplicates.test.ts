/**
 * The scale-out run's duplicate check (`soak/Duplicates.ts`): a duplicated
 * range is explained only inside the uncommitted window of a partition that
 * moved in a step.
 */
import { describe, expect, it } from "vitest"
import { attribute } from "../soak/Duplicates.ts"

const step = { step: "rolling restart: archiver-2", moved: [1], committedBefore: [100, 200], committedAfter: [300, 500] }

describe("scale-out duplicates", () => {
  it("explains a range inside a moved partition's uncommitted window, and counts its records", () => {
    const out = attribute([step], [{ partition: 1, from: 200, to: 349 }])
    expect(out.unexplained).toEqual([])
    expect(out.records).toBe(150)
    expect(out.byStep.get("rolling restart: archiver-2")).toBe(150)
  })

  it("does not explain a range of a partition that did not move, below the committed offset, or past the window", () => {
    const notMoved = { partition: 0, from: 150, to: 160 }
    const committedAlready = { partition: 1, from: 150, to: 210 }
    const pastTheWindow = { partition: 1, from: 450, to: 500 }
    const out = attribute([step], [notMoved, committedAlready, pastTheWindow])
    expect(out.unexplained).toEqual([notMoved, committedAlready, pastTheWindow])
    expect(out.byStep.size).toBe(0)
    expect(out.records).toBe(11 + 61 + 51)
  })
})
