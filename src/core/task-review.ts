import { sortEvents } from './order.js'
import { NO_EQUIVOCATIONS, bySlot } from './slots.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, PeerIdString, PlanEvent } from './events.js'
import type { NeededApprovers } from './decide-node.js'
import type { CommitteeView, Equivocation } from './tree.js'

/** Where a result's review stands; a decided one names the review that completed the quorum. */
export type Review =
  { kind: 'none' } | { kind: 'pending' } | { kind: 'accepted' | 'rejected'; by: PlanEvent<'result-reviewed'> }

const NO_REVIEW: Review = { kind: 'none' }
const PENDING: Review = { kind: 'pending' }
const NO_ONE: readonly PeerIdString[] = Object.freeze([])
const NO_APPROVERS: ReadonlySet<PeerIdString> = new Set()

function reviewSlot(r: PlanEvent<'result-reviewed'>): string {
  return `${r.env.author}@${r.env.body.committee}`
}

interface Worked {
  readonly review: Review
  readonly equivocations: readonly Equivocation[]
  /** While pending: whom it waits for under the latest committee. */
  readonly awaiting: readonly PeerIdString[]
}

/**
 * A result's review, from its reviews in the total order: under one
 * committee event, `quorum` accepts together with an accept from each of
 * its needed approvers (protocol 2) accept it; `quorum` rejects, or one
 * reject by a needed approver, reject it. The earliest deciding review
 * wins. Without approvers this is protocol 1's rule.
 */
function reviewOf(
  index: PlanIndex,
  result: EventId,
  committees: readonly CommitteeView[],
  needed: NeededApprovers,
  muted: ReadonlySet<PeerIdString>
): Worked {
  const all = sortEvents(index.reviews.get(result) ?? [])
  const slotted = bySlot(all, reviewSlot, `review:${result}`)
  const byCommittee = new Map(committees.map(c => [c.event, c]))
  const tally = new Map<string, number>()
  for (const r of slotted.valid) {
    if (muted.has(r.env.author)) continue
    const c = byCommittee.get(r.env.body.committee)
    if (c === undefined) continue
    const approvers = needed.get(c.event) ?? NO_APPROVERS
    const verdict = r.env.body.verdict
    const k = `${c.event}>${verdict}`
    const n = (tally.get(k) ?? 0) + 1
    tally.set(k, n)
    if (verdict === 'reject') {
      if (n === c.quorum || approvers.has(r.env.author))
        return { review: { kind: 'rejected', by: r }, equivocations: slotted.equivocations, awaiting: NO_ONE }
      continue
    }
    if (approvers.has(r.env.author)) tally.set(`${c.event}>approved`, (tally.get(`${c.event}>approved`) ?? 0) + 1)
    if (n >= c.quorum && (tally.get(`${c.event}>approved`) ?? 0) === approvers.size) {
      return { review: { kind: 'accepted', by: r }, equivocations: slotted.equivocations, awaiting: NO_ONE }
    }
  }
  const latest = committees[committees.length - 1] as CommitteeView
  const reviewed = new Set(all.filter(r => r.env.body.committee === latest.event).map(r => r.env.author))
  const waitingFor = latest.members.filter(m => !reviewed.has(m))
  const approvers = needed.get(latest.event) ?? NO_APPROVERS
  // With the accepts in, only the approvers who have not reviewed are still needed.
  const quorate = (tally.get(`${latest.event}>accept`) ?? 0) >= latest.quorum
  const awaiting = quorate && approvers.size > 0 ? waitingFor.filter(m => approvers.has(m)) : waitingFor
  return { review: PENDING, equivocations: slotted.equivocations, awaiting }
}

/**
 * The reviews of one task's results, each worked out once, and the
 * equivocations found in them. A result the plan does not have reviewed
 * (`review`: false, or for protocol 5 the sample's answer) has review `none`.
 */
export class Reviews {
  private memo: Map<EventId, Worked> | undefined = undefined
  private readonly asked: (r: PlanEvent<'result-reported'>) => boolean
  constructor(
    private readonly index: PlanIndex,
    review: boolean | ((r: PlanEvent<'result-reported'>) => boolean),
    private readonly committees: readonly CommitteeView[],
    /** The results approvers needed under each committee event (none without protocol 2). */
    private readonly needed: NeededApprovers = new Map(),
    /** Members whose reviews do not count (protocol 5: they equivocated in the plan). */
    private readonly muted: ReadonlySet<PeerIdString> = NO_APPROVERS
  ) {
    this.asked = typeof review === 'boolean' ? () => review : review
  }

  private worked(r: PlanEvent<'result-reported'>): Worked {
    const memo = (this.memo ??= new Map())
    let v = memo.get(r.id)
    if (v === undefined) {
      v = reviewOf(this.index, r.id, this.committees, this.needed, this.muted)
      memo.set(r.id, v)
    }
    return v
  }

  of(r: PlanEvent<'result-reported'>): Review {
    return this.asked(r) ? this.worked(r).review : NO_REVIEW
  }

  /**
   * Whom a pending review waits for: the latest committee's members who have not reviewed it (only the approvers once
   * the accepts are in).
   */
  awaiting(r: PlanEvent<'result-reported'>): readonly PeerIdString[] {
    return this.asked(r) ? this.worked(r).awaiting : NO_ONE
  }

  /** The equivocations in the reviews worked out so far, in the order they were worked out. */
  equivocations(): readonly Equivocation[] {
    if (this.memo === undefined) return NO_EQUIVOCATIONS
    const found: Equivocation[] = []
    for (const v of this.memo.values()) for (const e of v.equivocations) found.push(e)
    return found.length === 0 ? NO_EQUIVOCATIONS : found
  }
}
