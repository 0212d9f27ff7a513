import { compareHlc } from './hlc.js'
import { isFinished } from './view.js'
import type { Fold } from './fold.js'
import type { Hlc, PeerIdString, PlanId } from './events.js'

/**
 * The open-plan limit per author: which plans the roles leave alone for now.
 *
 * The rule, a function of the event set alone: a plan is *held* when it is
 * open, nobody has started it, and at least `limit` open plans of the same
 * author come before it in line (by the goal's hlc, then its id). A plan is
 * open while it takes new work (not completed, failed, cancelled or out of
 * budget); it is started once any node proposed a split for it or claimed
 * one of its tasks.
 *
 * Order-independent: the same events give the same held plans on every node,
 * however they arrived. Monotonic where it matters: a started plan is never
 * held, so a goal of the same author that arrives late, with an earlier hlc,
 * can hold back plans nobody has touched yet but never one under way. A held
 * plan is let go as the plans before it finish. Two nodes that saw different
 * events (a partition) may start different plans; once they meet, both are
 * started and stay so, and the author briefly has more than `limit` under
 * way. The limit is a share of the swarm's attention, not a safety property.
 *
 * It is not part of the tree or its hash: a node of an earlier release,
 * which knows no limit, works on held plans and derives the same trees.
 */
export interface PlanStanding {
  readonly plan: PlanId
  readonly author: PeerIdString
  readonly submittedAt: Hlc
  /** Takes new work: not completed, failed, cancelled or out of budget. */
  readonly open: boolean
  /** Some node proposed a split for it or claimed one of its tasks. */
  readonly started: boolean
}

/**
 * What the rule reads of a plan in a fold; undefined for a plan not held and
 * for an evicted one (finished, so never open: the rule need not know it).
 */
export function planStanding(fold: Fold, plan: PlanId): PlanStanding | undefined {
  const s = fold.tree(plan)
  if (s === undefined) return undefined
  const index = fold.events.plan(plan)
  return {
    plan,
    author: s.author,
    submittedAt: s.submittedAt,
    open: !isFinished(s) && s.status !== 'budget-exhausted',
    started: index !== undefined && (index.proposals.size > 0 || index.claims.size > 0)
  }
}

/** Open plans one author may have under way before their next goal waits (`--open-plans-per-author`). */
export const DEFAULT_OPEN_PLANS_PER_AUTHOR = 20

/** Line order among one author's plans: the goal's hlc, then the plan id. */
export function inLine(a: PlanStanding, b: PlanStanding): number {
  return compareHlc(a.submittedAt, b.submittedAt) || (a.plan < b.plan ? -1 : a.plan > b.plan ? 1 : 0)
}

/** The rule from scratch: each held plan, with how many open plans of its author come before it. */
export function heldPlans(standings: Iterable<PlanStanding>, limit: number): Map<PlanId, number> {
  const byAuthor = new Map<string, PlanStanding[]>()
  for (const s of standings) {
    if (!s.open) continue
    const line = byAuthor.get(s.author)
    if (line === undefined) byAuthor.set(s.author, [s])
    else line.push(s)
  }
  const held = new Map<PlanId, number>()
  if (!(limit > 0)) return held
  for (const line of byAuthor.values()) {
    line.sort(inLine)
    line.forEach((s, ahead) => {
      if (ahead >= limit && !s.started) held.set(s.plan, ahead)
    })
  }
  return held
}

/** Why a held plan waits, in the words every surface shows. */
export function heldReason(ahead: number, limit: number): string {
  const finish = ahead - limit + 1
  const which =
    ahead === 1
      ? "its author's earlier open plan"
      : finish === ahead
        ? `its author's ${ahead} earlier open plans`
        : `${finish} of its author's ${ahead} earlier open plans`
  return `waits for ${which} to finish (at most ${limit} open ${limit === 1 ? 'plan' : 'plans'} per author)`
}

/**
 * The same rule kept up to date: a plan that got events is `touch`ed, and
 * its standing is read again (from `standingOf`) when a question comes. The
 * cost of a question is the touched plans since the last one, each a binary
 * search in its author's line, so it does not grow with the plans held.
 */
export class AuthorLimit {
  private readonly stale = new Set<PlanId>()
  private readonly standing = new Map<PlanId, PlanStanding>()
  /** Each author's open plans, in line order. */
  private readonly lines = new Map<string, PlanStanding[]>()

  constructor(
    readonly limit: number,
    private readonly standingOf: (plan: PlanId) => PlanStanding | undefined
  ) {}

  touch(plan: PlanId): void {
    this.stale.add(plan)
  }

  /** How many open plans of its author come before a held plan, or null when the plan is not held. */
  ahead(plan: PlanId): number | null {
    if (!(this.limit > 0)) return null
    this.refresh()
    const s = this.standing.get(plan)
    if (s === undefined || !s.open || s.started) return null
    const at = this.position(s)
    return at >= this.limit ? at : null
  }

  /** Why `plan` waits for its author's earlier plans, or null. */
  reason(plan: PlanId): string | null {
    const ahead = this.ahead(plan)
    return ahead === null ? null : heldReason(ahead, this.limit)
  }

  /** The plans held now (for tests and status pages). */
  held(): PlanId[] {
    if (!(this.limit > 0)) return []
    this.refresh()
    const out: PlanId[] = []
    for (const line of this.lines.values())
      for (let i = this.limit; i < line.length; i++) if (!(line[i] as PlanStanding).started) out.push(line[i]!.plan)
    return out
  }

  private refresh(): void {
    if (this.stale.size === 0) return
    for (const plan of this.stale) {
      const was = this.standing.get(plan)
      const now = this.standingOf(plan)
      if (was?.open === true) this.remove(was)
      if (now === undefined) this.standing.delete(plan)
      else {
        this.standing.set(plan, now)
        if (now.open) this.insert(now)
      }
    }
    this.stale.clear()
  }

  private position(s: PlanStanding): number {
    const line = this.lines.get(s.author) ?? []
    let lo = 0
    let hi = line.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (inLine(line[mid] as PlanStanding, s) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private insert(s: PlanStanding): void {
    const line = this.lines.get(s.author)
    if (line === undefined) this.lines.set(s.author, [s])
    else line.splice(this.position(s), 0, s)
  }

  private remove(s: PlanStanding): void {
    const line = this.lines.get(s.author)
    if (line === undefined) return
    const at = this.position(s)
    if (line[at]?.plan === s.plan) line.splice(at, 1)
    if (line.length === 0) this.lines.delete(s.author)
  }
}
