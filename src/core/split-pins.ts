import { attemptKey } from './plan-index.js'
import { compareEvents, sortEvents } from './order.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, NodeId, PeerIdString, PlanEvent } from './events.js'
import type { CommitteeView } from './tree.js'
import type { TrustRules } from './trust-rules.js'

/** Per committee event, the approvers who are members of it: only they are needed under it (an amendment may drop one). */
export type NeededApprovers = ReadonlyMap<EventId, ReadonlySet<PeerIdString>>

/** A split that others built on: the proposal, the ballot that completed its quorum, and the quorum's ballots. */
export interface PinnedSplit {
  readonly proposal: PlanEvent<'split-proposed'>
  readonly decidedBy: PlanEvent<'ballot-cast'>
  readonly deciding: EventId[]
}

const NO_ONE: ReadonlySet<PeerIdString> = new Set()

/**
 * Protocol 5's finality for splits (ADR-0047). A proposal is pinned when a
 * later proposal, claim or result by someone other than its author cites it
 * together with ballots that on their own decide it: under one committee
 * event, at least its quorum of members chose it, the needed approvers
 * among them. That is what every child's proposal and claim cites (the
 * node's evidence). A pinned proposal wins its attempt whatever arrives
 * later (an equivocation, an equivocator's muted ballot, an earlier ballot
 * of another committee); of several pinned in one attempt, the one whose
 * deciding ballot is earliest. Returns the pinned winner per attempt.
 */
export function pinnedSplits(
  index: PlanIndex,
  rules: TrustRules,
  node: NodeId,
  maxAttempts: number,
  committeeById: ReadonlyMap<EventId, CommitteeView>,
  needed: NeededApprovers
): Map<number, PinnedSplit> {
  const out = new Map<number, PinnedSplit>()
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    for (const p of index.proposals.get(attemptKey(node, attempt)) ?? []) {
      for (const e of rules.citers(p.id)) {
        if (e.env.author === p.env.author) continue
        const win = quorumIn(index, e, p, committeeById, needed)
        const was = out.get(attempt)
        if (win !== undefined && (was === undefined || compareEvents(win.decidedBy, was.decidedBy) < 0))
          out.set(attempt, win)
      }
    }
  }
  return out
}

/** The ballots among `e`'s deps that decide `p` under one committee, if they do. */
function quorumIn(
  index: PlanIndex,
  e: PlanEvent,
  p: PlanEvent<'split-proposed'>,
  committeeById: ReadonlyMap<EventId, CommitteeView>,
  needed: NeededApprovers
): PinnedSplit | undefined {
  const byCommittee = new Map<EventId, Array<PlanEvent<'ballot-cast'>>>()
  for (const d of e.env.deps) {
    const b = index.event(d)
    if (b === undefined || b.env.type !== 'ballot-cast') continue
    const ballot = b as PlanEvent<'ballot-cast'>
    const body = ballot.env.body
    if (body.choice !== p.id || body.node !== p.env.body.node || body.attempt !== p.env.body.attempt) continue
    byCommittee.set(body.committee, [...(byCommittee.get(body.committee) ?? []), ballot])
  }
  let best: PinnedSplit | undefined
  for (const [committee, ballots] of byCommittee) {
    const c = committeeById.get(committee)
    if (c === undefined) continue
    const authors = new Set(ballots.map(b => b.env.author))
    const approvers = needed.get(committee) ?? NO_ONE
    if (authors.size < c.quorum || [...approvers].some(a => !authors.has(a))) continue
    const sorted = sortEvents(ballots)
    const decidedBy = sorted[sorted.length - 1] as PlanEvent<'ballot-cast'>
    if (best === undefined || compareEvents(decidedBy, best.decidedBy) < 0)
      best = { proposal: p, decidedBy, deciding: sorted.map(b => b.id) }
  }
  return best
}
