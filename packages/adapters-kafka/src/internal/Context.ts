/**
 * What the parts of a Kafka source share: the decoded config, the client, the
 * per-partition read state, the stats recorder and the wake-up signal the
 * fetch loop sleeps on.
 *
 * @internal
 */
import type { ConnectionPool } from "@platformatic/kafka"
import { Deferred, Effect, Exit } from "effect"
import type { KafkaConfig } from "../KafkaConfig.ts"
import type { Recorder } from "../KafkaStats.ts"
import type { KafkaConsumer } from "./client.ts"

/**
 * `PartitionState.backlogEnd` of a partition whose backlog is to be measured
 * when it is next placed against its log bounds: after its assignment, and
 * after a resume of the read gate.
 */
export const UNPLACED = -2

/** The read state of one owned partition. */
export interface PartitionState {
  readonly partition: number
  /** Next offset to read; -1 before the position is known (start at the log start). */
  next: number
  highWatermark: number
  hwAt: number
  /** Compare `next` with the log start before the next fetch (start, resume, out of range). */
  checkStart: boolean
  /** `until: "caught-up"`: the end offset seen at assignment; -1 until known. */
  endAt: number
  /**
   * The log end seen when the partition was placed after its assignment or
   * after a resume of the read gate, while the reader is behind it:
   * `Source.CaughtUp` is announced once `next` reaches it. `UNPLACED` until
   * placed; -1 once announced, or when there was nothing behind.
   */
  backlogEnd: number
  /** When reading paused, for a backlog a resume measures (`Source.CaughtUp.pausedAt`); undefined after an assignment. */
  backlogPausedAt: number | undefined
}

/**
 * A level-triggered wake-up: the fetch loop waits until a condition holds and
 * is woken by every change that may make it hold (an event taken, a pause
 * lifted, an assignment arrived, the client failed).
 */
export class Wakeup {
  private signal = Deferred.makeUnsafe<void>()

  /** Wakes every waiter (they re-check their condition). */
  wake(): void {
    const previous = this.signal
    this.signal = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(previous, Exit.void)
  }

  /** Completes once `condition()` holds. */
  until(condition: () => boolean): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (condition()) return Effect.void
      return Effect.andThen(Deferred.await(this.signal), this.until(condition))
    })
  }
}

/** The shared state of one source. */
export interface Context {
  readonly config: KafkaConfig
  /** Source name (first part of object keys). */
  readonly name: string
  readonly topic: string
  readonly consumer: KafkaConsumer
  /** Connections for fetches only (see `client.makeFetchPool`). */
  readonly fetchPool: ConnectionPool
  /** Owned partitions being read, by partition. */
  readonly parts: Map<number, PartitionState>
  readonly stats: Recorder
  readonly wakeup: Wakeup
}
