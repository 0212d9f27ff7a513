import { attemptKey } from './plan-index.js'
import { compareEvents, sortEvents } from './order.js'
import { NO_EQUIVOCATIONS, bySlot, concatEquivocations } from './slots.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, NodeId, PeerIdString, PlanEvent } from './events.js'
import type { AttemptView, BallotView, CommitteeView, Equivocation, ProposalView } from './tree.js'
import { pinnedSplits } from './split-pins.js'
import type { NeededApprovers } from './split-pins.js'
import type { TrustRules } from './trust-rules.js'

/** How a node's decomposition stands, from its proposals and ballots alone, and the equivocations found among them. */
export type NodeDecision = (
  | {
      readonly kind: 'won'
      readonly attempts: AttemptView[]
      readonly proposal: PlanEvent<'split-proposed'>
      readonly decidedBy: PlanEvent<'ballot-cast'>
      readonly deciding: readonly EventId[]
    }
  | {
      readonly kind: 'open'
      readonly attempts: AttemptView[]
      readonly waiting: string
      readonly awaiting: readonly PeerIdString[]
    }
  | {
      readonly kind: 'exhausted'
      readonly attempts: AttemptView[]
      readonly failedAt: Hlc
      readonly lastBallots: readonly EventId[]
    }
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
  /** Per committee event, the earliest valid ballot by one of its approvers that chose none: it closes the attempt. */
  readonly refusals: ReadonlyMap<EventId, PlanEvent<'ballot-cast'>>
  /** Per committee event, the valid proposals that have its quorum of choices (and may still lack approvers). */
  readonly quorate: ReadonlyMap<EventId, ReadonlySet<EventId>>
  readonly equivocations: readonly Equivocation[]
}

function proposalSlot(p: PlanEvent<'split-proposed'>): string {
  return p.env.author
}

function ballotSlot(b: PlanEvent<'ballot-cast'>): string {
  return `${b.env.author}@${b.env.body.committee}`
}

const NONE_CAST: ReadonlySet<PeerIdString> = new Set()

/** Most choices a proposal got under any one committee event. */
function votesFor(
  tally: ReadonlyMap<string, readonly unknown[]>,
  committees: readonly CommitteeView[],
  id: EventId
): number {
  let most = 0
  for (const c of committees) most = Math.max(most, tally.get(`${c.event}>${id}`)?.length ?? 0)
  return most
}

export type { NeededApprovers } from './split-pins.js'

const NO_APPROVERS: ReadonlySet<PeerIdString> = new Set()

/** The approvers needed under each committee: those of `approvers` that are its members. */
export function neededApprovers(
  committees: readonly CommitteeView[],
  approvers: readonly PeerIdString[]
): NeededApprovers {
  const needed = new Map<EventId, ReadonlySet<PeerIdString>>()
  if (approvers.length === 0) return needed
  for (const c of committees) {
    const here = approvers.filter(a => c.members.includes(a))
    if (here.length > 0) needed.set(c.event, new Set(here))
  }
  return needed
}

/**
 * Decide a node's decomposition: for each attempt in turn, a proposal wins
 * when `quorum` members of one committee chose it under that committee
 * event, and so did each of the plan's split approvers who is a member of
 * it (`approvers`, protocol 2); with several winners (only possible across
 * amendments) the earlier deciding ballot wins. An attempt fails when every
 * member of some committee has cast a ballot under it and nothing won, or
 * when one of that committee's approvers chose none: decomposers then
 * propose the next attempt, with the ballots' notes.
 */
