import type { PeerIdString, PlanId } from './events.js'
import type { EvidenceKind, PlanStanding } from './tree.js'

/** Every kind of evidence, in the order a reader sees them (the grave kinds first). */
export const EVIDENCE_KINDS: readonly EvidenceKind[] = [
  'equivocation',
  'claim-over-limit',
  'self-takeover',
  'result-not-held',
  'late',
  'ended-without-result',
  'result-rejected'
]

/**
 * The one kind the project's own roles never author (ADR-0048): two events
 * in one slot (a node writes its own events to disk before it publishes
 * them, so even a crash does not make it sign twice). Each item counts.
 */
export const GRAVE_KINDS: ReadonlySet<EvidenceKind> = new Set(['equivocation'])

/**
 * Breaches of a rule that honest roles keep, except across the faults the
 * swarm survives: a claim beyond the limit or a takeover of one's own chain
 * when a crash, a partition or a skewed clock hid its other claims. They
 * count, one each, beyond this many in one plan. The simulator's sweep of
 * every fault over version-5 plans (60 seeds, ADR-0048) saw an honest
 * member reach 3 claims over the limit in one plan.
 */
export const RULE_KINDS: ReadonlySet<EvidenceKind> = new Set(['claim-over-limit', 'self-takeover'])
export const RULE_ALLOWANCE_PER_PLAN = 6

/**
 * What honest members leave in the ordinary course, in numbers when the
 * swarm is split: a result on a claim that lost a contest it did not see
 * (the sweep saw 13 in one plan from one honest member), a late event, a
 * task the model could not do, a result the committee did not accept. They
 * count, half each, only beyond this many in one plan: a member that floods
 * a plan with them.
 */
export const SOFT_ALLOWANCE_PER_PLAN = 32

export type EvidenceCounts = Record<EvidenceKind, number>

/** One member's record across the plans this node holds. */
export interface PeerRecord {
  readonly peer: PeerIdString
  /** Evidence items per kind, over every plan. */
  readonly counts: Readonly<EvidenceCounts>
  /** All evidence items. */
  readonly total: number
  /** The plans holding evidence against it, sorted. */
  readonly plans: readonly PlanId[]
  /** The plans where it equivocated (its ballots and reviews there do not count), sorted. */
  readonly equivocatedIn: readonly PlanId[]
  /** What counts against it (see `planPenalty`): 0 for a member whose record is within what honest members do. */
  readonly penalty: number
}

/** One member's part of one plan's standing. */
export interface PlanContribution {
  readonly counts: Readonly<EvidenceCounts>
  readonly equivocator: boolean
}

export function zeroCounts(): EvidenceCounts {
  return {
    equivocation: 0,
    'claim-over-limit': 0,
    'self-takeover': 0,
    'result-not-held': 0,
    late: 0,
    'ended-without-result': 0,
    'result-rejected': 0
  }
}

/** A plan's standing (a version-5 tree's `standing`) per member; empty for a plan without one. */
export function planContribution(standing: PlanStanding | undefined): Map<PeerIdString, PlanContribution> {
  const out = new Map<PeerIdString, { counts: EvidenceCounts; equivocator: boolean }>()
  if (standing === undefined) return out
  const of = (peer: PeerIdString): { counts: EvidenceCounts; equivocator: boolean } => {
    let c = out.get(peer)
    if (c === undefined) {
      c = { counts: zeroCounts(), equivocator: false }
      out.set(peer, c)
    }
    return c
  }
  for (const x of standing.evidence) of(x.author).counts[x.kind]++
  for (const p of standing.equivocators) of(p).equivocator = true
  return out
}

/**
 * What one plan's evidence counts against a member: each grave item (and
 * being an equivocator there) one; each rule breach beyond
 * RULE_ALLOWANCE_PER_PLAN one; half a point for each other item beyond
 * SOFT_ALLOWANCE_PER_PLAN. An honest member's is 0.
 */
export function planPenalty(c: PlanContribution): number {
  let grave = 0
  let rule = 0
  let soft = 0
  for (const k of EVIDENCE_KINDS) {
    if (GRAVE_KINDS.has(k)) grave += c.counts[k]
    else if (RULE_KINDS.has(k)) rule += c.counts[k]
    else soft += c.counts[k]
  }
  if (c.equivocator && c.counts.equivocation === 0) grave++
  return grave + Math.max(0, rule - RULE_ALLOWANCE_PER_PLAN) + Math.max(0, soft - SOFT_ALLOWANCE_PER_PLAN) / 2
}

