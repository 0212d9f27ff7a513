import { sortEvents } from './order.js'
import { NO_EQUIVOCATIONS, bySlot } from './slots.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, PlanEvent } from './events.js'
import type { CommitteeView, Equivocation } from './tree.js'

/** Where a result's review stands; a decided one names the review that completed the quorum. */
export type Review = { kind: 'none' } | { kind: 'pending' } | { kind: 'accepted' | 'rejected', by: PlanEvent<'result-reviewed'> }

const NO_REVIEW: Review = { kind: 'none' }
const PENDING: Review = { kind: 'pending' }

function reviewSlot (r: PlanEvent<'result-reviewed'>): string {
  return `${r.env.author}@${r.env.body.committee}`
}

/** A result's review: `quorum` accepts (or rejects) under one committee event decide it; the earlier deciding review wins. */
function reviewOf (index: PlanIndex, result: EventId, committees: readonly CommitteeView[]): { review: Review, equivocations: readonly Equivocation[] } {
  const slotted = bySlot(sortEvents(index.reviews.get(result) ?? []), reviewSlot, `review:${result}`)
  const byCommittee = new Map(committees.map(c => [c.event, c]))
  const tally = new Map<string, number>()
  for (const r of slotted.valid) {
    const c = byCommittee.get(r.env.body.committee)
    if (c === undefined) continue
    const k = `${c.event}>${r.env.body.verdict}`
    const n = (tally.get(k) ?? 0) + 1
    tally.set(k, n)
    if (n === c.quorum) return { review: { kind: r.env.body.verdict === 'accept' ? 'accepted' : 'rejected', by: r }, equivocations: slotted.equivocations }
  }
  return { review: PENDING, equivocations: slotted.equivocations }
}

/**
 * The reviews of one task's results, each worked out once, and the
 * equivocations found in them. Without review in the plan every result's
 * review is `none`.
 */
export class Reviews {
  private memo: Map<EventId, { review: Review, equivocations: readonly Equivocation[] }> | undefined = undefined
  constructor (
    private readonly index: PlanIndex,
    private readonly review: boolean,
    private readonly committees: readonly CommitteeView[]
  ) {}

  of (r: PlanEvent<'result-reported'>): Review {
    if (!this.review) return NO_REVIEW
    const memo = this.memo ??= new Map()
    let v = memo.get(r.id)
    if (v === undefined) {
      v = reviewOf(this.index, r.id, this.committees)
      memo.set(r.id, v)
    }
    return v.review
  }

  /** The equivocations in the reviews worked out so far, in the order they were worked out. */
  equivocations (): readonly Equivocation[] {
    if (this.memo === undefined) return NO_EQUIVOCATIONS
    const found: Equivocation[] = []
    for (const v of this.memo.values()) for (const e of v.equivocations) found.push(e)
    return found.length === 0 ? NO_EQUIVOCATIONS : found
  }
}
