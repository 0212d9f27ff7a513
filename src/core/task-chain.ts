import { compareHlc } from './hlc.js'
import { compareEvents, earliest, sortEvents } from './order.js'
import { bySlot } from './decide-node.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, PlanEvent, PlanParams, TaskId } from './events.js'
import type { ChainView, CommitteeView, Equivocation, ResultView, TaskStatus } from './tree.js'

export interface TaskOutcome {
  readonly status: Exclude<TaskStatus, 'blocked'>
  readonly chains: ChainView[]
  readonly results: ResultView[]
  readonly accepted: EventId | null
  readonly duplicates: number
  readonly failures: number
  readonly attemptsAllowed: number
  readonly finishedAt: Hlc | null
  readonly finishEvent: EventId | null
  readonly ignoredClaims: number
}

type Review = { kind: 'none' } | { kind: 'pending' } | { kind: 'accepted' | 'rejected', by: PlanEvent<'result-reviewed'> }

/** A result's review: `quorum` accepts (or rejects) under one committee event decide it; the earlier deciding review wins. */
function reviewOf (index: PlanIndex, result: EventId, committees: readonly CommitteeView[], equivocations: Equivocation[]): Review {
  const reviews = bySlot(sortEvents(index.reviews.get(result) ?? []), r => `${r.env.author}@${r.env.body.committee}`, `review:${result}`, equivocations).valid
  const byCommittee = new Map(committees.map(c => [c.event, c]))
  const tally = new Map<string, number>()
  for (const r of reviews) {
    const c = byCommittee.get(r.env.body.committee)
    if (c === undefined) continue
    const k = `${c.event}>${r.env.body.verdict}`
    const n = (tally.get(k) ?? 0) + 1
    tally.set(k, n)
    if (n === c.quorum) return { kind: r.env.body.verdict === 'accept' ? 'accepted' : 'rejected', by: r }
  }
  return { kind: 'pending' }
}

/**
 * Who holds a task and how it ended, from its claims and what cites them.
 *
 * Claims count only when stamped after `readyAt`. The first counted claim
 * starts the first chain. A chain is its claim plus the renewals that follow
 * it (one per predecessor); it lapses at its last renewal + leaseMs, and never
 * later than claim + maxClaimMs. It ends at the earliest of its result,
 * release or failure, unless a claim stamped after its lapse came first (a
 * takeover), judged with only the renewals stamped before that claim: so a
 * late renewal can make a takeover moot, never the other way round. A
 * release or failure lets the next claim stamped after it start a chain.
 * The accepted result is the earliest result of any claim stamped after
 * `readyAt`, owner or not (with review: the earliest the committee accepted),
 * so a done task never reopens; every other result is a duplicate.
 */
