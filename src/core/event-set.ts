import { checkDeps } from './dep-rules.js'
import { MAX_CLOCK_AHEAD_MS } from './limits.js'
import { PlanIndex } from './plan-index.js'
import { DepLookup, Rec, eventOf } from './id-records.js'
import { ParkedEvents } from './parked-events.js'
import type { DepRejectReason } from './dep-rules.js'
import type { EventId, PlanEvent, PlanId } from './events.js'
import type { ParkReason, Ref } from './id-records.js'

export type { ParkReason } from './id-records.js'

export type AddOutcome =
  /** The event was folded, and with it every parked event it unblocked (in the order they were folded). */
  | { readonly status: 'folded'; readonly folded: readonly PlanEvent[] }
  | { readonly status: 'duplicate' }
  | { readonly status: 'parked'; readonly why: ParkReason; readonly missing: readonly EventId[] }
  | { readonly status: 'rejected'; readonly reason: DepRejectReason | 'builds-on-rejected'; readonly detail: string }

export interface EventSetOptions {
  /** At most this many events wait for deps or for the clock; the oldest are dropped beyond it. */
  readonly maxParked?: number
  /** A parked event waits at most this long. */
  readonly parkTtlMs?: number
  readonly maxClockAheadMs?: number
  /** Remember this many rejected ids, so a re-delivered bad event (and what builds on it) is refused at once. */
  readonly maxRejectedIds?: number
  /**
   * Told of rejections that no `add` call returns: parked events rejected when
   * they are finally folded, or because a dep they waited for was rejected.
   */
  readonly onRejected?: (id: EventId, reason: DepRejectReason | 'builds-on-rejected', detail: string) => void
}

/** The plan an event belongs to: a goal's own id, otherwise the plan it names. */
export function planOf(e: PlanEvent): PlanId {
  return (e.env.type === 'goal-submitted' ? e.id : e.env.plan) as PlanId
}

/**
 * The set of folded events, plus the events waiting to be folded.
 *
 * Invariant: an event is folded only once all its deps are folded and
 * `checkDeps` accepts it, so what is folded is a function of the set of
 * events ever added (minus those still waiting), never of their order.
 * Time enters only as the `nowMs` argument, for holding back stamps from the
 * future and for expiring parked events.
 *
 * One map holds every id the set knows: its folded event, or a record (parked,
 * or waited for). Waiter lists hold the waiting events' records and a parked
 * event holds what its deps are known as, so folding what waits costs no
 * further lookups. The parked events and their records are kept by
 * ParkedEvents (parked-events.ts); the set decides what folds and what is
 * rejected.
 */
export class EventSet {
  private readonly known = new Map<EventId, PlanEvent | Rec>()
  private foldedCount = 0
  private readonly plans = new Map<PlanId, PlanIndex>()
  private lastPlan: PlanIndex | undefined = undefined
  private readonly parked: ParkedEvents
  private readonly rejected = new Set<EventId>()
  private readonly scratch: Ref[] = []
  private readonly lookup = new DepLookup()
  private readonly parkTtlMs: number
  private readonly maxClockAheadMs: number
  private readonly maxRejectedIds: number
  private readonly onRejected: EventSetOptions['onRejected']

  constructor(opts: EventSetOptions = {}) {
    this.parked = new ParkedEvents(this.known, opts.maxParked ?? 100_000)
    this.parkTtlMs = opts.parkTtlMs ?? 10 * 60_000
    this.maxClockAheadMs = opts.maxClockAheadMs ?? MAX_CLOCK_AHEAD_MS
    this.maxRejectedIds = opts.maxRejectedIds ?? 100_000
    this.onRejected = opts.onRejected
  }

  /** Folded or parked: either way, sync should not send it to us again. */
  has(id: EventId): boolean {
    const r = this.known.get(id)
    return r !== undefined && (!(r instanceof Rec) || r.event !== undefined || r.parked !== undefined)
  }

  isFolded(id: EventId): boolean {
    return eventOf(this.known.get(id)) !== undefined
  }

  get(id: EventId): PlanEvent | undefined {
    return eventOf(this.known.get(id))
  }

  get size(): number {
    return this.foldedCount
  }

