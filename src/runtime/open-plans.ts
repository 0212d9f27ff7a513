import { compareEvents } from '../core/order.js'
import { isFinished } from '../core/view.js'
import type { Fold } from '../core/fold.js'
import type { PlanEvent, PlanId } from '../core/events.js'

/**
 * The ids of the events of the plans under way in memory, and of those
 * whose last stamp is at or after `recentMs` (a peer catching up acts on
 * those, so its view of them must be whole), at most `max`: the plan heard
 * of last first, each plan's events in stamp order (deps before what cites
 * them). An evicted plan's events come from `storedEvents`. While the node
 * is itself `catchingUp`, a plan it holds in part looks under way whatever
 * its age, so then only plans with a recent stamp count: otherwise a
 * `--history open` peer would be handed pieces of the history.
 */
export function openPlanIds(
  fold: Fold,
  storedEvents: (plan: PlanId) => PlanEvent[],
  max: number,
  recentMs: number,
  catchingUp: boolean
): string[] {
  const open: Array<{ last: number; events: PlanEvent[] }> = []
  for (const plan of fold.plans()) {
    if (fold.isEvicted(plan)) {
      // Finished and quiet for a minute (out of memory), but perhaps not for two: read from the store.
      const last = fold.facts(plan)?.lastStampMs ?? 0
      if (last >= recentMs) open.push({ last, events: storedEvents(plan) })
      continue
    }
    const tree = fold.tree(plan)
    const index = fold.events.plan(plan)
    if (tree === undefined || index === undefined) continue
    if ((isFinished(tree) || catchingUp) && index.lastStampMs < recentMs) continue
    open.push({ last: index.lastStampMs, events: [...index.events.values()] })
  }
  open.sort((a, b) => b.last - a.last)
  const out: string[] = []
  for (const { events } of open) {
    for (const e of events.sort(compareEvents)) {
      if (out.length >= max) return out
      out.push(e.id)
    }
  }
  return out
}
