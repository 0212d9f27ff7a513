import { logger } from '@libp2p/logger'
import type { EventRow, EventStore } from '../ports/event-store.js'
import type { Cancel, Scheduler } from '../ports/scheduler.js'

const log = logger('plan-swarm:replica')

/**
 * Rows folded but not yet committed, committed together in one transaction
 * as soon as the event loop turns (a SQLite commit costs about as much as
 * the rest of an event's work; keeping it off the gossip validator's path
 * lets the event be relayed a commit sooner). Until then the queue answers
 * for them (`bytes`, `ofPlan`), so what the node says it has, it can send.
 * A store that refuses a commit (disk full) leaves the rows queued, and the
 * next flush tries again.
 */
export class WriteQueue {
  private readonly rows = new Map<string, EventRow>()
  private pending: Cancel | undefined

  constructor(
    private readonly store: EventStore,
    private readonly scheduler: Scheduler
  ) {}

  /** Queue a row; the queue commits itself when the event loop turns. */
  add(row: EventRow): void {
    this.rows.set(row.id, row)
    this.pending ??= this.scheduler.soon(() => {
      this.flush()
    })
  }

  bytes(id: string): Uint8Array | undefined {
    return this.rows.get(id)?.bytes
  }

  /** The queued rows of one plan (an evicted plan coming back reads them with its stored rows). */
  *ofPlan(plan: string): Iterable<EventRow> {
    for (const row of this.rows.values()) if (row.plan === plan) yield row
  }

  get size(): number {
    return this.rows.size
  }

  /** Commit now (call before closing the store). Never throws: a refused commit stays queued. */
  flush(): void {
    this.pending?.()
    this.pending = undefined
    if (this.rows.size === 0) return
    try {
      this.store.putMany(this.rows.values())
      this.rows.clear()
    } catch (err) {
      log.error(
        'could not store %d folded events (kept in memory, retried with the next write): %s',
        this.rows.size,
        (err as Error).message
      )
    }
  }
}