export function decideNode(
  index: PlanIndex,
  node: NodeId,
  maxAttempts: number,
  committees: readonly CommitteeView[],
  approvers: readonly PeerIdString[] = [],
  rules?: TrustRules
): NodeDecision {
  const attempts: AttemptView[] = []
  let equivocations = NO_EQUIVOCATIONS
  const latest = committees[committees.length - 1] as CommitteeView
  const committeeById = new Map<EventId, CommitteeView>()
  for (const c of committees) committeeById.set(c.event, c)
  const needed = neededApprovers(committees, approvers)
  // Protocol 5: splits others built on win their attempt, and an attempt before one of them is over.
  const pins = rules === undefined ? undefined : pinnedSplits(index, rules, node, maxAttempts, committeeById, needed)
  const lastPinned = pins === undefined ? 0 : Math.max(0, ...pins.keys())
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const t = tallyAttempt(index, attemptKey(node, attempt), committees, committeeById, needed, rules?.equivocators)
    equivocations = concatEquivocations(equivocations, t.equivocations)
    const pinned = pins?.get(attempt)
    const best = pinned === undefined ? t.best : { ...pinned, proposal: pinned.proposal.id }
    if (best !== undefined) {
      attempts.push(attemptView(attempt, t, 'won', [], best))
      const proposal = pinned?.proposal ?? (t.valid.find(p => p.id === best.proposal) as PlanEvent<'split-proposed'>)
      return { kind: 'won', attempts, proposal, decidedBy: best.decidedBy, deciding: best.deciding, equivocations }
    }
    const closed = committees.find(c => {
      if (t.refusals.has(c.event)) return true
      const authors = t.cast.get(c.event) ?? NONE_CAST
      return c.members.every(m => authors.has(m))
    })
    if (closed === undefined && attempt >= lastPinned) {
      const latestCast = t.cast.get(latest.event) ?? NONE_CAST
      const waitingFor = latest.members.filter(m => !latestCast.has(m))
      attempts.push(attemptView(attempt, t, 'open', waitingFor, undefined))
      const { waiting, awaiting } = openWaiting(
        attempt,
        t,
        latest,
        waitingFor,
        needed.get(latest.event) ?? NO_APPROVERS
      )
      return { kind: 'open', attempts, waiting, awaiting, equivocations }
    }
    attempts.push(attemptView(attempt, t, 'failed', [], undefined))
    if (attempt === maxAttempts) {
      // Closed by an approver's "none": at that ballot, whatever the others cast later. Closed by the last ballot otherwise.
      const by = (closed as CommitteeView).event
      const refusal = t.refusals.get(by)
      const last = refusal !== undefined ? [refusal] : t.ballotEvents.filter(b => b.env.body.committee === by)
      const failedAt = (last[last.length - 1] as PlanEvent).env.hlc
      return { kind: 'exhausted', attempts, failedAt, lastBallots: last.map(b => b.id), equivocations }
    }
  }
  // maxAttempts >= 1 is guaranteed by parameter validation; reaching here means none were allowed.
  return {
    kind: 'exhausted',
    attempts,
    failedAt: index.goal?.env.hlc ?? { ms: 0, c: 0 },
    lastBallots: [],
    equivocations
  }
}

/**
 * Why an open attempt waits, in words, and whom it waits for: the latest
 * committee's members who have not cast a ballot under it; once a proposal
 * has its quorum there, only the approvers among them (nobody else's ballot
 * is needed for it to win). No one while there is nothing to vote on.
 */
function openWaiting(
  attempt: number,
  t: Tally,
  latest: CommitteeView,
  waitingFor: readonly PeerIdString[],
  approvers: ReadonlySet<PeerIdString>
): { waiting: string; awaiting: readonly PeerIdString[] } {
  if (t.proposals.length === 0)
    return { waiting: `attempt ${attempt}: waiting for proposals from decomposers`, awaiting: [] }
  const ballots =
    `attempt ${attempt}: waiting for ballots from ${waitingFor.length} ` +
    `of ${latest.members.length} committee members ` +
    `(quorum ${latest.quorum}): ${waitingFor.join(', ')}`
  if (approvers.size === 0) return { waiting: ballots, awaiting: waitingFor }
  const missing = waitingFor.filter(m => approvers.has(m))
  if ((t.quorate.get(latest.event)?.size ?? 0) > 0 && missing.length > 0) {
    return {
      waiting: `attempt ${attempt}: a proposal has its quorum; waiting for the approval of ${missing.join(', ')}`,
      awaiting: missing
    }
  }
  return { waiting: `${ballots}; approvers: ${[...approvers].join(', ')}`, awaiting: waitingFor }
}

/** Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying. */
function attemptView(
  attempt: number,
  t: Tally,
  outcome: AttemptView['outcome'],
  waitingFor: readonly PeerIdString[],
  best: Win | undefined
): AttemptView {
  return {
    attempt,
    ballots: t.ballots,
    decidedBy: best?.decidedBy.id ?? null,
    outcome,
    proposals: t.proposals,
    waitingFor,
    winner: best?.proposal ?? null
  }
}

/** One attempt (`key`): its slots, the choices per committee event, and the views of its proposals and ballots. */
function tallyAttempt(
  index: PlanIndex,
  key: string,
  committees: readonly CommitteeView[],
  committeeById: ReadonlyMap<EventId, CommitteeView>,
  needed: NeededApprovers,
  muted?: ReadonlySet<PeerIdString>
): Tally {
  const proposals = sortEvents(index.proposals.get(key) ?? [])
  const allBallots = sortEvents(index.ballots.get(key) ?? [])
  const props = bySlot(proposals, proposalSlot, `proposal:${key}`)
  const ballots = bySlot(allBallots, ballotSlot, `ballot:${key}`)
  const counted = muted === undefined ? ballots.valid : ballots.valid.filter(b => !muted.has(b.env.author))
  const { tally, best, refusals, quorate } = countChoices(counted, props.valid, committeeById, needed)
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
    refusals,
    quorate,
    equivocations: concatEquivocations(props.equivocations, ballots.equivocations)
  }
}

/** What the valid ballots of one attempt add up to. */
interface Choices {
  /** The choices of valid proposals per committee event and proposal, keyed `committee>proposal`. */
  readonly tally: Map<string, Array<PlanEvent<'ballot-cast'>>>
  /** The earliest ballot that completed a quorum with every needed approver in it. */
  readonly best: Win | undefined
  readonly refusals: Map<EventId, PlanEvent<'ballot-cast'>>
  readonly quorate: Map<EventId, Set<EventId>>
}

/**
 * Count the valid ballots, in the total order: a proposal is decided under
 * a committee event at the first ballot after which it has the quorum's
 * choices and every needed approver's; with no approvers, at the quorum-th
 * choice, as protocol 1 has it.
 */
function countChoices(
  ballots: ReadonlyArray<PlanEvent<'ballot-cast'>>,
  proposals: ReadonlyArray<PlanEvent<'split-proposed'>>,
  committeeById: ReadonlyMap<EventId, CommitteeView>,
  needed: NeededApprovers
): Choices {
  const validProposals = new Set<EventId>()
  for (const p of proposals) validProposals.add(p.id)
  const tally = new Map<string, Array<PlanEvent<'ballot-cast'>>>()
  const approved = new Map<string, number>()
  const decided = new Set<string>()
  const refusals = new Map<EventId, PlanEvent<'ballot-cast'>>()
  const quorate = new Map<EventId, Set<EventId>>()
  let best: Win | undefined
  for (const b of ballots) {
    const choice = b.env.body.choice
    const committee = b.env.body.committee
    const c = committeeById.get(committee)
    if (c === undefined) continue
    const approvers = needed.get(committee) ?? NO_APPROVERS
    const byApprover = approvers.has(b.env.author)
    if (choice === null) {
      if (byApprover && !refusals.has(committee)) refusals.set(committee, b)
      continue
    }
    if (!validProposals.has(choice)) continue
    const k = `${committee}>${choice}`
    let list = tally.get(k)
    if (list === undefined) {
      list = []
      tally.set(k, list)
    }
    list.push(b)
    let n = approved.get(k) ?? 0
    if (byApprover) approved.set(k, ++n)
    if (list.length === c.quorum && approvers.size > 0) {
      let q = quorate.get(committee)
      if (q === undefined) quorate.set(committee, (q = new Set()))
      q.add(choice)
    }
    if (list.length >= c.quorum && n === approvers.size && !decided.has(k)) {
      decided.add(k)
      if (best === undefined || compareEvents(b, best.decidedBy) < 0)
        best = { proposal: choice, decidedBy: b, deciding: list.map(x => x.id) }
    }
  }
  return { tally, best, refusals, quorate }
}

/** Who cast a ballot (valid or not) under each committee event. */
function castBy(ballots: ReadonlyArray<PlanEvent<'ballot-cast'>>): Map<EventId, Set<PeerIdString>> {
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
