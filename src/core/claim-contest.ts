import { compareHlc } from './hlc.js'
import { compareEvents } from './order.js'
import { TAKEOVER_GRACE_MS, contestKey } from './trust-rules.js'
import type { PlanIndex } from './plan-index.js'
import type { Hlc, PlanEvent, ResolvedParams, TaskId } from './events.js'
import type { Reviews } from './task-review.js'
import type { Settled } from './task-results.js'
import type { TrustRules } from './trust-rules.js'
import type { Chain, Walk } from './chain-walk.js'

/**
 * Protocol 5's claim contests (ADR-0047). A chain starts, after the task
 * became claimable (or after a release, a failure, a rejection), with the
 * best claim stamped within `claimWindowMs` of that moment: best by rank (a
 * hash of task and claimer, claims after their author abandoned a chain
 * last), not by stamp, so a claim stamped one tick after the moment wins
 * nothing by it. Only when no claim is stamped within the window does the
 * earliest claim start the chain. A takeover is contested alike, from the
 * first claim past the lapse to TAKEOVER_GRACE_MS more. Where a candidate's
 * chain has a result that another member built on, only such candidates
 * compete: a claim that would unseat it is late and kept as evidence.
 */

/** Whether a claim from `claims[from]` on, stamped after `after`, has a result built on by another member. */
export function builtOnAfter(
  rules: TrustRules,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  from: number,
  after: Hlc
): boolean {
  for (let i = from; i < claims.length; i++) {
    const c = claims[i] as PlanEvent<'task-claimed'>
    if (compareHlc(c.env.hlc, after) > 0 && rules.claimBuiltOn(c)) return true
  }
  return false
}

/** The best of the candidates at `pool` (indexes into `claims`); ties go to the earlier claim. */
function best(rules: TrustRules, claims: ReadonlyArray<PlanEvent<'task-claimed'>>, pool: readonly number[]): number {
  const task = (claims[pool[0] as number] as PlanEvent<'task-claimed'>).env.body.task as TaskId
  const pinned = pool.filter(i => rules.claimBuiltOn(claims[i] as PlanEvent<'task-claimed'>))
  const from = pinned.length > 0 ? pinned : pool
  let win = from[0] as number
  let winKey = contestKey(rules, task, claims[win] as PlanEvent<'task-claimed'>)
  for (const i of from) {
    const k = contestKey(rules, task, claims[i] as PlanEvent<'task-claimed'>)
    if (k < winKey) {
      win = i
      winKey = k
    }
  }
  if (pinned.length > 0)
    for (const i of pool) {
      const c = claims[i] as PlanEvent<'task-claimed'>
      if (!pinned.includes(i) && contestKey(rules, task, c) < winKey) rules.note('late', c)
    }
  return win
}

/**
 * Whether the chain of `claims[at]` would unseat what others built on: a
 * later claim whose result was built on by someone other than its claimer
 * would be passed over while this chain holds the task (until its release,
 * failure, takeover or the review that rejected its result; for good when it
 * ends with a result of its own that was not rejected).
 * Then this claim arrived late, whatever its stamp says (the work others
 * used was done without seeing it): it leaves the contest, as evidence. A
 * claim whose own result was built on never does.
 */
export function unseatsFinal(
  index: PlanIndex,
  rules: TrustRules,
  reviews: Reviews,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  at: number,
  chain: Chain
): boolean {
  if (rules.claimBuiltOn(claims[at] as PlanEvent<'task-claimed'>)) return false
  const e = chain.end
  // Claims before this event are passed over by the chain; undefined: every later claim is.
  const until: PlanEvent | undefined =
    e === undefined
      ? chain.takeoverAt >= 0
        ? (claims[chain.takeoverAt] as PlanEvent)
        : undefined
      : e.env.type === 'result-reported'
        ? rejectedBy(reviews, e as PlanEvent<'result-reported'>)
        : e
  for (let j = at + 1; j < claims.length; j++) {
    const c = claims[j] as PlanEvent<'task-claimed'>
    if (until !== undefined && compareEvents(c, until) >= 0) break
    if (c.id !== until?.id && rules.claimBuiltOn(c)) return true
  }
  return false
}

/** The review that rejected `r`, if one did: the task was open again from it on. */
function rejectedBy(reviews: Reviews, r: PlanEvent<'result-reported'>): PlanEvent | undefined {
  const v = reviews.of(r)
  return v.kind === 'rejected' ? v.by : undefined
}

/**
 * The claim that starts a chain: `claims[from]` is the first stamped after
 * the chain may start; the contest takes every claim from it stamped at most
 * `untilMs`.
 */
