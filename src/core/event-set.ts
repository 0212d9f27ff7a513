import { checkDeps } from './dep-rules.js'
import { MAX_CLOCK_AHEAD_MS } from './limits.js'
import { PlanIndex } from './plan-index.js'
import type { DepRejectReason, DepSource } from './dep-rules.js'
import type { EventId, PlanEvent, PlanId } from './events.js'

export type ParkReason = 'missing-deps' | 'clock-ahead'

export type AddOutcome =
  /** The event was folded, and with it every parked event it unblocked (in the order they were folded). */
  | { readonly status: 'folded', readonly folded: readonly PlanEvent[] }
  | { readonly status: 'duplicate' }
  | { readonly status: 'parked', readonly why: ParkReason, readonly missing: readonly EventId[] }
  | { readonly status: 'rejected', readonly reason: DepRejectReason | 'builds-on-rejected', readonly detail: string }

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

/**
 * What the set knows about an id beyond its event: that it is parked (and
 * since when, why, how many deps it still misses, and what its deps are known
 * as), and which parked events wait for it. A record that stands for neither
 * and has no event is dropped. Once the event folds, `event` is set and the
 * record stays (ids nothing waited for map to their event directly).
 */
class Rec {
  event: PlanEvent | undefined = undefined
  /** The event, while it is parked. */
  parked: PlanEvent | undefined = undefined
  since = 0
  why: ParkReason = 'missing-deps'
  /** Deps not folded yet. */
  missing = 0
  /** While parked: what its deps are known as, in the order of `env.deps`. */
  refs: Ref[] | undefined = undefined
  /** While parked: its place in `EventSet.order`; -1 otherwise. */
  seq = -1
  /**
   * Parked events waiting for this id, once per occurrence among their deps:
   * one record, or a list when there are several (most ids have one).
   */
  waiters: Rec | Rec[] | undefined = undefined
  constructor (readonly id: EventId) {}
}

/** What an id is known as: its folded event, or its record (folded if the record's `event` is set). */
type Ref = PlanEvent | Rec

/** The plan an event belongs to: a goal's own id, otherwise the plan it names. */
export function planOf (e: PlanEvent): PlanId {
  return (e.env.type === 'goal-submitted' ? e.id : e.env.plan) as PlanId
}

function eventOf (r: Ref | undefined): PlanEvent | undefined {
  return r instanceof Rec ? r.event : r
}

/** An event's deps, resolved (for `checkDeps` and the plan index) without looking them up again. */
class DepLookup implements DepSource {
  deps: readonly EventId[] = []
  refs: ReadonlyArray<Ref | undefined> = []

  get (id: EventId): PlanEvent | undefined {
    const deps = this.deps
    for (let i = 0; i < deps.length; i++) if (deps[i] === id) return eventOf(this.refs[i])
    return undefined
  }

  own (id: EventId): PlanEvent | undefined {
    return this.get(id)
  }

  at (i: number): PlanEvent | undefined {
    return eventOf(this.refs[i])
  }
}

/** A parked event as `tick` found it. */
interface Snapshot {
  readonly event: PlanEvent
  readonly since: number
  readonly why: ParkReason
  readonly refs: Ref[]
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
 * further lookups.
 */
export class EventSet {
  private readonly known = new Map<EventId, PlanEvent | Rec>()
  private foldedCount = 0
  private readonly plans = new Map<PlanId, PlanIndex>()
  private lastPlan: PlanIndex | undefined = undefined
  /**
   * Parked events in the order they were parked (an event parked again goes
   * to the end). Entry i is live while its record's seq is i; `head` skips
   * the dead entries at the front, and the list is compacted when most are dead.
   */
  private order: Rec[] = []
  private head = 0
  private parkedSize = 0
  private readonly rejected = new Set<EventId>()
  private readonly scratch: Ref[] = []
  private readonly lookup = new DepLookup()
  private readonly maxParked: number
  private readonly parkTtlMs: number
  private readonly maxClockAheadMs: number
  private readonly maxRejectedIds: number
  private readonly onRejected: EventSetOptions['onRejected']

  constructor (opts: EventSetOptions = {}) {
    this.maxParked = opts.maxParked ?? 100_000
    this.parkTtlMs = opts.parkTtlMs ?? 10 * 60_000
    this.maxClockAheadMs = opts.maxClockAheadMs ?? MAX_CLOCK_AHEAD_MS
    this.maxRejectedIds = opts.maxRejectedIds ?? 100_000
    this.onRejected = opts.onRejected
  }

  /** Folded or parked: either way, sync should not send it to us again. */
  has (id: EventId): boolean {
    const r = this.known.get(id)
    return r !== undefined && (!(r instanceof Rec) || r.event !== undefined || r.parked !== undefined)
  }

  isFolded (id: EventId): boolean {
    return eventOf(this.known.get(id)) !== undefined
  }

  get (id: EventId): PlanEvent | undefined {
    return eventOf(this.known.get(id))
  }

  get size (): number {
    return this.foldedCount
  }

  get parkedCount (): number {
    return this.parkedSize
  }