  get parkedCount(): number {
    return this.parked.count
  }

  /** Ids of parked events, with why they wait. */
  parkedEvents(): Array<{ id: EventId; why: ParkReason; since: number; missing: number }> {
    return this.parked.snapshot().map(s => ({ id: s.event.id, why: s.why, since: s.since, missing: s.missing }))
  }

  plan(id: PlanId): PlanIndex | undefined {
    return this.plans.get(id)
  }

  planIds(): PlanId[] {
    return [...this.plans.keys()]
  }

  /** Whether an event of `plan` is parked (a scan of the parked events, which are few). */
  hasParked(plan: PlanId): boolean {
    return this.parked.some(e => planOf(e) === plan)
  }

  /**
   * Forget a plan's folded events and its index: the fold's `evict`. The
   * caller makes sure no parked event belongs to the plan (`hasParked`): one
   * would later fold into a fresh index without its goal. Parked events of
   * other plans that cite its events keep what they hold, and are rejected
   * when they fold (an event's deps all belong to its own plan), as they
   * would have been. Returns how many events were dropped.
   */
  dropPlan(plan: PlanId): number {
    const index = this.plans.get(plan)
    if (index === undefined) return 0
    const known = this.known
    let n = 0
    for (const e of index.events.values()) {
      const r = known.get(e.id)
      // A folded event is kept as itself or by its record (which nothing waits on once it folded).
      if (r === e || (r instanceof Rec && r.event === e && r.parked === undefined && r.waiters === undefined)) {
        known.delete(e.id)
        n++
      }
    }
    this.foldedCount -= n
    this.plans.delete(plan)
    if (this.lastPlan === index) this.lastPlan = undefined
    return n
  }

  /** Add one verified event. `nowMs` is local wall time, used only to hold back stamps from the future. */
  add(e: PlanEvent, nowMs: number): AddOutcome {
    const known = this.known
    const k = known.get(e.id)
    if (k !== undefined && (!(k instanceof Rec) || k.event !== undefined || k.parked !== undefined))
      return { status: 'duplicate' }
    const own = k
    const deps = e.env.deps
    if (this.rejected.size > 0) {
      if (this.rejected.has(e.id))
        return { status: 'rejected', reason: 'builds-on-rejected', detail: 'this event was rejected before' }
      for (const d of deps)
        if (this.rejected.has(d)) return this.rejectOutcome(e.id, 'builds-on-rejected', `dep ${d} was rejected`)
    }
    const refs = this.scratch
    let missing = 0
    for (let i = 0; i < deps.length; i++) {
      const d = deps[i] as EventId
      let r = known.get(d)
      // Missing, and nothing waited for it yet: the event parks and will wait for it here.
      if (r === undefined) r = this.parked.recordFor(d)
      refs[i] = r
      if (r instanceof Rec && r.event === undefined) missing++
    }
    if (missing > 0) {
      const ids = new Array<EventId>(missing)
      for (let i = 0, j = 0; j < missing; i++) if (eventOf(refs[i]) === undefined) ids[j++] = deps[i] as EventId
      this.parked.park(e, own, refs, nowMs, 'missing-deps', missing)
      return { status: 'parked', why: 'missing-deps', missing: ids }
    }
    if (e.env.hlc.ms > nowMs + this.maxClockAheadMs) {
      this.parked.park(e, own, refs, nowMs, 'clock-ahead', 0)
      return { status: 'parked', why: 'clock-ahead', missing: [] }
    }
    const rejection = this.tryFold(e, refs, own)
    if (rejection !== null) return rejection
    const folded = [e]
    if (own !== undefined) this.foldWaiters(own, nowMs, folded)
    return { status: 'folded', folded }
  }

