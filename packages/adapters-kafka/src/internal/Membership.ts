/**
 * Group membership as the group protocol reports it (the client's event
 * listeners under the classic protocol, `ConsumerProtocol` under KIP-848's):
 * which partitions this member may commit and in which generation (or member
 * epoch), the member id and generation commits must carry now, the latest
 * assignment the fetch loop has not applied yet, the partitions lost since it
 * last looked, the assignment the fetch loop has finished applying (what a
 * KIP-848 member reports as held), and a signal completed at every join or
 * new epoch (commits waiting for a rejoin await it). In assign mode nothing
 * here changes after the start.
 *
 * @internal
 */
import { Deferred, Exit } from "effect"
import type { Recorder } from "../KafkaStats.ts"
import type { KafkaConsumer } from "./client.ts"
import type { Wakeup } from "./Context.ts"

/** What a commit must carry now: `memberId` null while (re)joining. */
export interface Identity {
  readonly memberId: string | null
  /** The classic protocol's generation, or the consumer protocol's member epoch. */
  readonly generation: number
  /** The group coordinator's node when the protocol tracks it (the consumer protocol). */
  readonly coordinator?: number | undefined
}

/** The membership state of one source. */
export class Membership {
  /** What a commit carries now (set by the group protocol's driver; none in assign mode). */
  identity: () => Identity = () => ({ memberId: null, generation: -1 })
  /** The partitions held since the fetch loop last finished applying an assignment (revokes acknowledged). */
  held: ReadonlyArray<number> = []
  /** Called when {@link held} changes (a KIP-848 member reports it at once). */
  onHeld: () => void = () => undefined

  /** Partitions this member may commit. */
  readonly owned = new Set<number>()
  /** The generation `owned` was granted in (-1: none, or assign mode). */
  generation = -1
  /** The latest assignment not yet applied by the fetch loop. */
  private pending: ReadonlyArray<number> | undefined
  /** Partitions lost since the fetch loop last looked (a revoke may be followed by a re-assign). */
  private readonly lostSince = new Set<number>()
  /** Completed (and replaced) at every join. */
  private joinedSignal = Deferred.makeUnsafe<void>()
  /** The client's last error (group membership failed). */
  clientError: unknown = undefined

  /** Completes at the next join. */
  get joined(): Deferred.Deferred<void> {
    return this.joinedSignal
  }

  /** Whether an assignment waits to be applied. */
  get hasPending(): boolean {
    return this.pending !== undefined
  }

  /** Applies a join's assignment to the ownership (the loop applies it to the reads later). */
  onJoin(mine: ReadonlySet<number>, generation: number): void {
    for (const p of this.owned) {
      if (!mine.has(p)) {
        this.owned.delete(p)
        this.lostSince.add(p)
      }
    }
    this.generation = generation
    this.pending = [...mine].sort((a, b) => a - b)
    this.signalJoined()
  }

  /** Every partition lost at once (a fenced member): not committable any more, none held. */
  loseAll(generation: number): void {
    this.onJoin(new Set(), generation)
    this.held = []
  }

  /** A new generation (member epoch) with the same assignment: what is owned is now owned in it. */
  onEpoch(generation: number): void {
    if (generation === this.generation) return
    this.generation = generation
    this.signalJoined()
  }

  /** The fetch loop finished applying an assignment: these partitions are held (read, their revokes acknowledged). */
  setHeld(partitions: ReadonlyArray<number>): void {
    const same = partitions.length === this.held.length && partitions.every((p, i) => this.held[i] === p)
    this.held = partitions
    if (!same) this.onHeld()
  }

  private signalJoined(): void {
    const previous = this.joinedSignal
    this.joinedSignal = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(previous, Exit.void)
  }

  /** Takes the pending assignment and the partitions lost since the last take. */
  takePending(): { readonly assignment: ReadonlyArray<number>; readonly lost: ReadonlySet<number> } | undefined {
    const assignment = this.pending
    if (assignment === undefined) return undefined
    this.pending = undefined
    const lost = new Set(this.lostSince)
    this.lostSince.clear()
    return { assignment, lost }
  }

  /** Listens to the client's group events (group mode). */
  listen(consumer: KafkaConsumer, topic: string, stats: Recorder, wakeup: Wakeup): void {
    this.identity = () => ({ memberId: consumer.memberId, generation: consumer.generationId })
    consumer.on("consumer:group:join", (payload) => {
      const mine = new Set(payload.assignments?.find((a) => a.topic === topic)?.partitions ?? [])
      this.onJoin(mine, payload.generationId ?? consumer.generationId)
      wakeup.wake()
    })
    consumer.on("consumer:group:rebalance", () => {
      stats.counters.rebalances++
    })
    consumer.on("error", (error: unknown) => {
      this.clientError = error
      wakeup.wake()
    })
  }
}