  /** Ids of parked events, with why they wait. */
  parkedEvents (): Array<{ id: EventId, why: ParkReason, since: number, missing: number }> {
    const out: Array<{ id: EventId, why: ParkReason, since: number, missing: number }> = []
    const order = this.order
    for (let i = this.head; i < order.length; i++) {
      const r = order[i] as Rec
      if (r.seq === i) out.push({ id: r.id, why: r.why, since: r.since, missing: r.missing })
    }
    return out
  }

  plan (id: PlanId): PlanIndex | undefined {
    return this.plans.get(id)
  }

  planIds (): PlanId[] {
    return [...this.plans.keys()]
  }

  /** Whether an event of `plan` is parked (a scan of the parked events, which are few). */
  hasParked (plan: PlanId): boolean {
    if (this.parkedSize === 0) return false
    const order = this.order
    for (let i = this.head; i < order.length; i++) {
      const r = order[i] as Rec
      if (r.seq === i && planOf(r.parked as PlanEvent) === plan) return true
    }
    return false
  }

  /**
   * Forget a plan's folded events and its index: the fold's `evict`. The
   * caller makes sure no parked event belongs to the plan (`hasParked`): one
   * would later fold into a fresh index without its goal. Parked events of
   * other plans that cite its events keep what they hold, and are rejected
   * when they fold (an event's deps all belong to its own plan), as they
   * would have been. Returns how many events were dropped.
   */
  dropPlan (plan: PlanId): number {
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
  add (e: PlanEvent, nowMs: number): AddOutcome {
    const known = this.known
    const k = known.get(e.id)
    if (k !== undefined && (!(k instanceof Rec) || k.event !== undefined || k.parked !== undefined)) return { status: 'duplicate' }
    const own = k
    const deps = e.env.deps
    if (this.rejected.size > 0) {
      if (this.rejected.has(e.id)) return { status: 'rejected', reason: 'builds-on-rejected', detail: 'this event was rejected before' }
      for (const d of deps) if (this.rejected.has(d)) return this.rejectOutcome(e.id, 'builds-on-rejected', `dep ${d} was rejected`)
    }
    const refs = this.scratch
    let missing = 0
    for (let i = 0; i < deps.length; i++) {
      const d = deps[i] as EventId
      let r = known.get(d)
      if (r === undefined) {
        // Missing, and nothing waited for it yet: the event parks and will wait for it here.
        r = new Rec(d)
        known.set(d, r)
      }
      refs[i] = r
      if (r instanceof Rec && r.event === undefined) missing++
    }
    if (missing > 0) {
      const ids = new Array<EventId>(missing)
      for (let i = 0, j = 0; j < missing; i++) if (eventOf(refs[i]) === undefined) ids[j++] = deps[i] as EventId
      this.park(e, own, nowMs, 'missing-deps', missing)
      return { status: 'parked', why: 'missing-deps', missing: ids }
    }
    if (e.env.hlc.ms > nowMs + this.maxClockAheadMs) {
      this.park(e, own, nowMs, 'clock-ahead', 0)
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
  tick (nowMs: number): { folded: PlanEvent[], expired: EventId[] } {
    const folded: PlanEvent[] = []
    const expired: EventId[] = []
    const snapshot: Snapshot[] = []
    const order = this.order
    for (let i = this.head; i < order.length; i++) {
      const r = order[i] as Rec
      if (r.seq === i) snapshot.push({ event: r.parked as PlanEvent, since: r.since, why: r.why, refs: r.refs as Ref[] })
    }
    for (const s of snapshot) {
      // It may have been dropped or folded meanwhile, or parked again.
      const current = this.known.get(s.event.id)
      if (!(current instanceof Rec) || current.parked === undefined) continue
      if (nowMs - s.since > this.parkTtlMs) {
        this.unpark(current)
        expired.push(s.event.id)
      } else if (s.why === 'clock-ahead' && s.event.env.hlc.ms <= nowMs + this.maxClockAheadMs) {
        this.unpark(current)
        const own = this.recOf(s.event.id)
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

  /** The record of an id that is not folded, if there is one. */
  private recOf (id: EventId): Rec | undefined {
    const r = this.known.get(id)
    return r instanceof Rec && r.event === undefined ? r : undefined
  }

  /**
   * Check `e` against its deps (`refs`: what they are known as, all folded)
   * and fold it. `own` is its record, if it has one.
   */
  private tryFold (e: PlanEvent, refs: ReadonlyArray<Ref | undefined>, own: Rec | undefined): AddOutcome | null {
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
  private rejectOutcome (id: EventId, reason: DepRejectReason | 'builds-on-rejected', detail: string): AddOutcome {
    if (this.rejected.size >= this.maxRejectedIds) this.rejected.clear()
    this.rejected.add(id)
    const stack: EventId[] = [id]
    while (stack.length > 0) {
      const bad = stack.pop() as EventId
      const rec = this.recOf(bad)
      if (rec === undefined) continue
      const w = rec.waiters
      if (w === undefined) continue
      rec.waiters = undefined
      this.release(rec)
      for (const waiting of w instanceof Rec ? [w] : w) {
        if (waiting.parked === undefined) continue
        this.unpark(waiting)
        this.rejected.add(waiting.id)
        this.onRejected?.(waiting.id, 'builds-on-rejected', `dep ${bad} was rejected`)
        stack.push(waiting.id)
      }
    }
    return { status: 'rejected', reason, detail }
  }

  /**
   * Park `e` (`own`: its record, if something waits for it already). What
   * its deps are known as is in `this.scratch`, one per dep, each missing dep
   * with a record.
   */
  private park (e: PlanEvent, own: Rec | undefined, nowMs: number, why: ParkReason, missing: number): void {
    const deps = e.env.deps
    const refs = this.scratch
    if (this.parkedSize >= this.maxParked && this.parkedSize > 0) {
      this.unpark(this.oldestParked())
      // Dropping it may have dropped records that `refs` or `own` point to: look them up again.
      own = this.recOf(e.id)
      for (let i = 0; i < deps.length; i++) {
        if (eventOf(refs[i]) !== undefined) continue
        const d = deps[i] as EventId
        let r = this.known.get(d)
        if (r === undefined) {
          r = new Rec(d)
          this.known.set(d, r)
        }
        refs[i] = r
      }
    }
    // (An event listed among its own deps, which no valid event can be, has its record already.)
    if (own === undefined && deps.includes(e.id)) own = this.recOf(e.id)
    if (own === undefined) {
      own = new Rec(e.id)
      this.known.set(e.id, own)
    }
    const mine = new Array<Ref>(deps.length)
    for (let i = 0; i < deps.length; i++) {
      const r = refs[i] as Ref
      mine[i] = r
      if (r instanceof Rec && r.event === undefined) {
        const w = r.waiters
        if (w === undefined) r.waiters = own
        else if (w instanceof Rec) r.waiters = [w, own]
        else w.push(own)
      }
    }
    own.refs = mine
    this.link(own, e, nowMs, why, missing)
  }

  private link (r: Rec, e: PlanEvent, since: number, why: ParkReason, missing: number): void {
    r.parked = e
    r.since = since
    r.why = why
    r.missing = missing
    r.seq = this.order.length
    this.order.push(r)
    this.parkedSize++
  }

  /** No longer parked (it is being folded, dropped or parked again). */
  private unlink (r: Rec): void {
    r.parked = undefined
    r.seq = -1
    this.parkedSize--
    const order = this.order
    const dead = order.length - this.head - this.parkedSize
    if (dead > 1024 && dead > 2 * this.parkedSize) {
      const live: Rec[] = []
      for (let i = this.head; i < order.length; i++) {
        const x = order[i] as Rec
        if (x.seq === i) {
          x.seq = live.length
          live.push(x)
        }
      }
      this.order = live
      this.head = 0
    }
  }

  private oldestParked (): Rec {
    const order = this.order
    while ((order[this.head] as Rec).seq !== this.head) this.head++
    return order[this.head] as Rec
  }

  /** Drop a parked event: it no longer waits for anything. */
  private unpark (r: Rec): void {
    if (r.parked === undefined) return
    this.unlink(r)
    const refs = r.refs as Ref[]
    r.refs = undefined
    for (let i = 0; i < refs.length; i++) {
      const d = refs[i]
      if (!(d instanceof Rec) || d.waiters === undefined) continue
      const w = d.waiters
      const rest = w instanceof Rec ? (w === r ? [] : [w]) : w.filter(x => x !== r)
      d.waiters = rest.length === 0 ? undefined : rest.length === 1 ? rest[0] : rest
      this.release(d)
    }
    this.release(r)
  }

  /** Forget a record that no longer stands for anything. */
  private release (r: Rec): void {
    if (r.event === undefined && r.parked === undefined && r.waiters === undefined && this.known.get(r.id) === r) this.known.delete(r.id)
  }

  /** Fold everything that was waiting only for `first`'s event, transitively, without recursion. */
  private foldWaiters (first: Rec, nowMs: number, out: PlanEvent[]): void {
    const stack: Rec[] = [first]
    while (stack.length > 0) {
      const done = stack.pop() as Rec
      const w = done.waiters
      if (w === undefined) continue
      done.waiters = undefined
      const n = w instanceof Rec ? 1 : w.length
      for (let j = 0; j < n; j++) {
        const r = w instanceof Rec ? w : w[j] as Rec
        const e = r.parked
        if (e === undefined) continue
        r.missing -= 1
        if (r.missing > 0) continue
        const since = r.since
        this.unlink(r)
        if (e.env.hlc.ms > nowMs + this.maxClockAheadMs) {
          this.link(r, e, since, 'clock-ahead', 0)
          continue
        }
        const refs = r.refs as Ref[]
        r.refs = undefined
        const rejection = this.tryFold(e, refs, r)
        if (rejection === null) {
          out.push(e)
          stack.push(r)
        } else {
          this.release(r)
          if (rejection.status === 'rejected') this.onRejected?.(e.id, rejection.reason, rejection.detail)
        }
      }
    }
  }
}