  /**
   * Fold parked events whose stamps are no longer ahead of `nowMs`, and drop
   * parked events older than the TTL. Returns what got folded.
   */
  tick(nowMs: number): { folded: PlanEvent[]; expired: EventId[] } {
    const folded: PlanEvent[] = []
    const expired: EventId[] = []
    for (const s of this.parked.snapshot()) {
      // It may have been dropped or folded meanwhile, or parked again.
      const current = this.known.get(s.event.id)
      if (!(current instanceof Rec) || current.parked === undefined) continue
      if (nowMs - s.since > this.parkTtlMs) {
        this.parked.unpark(current)
        expired.push(s.event.id)
      } else if (s.why === 'clock-ahead' && s.event.env.hlc.ms <= nowMs + this.maxClockAheadMs) {
        this.parked.unpark(current)
        const own = this.parked.recOf(s.event.id)
        const r = this.tryFold(s.event, s.refs, own)
        if (r === null) {
          folded.push(s.event)
          if (own !== undefined) this.foldWaiters(own, nowMs, folded)
        } else if (r.status === 'rejected') {
          this.onRejected?.(s.event.id, r.reason, r.detail)
        }
      }
    }
    return { folded, expired }
  }

  /**
   * Check `e` against its deps (`refs`: what they are known as, all folded)
   * and fold it. `own` is its record, if it has one.
   */
  private tryFold(e: PlanEvent, refs: ReadonlyArray<Ref | undefined>, own: Rec | undefined): AddOutcome | null {
    const lookup = this.lookup
    lookup.deps = e.env.deps
    lookup.refs = refs
    const rejection = checkDeps(e, lookup)
    if (rejection !== null) {
      lookup.refs = this.scratch
      return this.rejectOutcome(e.id, rejection.reason, rejection.detail)
    }
    if (own !== undefined) own.event = e
    else this.known.set(e.id, e)
    this.foldedCount++
    const planId = planOf(e)
    let index = this.lastPlan
    if (index === undefined || index.id !== planId) {
      index = this.plans.get(planId)
      if (index === undefined) {
        index = new PlanIndex(planId, this)
        this.plans.set(planId, index)
      }
      this.lastPlan = index
    }
    index.add(e, lookup)
    lookup.refs = this.scratch
    return null
  }

  /**
   * Remember a rejection, and reject what waits for it: an event built on a
   * rejected event can never fold, whichever arrived first.
   */
  private rejectOutcome(id: EventId, reason: DepRejectReason | 'builds-on-rejected', detail: string): AddOutcome {
    if (this.rejected.size >= this.maxRejectedIds) this.rejected.clear()
    this.rejected.add(id)
    const stack: EventId[] = [id]
    while (stack.length > 0) {
      const bad = stack.pop() as EventId
      const rec = this.parked.recOf(bad)
      if (rec === undefined) continue
      const w = rec.waiters
      if (w === undefined) continue
      rec.waiters = undefined
      this.parked.release(rec)
      for (const waiting of w instanceof Rec ? [w] : w) {
        if (waiting.parked === undefined) continue
        this.parked.unpark(waiting)
        this.rejected.add(waiting.id)
        this.onRejected?.(waiting.id, 'builds-on-rejected', `dep ${bad} was rejected`)
        stack.push(waiting.id)
      }
    }
    return { status: 'rejected', reason, detail }
  }

  /** Fold everything that was waiting only for `first`'s event, transitively, without recursion. */
  private foldWaiters(first: Rec, nowMs: number, out: PlanEvent[]): void {
    const stack: Rec[] = [first]
    while (stack.length > 0) {
      const done = stack.pop() as Rec
      const w = done.waiters
      if (w === undefined) continue
      done.waiters = undefined
      const n = w instanceof Rec ? 1 : w.length
      for (let j = 0; j < n; j++) {
        const r = w instanceof Rec ? w : (w[j] as Rec)
        const e = r.parked
        if (e === undefined) continue
        r.missing -= 1
        if (r.missing > 0) continue
        const since = this.parked.sinceOf(r)
        this.parked.unlink(r)
        if (e.env.hlc.ms > nowMs + this.maxClockAheadMs) {
          this.parked.link(r, e, since, 'clock-ahead', 0)
          continue
        }
        const refs = r.refs as Ref[]
        r.refs = undefined
        const rejection = this.tryFold(e, refs, r)
        if (rejection === null) {
          out.push(e)
          stack.push(r)
        } else {
          this.parked.release(r)
          if (rejection.status === 'rejected') this.onRejected?.(e.id, rejection.reason, rejection.detail)
        }
      }
    }
  }
}
