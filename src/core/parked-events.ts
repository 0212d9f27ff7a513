import { Rec, eventOf } from './id-records.js'
import type { ParkReason, Ref } from './id-records.js'
import type { EventId, PlanEvent } from './events.js'

/** A parked event as it stood when asked for. */
export interface ParkedSnapshot {
  readonly event: PlanEvent
  readonly since: number
  readonly why: ParkReason
  readonly missing: number
  readonly refs: Ref[]
}

/**
 * The events that wait to be folded, for missing deps or for the clock, and
 * who waits for what. Each parked event has a record in the event set's map
 * of known ids (`known`, shared with the set), holding what its deps are
 * known as; each missing dep has a record listing its waiters. Records that
 * stand for nothing any more are dropped from `known`.
 *
 * Order: parked events in the order they were parked (an event parked again
 * goes to the end). Entry i is live while its record's seq is i; `head`
 * skips the dead entries at the front, and the list is compacted when most
 * are dead. At most `maxParked` wait: parking one more drops the oldest.
 */
export class ParkedEvents {
  private order: Rec[] = []
  private head = 0
  private size = 0

  constructor(
    private readonly known: Map<EventId, PlanEvent | Rec>,
    private readonly maxParked: number
  ) {}

  get count(): number {
    return this.size
  }

  /** The parked events, oldest first, as they stand now. */
  snapshot(): ParkedSnapshot[] {
    const out: ParkedSnapshot[] = []
    const order = this.order
    for (let i = this.head; i < order.length; i++) {
      const r = order[i] as Rec
      if (r.seq === i)
        out.push({
          event: r.parked as PlanEvent,
          since: r.since,
          why: r.why,
          missing: r.missing,
          refs: r.refs as Ref[]
        })
    }
    return out
  }

  /** Whether some parked event passes `test` (a scan of the parked events, which are few). */
  some(test: (e: PlanEvent) => boolean): boolean {
    if (this.size === 0) return false
    const order = this.order
    for (let i = this.head; i < order.length; i++) {
      const r = order[i] as Rec
      if (r.seq === i && test(r.parked as PlanEvent)) return true
    }
    return false
  }

  /** A new record for an id the set does not know: a missing dep that a parked event will wait for. */
  recordFor(id: EventId): Rec {
    const r = new Rec(id)
    this.known.set(id, r)
    return r
  }

  /** The record of an id that is not folded, if there is one. */
  recOf(id: EventId): Rec | undefined {
    const r = this.known.get(id)
    return r instanceof Rec && r.event === undefined ? r : undefined
  }

  /**
   * Park `e` (`own`: its record, if something waits for it already). `refs`
   * holds what its deps are known as, one per dep, each missing dep with a
   * record; it may be rewritten (when the oldest parked event is dropped to
   * make room).
   */
  park(e: PlanEvent, own: Rec | undefined, refs: Ref[], nowMs: number, why: ParkReason, missing: number): void {
    const deps = e.env.deps
    if (this.size >= this.maxParked && this.size > 0) {
      this.unpark(this.oldest())
      // Dropping it may have dropped records that `refs` or `own` point to: look them up again.
      own = this.recOf(e.id)
      for (let i = 0; i < deps.length; i++) {
        if (eventOf(refs[i]) !== undefined) continue
        const d = deps[i] as EventId
        refs[i] = this.known.get(d) ?? this.recordFor(d)
      }
    }
    // (An event listed among its own deps, which no valid event can be, has its record already.)
    if (own === undefined && deps.includes(e.id)) own = this.recOf(e.id)
    if (own === undefined) own = this.recordFor(e.id)
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

  /** Put `r` (its event `e`) at the end of the order. */
  link(r: Rec, e: PlanEvent, since: number, why: ParkReason, missing: number): void {
    r.parked = e
    r.since = since
    r.why = why
    r.missing = missing
    r.seq = this.order.length
    this.order.push(r)
    this.size++
  }

  /** No longer parked (it is being folded, dropped or parked again). */
  unlink(r: Rec): void {
    r.parked = undefined
    r.seq = -1
    this.size--
    const order = this.order
    const dead = order.length - this.head - this.size
    if (dead > 1024 && dead > 2 * this.size) {
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

  /** Drop a parked event: it no longer waits for anything. */
  unpark(r: Rec): void {
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
  release(r: Rec): void {
    if (r.event === undefined && r.parked === undefined && r.waiters === undefined && this.known.get(r.id) === r)
      this.known.delete(r.id)
  }

  private oldest(): Rec {
    const order = this.order
    while ((order[this.head] as Rec).seq !== this.head) this.head++
    return order[this.head] as Rec
  }
}