export function contestWinner(
  index: PlanIndex,
  rules: TrustRules,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  from: number,
  untilMs: number
): number {
  const pool: number[] = []
  for (let i = from; i < claims.length && (claims[i] as PlanEvent).env.hlc.ms <= untilMs; i++) pool.push(i)
  return pool.length === 0 ? from : best(rules, claims, pool)
}

/**
 * Who takes over the chain of `claims[at]`, and the first claim that could
 * (which the chain's own end must come before); -1 for both if none. A claim
 * is past the chain's lapse as judged with the renewals stamped before it
 * (so a late renewal makes a takeover moot), except that a takeover whose
 * result another member built on is judged with only the renewals it cites:
 * then the owner's later renewals are late, and kept as evidence. No member
 * takes over its own chain.
 */
export function contestTakeover(
  index: PlanIndex,
  rules: TrustRules,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  at: number,
  links: readonly PlanEvent[],
  params: ResolvedParams
): { winner: number; first: number; backup: boolean } {
  const claim = claims[at] as PlanEvent<'task-claimed'>
  const owner = claim.env.author
  const cap = claim.env.hlc.ms + params.maxClaimMs
  const backupAt = claim.env.hlc.ms + rules.backupMsOf(claim)
  let backup = false
  const lapseAfter = (ms: number): number => Math.min(ms + params.leaseMs, cap)
  let before = 0
  let lastMs = claim.env.hlc.ms
  let untilMs = Infinity
  const pool: number[] = []
  for (let i = at + 1; i < claims.length; i++) {
    const c = claims[i] as PlanEvent<'task-claimed'>
    if (c.env.hlc.ms > untilMs) break
    for (; before < links.length && compareHlc((links[before] as PlanEvent).env.hlc, c.env.hlc) < 0; before++)
      lastMs = (links[before] as PlanEvent).env.hlc.ms
    let lapse = lapseAfter(lastMs)
    if (c.env.hlc.ms <= lapse && c.env.author !== owner && rules.claimBuiltOn(c)) {
      const prev = c.env.body.prev === null ? undefined : links.find(l => l.id === c.env.body.prev)
      const seen = c.env.body.prev === claim.id ? claim : prev
      if (seen !== undefined && c.env.hlc.ms > lapseAfter(seen.env.hlc.ms)) {
        lapse = lapseAfter(seen.env.hlc.ms)
        for (const l of links)
          if (compareHlc(l.env.hlc, seen.env.hlc) > 0 && compareHlc(l.env.hlc, c.env.hlc) < 0) rules.note('late', l)
      }
    }
    // A backup: another member's claim once the chain is its backup time old, though it has not lapsed.
    const backs = c.env.author !== owner && c.env.hlc.ms > backupAt && c.env.hlc.ms <= lapse
    if (c.env.hlc.ms <= lapse && !backs) continue
    if (c.env.author === owner) {
      rules.note('self-takeover', c)
      continue
    }
    if (pool.length === 0) {
      untilMs = (backs ? backupAt : lapse) + rules.windowMs + TAKEOVER_GRACE_MS
      backup = backs
    }
    pool.push(i)
  }
  if (pool.length === 0) return { winner: -1, first: -1, backup: false }
  return { winner: best(rules, claims, pool), first: pool[0] as number, backup }
}

/**
 * Protocol 5's outcome: only the holder's result counts. The accepted result
 * is the one that ended the walk's last chain (with review, once accepted);
 * failures are the chains' own. Every other result of the task was reported
 * on a claim that did not hold it: it never counts, and is evidence.
 */
export function settleHeld(index: PlanIndex, reviews: Reviews, walk: Walk, rules: TrustRules, task: TaskId): Settled {
  const r = walk.result
  const rv = r === undefined ? undefined : reviews.of(r)
  const accepted = rv !== undefined && rv.kind !== 'pending' && rv.kind !== 'rejected' ? r : undefined
  const acceptedAt = rv?.kind === 'accepted' ? rv.by : accepted
  let failures = 0
  const held = new Set<string>()
  for (const c of walk.chains) {
    held.add(c.claim)
    const end = c.end === null ? undefined : index.event(c.end.event)
    if (end === undefined || c.end === null) continue
    if (c.end.kind === 'failed' || c.end.kind === 'rejected') failures++
    if (c.end.kind === 'failed' || c.end.kind === 'released') rules.note('ended-without-result', end)
    if (c.end.kind === 'rejected') rules.note('result-rejected', end)
  }
  for (const x of index.resultsByTask.get(task) ?? [])
    if (!held.has(x.env.body.claim) && !rules.outrun.has(x.env.body.claim)) rules.note('result-not-held', x)
  return { accepted, acceptedAt, failed: walk.failedBy, failures }
}
