import type { DepSource } from './dep-rules.js'
import type { EventId, PlanEvent } from './events.js'

export type ParkReason = 'missing-deps' | 'clock-ahead'

/**
 * What the event set knows about an id beyond its event: that it is parked
 * (and why, how many deps it still misses, and what its deps are
 * known as), and which parked events wait for it. A record that stands for
 * neither and has no event is dropped. Once the event folds, `event` is set
 * and the record stays (ids nothing waited for map to their event directly).
 */
export class Rec {
  event: PlanEvent | undefined = undefined
  /** The event, while it is parked. */
  parked: PlanEvent | undefined = undefined
  why: ParkReason = 'missing-deps'
  /** Deps not folded yet. */
  missing = 0
  /** While parked: what its deps are known as, in the order of `env.deps`. */
  refs: Ref[] | undefined = undefined
  /** While parked: its place in the parked events' order; -1 otherwise. */
  seq = -1
  /**
   * Parked events waiting for this id, once per occurrence among their deps:
   * one record, or a list when there are several (most ids have one).
   */
  waiters: Rec | Rec[] | undefined = undefined
  constructor(readonly id: EventId) {}
}

/** What an id is known as: its folded event, or its record (folded if the record's `event` is set). */
export type Ref = PlanEvent | Rec

export function eventOf(r: Ref | undefined): PlanEvent | undefined {
  return r instanceof Rec ? r.event : r
}

/** An event's deps, resolved (for `checkDeps` and the plan index) without looking them up again. */
export class DepLookup implements DepSource {
  deps: readonly EventId[] = []
  refs: ReadonlyArray<Ref | undefined> = []

  get(id: EventId): PlanEvent | undefined {
    const deps = this.deps
    for (let i = 0; i < deps.length; i++) if (deps[i] === id) return eventOf(this.refs[i])
    return undefined
  }

  own(id: EventId): PlanEvent | undefined {
    return this.get(id)
  }

  at(i: number): PlanEvent | undefined {
    return eventOf(this.refs[i])
  }
}
