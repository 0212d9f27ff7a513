import { isType } from './events.js'
import type { EventId, NodeId, PlanEvent, PlanId, TaskId } from './events.js'

function push<K, V> (m: Map<K, V[]>, k: K, v: V): void {
  const a = m.get(k)
  if (a === undefined) m.set(k, [v])
  else a.push(v)
}

/** Key of a decomposition slot: one node, one attempt. */
export function attemptKey (node: NodeId, attempt: number): string {
  return `${node}#${attempt}`
}

/**
 * The folded events of one plan, grouped the way the derivation reads them.
 *
 * Adding is O(1) and commutative: every group is a bag that the derivation
 * sorts in the total order before use, so insertion order never leaks into
 * the tree. `version` counts adds, so a derived tree can be cached.
 */
export class PlanIndex {
  goal: PlanEvent<'goal-submitted'> | undefined
  readonly events = new Map<EventId, PlanEvent>()
  readonly proposals = new Map<string, Array<PlanEvent<'split-proposed'>>>()
  readonly ballots = new Map<string, Array<PlanEvent<'ballot-cast'>>>()
  readonly claims = new Map<TaskId, Array<PlanEvent<'task-claimed'>>>()
  /** Renewals by the event they renew (claim or previous renewal). */
  readonly renewals = new Map<EventId, Array<PlanEvent<'claim-renewed'>>>()
  /** Results, releases and failures by the claim they cite. */
  readonly results = new Map<EventId, Array<PlanEvent<'result-reported'>>>()
  readonly resultsByTask = new Map<TaskId, Array<PlanEvent<'result-reported'>>>()
  readonly releases = new Map<EventId, Array<PlanEvent<'task-released'>>>()
  readonly failures = new Map<EventId, Array<PlanEvent<'task-failed'>>>()
  readonly reviews = new Map<EventId, Array<PlanEvent<'result-reviewed'>>>()
  readonly amendments: Array<PlanEvent<'committee-amended'>> = []
  readonly raises: Array<PlanEvent<'budget-raised'>> = []
  readonly retries = new Map<TaskId, Array<PlanEvent<'task-retried'>>>()
  readonly cancels: Array<PlanEvent<'goal-cancelled'>> = []
  /** Sum over events of reported usage, each capped at maxTokensPerCall. */
  spentTokens = 0
  version = 0

  constructor (readonly id: PlanId) {}

  add (e: PlanEvent): void {
    if (this.events.has(e.id)) return
    this.events.set(e.id, e)
    this.version++
    switch (e.env.type) {
      case 'goal-submitted':
        this.goal = e as PlanEvent<'goal-submitted'>
        break
      case 'committee-amended':
        this.amendments.push(e as PlanEvent<'committee-amended'>)
        break
      case 'budget-raised':
        this.raises.push(e as PlanEvent<'budget-raised'>)
        break
      case 'task-retried': {
        const r = e as PlanEvent<'task-retried'>
        push(this.retries, r.env.body.task, r)
        break
      }
      case 'goal-cancelled':
        this.cancels.push(e as PlanEvent<'goal-cancelled'>)
        break
      case 'split-proposed': {
        const p = e as PlanEvent<'split-proposed'>
        push(this.proposals, attemptKey(p.env.body.node, p.env.body.attempt), p)
        break
      }
      case 'ballot-cast': {
        const b = e as PlanEvent<'ballot-cast'>
        push(this.ballots, attemptKey(b.env.body.node, b.env.body.attempt), b)
        break
      }
      case 'task-claimed': {
        const c = e as PlanEvent<'task-claimed'>
        push(this.claims, c.env.body.task, c)
        break
      }
      case 'claim-renewed': {
        const r = e as PlanEvent<'claim-renewed'>
        push(this.renewals, r.env.body.prev, r)
        break
      }
      case 'task-released': {
        const r = e as PlanEvent<'task-released'>
        push(this.releases, r.env.body.claim, r)
        break
      }
      case 'task-failed': {
        const f = e as PlanEvent<'task-failed'>
        push(this.failures, f.env.body.claim, f)
        break
      }
      case 'result-reported': {
        const r = e as PlanEvent<'result-reported'>
        push(this.results, r.env.body.claim, r)
        push(this.resultsByTask, r.env.body.task, r)
        break
      }
      case 'result-reviewed': {
        const r = e as PlanEvent<'result-reviewed'>
        push(this.reviews, r.env.body.result, r)
        break
      }
      default: {
        const never: never = e.env.type
        throw new Error(`unhandled event type ${String(never)}`)
      }
    }
    if ('usage' in e.env.body) this.addUsage(e)
  }

  private addUsage (e: PlanEvent): void {
    const usage = (e.env.body as { usage: { inputTokens: number, outputTokens: number } }).usage
    const cap = this.goal?.env.body.params.maxTokensPerCall ?? Number.MAX_SAFE_INTEGER
    this.spentTokens += Math.min(usage.inputTokens + usage.outputTokens, cap)
  }

  /** Convenience for tests and views: the events in an id-sorted list. */
  eventIds (): EventId[] {
    return [...this.events.keys()].sort()
  }

  hasGoal (): this is { goal: PlanEvent<'goal-submitted'> } {
    return this.goal !== undefined && isType(this.goal, 'goal-submitted')
  }
}
