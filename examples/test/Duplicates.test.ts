/**
 * The scale-out run's duplicate check (`soak/Duplicates.ts`): a duplicated
 * range is explained only inside the uncommitted window of a partition that
 * moved in a step.
 */
import { describe, expect, it } from "vitest"
import { attribute, name, parseLeftOnRevoke } from "../soak/Duplicates.ts"

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

describe("scale-out duplicates named by the archivers", () => {
  it("parses an archiver's left-on-revoke line", () => {
    const line = "kafka-to-s3: left on revoke: partition 7, 120 records at offsets 1000-1059,1100-1159 (stored, not committed: the partition's next owner archives them again)"
    expect(parseLeftOnRevoke("archiver-1", line)).toEqual([
      { instance: "archiver-1", partition: 7, from: 1000, to: 1059 },
      { instance: "archiver-1", partition: 7, from: 1100, to: 1159 }
    ])
    expect(parseLeftOnRevoke("archiver-1", "kafka-to-s3: 3 s: read 10, verified 10, committed 10, …")).toBeUndefined()
  })

  it("names the duplicates an announcement covers, and reports both sides' leftovers", () => {
    const duplicates = [{ partition: 7, from: 1000, to: 1159 }, { partition: 3, from: 0, to: 9 }]
    const announced = [
      { instance: "a", partition: 7, from: 1000, to: 1059 },
      { instance: "a", partition: 7, from: 1100, to: 1199 }
    ]
    const out = name(duplicates, announced)
    expect(out.named).toBe(60 + 60)
    expect(out.announced).toBe(160)
    expect(out.unnamed).toEqual([{ partition: 7, from: 1060, to: 1099 }, { partition: 3, from: 0, to: 9 }])
    expect(out.notDuplicated).toEqual([{ partition: 7, from: 1160, to: 1199 }])
  })
})
