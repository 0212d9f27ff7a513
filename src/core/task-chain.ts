import { HLC_ZERO, compareHlc } from './hlc.js'
import { compareEvents, sortEvents } from './order.js'
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

const NO_REVIEW: Review = { kind: 'none' }
const PENDING: Review = { kind: 'pending' }

function reviewSlot (r: PlanEvent<'result-reviewed'>): string {
  return `${r.env.author}@${r.env.body.committee}`
}

/** A result's review: `quorum` accepts (or rejects) under one committee event decide it; the earlier deciding review wins. */
function reviewOf (index: PlanIndex, result: EventId, committees: readonly CommitteeView[], equivocations: Equivocation[]): Review {
  const reviews = bySlot(sortEvents(index.reviews.get(result) ?? []), reviewSlot, `review:${result}`, equivocations).valid
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
  return PENDING
}

/** What the deciding of one task reads, and the reviews it has worked out so far. */
class TaskCtx {
  private reviews: Map<EventId, Review> | undefined = undefined
  constructor (
    readonly index: PlanIndex,
    readonly review: boolean,
    readonly committees: readonly CommitteeView[],
    readonly equivocations: Equivocation[]
  ) {}

  /** A result's review (memoised; `none` when the plan does not ask for review). */
  of (r: PlanEvent<'result-reported'>): Review {
    if (!this.review) return NO_REVIEW
    const memo = this.reviews ??= new Map()
    let v = memo.get(r.id)
    if (v === undefined) {
      v = reviewOf(this.index, r.id, this.committees, this.equivocations)
      memo.set(r.id, v)
    }
    return v
  }
}

function chainView (claim: PlanEvent<'task-claimed'>, renewals: number, last: PlanEvent, lapseMs: number, end: ChainView['end']): ChainView {
  return { claim: claim.id, claimedAt: claim.env.hlc, end, lapseMs, last: last.id, owner: claim.env.author, renewals }
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
 *
 * A chain's renewals are stamped after one another (each is stamped after its
 * predecessor, a dep), and claims are taken in the total order, so the
 * renewals stamped before each later claim are a growing prefix of the chain.
 */
export function decideTask (index: PlanIndex, task: TaskId, readyAt: Hlc, params: PlanParams, committees: readonly CommitteeView[], equivocations: Equivocation[]): TaskOutcome {
  const claims = sortEvents(index.claims.get(task) ?? [])
  const retries = (index.retries.get(task) ?? []).length
  const attemptsAllowed = params.maxAttempts * (1 + retries)
  const leaseMs = params.leaseMs
  const maxClaimMs = params.maxClaimMs
  const ctx = new TaskCtx(index, params.review, committees, equivocations)
  const chains: ChainView[] = []
  let owners = 0
  let after = readyAt
  let cursor = 0
  let failures = 0
  let status: TaskOutcome['status'] = 'ready'
  let finish: { at: Hlc, event: EventId, accepted: EventId | null } | null = null

  while (true) {
    while (cursor < claims.length && compareHlc((claims[cursor] as PlanEvent).env.hlc, after) <= 0) cursor++
    const claim = claims[cursor]
    if (claim === undefined) break
    cursor++
    owners++
    const group = index.claimEvents(claim)
    const links = renewalChain(group.renewals, claim, equivocations)
    const cap = claim.env.hlc.ms + maxClaimMs
    let takeoverAt = -1
    let before = 0
    let lastMs = claim.env.hlc.ms
    for (let i = cursor; i < claims.length; i++) {
      const c = claims[i] as PlanEvent<'task-claimed'>
      for (; before < links.length && compareHlc((links[before] as PlanEvent).env.hlc, c.env.hlc) < 0; before++) lastMs = (links[before] as PlanEvent).env.hlc.ms
      if (c.env.hlc.ms > Math.min(lastMs + leaseMs, cap)) { takeoverAt = i; break }
    }
    const takeover = takeoverAt >= 0 ? claims[takeoverAt] as PlanEvent : undefined
    let end: PlanEvent | undefined
    for (const x of group.results) if (end === undefined || compareEvents(x, end) < 0) end = x
    for (const x of group.releases) if (end === undefined || compareEvents(x, end) < 0) end = x
    for (const x of group.failures) if (end === undefined || compareEvents(x, end) < 0) end = x
    const last: PlanEvent = links[links.length - 1] ?? claim
    const lapseMs = Math.min(last.env.hlc.ms + leaseMs, cap)
    if (end !== undefined && (takeover === undefined || compareEvents(end, takeover) < 0)) {
      if (end.env.type === 'result-reported') {
        const r = ctx.of(end as PlanEvent<'result-reported'>)
        if (r.kind === 'rejected') {
          chains.push(chainView(claim, links.length, last, lapseMs, { event: end.id, kind: 'rejected' }))
          failures++
          after = r.by.env.hlc
          // A task reopens only when all its results are rejected: a superseded owner's result may still await review.
          if (anyPending(ctx, claims, readyAt)) { status = 'in-review'; break }
          if (failures >= attemptsAllowed) { status = 'failed'; finish = { at: r.by.env.hlc, event: r.by.id, accepted: null }; break }
          continue
        }
        chains.push(chainView(claim, links.length, last, lapseMs, { event: end.id, kind: 'result' }))
        status = r.kind === 'pending' ? 'in-review' : 'done'
        break
      }
      if (end.env.type === 'task-failed') {
        chains.push(chainView(claim, links.length, last, lapseMs, { event: end.id, kind: 'failed' }))
        failures++
        after = end.env.hlc
        if (failures >= attemptsAllowed) { status = 'failed'; finish = { at: end.env.hlc, event: end.id, accepted: null }; break }
        continue
      }
      chains.push(chainView(claim, links.length, last, lapseMs, { event: end.id, kind: 'released' }))
      after = end.env.hlc
      continue
    }
    if (takeover !== undefined) {
      chains.push(chainView(claim, links.length, last, lapseMs, { event: takeover.id, kind: 'superseded' }))
      cursor = takeoverAt
      after = HLC_ZERO
      continue
    }
    chains.push(chainView(claim, links.length, last, lapseMs, null))
    status = 'claimed'
    break
  }

  // Outcome, monotone in the set. Every claim stamped after readyAt counts here, owner or not: a
  // result is valid once and valid forever, so a claim that turns out to have lost a race, or a
  // takeover made moot by a late renewal, never undoes a task. Chains decide who should work;
  // they do not decide whose result counts.
  // Failures: every failure of a counted claim, and every result the committee rejected. The task
  // fails at the attemptsAllowed-th of them; more of them can only bring that moment earlier.
  const failureEvents: PlanEvent[] = []
  let accepted: PlanEvent<'result-reported'> | undefined
  let acceptedAt: PlanEvent | undefined
  for (const c of claims) {
    if (compareHlc(c.env.hlc, readyAt) <= 0) continue
    const group = index.claimEvents(c)
    for (const f of group.failures) failureEvents.push(f)
    for (const r of group.results) {
      const rv = ctx.of(r)
      if (rv.kind === 'rejected') failureEvents.push(rv.by)
      const at = rv.kind === 'none' ? r : rv.kind === 'accepted' ? rv.by : undefined
      if (at !== undefined && (acceptedAt === undefined || compareEvents(at, acceptedAt) < 0)) {
        accepted = r
        acceptedAt = at
      }
    }
  }
  const failed = failureEvents.length < attemptsAllowed ? undefined : sortEvents(failureEvents)[attemptsAllowed - 1]
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
  const results: ResultView[] = []
  let duplicates = 0
  for (const r of resultsForTask) {
    const rv = ctx.of(r)
    const isAccepted = accepted !== undefined && accepted.id === r.id
    if (!isAccepted && rv.kind !== 'rejected') duplicates++
    // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
    results.push({
      accepted: isAccepted,
      at: r.env.hlc,
      author: r.env.author,
      claim: r.env.body.claim,
      id: r.id,
      model: r.env.body.model,
      output: r.env.body.output,
      review: rv.kind,
      source: r.env.body.source
    })
  }
  return {
    status,
    chains,
    results,
    accepted: accepted?.id ?? null,
    duplicates: accepted === undefined ? 0 : duplicates,
    failures,
    attemptsAllowed,
    finishedAt: finish?.at ?? null,
    finishEvent: finish?.event ?? null,
    ignoredClaims: claims.length - owners
  }
}

