import { describeRecord, isPoor, StandingBook } from '../core/peer-standing.js'
import { planOf } from '../core/event-set.js'
import type { PeerRecord } from '../core/peer-standing.js'
import type { PeerIdString, PlanEvent, PlanId } from '../core/events.js'
import type { Fold } from '../core/fold.js'
import type { StatusStanding } from '../ports/node-view.js'

/** Protocol 5 is the first whose trees hold standing (ADR-0047). */
const FIRST_STANDING_VERSION = 5

/** How often (in refreshes) the plans holding evidence are checked for having expired here. */
const PRUNE_EVERY = 60

/**
 * Each member's standing across the plans this node holds (ADR-0048), kept
 * current by plan: events that fold mark their plan (a version-5 plan
 * only), and `refresh` (each tick, and before a read) re-reads the marked
 * plans' trees, which the roles derive after every event anyway. A plan out
 * of memory keeps the part it gave while it was in; an expired plan's part
 * is dropped. A plan known at start only from its record (evicted before a
 * restart) gives nothing until something brings it back into memory.
 */
export class StandingTracker {
  readonly book = new StandingBook()
  private readonly dirty = new Set<PlanId>()
  private refreshes = 0

  constructor(private readonly fold: Fold) {}

  /** Events folded: their plans' parts are read again at the next refresh. */
  folded(events: readonly PlanEvent[]): void {
    for (const e of events) {
      const plan = planOf(e)
      if (plan !== '' && e.env.v >= FIRST_STANDING_VERSION) this.dirty.add(plan)
    }
  }

  /** Mark every version-5 plan in memory (after the store loads, before any event folds). */
  markAll(): void {
    for (const plan of this.fold.events.planIds()) {
      const goal = this.fold.events.plan(plan)?.goal
      if (goal !== undefined && goal.env.v >= FIRST_STANDING_VERSION) this.dirty.add(plan)
    }
  }

  /** Re-read the plans marked since the last refresh (and, now and then, drop the parts of plans gone). */
  refresh(): void {
    for (const plan of this.dirty) {
      const tree = this.fold.tree(plan)
      if (tree !== undefined) this.book.set(plan, tree.standing)
      else if (!this.fold.isEvicted(plan)) this.book.forget(plan)
    }
    this.dirty.clear()
    if (++this.refreshes % PRUNE_EVERY === 0)
      for (const plan of [...this.book.plans()])
        if (this.fold.events.plan(plan)?.goal === undefined && !this.fold.isEvicted(plan)) this.book.forget(plan)
  }

  /** Every member with evidence against it, the worst first. */
  records(): PeerRecord[] {
    this.refresh()
    return this.book.records()
  }

  /** What counts against a member: a lookup, without a refresh (gossipsub asks often; the tick refreshes). */
  penalty(peer: string): number {
    return this.book.penalty(peer as PeerIdString)
  }
}

/** Members with a poor record that /status lists at most (GET /standing lists every one). */
export const STATUS_STANDING_MAX = 20

/** /status's standing: a line per member with a poor record (the worst first), and counts of the rest. */
export function statusStanding(records: readonly PeerRecord[]): StatusStanding {
  const poor = records.filter(isPoor)
  return {
    poor: poor.slice(0, STATUS_STANDING_MAX).map(r => ({ peer: r.peer, penalty: r.penalty, says: describeRecord(r) })),
    withEvidence: records.length,
    more: Math.max(0, poor.length - STATUS_STANDING_MAX)
  }
}
