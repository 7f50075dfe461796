/**
 * The events read ahead of the pipeline, bounded, with revokes first.
 *
 * - **Data lane**: chunks and retention gaps, in the order they were read (a
 *   gap must stay between the chunks before and after it). Bounded by
 *   `prefetch` events and `prefetchBytes` bytes of memory, counted as the
 *   pipeline's budget counts them (`Record.heapBytes`: payload plus the
 *   per-record overhead, so zero-byte records count too): the fetch loop
 *   starts no fetch while either is reached (see {@link EventBuffer.room}).
 * - **Control lane**: `PartitionsRevoked`, delivered before any data. A revoke
 *   drops the data still queued for the partitions it names (the new owner
 *   reads them again from the committed offset), so it never waits behind a
 *   chunk the pipeline has not taken.
 *
 * The stream takes one event per pull, so everything not yet pulled stays
 * here, where a revoke can still overtake it.
 *
 * @internal
 */
import { Record, Source } from "@sluice/core"
import { Cause, Effect, Stream } from "effect"
import type { Exit } from "effect"
import type { Recorder } from "../KafkaStats.ts"
import type { Wakeup } from "./Context.ts"

/** Memory an event holds, counted as the pipeline's budget counts it (payload + per-record overhead). */
const bytesOf = (event: Source.SourceEvent): number => (event._tag === "RecordChunk" ? Record.heapBytes(event) : 0)

const partitionOf = (event: Source.SourceEvent): number | undefined =>
  event._tag === "RecordChunk" || event._tag === "RetentionGap" || event._tag === "CaughtUp" ? event.partition : undefined

/** A bounded, two-lane buffer of source events. */
export class EventBuffer {
  private data: Array<Source.SourceEvent | undefined> = []
  private head = 0
  private readonly control: Array<Source.SourceEvent> = []
  private bytes = 0
  private ended: Exit.Exit<void, Source.SourceError> | undefined
  private readonly maxEvents: number
  private readonly maxBytes: number
  private readonly stats: Recorder
  private readonly wakeup: Wakeup

  constructor(options: { readonly maxEvents: number; readonly maxBytes: number; readonly stats: Recorder; readonly wakeup: Wakeup }) {
    this.maxEvents = options.maxEvents
    this.maxBytes = options.maxBytes
    this.stats = options.stats
    this.wakeup = options.wakeup
  }

  /** Data events queued now. */
  get events(): number {
    return this.data.length - this.head
  }

  /** Payload bytes, and events, the data lane may still take before the loop must wait (0 when full). */
  room(): number {
    if (this.events >= this.maxEvents) return 0
    return Math.max(0, this.maxBytes - this.bytes)
  }

  private publish(): void {
    this.stats.counters.prefetched.events = this.events
    this.stats.counters.prefetched.bytes = this.bytes
    this.wakeup.wake()
  }

  /** Appends data events (never blocks: the loop waits for {@link room} before fetching). */
  offerData(events: ReadonlyArray<Source.SourceEvent>): void {
    for (const event of events) {
      this.data.push(event)
      this.bytes += bytesOf(event)
    }
    this.publish()
  }

  /** Puts a revoke ahead of all data, dropping the data queued for `partitions`. */
  offerRevoke(event: Source.SourceEvent, partitions: ReadonlyArray<number>): void {
    const lost = new Set(partitions)
    const kept: Array<Source.SourceEvent | undefined> = []
    let bytes = 0
    for (let i = this.head; i < this.data.length; i++) {
      const e = this.data[i]
      if (e === undefined) continue
      const p = partitionOf(e)
      if (p !== undefined && lost.has(p)) continue
      kept.push(e)
      bytes += bytesOf(e)
    }
    this.data = kept
    this.head = 0
    this.bytes = bytes
    this.control.push(event)
    this.publish()
  }

  /** Ends the stream once everything queued was taken (`exit` failed: fails it then). */
  end(exit: Exit.Exit<void, Source.SourceError>): void {
    this.ended ??= exit
    this.publish()
  }

  private poll(): Source.SourceEvent | undefined {
    const control = this.control.shift()
    if (control !== undefined) return control
    if (this.head >= this.data.length) return undefined
    const event = this.data[this.head]
    this.data[this.head] = undefined // let the chunk go
    this.head++
    if (this.head > 1024 && this.head * 2 > this.data.length) {
      this.data = this.data.slice(this.head)
      this.head = 0
    }
    if (event !== undefined) this.bytes -= bytesOf(event)
    this.publish()
    return event
  }

  /** The next event (revokes first); `Cause.Done` once ended and drained. */
  readonly take: Effect.Effect<Source.SourceEvent, Source.SourceError | Cause.Done> = Effect.suspend(() => {
    const event = this.poll()
    if (event !== undefined) return Effect.succeed(event)
    const ended = this.ended
    if (ended !== undefined) {
      return ended._tag === "Success" ? Cause.done() : Effect.failCause(ended.cause)
    }
    return Effect.andThen(this.wakeup.until(() => this.control.length > 0 || this.events > 0 || this.ended !== undefined), this.take)
  })

  /** The events as a stream, one per pull. */
  readonly stream: Stream.Stream<Source.SourceEvent, Source.SourceError> = Stream.fromEffectRepeat(this.take)
}