export function decideTask (index: PlanIndex, task: TaskId, readyAt: Hlc, params: PlanParams, committees: readonly CommitteeView[], equivocations: Equivocation[]): TaskOutcome {
  const claims = sortEvents(index.claims.get(task) ?? [])
  const retries = (index.retries.get(task) ?? []).length
  const attemptsAllowed = params.maxAttempts * (1 + retries)
  const chains: ChainView[] = []
  const owners: Array<PlanEvent<'task-claimed'>> = []
  let after = readyAt
  let cursor = 0
  let failures = 0
  let status: TaskOutcome['status'] = 'ready'
  let finish: { at: Hlc, event: EventId, accepted: EventId | null } | null = null
  const reviews = new Map<EventId, Review>()
  const review = (r: PlanEvent<'result-reported'>): Review => {
    if (!params.review) return { kind: 'none' }
    let v = reviews.get(r.id)
    if (v === undefined) {
      v = reviewOf(index, r.id, committees, equivocations)
      reviews.set(r.id, v)
    }
    return v
  }

  while (true) {
    while (cursor < claims.length && compareHlc((claims[cursor] as PlanEvent).env.hlc, after) <= 0) cursor++
    const claim = claims[cursor]
    if (claim === undefined) break
    cursor++
    owners.push(claim)
    const links = renewalChain(index, claim, equivocations)
    const lapseAt = (before: Hlc | null): number => {
      let last: PlanEvent = claim
      for (const r of links) if (before === null || compareHlc(r.env.hlc, before) < 0) last = r
      return Math.min(last.env.hlc.ms + params.leaseMs, claim.env.hlc.ms + params.maxClaimMs)
    }
    let takeoverAt = -1
    for (let i = cursor; i < claims.length; i++) {
      const c = claims[i] as PlanEvent<'task-claimed'>
      if (c.env.hlc.ms > lapseAt(c.env.hlc)) { takeoverAt = i; break }
    }
    const takeover = takeoverAt >= 0 ? claims[takeoverAt] as PlanEvent : undefined
    const results = sortEvents(index.results.get(claim.id) ?? [])
    const ends: PlanEvent[] = [...results, ...(index.releases.get(claim.id) ?? []), ...(index.failures.get(claim.id) ?? [])]
    const end = earliest(ends)
    const last = links[links.length - 1] ?? claim
    const view = (e: ChainView['end']): ChainView => ({
      claim: claim.id, owner: claim.env.author, claimedAt: claim.env.hlc, renewals: links.length, last: last.id, lapseMs: lapseAt(null), end: e
    })
    if (end !== undefined && (takeover === undefined || compareEvents(end, takeover) < 0)) {
      if (end.env.type === 'result-reported') {
        const r = review(end as PlanEvent<'result-reported'>)
        if (r.kind === 'rejected') {
          chains.push(view({ kind: 'rejected', event: end.id }))
          failures++
          after = r.by.env.hlc
          // A task reopens only when all its results are rejected: a superseded owner's result may still await review.
          const waiting = claims.some(o => compareHlc(o.env.hlc, readyAt) > 0 && (index.results.get(o.id) ?? []).some(x => review(x).kind === 'pending'))
          if (waiting) { status = 'in-review'; break }
          if (failures >= attemptsAllowed) { status = 'failed'; finish = { at: r.by.env.hlc, event: r.by.id, accepted: null }; break }
          continue
        }
        chains.push(view({ kind: 'result', event: end.id }))
        status = r.kind === 'pending' ? 'in-review' : 'done'
        break
      }
      if (end.env.type === 'task-failed') {
        chains.push(view({ kind: 'failed', event: end.id }))
        failures++
        after = end.env.hlc
        if (failures >= attemptsAllowed) { status = 'failed'; finish = { at: end.env.hlc, event: end.id, accepted: null }; break }
        continue
      }
      chains.push(view({ kind: 'released', event: end.id }))
      after = end.env.hlc
      continue
    }
    if (takeover !== undefined) {
      chains.push(view({ kind: 'superseded', event: takeover.id }))
      cursor = takeoverAt
      after = { ms: 0, c: 0 }
      continue
    }
    chains.push(view(null))
    status = 'claimed'
    break
  }

  // Outcome, monotone in the set. Every claim stamped after readyAt counts here, owner or not: a
  // result is valid once and valid forever, so a claim that turns out to have lost a race, or a
  // takeover made moot by a late renewal, never undoes a task. Chains decide who should work;
  // they do not decide whose result counts.
  const counted = claims.filter(c => compareHlc(c.env.hlc, readyAt) > 0)
  const countedResults = sortEvents(counted.flatMap(c => index.results.get(c.id) ?? []))
  // Failures: every failure of a counted claim, and every result the committee rejected. The task
  // fails at the attemptsAllowed-th of them; more of them can only bring that moment earlier.
  const failureEvents: PlanEvent[] = counted.flatMap(c => index.failures.get(c.id) ?? [])
  let accepted: PlanEvent<'result-reported'> | undefined
  let acceptedAt: PlanEvent | undefined
  for (const r of countedResults) {
    const rv = review(r)
    if (rv.kind === 'rejected') failureEvents.push(rv.by)
    const at = rv.kind === 'none' ? r : rv.kind === 'accepted' ? rv.by : undefined
    if (at !== undefined && (acceptedAt === undefined || compareEvents(at, acceptedAt) < 0)) {
      accepted = r
      acceptedAt = at
    }
  }
  const failed = sortEvents(failureEvents)[attemptsAllowed - 1]
  // A result wins over failure (done never reopens); the task finished at whichever came first, so
  // the stamp that dependants wait for only ever moves earlier as events arrive.
  if (accepted !== undefined && acceptedAt !== undefined) {
    status = 'done'
    const first = failed !== undefined && compareEvents(failed, acceptedAt) < 0 ? failed : acceptedAt
    finish = { at: first.env.hlc, event: first.id, accepted: accepted.id }
  } else if (failed !== undefined) {
    status = 'failed'
    finish = { at: failed.env.hlc, event: failed.id, accepted: null }
  } else if (status === 'failed') {
    status = 'ready'
    finish = null
  }
  failures = failureEvents.length
  const resultsForTask = sortEvents(index.resultsByTask.get(task) ?? [])
  const results: ResultView[] = resultsForTask.map(r => {
    const rv = review(r)
    return {
      id: r.id,
      author: r.env.author,
      claim: r.env.body.claim,
      at: r.env.hlc,
      output: r.env.body.output,
      model: r.env.body.model,
      source: r.env.body.source,
      accepted: accepted?.id === r.id,
      review: rv.kind
    }
  })
  return {
    status,
    chains,
    results,
    accepted: accepted?.id ?? null,
    duplicates: accepted === undefined ? 0 : results.filter(r => !r.accepted && r.review !== 'rejected').length,
    failures,
    attemptsAllowed,
    finishedAt: finish?.at ?? null,
    finishEvent: finish?.event ?? null,
    ignoredClaims: claims.length - owners.length
  }
}

/** A claim's renewals, following one renewal per predecessor; an equivocating renewal ends the chain. */
function renewalChain (index: PlanIndex, claim: PlanEvent<'task-claimed'>, equivocations: Equivocation[]): Array<PlanEvent<'claim-renewed'>> {
  const links: Array<PlanEvent<'claim-renewed'>> = []
  let cur: EventId = claim.id
  while (true) {
    const next = (index.renewals.get(cur) ?? []).filter(r => r.env.body.claim === claim.id)
    if (next.length === 0) break
    if (next.length > 1) {
      equivocations.push({ author: claim.env.author, slot: `renewal:${cur}`, events: next.map(r => r.id).sort() })
      break
    }
    const r = next[0] as PlanEvent<'claim-renewed'>
    links.push(r)
    cur = r.id
  }
  return links
}