interface Tally {
  counts: EvidenceCounts
  total: number
  penalty: number
  plans: Set<PlanId>
  equivocatedIn: Set<PlanId>
}

/**
 * Each member's standing across plans, kept by plan: `set` replaces one
 * plan's part (subtracting what it gave before), so keeping it current costs
 * the plans that changed, never a walk over every plan. A pure structure:
 * the runtime feeds it the trees (src/runtime/standing.ts).
 */
export class StandingBook {
  private readonly byPlan = new Map<PlanId, Map<PeerIdString, PlanContribution>>()
  private readonly byPeer = new Map<PeerIdString, Tally>()

  /** Replace a plan's part with what `standing` holds (undefined: the plan holds none). */
  set(plan: PlanId, standing: PlanStanding | undefined): void {
    this.forget(plan)
    const parts = planContribution(standing)
    if (parts.size === 0) return
    this.byPlan.set(plan, parts)
    for (const [peer, c] of parts) this.apply(peer, plan, c, 1)
  }

  /** Drop a plan's part (it expired). */
  forget(plan: PlanId): void {
    const was = this.byPlan.get(plan)
    if (was === undefined) return
    this.byPlan.delete(plan)
    for (const [peer, c] of was) this.apply(peer, plan, c, -1)
  }

  /** The plans that hold evidence. */
  plans(): IterableIterator<PlanId> {
    return this.byPlan.keys()
  }

  /** What counts against a member (0 for one without a poor record): a map lookup, for gossipsub's score. */
  penalty(peer: PeerIdString): number {
    return this.byPeer.get(peer)?.penalty ?? 0
  }

  record(peer: PeerIdString): PeerRecord | undefined {
    const t = this.byPeer.get(peer)
    return t === undefined ? undefined : recordOf(peer, t)
  }

  /** Every member with evidence, the highest penalty first, then the most evidence, then by peer id. */
  records(): PeerRecord[] {
    return [...this.byPeer]
      .map(([peer, t]) => recordOf(peer, t))
      .sort((a, b) => b.penalty - a.penalty || b.total - a.total || (a.peer < b.peer ? -1 : a.peer > b.peer ? 1 : 0))
  }

  private apply(peer: PeerIdString, plan: PlanId, c: PlanContribution, sign: 1 | -1): void {
    let t = this.byPeer.get(peer)
    if (t === undefined) {
      t = { counts: zeroCounts(), total: 0, penalty: 0, plans: new Set(), equivocatedIn: new Set() }
      this.byPeer.set(peer, t)
    }
    for (const k of EVIDENCE_KINDS) {
      t.counts[k] += sign * c.counts[k]
      t.total += sign * c.counts[k]
    }
    t.penalty += sign * planPenalty(c)
    if (sign > 0) {
      t.plans.add(plan)
      if (c.equivocator) t.equivocatedIn.add(plan)
    } else {
      t.plans.delete(plan)
      t.equivocatedIn.delete(plan)
    }
    // A sum of halves: exact in floating point, so a member whose plans all left is back at exactly 0.
    if (t.plans.size === 0) this.byPeer.delete(peer)
  }
}

function recordOf(peer: PeerIdString, t: Tally): PeerRecord {
  return {
    peer,
    counts: { ...t.counts },
    total: t.total,
    plans: [...t.plans].sort(),
    equivocatedIn: [...t.equivocatedIn].sort(),
    penalty: t.penalty
  }
}

/** A record in a few words: `3 equivocation, 1 late in 2 plans`. */
export function describeRecord(r: PeerRecord): string {
  const parts = EVIDENCE_KINDS.filter(k => r.counts[k] > 0).map(k => `${r.counts[k]} ${k}`)
  return `${parts.join(', ')} in ${r.plans.length} plan${r.plans.length === 1 ? '' : 's'}`
}

/** Whether a record is worse than honest members' (something counts against it). */
export function isPoor(r: PeerRecord | undefined): boolean {
  return r !== undefined && r.penalty > 0
}
