import { HLC_ZERO, compareHlc } from './hlc.js'
import { compareEvents, sortEvents } from './order.js'
import { NO_EQUIVOCATIONS, concatEquivocations } from './slots.js'
import { resultViews, settle } from './task-results.js'
import { Reviews } from './task-review.js'
import type { PlanIndex, ClaimGroup } from './plan-index.js'
import type { EventId, Hlc, PeerIdString, PlanEvent, ResolvedParams, TaskId } from './events.js'
import type { NeededApprovers } from './split-pins.js'
import type { ChainView, CommitteeView, Equivocation } from './tree.js'
import type { TaskOutcome } from './task-view.js'
import { builtOnAfter, contestTakeover, contestWinner, settleHeld, unseatsFinal } from './claim-contest.js'
import type { TrustRules } from './trust-rules.js'
import type { ReviewSample } from './review-sample.js'
import type { Chain, Walk, WalkStatus } from './chain-walk.js'

export type { Chain, Walk } from './chain-walk.js'

/** A task's outcome, and the equivocations found in its renewals and reviews. */
export interface TaskDecision {
  readonly outcome: TaskOutcome
  readonly equivocations: readonly Equivocation[]
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
export function decideTask(
  index: PlanIndex,
  task: TaskId,
  readyAt: Hlc,
  params: ResolvedParams,
  committees: readonly CommitteeView[],
  approvers: NeededApprovers = new Map(),
  rules?: TrustRules,
  sample?: ReviewSample
): TaskDecision {
  const every = sortEvents(index.claims.get(task) ?? [])
  // Protocol 5: a claim beyond its author's limit does not count at all.
  const claims = rules === undefined ? every : every.filter(c => !rules.overLimit.has(c.id))
  const retries = (index.retries.get(task) ?? []).length
  const attemptsAllowed = params.maxAttempts * (1 + retries)
  // Protocol 5: the sample says which results wait for review (ADR-0049).
  const asked = sample === undefined ? params.review : (r: PlanEvent<'result-reported'>) => sample.reason(r) !== null
  const reviews = new Reviews(index, asked, committees, approvers, rules?.equivocators)
  const walk = followChains(index, reviews, claims, readyAt, attemptsAllowed, params, rules)
  const { accepted, acceptedAt, failed, failures } =
    rules === undefined
      ? settle(index, reviews, claims, readyAt, attemptsAllowed)
      : settleHeld(index, reviews, walk, rules, task)
  // A result wins over failure (done never reopens); the task finished at whichever came first, so
  // the stamp that dependants wait for only ever moves earlier as events arrive.
  let status = walk.status
  let finish: PlanEvent | null = null
  if (accepted !== undefined && acceptedAt !== undefined) {
    status = 'done'
    finish = failed !== undefined && compareEvents(failed, acceptedAt) < 0 ? failed : acceptedAt
  } else if (failed !== undefined) {
    status = 'failed'
    finish = failed
  } else if (status === 'failed') {
    status = 'ready'
  }
  const { results, duplicates } = resultViews(
    reviews,
    sortEvents(index.resultsByTask.get(task) ?? []),
    accepted,
    sample
  )
  const chains = walk.chains
  const outcome: TaskOutcome = {
    accepted: accepted?.id ?? null,
    attemptsAllowed,
    awaiting:
      status !== 'in-review'
        ? NO_ONE
        : rules === undefined || walk.result === undefined
          ? awaitingReview(index, reviews, claims, readyAt)
          : [...reviews.awaiting(walk.result)].sort(),
    chains,
    duplicates: accepted === undefined ? 0 : duplicates,
    failures,
    finishEvent: finish?.id ?? null,
    finishedAt: finish?.env.hlc ?? null,
    ignoredClaims: every.length - walk.owners,
    owner: status === 'claimed' ? (chains[chains.length - 1]?.owner ?? null) : null,
    results,
    status
  }
  return { outcome, equivocations: concatEquivocations(walk.equivocations, reviews.equivocations()) }
}

/** What a task that cannot be claimed yet shows: nothing decided, the claims it got ignored. */
export function blockedOutcome(index: PlanIndex, task: TaskId, params: ResolvedParams): TaskOutcome {
  return {
    accepted: null,
    attemptsAllowed: params.maxAttempts,
    awaiting: NO_ONE,
    chains: [],
    duplicates: 0,
    failures: 0,
    finishEvent: null,
    finishedAt: null,
    ignoredClaims: (index.claims.get(task) ?? []).length,
    owner: null,
    results: [],
    status: 'blocked'
  }
}

/** Follow the chains from the first counted claim, each to its end or takeover (see decideTask). */
function followChains(
  index: PlanIndex,
  reviews: Reviews,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  readyAt: Hlc,
  attemptsAllowed: number,
  params: ResolvedParams,
  rules?: TrustRules
): Walk {
  const chains: ChainView[] = []
  let equivocations = NO_EQUIVOCATIONS
  let owners = 0
  let after = readyAt
  let cursor = 0
  let failures = 0
  let status: WalkStatus = 'ready'
  let result: PlanEvent<'result-reported'> | undefined
  let failedBy: PlanEvent | undefined
  // Protocol 5: the claim a takeover contest chose starts the next chain; a late claim leaves the list.
  let forced = -1
  const list: Array<PlanEvent<'task-claimed'>> =
    rules === undefined ? (claims as Array<PlanEvent<'task-claimed'>>) : [...claims]
  while (true) {
    const started = forced < 0
    if (started) {
      while (cursor < list.length && compareHlc((list[cursor] as PlanEvent).env.hlc, after) <= 0) cursor++
      if (cursor >= list.length) break
      if (rules !== undefined) cursor = contestWinner(index, rules, list, cursor, after.ms + rules.windowMs)
    } else {
      cursor = forced
      forced = -1
    }
    const c = chainOf(index, list, cursor, params, rules)
    if (rules !== undefined && started && unseatsFinal(index, rules, reviews, list, cursor, c)) {
      rules.note('late', list[cursor] as PlanEvent)
      list.splice(cursor, 1)
      continue
    }
    cursor++
    owners++
    equivocations = concatEquivocations(equivocations, c.equivocations)
    const end = c.end
    if (end === undefined) {
      if (c.takeoverAt < 0) {
        chains.push(chainView(c, null))
        status = 'claimed'
        break
      }
      chains.push(chainView(c, { event: (list[c.takeoverAt] as PlanEvent).id, kind: 'superseded' }))
      if (rules === undefined) {
        cursor = c.takeoverAt
        after = HLC_ZERO
      } else {
        forced = c.takeoverAt
      }
      continue
    }
    if (end.env.type === 'result-reported') {
      const r = reviews.of(end as PlanEvent<'result-reported'>)
      if (r.kind !== 'rejected') {
        chains.push(chainView(c, { event: end.id, kind: 'result' }))
        status = r.kind === 'pending' ? 'in-review' : 'done'
        result = end as PlanEvent<'result-reported'>
        break
      }
      chains.push(chainView(c, { event: end.id, kind: 'rejected' }))
      failures++
      after = r.by.env.hlc
      // A task reopens only when all its results are rejected: a superseded owner's result may still await review.
      // Protocol 5 counts no result but its holder's, so only the chains' own results are awaited.
      if (rules === undefined && anyPending(index, reviews, claims, readyAt)) {
        status = 'in-review'
        break
      }
      if (failures >= attemptsAllowed && !spentLate(rules, list, cursor, r.by)) {
        status = 'failed'
        failedBy = r.by
        break
      }
      continue
    }
    if (end.env.type === 'task-failed') {
      chains.push(chainView(c, { event: end.id, kind: 'failed' }))
      failures++
      after = end.env.hlc
      if (failures >= attemptsAllowed && !spentLate(rules, list, cursor, end)) {
        status = 'failed'
        failedBy = end
        break
      }
      continue
    }
    chains.push(chainView(c, { event: end.id, kind: 'released' }))
    after = end.env.hlc
  }
  // Protocol 5: a result another member built on finishes its task even where the walk passed its claim over.
  const kept =
    rules === undefined || status === 'done' ? undefined : builtOnResult(index, reviews, rules, list, readyAt)
  if (kept !== undefined && kept.result.id !== result?.id) {
    const at = list.indexOf(kept.claim)
    chains.push(chainView(chainOf(index, list, at, params, rules), { event: kept.result.id, kind: 'result' }))
    return { chains, owners: owners + 1, status: 'done', equivocations, result: kept.result, failedBy: undefined }
  }
  return { chains, owners, status, equivocations, result, failedBy }
}

/**
 * The earliest result, accepted or needing no review, of a claim stamped
 * after `readyAt` that another member built on (it or its accepting review).
 */
function builtOnResult(
  index: PlanIndex,
  reviews: Reviews,
  rules: TrustRules,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  readyAt: Hlc
): { claim: PlanEvent<'task-claimed'>; result: PlanEvent<'result-reported'> } | undefined {
  let out: { claim: PlanEvent<'task-claimed'>; result: PlanEvent<'result-reported'> } | undefined
  for (const c of claims) {
    if (compareHlc(c.env.hlc, readyAt) <= 0 || !rules.claimBuiltOn(c)) continue
    for (const r of index.claimEvents(c).results) {
      const kind = reviews.of(r).kind
      if (kind !== 'none' && kind !== 'accepted') continue
      if (out === undefined || compareEvents(r, out.result) < 0) out = { claim: c, result: r }
    }
  }
  return out
}

/**
 * Protocol 5: whether the failure or rejection `end`, which used the task's
 * last attempt, came too late to fail it: a claim that a later chain may
 * start (from `from` on, stamped after `end`) has a result another member
 * built on. Then the task was done for them before `end` arrived, whatever
 * its stamp says; the walk goes on to that claim and `end` is evidence.
 */
function spentLate(
  rules: TrustRules | undefined,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  from: number,
  end: PlanEvent
): boolean {
  if (rules === undefined || !builtOnAfter(rules, claims, from, end.env.hlc)) return false
  rules.note('late', end)
  return true
}

/** The chain started by `claims[at]`. */
function chainOf(
  index: PlanIndex,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  at: number,
  params: ResolvedParams,
  rules?: TrustRules
): Chain {
  const claim = claims[at] as PlanEvent<'task-claimed'>
  const group = index.claimEvents(claim)
  const { links, equivocations } = renewalChain(group.renewals, claim)
  const cap = claim.env.hlc.ms + params.maxClaimMs
  let takeoverAt: number
  let firstTakeover: number
  let backup = false
  if (rules === undefined) {
    takeoverAt = takeoverIndex(claims, at + 1, links, claim.env.hlc.ms, params.leaseMs, cap)
    firstTakeover = takeoverAt
  } else {
    ;({ winner: takeoverAt, first: firstTakeover, backup } = contestTakeover(index, rules, claims, at, links, params))
    // A result others built on ends the chain, whatever takeover claims stamped before it arrive later.
    if (firstTakeover >= 0 && rules.claimBuiltOn(claim)) {
      rules.note('late', claims[firstTakeover] as PlanEvent)
      takeoverAt = firstTakeover = -1
    }
  }
  const takeover = firstTakeover >= 0 ? (claims[firstTakeover] as PlanEvent) : undefined
  const first = earliestEnd(group)
  let end = first !== undefined && (takeover === undefined || compareEvents(first, takeover) < 0) ? first : undefined
  // Protocol 5: a backup runs beside the holder; the holder's result still ends the chain if it came first.
  if (end === undefined && backup && first?.env.type === 'result-reported' && rules !== undefined) {
    const theirs = sortEvents(index.claimEvents(claims[takeoverAt] as PlanEvent<'task-claimed'>).results)[0]
    if (theirs === undefined || compareEvents(first, theirs) < 0) {
      rules.outrun.add((claims[takeoverAt] as PlanEvent).id)
      end = first
      takeoverAt = -1
    }
  }
  const last: PlanEvent = links[links.length - 1] ?? claim
  return {
    claim,
    renewals: links.length,
    last,
    lapseMs: Math.min(last.env.hlc.ms + params.leaseMs, cap),
    end,
    takeoverAt,
    equivocations
  }
}

/**
 * The first claim from `from` on stamped after the chain's lapse as it
 * stood then (with only the renewals stamped before that claim); -1 if none.
 */
function takeoverIndex(
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  from: number,
  links: readonly PlanEvent[],
  claimedMs: number,
  leaseMs: number,
  cap: number
): number {
  let before = 0
  let lastMs = claimedMs
  for (let i = from; i < claims.length; i++) {
    const c = claims[i] as PlanEvent<'task-claimed'>
    for (; before < links.length && compareHlc((links[before] as PlanEvent).env.hlc, c.env.hlc) < 0; before++)
      lastMs = (links[before] as PlanEvent).env.hlc.ms
    if (c.env.hlc.ms > Math.min(lastMs + leaseMs, cap)) return i
  }
  return -1
}

/** A claim's earliest result, release or failure. */
function earliestEnd(group: ClaimGroup): PlanEvent | undefined {
  let end: PlanEvent | undefined
  for (const x of group.results) if (end === undefined || compareEvents(x, end) < 0) end = x
  for (const x of group.releases) if (end === undefined || compareEvents(x, end) < 0) end = x
  for (const x of group.failures) if (end === undefined || compareEvents(x, end) < 0) end = x
  return end
}

/** Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying. */
function chainView(c: Chain, end: ChainView['end']): ChainView {
  return {
    claim: c.claim.id,
    claimedAt: c.claim.env.hlc,
    end,
    lapseMs: c.lapseMs,
    last: c.last.id,
    owner: c.claim.env.author,
    renewals: c.renewals
  }
}

const NO_ONE: readonly PeerIdString[] = Object.freeze([])

/** Whom the pending reviews of the results that count wait for, sorted. */
function awaitingReview(
  index: PlanIndex,
  reviews: Reviews,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  readyAt: Hlc
): readonly PeerIdString[] {
  const who = new Set<PeerIdString>()
  for (const o of claims) {
    if (compareHlc(o.env.hlc, readyAt) <= 0) continue
    for (const x of index.claimEvents(o).results)
      if (reviews.of(x).kind === 'pending') for (const p of reviews.awaiting(x)) who.add(p)
  }
  return who.size === 0 ? NO_ONE : [...who].sort()
}

/** Whether a result of some claim stamped after `readyAt` still awaits its review. */
function anyPending(
  index: PlanIndex,
  reviews: Reviews,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  readyAt: Hlc
): boolean {
  for (const o of claims) {
    if (compareHlc(o.env.hlc, readyAt) <= 0) continue
    for (const x of index.claimEvents(o).results) if (reviews.of(x).kind === 'pending') return true
  }
  return false
}

/**
 * A claim's renewals (`renewals`: every renewal citing the claim), following
 * one renewal per predecessor; an equivocating renewal ends the chain, and
 * its proof is returned.
 */
function renewalChain(
  renewals: ReadonlyArray<PlanEvent<'claim-renewed'>>,
  claim: PlanEvent<'task-claimed'>
): { links: Array<PlanEvent<'claim-renewed'>>; equivocations: readonly Equivocation[] } {
  const n = renewals.length
  if (n === 0) return { links: [], equivocations: NO_EQUIVOCATIONS }
  // Usually the renewals form one chain: in the total order, each renews the one before (a renewal is
  // stamped after its predecessor, one of its deps). Then every renewal is a link, in that order.
  const sorted = sortEvents(renewals)
  let simple = (sorted[0] as PlanEvent<'claim-renewed'>).env.body.prev === claim.id
  for (let i = 1; simple && i < n; i++)
    simple = (sorted[i] as PlanEvent<'claim-renewed'>).env.body.prev === (sorted[i - 1] as PlanEvent).id
  if (simple) return { links: sorted, equivocations: NO_EQUIVOCATIONS }
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
      const forks = renewals
        .filter(x => x.env.body.prev === cur)
        .map(x => x.id)
        .sort()
      return { links, equivocations: [{ author: claim.env.author, slot: `renewal:${cur}`, events: forks }] }
    }
    links.push(r)
    cur = r.id
  }
  return { links, equivocations: NO_EQUIVOCATIONS }
}
