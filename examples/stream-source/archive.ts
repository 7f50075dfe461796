/**
 * Archiving an Effect `Stream` built in your own code (issue 29): the records
 * of a paginated API — here a stand-in that serves `pages` pages of `pageSize`
 * orders — read with `Stream.paginate`, encoded as JSON, turned into a source
 * with `Source.fromStream`, and archived through the full pipeline into an
 * in-memory store. The commit callback is where a real program persists its
 * position (the offset after the last archived record) to resume from after a
 * restart.
 *
 * Run: `node --conditions=@sluice/source examples/stream-source/archive.ts`
 * (prints the commits and what was archived; the test calls `archive`).
 */
import { fileURLToPath } from "node:url"
import { Effect, Layer, Option, Stream } from "effect"
import { Batch, Fixed, Memory, Pipeline, Source } from "@sluice/core"

/** One order, as the stand-in API serves it. */
interface Order {
  readonly id: number
  readonly amountCents: number
}

/** The stand-in API: page `n` of `pages`, `pageSize` orders each; the next page, if any. */
const fetchPage = (n: number, pages: number, pageSize: number) =>
  Effect.succeed([
    Array.from({ length: pageSize }, (_, i): Order => ({ id: n * pageSize + i, amountCents: ((n * pageSize + i) * 7919) % 100_000 })),
    n + 1 < pages ? Option.some(n + 1) : Option.none()
  ] as const)

/** What {@link archive} reports: the records committed, the commits seen, and the orders read back from the store. */
export interface ArchiveReport {
  readonly recordsCommitted: number
  readonly commits: ReadonlyArray<number>
  readonly archived: ReadonlyArray<Order>
}

/** Archives `pages × pageSize` orders read page by page, and reads them back from the store. */
export const archive = (options: { readonly pages: number; readonly pageSize: number }): Effect.Effect<ArchiveReport, Pipeline.PipelineError> =>
  Effect.gen(function*() {
    const encoder = new TextEncoder()
    const orders = Stream.paginate(0, (n: number) => fetchPage(n, options.pages, options.pageSize)).pipe(
      Stream.map((order) => encoder.encode(JSON.stringify(order)))
    )
    const commits: Array<number> = []
    const source = Source.fromStream(orders, {
      name: "orders",
      // A real program writes `next` somewhere durable and passes it back as `startOffset`.
      commit: (next) => Effect.sync(() => void commits.push(next))
    })
    const sink = Memory.sink()
    const stats = yield* Pipeline.run({
      source,
      sink,
      config: { batch: { records: 2_000, maxAge: "1 second" } },
      policies: Layer.mergeAll(Fixed.layer({ concurrency: 4 }))
    })
    const decoder = new TextDecoder()
    const archived = [...sink.objects.values()]
      .flatMap((object) => Batch.decodeBody(object.body).map((payload): Order => JSON.parse(decoder.decode(payload)) as Order))
      .sort((a, b) => a.id - b.id)
    return { recordsCommitted: stats.recordsCommitted, commits, archived }
  })

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const report = await Effect.runPromise(archive({ pages: 50, pageSize: 200 }))
  console.log(`commits: ${report.commits.join(", ")}`)
  console.log(`archived ${report.archived.length} orders (${report.recordsCommitted} committed), ids ${report.archived[0]?.id}…${report.archived.at(-1)?.id}`)
}
