import { isType } from './events.js'
import type { EventId, NodeId, PlanEvent, PlanId, TaskId } from './events.js'

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const a = m.get(k)
  if (a === undefined) m.set(k, [v])
  else a.push(v)
}

/** Key of a decomposition slot: one node, one attempt. */
export function attemptKey(node: NodeId, attempt: number): string {
  return `${node}#${attempt}`
}

/** What cites one claim: its renewals (following one another), results, releases and failures. */
export class ClaimGroup {
  readonly renewals: Array<PlanEvent<'claim-renewed'>> = []
  readonly results: Array<PlanEvent<'result-reported'>> = []
  readonly releases: Array<PlanEvent<'task-released'>> = []
  readonly failures: Array<PlanEvent<'task-failed'>> = []
}

const NO_CLAIM_EVENTS: ClaimGroup = Object.freeze(new ClaimGroup()) as ClaimGroup

/** Where a plan's events can be found by id (the event set that folds them). */
export interface EventSource {
  get: (id: EventId) => PlanEvent | undefined
}

/** An added event's own deps, by id. */
export interface OwnDeps {
  own?: (id: EventId) => PlanEvent | undefined
}

/**
 * The folded events of one plan, grouped the way the derivation reads them.
 *
 * Adding is O(1) and commutative: every group is a bag that the derivation
 * sorts in the total order before use, so insertion order never leaks into
 * the tree. `version` counts adds, so a derived tree can be cached. Groups
 * are keyed by things a plan has few of (nodes, tasks, claims, results), so
 * their maps stay small. Only the event set adds, each event once.
 */
export class PlanIndex {
  goal: PlanEvent<'goal-submitted'> | undefined
  /** Every folded event of the plan, in the order folded. */
  private readonly list: PlanEvent[] = []
  /** By id: kept up to date without a source, built on demand with one. */
  private byId: Map<EventId, PlanEvent> | undefined
  readonly proposals = new Map<string, Array<PlanEvent<'split-proposed'>>>()
  readonly ballots = new Map<string, Array<PlanEvent<'ballot-cast'>>>()
  readonly claims = new Map<TaskId, Array<PlanEvent<'task-claimed'>>>()
  /** Renewals, results, releases and failures, by the claim they cite (the claim event itself). */
  private readonly byClaim = new Map<PlanEvent, ClaimGroup>()
  /** What cites a claim that is not in the index (yet), by the claim's id. */
  private readonly orphans = new Map<EventId, ClaimGroup>()
  readonly resultsByTask = new Map<TaskId, Array<PlanEvent<'result-reported'>>>()
  readonly reviews = new Map<EventId, Array<PlanEvent<'result-reviewed'>>>()
  readonly amendments: Array<PlanEvent<'committee-amended'>> = []
  readonly raises: Array<PlanEvent<'budget-raised'>> = []
  readonly retries = new Map<TaskId, Array<PlanEvent<'task-retried'>>>()
  readonly cancels: Array<PlanEvent<'goal-cancelled'>> = []
  /** Sum over events of reported usage, each capped at maxTokensPerCall (per model turn, for a tool loop's). */
  spentTokens = 0
  version = 0
  /** The latest wall-clock part of any folded event's stamp: when the plan was last heard of (src/core/retention.ts). */
  lastStampMs = 0

  /** `source` finds events by id; without one, the index keeps its own map. */
  constructor(
    readonly id: PlanId,
    private readonly source?: EventSource
  ) {
    this.byId = source === undefined ? new Map() : undefined
  }

  /** The plan's events by id. */
  get events(): ReadonlyMap<EventId, PlanEvent> {
    let m = this.byId
    if (m === undefined || m.size !== this.list.length) {
      m = new Map<EventId, PlanEvent>()
      for (const e of this.list) m.set(e.id, e)
      this.byId = m
    }
    return m
  }

  /** The events folded after the first `n`, in the order folded: what a tree kept between reads has not seen. */
  since(n: number): PlanEvent[] {
    return this.list.slice(n)
  }

  /** How many events the plan has. */
  get size(): number {
    return this.list.length
  }

  /** One of the plan's events. */
  event(id: EventId): PlanEvent | undefined {
    if (this.source === undefined) return this.events.get(id)
    const e = this.source.get(id)
    if (e === undefined) return undefined
    const plan = e.env.type === 'goal-submitted' ? e.id : e.env.plan
    return plan === this.id ? e : undefined
  }

  /** What cites a claim. */
  claimEvents(claim: PlanEvent<'task-claimed'>): ClaimGroup {
    return this.byClaim.get(claim) ?? NO_CLAIM_EVENTS
  }

  /**
   * Add a folded event (the event set adds each once). `deps` may resolve
   * its own deps, sparing a lookup of the claim it cites.
   */
  add(e: PlanEvent, deps?: OwnDeps): void {
    this.list.push(e)
    if (this.source === undefined) this.byId?.set(e.id, e)
    this.version++
    if (e.env.hlc.ms > this.lastStampMs) this.lastStampMs = e.env.hlc.ms
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
        if (this.orphans.size > 0) {
          const g = this.orphans.get(c.id)
          if (g !== undefined) {
            this.orphans.delete(c.id)
            this.byClaim.set(c, g)
          }
        }
        break
      }
      case 'claim-renewed': {
        const r = e as PlanEvent<'claim-renewed'>
        this.group(r.env.body.claim, deps).renewals.push(r)
        break
      }
      case 'task-released': {
        const r = e as PlanEvent<'task-released'>
        this.group(r.env.body.claim, deps).releases.push(r)
        break
      }
      case 'task-failed': {
        const f = e as PlanEvent<'task-failed'>
        this.group(f.env.body.claim, deps).failures.push(f)
        break
      }
      case 'result-reported': {
        const r = e as PlanEvent<'result-reported'>
        this.group(r.env.body.claim, deps).results.push(r)
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

  private group(id: EventId, deps: OwnDeps | undefined): ClaimGroup {
    // The claim is one of the event's deps, folded before it (the dep rules say so).
    const claim = (deps?.own !== undefined ? deps.own(id) : undefined) ?? this.event(id)
    if (claim === undefined) {
      // Only when events are added without their deps: keep them until the claim comes.
      let g = this.orphans.get(id)
      if (g === undefined) {
        g = new ClaimGroup()
        this.orphans.set(id, g)
      }
      return g
    }
    let g = this.byClaim.get(claim)
    if (g === undefined) {
      g = new ClaimGroup()
      this.byClaim.set(claim, g)
    }
    return g
  }

  private addUsage(e: PlanEvent): void {
    const body = e.env.body as { usage: { inputTokens: number; outputTokens: number }; turns?: number }
    // A tool loop's result or failure (protocol 3) counts the cap once per model turn.
    const cap = (this.goal?.env.body.params.maxTokensPerCall ?? Number.MAX_SAFE_INTEGER) * (body.turns ?? 1)
    this.spentTokens += Math.min(body.usage.inputTokens + body.usage.outputTokens, cap)
  }

  /** Convenience for tests and views: the events in an id-sorted list. */
  eventIds(): EventId[] {
    return this.list.map(e => e.id).sort()
  }

  hasGoal(): this is { goal: PlanEvent<'goal-submitted'> } {
    return this.goal !== undefined && isType(this.goal, 'goal-submitted')
  }
}
