import { Rec, eventOf } from './id-records.js'
import type { ParkReason, Ref } from './id-records.js'
import type { EventId, PlanEvent } from './events.js'

/**
 * Parked events are capped in bytes as well as in number: 64 MiB of their
 * estimated encoded size (eventBytes). A count alone let a member fill
 * memory with events that wait for deps nobody will send (100k events of
 * 64 KiB are 6.5 GB).
 */
export const MAX_PARKED_BYTES = 64 * 1024 * 1024

/** The signature and the envelope's framing, counted once per event on top of its fields. */
const EVENT_OVERHEAD_BYTES = 128

/**
 * About the encoded size of an event (its envelope's fields in UTF-8, plus
 * the signature and framing), from the decoded event: the core never sees
 * the wire bytes. Within a few bytes per field of the real size, and never
 * much below it, which is what a cap needs.
 */
export function eventBytes(e: PlanEvent): number {
  return EVENT_OVERHEAD_BYTES + e.id.length + valueBytes(e.env)
}

function valueBytes(v: unknown): number {
  if (typeof v === 'string') return 2 + utf8Length(v)
  if (typeof v === 'number') return 9
  if (v === null || typeof v === 'boolean' || v === undefined) return 1
  if (Array.isArray(v)) {
    let n = 3
    for (let i = 0; i < v.length; i++) n += valueBytes(v[i])
    return n
  }
  if (typeof v === 'object') {
    // Own enumerable keys, as Object.entries has them, without its arrays: this runs for every parked event.
    const o = v as Record<string, unknown>
    let n = 3
    for (const k in o) if (Object.hasOwn(o, k)) n += 1 + k.length + valueBytes(o[k])
    return n
  }
  return 1
}

/** A character past ASCII. Most strings here (ids, peer ids, keys) have none, and a regular expression tells faster than a loop. */
const NON_ASCII = /[^\x00-\x7f]/

function utf8Length(s: string): number {
  let n = s.length
  if (!NON_ASCII.test(s)) return n
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    // A surrogate pair is 2 units and 4 bytes; any other unit past ASCII is 2 or 3 bytes.
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1
  }
  return n
}

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
 * are dead. At most `maxParked` wait, of at most `maxBytes` together
 * (eventBytes): parking one more drops the oldest until it fits (an event
 * larger than `maxBytes` alone still parks, by itself).
 */
export class ParkedEvents {
  private order: Rec[] = []
  /** eventBytes of order[i], while it is live. */
  private sizes: number[] = []
  /**
   * When order[i] was parked, while it is live. (Beside the records rather
   * than in them: a wall-clock ms is no small integer, and as a field it
   * would cost each record a boxed number.)
   */
  private sinces: number[] = []
  private head = 0
  private size = 0
  private held = 0

  constructor(
    private readonly known: Map<EventId, PlanEvent | Rec>,
    private readonly maxParked: number,
    private readonly maxBytes: number = MAX_PARKED_BYTES
  ) {}

  get count(): number {
    return this.size
  }

  /** The parked events' estimated encoded size together (eventBytes). */
  get bytes(): number {
    return this.held
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
          since: this.sinces[i] as number,
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
    const adding = eventBytes(e)
    let dropped = false
    while (this.size > 0 && (this.size >= this.maxParked || this.held + adding > this.maxBytes)) {
      this.unpark(this.oldest())
      dropped = true
    }
    if (dropped) {
      // Dropping them may have dropped records that `refs` or `own` point to: look them up again.
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
    this.link(own, e, nowMs, why, missing, adding)
  }

  /** Put `r` (its event `e`) at the end of the order; `bytes`: eventBytes(e), when known already. */
  link(r: Rec, e: PlanEvent, since: number, why: ParkReason, missing: number, bytes = eventBytes(e)): void {
    r.parked = e
    r.why = why
    r.missing = missing
    r.seq = this.order.length
    this.order.push(r)
    this.sizes.push(bytes)
    this.sinces.push(since)
    this.size++
    this.held += bytes
  }

  /** When a parked record's event was parked. */
  sinceOf(r: Rec): number {
    return this.sinces[r.seq] as number
  }

  /** No longer parked (it is being folded, dropped or parked again). */
  unlink(r: Rec): void {
    this.held -= this.sizes[r.seq] ?? 0
    r.parked = undefined
    r.seq = -1
    this.size--
    const order = this.order
    const dead = order.length - this.head - this.size
    if (dead > 1024 && dead > 2 * this.size) {
      const live: Rec[] = []
      const sizes: number[] = []
      const sinces: number[] = []
      for (let i = this.head; i < order.length; i++) {
        const x = order[i] as Rec
        if (x.seq === i) {
          x.seq = live.length
          live.push(x)
          sizes.push(this.sizes[i] as number)
          sinces.push(this.sinces[i] as number)
        }
      }
      this.order = live
      this.sizes = sizes
      this.sinces = sinces
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
