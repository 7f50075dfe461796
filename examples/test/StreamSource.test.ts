/**
 * examples/stream-source: an Effect Stream built in user code (a paginated API
 * read with `Stream.paginate`) archived through `Source.fromStream`: every
 * record lands once, in order of its offset, and the last commit is the
 * offset after the last record.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { archive } from "../stream-source/archive.ts"

describe("examples/stream-source", () => {
  it("archives every order of a paginated stream once and commits past the last", async () => {
    const report = await Effect.runPromise(archive({ pages: 25, pageSize: 200 }))
    expect(report.recordsCommitted).toBe(5_000)
    expect(report.archived.map((o) => o.id)).toEqual(Array.from({ length: 5_000 }, (_, i) => i))
    expect(report.commits.at(-1)).toBe(5_000)
  })
})
