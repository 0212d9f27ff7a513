import { checkDeps } from './dep-rules.js'
import { MAX_CLOCK_AHEAD_MS } from './limits.js'
import { PlanIndex } from './plan-index.js'
import type { DepRejectReason } from './dep-rules.js'
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

interface Parked {
  readonly event: PlanEvent
  readonly since: number
  readonly why: ParkReason
  missing: number
}

/**
 * The set of folded events, plus the events waiting to be folded.
 *
 * Invariant: an event is folded only once all its deps are folded and
 * `checkDeps` accepts it, so what is folded is a function of the set of
 * events ever added (minus those still waiting), never of their order.
 * Time enters only as the `nowMs` argument, for holding back stamps from the
 * future and for expiring parked events.
 */
export class EventSet {
  private readonly folded = new Map<EventId, PlanEvent>()
  private readonly plans = new Map<PlanId, PlanIndex>()
  private readonly parked = new Map<EventId, Parked>()
  private readonly waiters = new Map<EventId, EventId[]>()
  private readonly rejected = new Set<EventId>()
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
    return this.folded.has(id) || this.parked.has(id)
  }

  isFolded (id: EventId): boolean {
    return this.folded.has(id)
  }

  get (id: EventId): PlanEvent | undefined {
    return this.folded.get(id)
  }

  get size (): number {
    return this.folded.size
  }

  get parkedCount (): number {
    return this.parked.size
  }

  /** Ids of parked events, with why they wait. */
  parkedEvents (): Array<{ id: EventId, why: ParkReason, since: number, missing: number }> {
    return [...this.parked.values()].map(p => ({ id: p.event.id, why: p.why, since: p.since, missing: p.missing }))
  }

  plan (id: PlanId): PlanIndex | undefined {
    return this.plans.get(id)
  }

  planIds (): PlanId[] {
    return [...this.plans.keys()]
  }

  /** Add one verified event. `nowMs` is local wall time, used only to hold back stamps from the future. */
  add (e: PlanEvent, nowMs: number): AddOutcome {
    if (this.folded.has(e.id) || this.parked.has(e.id)) return { status: 'duplicate' }
    if (this.rejected.size > 0) {
      if (this.rejected.has(e.id)) return { status: 'rejected', reason: 'builds-on-rejected', detail: 'this event was rejected before' }
      for (const d of e.env.deps) if (this.rejected.has(d)) return this.rejectOutcome(e.id, 'builds-on-rejected', `dep ${d} was rejected`)
    }
    let missing: EventId[] | undefined
    for (const d of e.env.deps) {
      if (!this.folded.has(d)) (missing ??= []).push(d)
    }
    if (missing !== undefined) {
      this.park(e, nowMs, 'missing-deps', missing)
      return { status: 'parked', why: 'missing-deps', missing }
    }
    if (e.env.hlc.ms > nowMs + this.maxClockAheadMs) {
      this.park(e, nowMs, 'clock-ahead', [])
      return { status: 'parked', why: 'clock-ahead', missing: [] }
    }
    const r = this.tryFold(e)
    if (r !== null) return r
    const folded = [e]
    this.foldWaiters(e.id, nowMs, folded)
    return { status: 'folded', folded }
  }

  /**
   * Fold parked events whose stamps are no longer ahead of `nowMs`, and drop
   * parked events older than the TTL. Returns what got folded.
   */
  tick (nowMs: number): { folded: PlanEvent[], expired: EventId[] } {
    const folded: PlanEvent[] = []
    const expired: EventId[] = []
    for (const p of [...this.parked.values()]) {
      if (!this.parked.has(p.event.id)) continue
      if (nowMs - p.since > this.parkTtlMs) {
        this.unpark(p.event.id)
        expired.push(p.event.id)
      } else if (p.why === 'clock-ahead' && p.event.env.hlc.ms <= nowMs + this.maxClockAheadMs) {
        this.unpark(p.event.id)
        const r = this.tryFold(p.event)
        if (r === null) {
          folded.push(p.event)
          this.foldWaiters(p.event.id, nowMs, folded)
        } else if (r.status === 'rejected') {
          this.onRejected?.(p.event.id, r.reason, r.detail)
        }
      }
    }
    return { folded, expired }
  }

  private tryFold (e: PlanEvent): AddOutcome | null {
    const rejection = checkDeps(e, this.folded)
    if (rejection !== null) return this.rejectOutcome(e.id, rejection.reason, rejection.detail)
    this.folded.set(e.id, e)
    const planId = (e.env.type === 'goal-submitted' ? e.id : e.env.plan) as PlanId
    let index = this.plans.get(planId)
    if (index === undefined) {
      index = new PlanIndex(planId)
      this.plans.set(planId, index)
    }
    index.add(e)
    return null
  }

  /**
   * Remember a rejection, and reject what waits for it: an event built on a
   * rejected event can never fold, whichever arrived first.
   */
  private rejectOutcome (id: EventId, reason: DepRejectReason | 'builds-on-rejected', detail: string): AddOutcome {
    if (this.rejected.size >= this.maxRejectedIds) this.rejected.clear()
    this.rejected.add(id)
    const stack = [id]
    while (stack.length > 0) {
      const bad = stack.pop() as EventId
      const w = this.waiters.get(bad)
      if (w === undefined) continue
      this.waiters.delete(bad)
      for (const waiting of w) {
        if (!this.parked.has(waiting)) continue
        this.unpark(waiting)
        this.rejected.add(waiting)
        this.onRejected?.(waiting, 'builds-on-rejected', `dep ${bad} was rejected`)
        stack.push(waiting)
      }
    }
    return { status: 'rejected', reason, detail }
  }

  private park (e: PlanEvent, nowMs: number, why: ParkReason, missing: readonly EventId[]): void {
    if (this.parked.size >= this.maxParked) {
      const oldest = this.parked.keys().next()
      if (oldest.done !== true) this.unpark(oldest.value)
    }
    this.parked.set(e.id, { event: e, since: nowMs, why, missing: missing.length })
    for (const d of missing) {
      const w = this.waiters.get(d)
      if (w === undefined) this.waiters.set(d, [e.id])
      else w.push(e.id)
    }
  }

  private unpark (id: EventId): void {
    const p = this.parked.get(id)
    if (p === undefined) return
    this.parked.delete(id)
    for (const d of p.event.env.deps) {
      const w = this.waiters.get(d)
      if (w === undefined) continue
      const rest = w.filter(x => x !== id)
      if (rest.length === 0) this.waiters.delete(d)
      else this.waiters.set(d, rest)
    }
  }

  /** Fold everything that was waiting only for `id`, transitively, without recursion. */
  private foldWaiters (id: EventId, nowMs: number, out: PlanEvent[]): void {
    const stack = [id]
    while (stack.length > 0) {
      const done = stack.pop() as EventId
      const w = this.waiters.get(done)
      if (w === undefined) continue
      this.waiters.delete(done)
      for (const waiting of w) {
        const p = this.parked.get(waiting)
        if (p === undefined) continue
        p.missing -= 1
        if (p.missing > 0) continue
        this.parked.delete(waiting)
        if (p.event.env.hlc.ms > nowMs + this.maxClockAheadMs) {
          this.parked.set(waiting, { event: p.event, since: p.since, why: 'clock-ahead', missing: 0 })
          continue
        }
        const r = this.tryFold(p.event)
        if (r === null) {
          out.push(p.event)
          stack.push(p.event.id)
        } else if (r.status === 'rejected') {
          this.onRejected?.(p.event.id, r.reason, r.detail)
        }
      }
    }
  }
}
