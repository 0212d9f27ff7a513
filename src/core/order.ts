import { compareHlc } from './hlc.js'
import type { PlanEvent } from './events.js'

/** The total order of events: (hlc, author, id). Every replica sorts the same set the same way. */
export function compareEvents(a: PlanEvent, b: PlanEvent): number {
  const h = compareHlc(a.env.hlc, b.env.hlc)
  if (h !== 0) return h
  if (a.env.author !== b.env.author) return a.env.author < b.env.author ? -1 : 1
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/** The earliest of some events in the total order, or undefined. */
export function earliest<T extends PlanEvent>(events: Iterable<T>): T | undefined {
  let best: T | undefined
  for (const e of events) if (best === undefined || compareEvents(e, best) < 0) best = e
  return best
}

export function sortEvents<T extends PlanEvent>(events: Iterable<T>): T[] {
  const out = Array.isArray(events) ? (events as T[]).slice() : [...events]
  return out.length < 2 ? out : out.sort(compareEvents)
}
