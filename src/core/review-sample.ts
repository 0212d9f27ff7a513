import { hashParts } from './hash.js'
import { compareHlc } from './hlc.js'
import { compareEvents } from './order.js'
import { reviewOneIn } from './events.js'
import { Reviews } from './task-review.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, PeerIdString, PlanEvent, ResolvedParams } from './events.js'
import type { NeededApprovers } from './decide-node.js'
import type { CommitteeView, PlanTree, ReviewedFor } from './tree.js'
import type { TrustRules } from './trust-rules.js'

/**
 * Whether a result's rank puts it in the plan's sample: one in `oneIn`, by a
 * hash of its task and its author that neither can choose once the task
 * exists (not the claim rank of trust-rules.ts: the executor that wins a
 * task by rank must not be the one least often sampled).
 */
export function inSample(task: string, author: string, oneIn: number): boolean {
  if (oneIn <= 1) return oneIn === 1
  return Number.parseInt(hashParts('review', task, author).slice(0, 12), 16) % oneIn === 0
}

/** The most accepting reviews a result cites to show that its author passed review in the plan. */
export const MAX_PASSED_CITES = 8

/**
 * What an executor's result cites so that it is not taken as its author's first (ReviewSample): the accepting
 * reviews of its own earliest result that passed review in the plan, or none.
 */
export function passedReviewCites(
  tree: PlanTree,
  me: PeerIdString,
  reviewsOf: (result: EventId) => ReadonlyArray<PlanEvent<'result-reviewed'>>
): EventId[] {
  if (tree.params.trust === undefined) return []
  let best: { id: EventId; at: Hlc } | undefined
  for (const t of tree.tasks)
    for (const r of t.results)
      if (r.author === me && r.review === 'accepted' && (best === undefined || compareHlc(r.at, best.at) < 0))
        best = { id: r.id, at: r.at }
  if (best === undefined) return []
  return reviewsOf(best.id)
    .filter(v => v.env.body.verdict === 'accept')
    .map(v => v.id)
    .sort()
    .slice(0, MAX_PASSED_CITES)
}

/**
 * Protocol 5's review sample (ADR-0049): which results of a plan wait for
 * the committee's review, and why, a function of the plan's event set.
 * - `review`: the plan reviews every result (its `review` parameter).
 * - `deliverable`: a result of the root's task that nothing above asks to
 *   review: nothing else builds on the plan's deliverable, so the
 *   committee's acceptance is what makes it final (fold.md 11.9). Scorers
 *   acknowledge it without a model call.
 * - `first`: the result does not cite an accepting review of a result of
 *   its author that passed review (passedReviewCites): a member's results
 *   until one passes, read from the result itself, so that no later event
 *   turns a result waiting for review into one accepted long ago.
 * - `after-rejection`: a result of the author was rejected in the plan; then
 *   every result of it is reviewed, whenever stamped.
 * - `sample`: one in `trust.reviewOneIn` of the rest (inSample).
 *
 * `first` and `after-rejection` read other events, so a result another
 * member built on (a proposal, claim or result of someone else cites it) is
 * judged without them: what was built on is never taken back into review by
 * an event that arrives later (fold.md 11.5). The rank and `review` read the
 * result alone. A result the sample does not take is accepted as it comes,
 * as in a plan without review.
 */
export class ReviewSample {
  private readonly oneIn: number
  /** Every result's review worked out, asked for or not: what a member's record reads. */
  private readonly all: Reviews
  private byAuthor: Map<PeerIdString, Array<PlanEvent<'result-reported'>>> | undefined
  /** Per author, the review that decided its earliest rejection (null: none). */
  private readonly rejections = new Map<PeerIdString, PlanEvent | null>()
  private readonly memo = new Map<string, ReviewedFor | null>()

  constructor(
    private readonly index: PlanIndex,
    private readonly params: ResolvedParams,
    committees: readonly CommitteeView[],
    needed: NeededApprovers,
    private readonly rules: TrustRules,
    /** The root's task ids (its leaf task and its roll-up): the plan's deliverable. */
    private readonly deliverable: ReadonlySet<string>
  ) {
    this.oneIn = reviewOneIn(params)
    this.all = new Reviews(index, true, committees, needed, rules.equivocators)
  }

  /** Whether `r` is a result of the deliverable that the committee accepted on review. */
  acceptedDeliverable(r: PlanEvent<'result-reported'>): boolean {
    return this.deliverable.has(r.env.body.task) && this.all.of(r).kind === 'accepted'
  }

  /** Why the committee reviews `r`, or null when it is accepted as it comes. */
  reason(r: PlanEvent<'result-reported'>): ReviewedFor | null {
    let v = this.memo.get(r.id)
    if (v === undefined && !this.memo.has(r.id)) {
      v = this.decide(r)
      this.memo.set(r.id, v)
    }
    return v ?? null
  }

  private decide(r: PlanEvent<'result-reported'>): ReviewedFor | null {
    if (this.params.review) return 'review'
    const sampled = this.oneIn === 0 ? null : this.sampled(r)
    if (sampled !== null) return sampled
    return this.deliverable.has(r.env.body.task) ? 'deliverable' : null
  }

  private sampled(r: PlanEvent<'result-reported'>): ReviewedFor | null {
    const author = r.env.author
    if (!this.rules.pinnedAgainst(r.id, author)) {
      if (!this.citesPassed(r)) return 'first'
      if (this.firstRejection(author) !== undefined) return 'after-rejection'
    }
    return inSample(r.env.body.task, author, this.oneIn) ? 'sample' : null
  }

  /** Whether `r` cites an accepting review of a result of its author that passed review (read from `r` alone). */
  private citesPassed(r: PlanEvent<'result-reported'>): boolean {
    for (const d of r.env.deps) {
      const v = this.index.event(d)
      if (v === undefined || v.env.type !== 'result-reviewed') continue
      const body = (v as PlanEvent<'result-reviewed'>).env.body
      if (body.verdict !== 'accept') continue
      const x = this.index.event(body.result)
      if (x?.env.author === r.env.author && this.all.of(x as PlanEvent<'result-reported'>).kind === 'accepted')
        return true
    }
    return false
  }

  /** The review that decided the earliest rejection of a result of `author` in the plan, if any. */
  firstRejection(author: PeerIdString): PlanEvent | undefined {
    let first = this.rejections.get(author)
    if (first === undefined) {
      first = null
      for (const x of this.resultsOf(author)) {
        const v = this.all.of(x)
        if (v.kind === 'rejected' && (first === null || compareEvents(v.by, first) < 0)) first = v.by
      }
      this.rejections.set(author, first)
    }
    return first ?? undefined
  }

  private resultsOf(author: PeerIdString): ReadonlyArray<PlanEvent<'result-reported'>> {
    if (this.byAuthor === undefined) {
      const m = new Map<PeerIdString, Array<PlanEvent<'result-reported'>>>()
      for (const list of this.index.resultsByTask.values())
        for (const x of list) {
          const a = m.get(x.env.author)
          if (a === undefined) m.set(x.env.author, [x])
          else a.push(x)
        }
      this.byAuthor = m
    }
    return this.byAuthor.get(author) ?? []
  }
}
