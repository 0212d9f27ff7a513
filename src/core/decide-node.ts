import { attemptKey } from './plan-index.js'
import { compareEvents, sortEvents } from './order.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, NodeId, PeerIdString, PlanEvent } from './events.js'
import type { AttemptView, BallotView, CommitteeView, Equivocation, ProposalView } from './tree.js'

/** How a node's decomposition stands, from its proposals and ballots alone. */
export type NodeDecision =
  | { readonly kind: 'won', readonly attempts: AttemptView[], readonly proposal: PlanEvent<'split-proposed'>, readonly decidedBy: PlanEvent<'ballot-cast'>, readonly deciding: readonly EventId[] }
  | { readonly kind: 'open', readonly attempts: AttemptView[], readonly waiting: string }
  | { readonly kind: 'exhausted', readonly attempts: AttemptView[], readonly failedAt: Hlc, readonly lastBallots: readonly EventId[] }

/**
 * Keep one event per slot; two different events in one slot are
 * equivocation: the proof is recorded and neither counts.
 */
export function bySlot<T extends PlanEvent> (events: readonly T[], slotOf: (e: T) => string, label: string, equivocations: Equivocation[]): { valid: T[], equivocated: Set<EventId> } {
  const slots = new Map<string, T[]>()
  for (const e of events) {
    const k = slotOf(e)
    const a = slots.get(k)
    if (a === undefined) slots.set(k, [e])
    else a.push(e)
  }
  const valid: T[] = []
  const equivocated = new Set<EventId>()
  for (const [k, a] of slots) {
    if (a.length === 1) {
      valid.push(a[0] as T)
    } else {
      const ids = a.map(e => e.id).sort()
      for (const id of ids) equivocated.add(id)
      equivocations.push({ author: (a[0] as T).env.author, slot: `${label}:${k}`, events: ids })
    }
  }
  return { valid: sortEvents(valid), equivocated }
}

function proposalSlot (p: PlanEvent<'split-proposed'>): string {
  return p.env.author
}

function ballotSlot (b: PlanEvent<'ballot-cast'>): string {
  return `${b.env.author}@${b.env.body.committee}`
}

const NONE_CAST: ReadonlySet<PeerIdString> = new Set()

/** Most choices a proposal got under any one committee event. */
function votesFor (tally: ReadonlyMap<string, readonly unknown[]>, committees: readonly CommitteeView[], id: EventId): number {
  let most = 0
  for (const c of committees) most = Math.max(most, tally.get(`${c.event}>${id}`)?.length ?? 0)
  return most
}

/**
 * Decide a node's decomposition: for each attempt in turn, a proposal wins
 * when `quorum` members of one committee chose it under that committee
 * event; with several winners (only possible across amendments) the earlier
 * deciding ballot wins. An attempt fails when every member of some committee
 * has cast a ballot under it and nothing won.
 */
export function decideNode (index: PlanIndex, node: NodeId, maxAttempts: number, committees: readonly CommitteeView[], equivocations: Equivocation[]): NodeDecision {
  const attempts: AttemptView[] = []
  const latest = committees[committees.length - 1] as CommitteeView
  const committeeById = new Map<EventId, CommitteeView>()
  for (const c of committees) committeeById.set(c.event, c)
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const key = attemptKey(node, attempt)
    const proposals = sortEvents(index.proposals.get(key) ?? [])
    const allBallots = sortEvents(index.ballots.get(key) ?? [])
    const props = bySlot(proposals, proposalSlot, `proposal:${key}`, equivocations)
    const ballots = bySlot(allBallots, ballotSlot, `ballot:${key}`, equivocations)
    const validProposals = new Set<EventId>()
    for (const p of props.valid) validProposals.add(p.id)

    const tally = new Map<string, Array<PlanEvent<'ballot-cast'>>>()
    let best: { proposal: EventId, decidedBy: PlanEvent<'ballot-cast'>, deciding: EventId[] } | undefined
    for (const b of ballots.valid) {
      const choice = b.env.body.choice
      const c = committeeById.get(b.env.body.committee)
      if (choice === null || c === undefined || !validProposals.has(choice)) continue
      const k = `${b.env.body.committee}>${choice}`
      let list = tally.get(k)
      if (list === undefined) {
        list = []
        tally.set(k, list)
      }
      list.push(b)
      if (list.length === c.quorum && (best === undefined || compareEvents(b, best.decidedBy) < 0)) {
        best = { proposal: choice, decidedBy: b, deciding: list.map(x => x.id) }
      }
    }
    // Who cast a ballot under each committee event.
    const cast = new Map<EventId, Set<PeerIdString>>()
    for (const b of allBallots) {
      let authors = cast.get(b.env.body.committee)
      if (authors === undefined) {
        authors = new Set()
        cast.set(b.env.body.committee, authors)
      }
      authors.add(b.env.author)
    }
    const latestCast = cast.get(latest.event) ?? NONE_CAST
    const waitingFor = latest.members.filter(m => !latestCast.has(m))

    // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
    const proposalViews: ProposalView[] = proposals.map(p => ({
      author: p.env.author,
      equivocated: props.equivocated.has(p.id),
      id: p.id,
      rationale: p.env.body.rationale,
      titles: p.env.body.subgoals.map(s => s.title),
      votes: votesFor(tally, committees, p.id)
    }))
    const ballotViews: BallotView[] = allBallots.map(b => ({
      author: b.env.author,
      choice: b.env.body.choice,
      committee: b.env.body.committee,
      equivocated: ballots.equivocated.has(b.id),
      id: b.id,
      notes: b.env.body.notes
    }))

    if (best !== undefined) {
      attempts.push({ attempt, ballots: ballotViews, decidedBy: best.decidedBy.id, outcome: 'won', proposals: proposalViews, waitingFor: [], winner: best.proposal })
      const winner = best.proposal
      const proposal = props.valid.find(p => p.id === winner) as PlanEvent<'split-proposed'>
      return { kind: 'won', attempts, proposal, decidedBy: best.decidedBy, deciding: best.deciding }
    }

    const complete = committees.find(c => { const authors = cast.get(c.event) ?? NONE_CAST; return c.members.every(m => authors.has(m)) })
    if (complete === undefined) {
      attempts.push({ attempt, ballots: ballotViews, decidedBy: null, outcome: 'open', proposals: proposalViews, waitingFor, winner: null })
      const waiting = proposalViews.length === 0
        ? `attempt ${attempt}: waiting for proposals from decomposers`
        : `attempt ${attempt}: waiting for ballots from ${waitingFor.length} of ${latest.members.length} committee members (quorum ${latest.quorum}): ${waitingFor.join(', ')}`
      return { kind: 'open', attempts, waiting }
    }
    attempts.push({ attempt, ballots: ballotViews, decidedBy: null, outcome: 'failed', proposals: proposalViews, waitingFor: [], winner: null })
    if (attempt === maxAttempts) {
      const last = allBallots.filter(b => b.env.body.committee === complete.event)
      const failedAt = (last[last.length - 1] as PlanEvent).env.hlc
      return { kind: 'exhausted', attempts, failedAt, lastBallots: last.map(b => b.id) }
    }
  }
  // maxAttempts >= 1 is guaranteed by parameter validation; reaching here means none were allowed.
  return { kind: 'exhausted', attempts, failedAt: index.goal?.env.hlc ?? { ms: 0, c: 0 }, lastBallots: [] }
}
