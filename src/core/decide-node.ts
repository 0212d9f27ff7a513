import { attemptKey } from './plan-index.js'
import { compareEvents, sortEvents } from './order.js'
import { NO_EQUIVOCATIONS, bySlot, concatEquivocations } from './slots.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, NodeId, PeerIdString, PlanEvent } from './events.js'
import type { AttemptView, BallotView, CommitteeView, Equivocation, ProposalView } from './tree.js'

/** How a node's decomposition stands, from its proposals and ballots alone, and the equivocations found among them. */
export type NodeDecision = (
  | { readonly kind: 'won', readonly attempts: AttemptView[], readonly proposal: PlanEvent<'split-proposed'>, readonly decidedBy: PlanEvent<'ballot-cast'>, readonly deciding: readonly EventId[] }
  | { readonly kind: 'open', readonly attempts: AttemptView[], readonly waiting: string }
  | { readonly kind: 'exhausted', readonly attempts: AttemptView[], readonly failedAt: Hlc, readonly lastBallots: readonly EventId[] }
) & { readonly equivocations: readonly Equivocation[] }

/** The ballot that completed a proposal's quorum, and the quorum's ballots. */
interface Win {
  readonly proposal: EventId
  readonly decidedBy: PlanEvent<'ballot-cast'>
  readonly deciding: EventId[]
}

/** One attempt's proposals and ballots, counted. */
interface Tally {
  /** Proposals that fill their slot alone, in the total order. */
  readonly valid: ReadonlyArray<PlanEvent<'split-proposed'>>
  /** Every ballot, in the total order. */
  readonly ballotEvents: ReadonlyArray<PlanEvent<'ballot-cast'>>
  readonly proposals: ProposalView[]
  readonly ballots: BallotView[]
  readonly best: Win | undefined
  /** Who cast a ballot under each committee event. */
  readonly cast: ReadonlyMap<EventId, ReadonlySet<PeerIdString>>
  readonly equivocations: readonly Equivocation[]
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
export function decideNode (index: PlanIndex, node: NodeId, maxAttempts: number, committees: readonly CommitteeView[]): NodeDecision {
  const attempts: AttemptView[] = []
  let equivocations = NO_EQUIVOCATIONS
  const latest = committees[committees.length - 1] as CommitteeView
  const committeeById = new Map<EventId, CommitteeView>()
  for (const c of committees) committeeById.set(c.event, c)
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const t = tallyAttempt(index, attemptKey(node, attempt), committees, committeeById)
    equivocations = concatEquivocations(equivocations, t.equivocations)
    const best = t.best
    if (best !== undefined) {
      attempts.push(attemptView(attempt, t, 'won', [], best))
      const proposal = t.valid.find(p => p.id === best.proposal) as PlanEvent<'split-proposed'>
      return { kind: 'won', attempts, proposal, decidedBy: best.decidedBy, deciding: best.deciding, equivocations }
    }
    const complete = committees.find(c => { const authors = t.cast.get(c.event) ?? NONE_CAST; return c.members.every(m => authors.has(m)) })
    if (complete === undefined) {
      const latestCast = t.cast.get(latest.event) ?? NONE_CAST
      const waitingFor = latest.members.filter(m => !latestCast.has(m))
      attempts.push(attemptView(attempt, t, 'open', waitingFor, undefined))
      const waiting = t.proposals.length === 0
        ? `attempt ${attempt}: waiting for proposals from decomposers`
        : `attempt ${attempt}: waiting for ballots from ${waitingFor.length} of ${latest.members.length} committee members (quorum ${latest.quorum}): ${waitingFor.join(', ')}`
      return { kind: 'open', attempts, waiting, equivocations }
    }
    attempts.push(attemptView(attempt, t, 'failed', [], undefined))
    if (attempt === maxAttempts) {
      const last = t.ballotEvents.filter(b => b.env.body.committee === complete.event)
      const failedAt = (last[last.length - 1] as PlanEvent).env.hlc
      return { kind: 'exhausted', attempts, failedAt, lastBallots: last.map(b => b.id), equivocations }
    }
  }
  // maxAttempts >= 1 is guaranteed by parameter validation; reaching here means none were allowed.
  return { kind: 'exhausted', attempts, failedAt: index.goal?.env.hlc ?? { ms: 0, c: 0 }, lastBallots: [], equivocations }
}

/** Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying. */
function attemptView (attempt: number, t: Tally, outcome: AttemptView['outcome'], waitingFor: readonly PeerIdString[], best: Win | undefined): AttemptView {
  return { attempt, ballots: t.ballots, decidedBy: best?.decidedBy.id ?? null, outcome, proposals: t.proposals, waitingFor, winner: best?.proposal ?? null }
}

/** One attempt (`key`): its slots, the choices per committee event, and the views of its proposals and ballots. */
function tallyAttempt (index: PlanIndex, key: string, committees: readonly CommitteeView[], committeeById: ReadonlyMap<EventId, CommitteeView>): Tally {
  const proposals = sortEvents(index.proposals.get(key) ?? [])
  const allBallots = sortEvents(index.ballots.get(key) ?? [])
  const props = bySlot(proposals, proposalSlot, `proposal:${key}`)
  const ballots = bySlot(allBallots, ballotSlot, `ballot:${key}`)
  const { tally, best } = countChoices(ballots.valid, props.valid, committeeById)
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
  return {
    valid: props.valid,
    ballotEvents: allBallots,
    proposals: proposalViews,
    ballots: ballotViews,
    best,
    cast: castBy(allBallots),
    equivocations: concatEquivocations(props.equivocations, ballots.equivocations)
  }
}

/**
 * The valid ballots' choices of valid proposals, per committee event and
 * proposal (`tally`, keyed `committee>proposal`), and the earliest ballot
 * that completed a quorum (`best`).
 */
function countChoices (ballots: ReadonlyArray<PlanEvent<'ballot-cast'>>, proposals: ReadonlyArray<PlanEvent<'split-proposed'>>, committeeById: ReadonlyMap<EventId, CommitteeView>): { tally: Map<string, Array<PlanEvent<'ballot-cast'>>>, best: Win | undefined } {
  const validProposals = new Set<EventId>()
  for (const p of proposals) validProposals.add(p.id)
  const tally = new Map<string, Array<PlanEvent<'ballot-cast'>>>()
  let best: Win | undefined
  for (const b of ballots) {
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
  return { tally, best }
}

/** Who cast a ballot (valid or not) under each committee event. */
function castBy (ballots: ReadonlyArray<PlanEvent<'ballot-cast'>>): Map<EventId, Set<PeerIdString>> {
  const cast = new Map<EventId, Set<PeerIdString>>()
  for (const b of ballots) {
    let authors = cast.get(b.env.body.committee)
    if (authors === undefined) {
      authors = new Set()
      cast.set(b.env.body.committee, authors)
    }
    authors.add(b.env.author)
  }
  return cast
}
