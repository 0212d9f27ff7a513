import { sortEvents } from './order.js'
import type { EventId, PlanEvent } from './events.js'
import type { Equivocation } from './tree.js'

/**
 * One slot per author: two different events by one author in one slot are
 * equivocation. Each step of the derivation returns the proofs it found; the
 * tree records each slot's proof once.
 */

/** What a step found nothing of: shared, never written. */
export const NO_EQUIVOCATIONS: readonly Equivocation[] = Object.freeze([])

/** `a` then `b`, without a copy when either is empty. */
export function concatEquivocations(a: readonly Equivocation[], b: readonly Equivocation[]): readonly Equivocation[] {
  return b.length === 0 ? a : a.length === 0 ? b : [...a, ...b]
}

/** The events that fill their slot alone (sorted), the ids that share one, and the proofs. */
export interface Slotted<T extends PlanEvent> {
  readonly valid: T[]
  readonly equivocated: ReadonlySet<EventId>
  readonly equivocations: readonly Equivocation[]
}

/**
 * Keep one event per slot; two different events in one slot are
 * equivocation: the proof is returned and neither counts.
 */
export function bySlot<T extends PlanEvent>(events: readonly T[], slotOf: (e: T) => string, label: string): Slotted<T> {
  const slots = new Map<string, T[]>()
  for (const e of events) {
    const k = slotOf(e)
    const a = slots.get(k)
    if (a === undefined) slots.set(k, [e])
    else a.push(e)
  }
  const valid: T[] = []
  const equivocated = new Set<EventId>()
  let equivocations: Equivocation[] | undefined
  for (const [k, a] of slots) {
    if (a.length === 1) {
      valid.push(a[0] as T)
    } else {
      const ids = a.map(e => e.id).sort()
      for (const id of ids) equivocated.add(id)
      if (equivocations === undefined) equivocations = []
      equivocations.push({ author: (a[0] as T).env.author, slot: `${label}:${k}`, events: ids })
    }
  }
  return { valid: sortEvents(valid), equivocated, equivocations: equivocations ?? NO_EQUIVOCATIONS }
}

/**
 * The tree's list: sorted by slot, one proof per slot (the first, in the
 * order given). A slot's proof is a function of the set, so which step found
 * it first does not matter.
 */
export function onePerSlot(found: readonly Equivocation[]): Equivocation[] {
  const sorted = [...found].sort((a, b) => (a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : 0))
  return sorted.filter((e, i) => i === 0 || e.slot !== (sorted[i - 1] as Equivocation).slot)
}