/** Whether a result of some claim stamped after `readyAt` still awaits its review. */
function anyPending (ctx: TaskCtx, claims: ReadonlyArray<PlanEvent<'task-claimed'>>, readyAt: Hlc): boolean {
  for (const o of claims) {
    if (compareHlc(o.env.hlc, readyAt) <= 0) continue
    for (const x of ctx.index.claimEvents(o).results) if (ctx.of(x).kind === 'pending') return true
  }
  return false
}

/**
 * A claim's renewals (`renewals`: every renewal citing the claim), following
 * one renewal per predecessor; an equivocating renewal ends the chain.
 */
function renewalChain (renewals: ReadonlyArray<PlanEvent<'claim-renewed'>>, claim: PlanEvent<'task-claimed'>, equivocations: Equivocation[]): Array<PlanEvent<'claim-renewed'>> {
  const n = renewals.length
  if (n === 0) return []
  // Usually the renewals form one chain: in the total order, each renews the one before (a renewal is
  // stamped after its predecessor, one of its deps). Then every renewal is a link, in that order.
  const sorted = sortEvents(renewals)
  let simple = (sorted[0] as PlanEvent<'claim-renewed'>).env.body.prev === claim.id
  for (let i = 1; simple && i < n; i++) simple = (sorted[i] as PlanEvent<'claim-renewed'>).env.body.prev === (sorted[i - 1] as PlanEvent).id
  if (simple) return sorted
  const links: Array<PlanEvent<'claim-renewed'>> = []
  // The renewal of each predecessor; null where there are several (equivocation).
  const next = new Map<EventId, PlanEvent<'claim-renewed'> | null>()
  for (const r of renewals) {
    const prev = r.env.body.prev
    next.set(prev, next.has(prev) ? null : r)
  }
  let cur: EventId = claim.id
  while (true) {
    const r = next.get(cur)
    if (r === undefined) break
    if (r === null) {
      const forks = renewals.filter(x => x.env.body.prev === cur).map(x => x.id).sort()
      equivocations.push({ author: claim.env.author, slot: `renewal:${cur}`, events: forks })
      break
    }
    links.push(r)
    cur = r.id
  }
  return links
}
