import { compareHlc } from './hlc.js'
import { compareEvents, sortEvents } from './order.js'
import type { PlanIndex } from './plan-index.js'
import type { Hlc, PlanEvent } from './events.js'
import type { ResultView } from './tree.js'
import type { Reviews } from './task-review.js'
import type { ReviewSample } from './review-sample.js'

/** The accepted result and the failures: what makes the outcome monotone in the set. */
export interface Settled {
  readonly accepted: PlanEvent<'result-reported'> | undefined
  /** The accepted result, or the review that accepted it. */
  readonly acceptedAt: PlanEvent | undefined
  /** The failure that used the last attempt, if there was one. */
  readonly failed: PlanEvent | undefined
  readonly failures: number
}

/**
 * Outcome, monotone in the set. Every claim stamped after readyAt counts here, owner or not: a
 * result is valid once and valid forever, so a claim that turns out to have lost a race, or a
 * takeover made moot by a late renewal, never undoes a task. Chains decide who should work;
 * they do not decide whose result counts.
 * Failures: every failure of a counted claim, and every result the committee rejected. The task
 * fails at the attemptsAllowed-th of them; more of them can only bring that moment earlier.
 */
export function settle(
  index: PlanIndex,
  reviews: Reviews,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  readyAt: Hlc,
  attemptsAllowed: number
): Settled {
  const failureEvents: PlanEvent[] = []
  let accepted: PlanEvent<'result-reported'> | undefined
  let acceptedAt: PlanEvent | undefined
  for (const c of claims) {
    if (compareHlc(c.env.hlc, readyAt) <= 0) continue
    const group = index.claimEvents(c)
    for (const f of group.failures) failureEvents.push(f)
    for (const r of group.results) {
      const rv = reviews.of(r)
      if (rv.kind === 'rejected') failureEvents.push(rv.by)
      const at = rv.kind === 'none' ? r : rv.kind === 'accepted' ? rv.by : undefined
      if (at !== undefined && (acceptedAt === undefined || compareEvents(at, acceptedAt) < 0)) {
        accepted = r
        acceptedAt = at
      }
    }
  }
  const failed = failureEvents.length < attemptsAllowed ? undefined : sortEvents(failureEvents)[attemptsAllowed - 1]
  return { accepted, acceptedAt, failed, failures: failureEvents.length }
}

/**
 * The task's results, in the total order, and how many are duplicate executions (neither accepted nor rejected).
 * Protocol 5's (with `sample`) say why each is reviewed.
 */
export function resultViews(
  reviews: Reviews,
  results: ReadonlyArray<PlanEvent<'result-reported'>>,
  accepted: PlanEvent<'result-reported'> | undefined,
  sample?: ReviewSample
): { results: ResultView[]; duplicates: number } {
  const views: ResultView[] = []
  let duplicates = 0
  for (const r of results) {
    const rv = reviews.of(r)
    const isAccepted = accepted !== undefined && accepted.id === r.id
    if (!isAccepted && rv.kind !== 'rejected') duplicates++
    // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
    views.push({
      accepted: isAccepted,
      at: r.env.hlc,
      author: r.env.author,
      claim: r.env.body.claim,
      id: r.id,
      model: r.env.body.model,
      output: r.env.body.output,
      review: rv.kind,
      ...(sample === undefined ? {} : { reviewedFor: sample.reason(r) }),
      source: r.env.body.source,
      toolCalls: r.env.body.toolCalls ?? []
    })
  }
  return { results: views, duplicates }
}
