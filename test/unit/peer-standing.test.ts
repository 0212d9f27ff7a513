/**
 * Standing across plans (src/core/peer-standing.ts, ADR-0048): each plan's
 * evidence per member, summed over plans and kept by plan; what counts
 * against a member (the penalty) and what it gives gossipsub's score; the
 * runtime's tracker that re-reads only the plans that changed.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { Fold } from '../../src/core/fold.js'
import {
  GRAVE_KINDS,
  RULE_ALLOWANCE_PER_PLAN,
  RULE_KINDS,
  SOFT_ALLOWANCE_PER_PLAN,
  StandingBook,
  describeRecord,
  isPoor,
  planPenalty,
  zeroCounts
} from '../../src/core/peer-standing.js'
import { STANDING_SCORE_FLOOR, gossipScoreParams, standingScore } from '../../src/net/gossip-config.js'
import { StandingTracker, statusStanding, STATUS_STANDING_MAX } from '../../src/runtime/standing.js'
import { MAX_STANDING_LINES, standingLines } from '../../src/http/dashboard/state.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { twoLeaves, makeCast, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { EventId, PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'
import type { EvidenceItem, EvidenceKind, PlanStanding } from '../../src/core/tree.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const P1 = 'a'.repeat(64) as PlanId
const P2 = 'b'.repeat(64) as PlanId
const A = 'peer-a' as PeerIdString
const B = 'peer-b' as PeerIdString

let n = 0
function items(author: PeerIdString, kind: EvidenceKind, count: number): EvidenceItem[] {
  return Array.from({ length: count }, () => ({ author, kind, event: `e${n++}` as EventId }))
}
function standing(evidence: EvidenceItem[], equivocators: PeerIdString[] = []): PlanStanding {
  return { equivocators, evidence }
}

/** A version-5 plan where executor 0 claims beyond its limit of one and takes over its own chain. */
function hoardingPlan(): { b: PlanBuilder; events: PlanEvent[] } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    leaseMs: 1_000,
    maxClaimMs: 5_000,
    maxClaimsPerExecutor: 1,
    trust: DEFAULT_TRUST
  })
  const { s, t0, t1, ev } = twoLeaves(b, cast)
  const hoarder = cast.executors[0]
  const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
  const c1 = b.claim(hoarder, t1, 2301, { evidence: ev })
  const again = b.claim(hoarder, t0, 3400, { evidence: ev, prev: c0.id })
  // And the decomposer whose split won proposes again in the same slot: an equivocation.
  const twice = b.propose(cast.decomposers[0], b.root, 1, s.proposal.env.body.subgoals.slice().reverse(), 2001)
  return { b, events: [...s.events, c0, c1, again, twice] }
}

describe('the penalty: what counts against a member', () => {
  it('is 0 within the allowances, and counts each grave item from the first', () => {
    const soft = { ...zeroCounts(), late: 2, 'ended-without-result': 3, 'result-not-held': SOFT_ALLOWANCE_PER_PLAN - 5 }
    expect(planPenalty({ counts: soft, equivocator: false })).toBe(0)
    expect(planPenalty({ counts: { ...soft, late: 2 + 2 }, equivocator: false })).toBe(1)
    const rule = { ...zeroCounts(), 'claim-over-limit': RULE_ALLOWANCE_PER_PLAN - 1, 'self-takeover': 1 }
    expect(planPenalty({ counts: rule, equivocator: false })).toBe(0)
    expect(planPenalty({ counts: { ...rule, 'self-takeover': 4 }, equivocator: false })).toBe(3)
    for (const k of RULE_KINDS) expect(GRAVE_KINDS.has(k)).toBe(false)
    for (const k of GRAVE_KINDS)
      expect(planPenalty({ counts: { ...zeroCounts(), [k]: 1 }, equivocator: false })).toBe(1)
    // An equivocator without an equivocation item of its own (its events voided elsewhere) still counts once.
    expect(planPenalty({ counts: zeroCounts(), equivocator: true })).toBe(1)
    expect(planPenalty({ counts: { ...zeroCounts(), equivocation: 2 }, equivocator: true })).toBe(2)
  })

  it('maps to gossipsub’s score: 0 for an honest record, below 0 (pruned) from 3 points, bounded below', () => {
    expect(standingScore(0)).toBe(0)
    expect(standingScore(-1)).toBe(0)
    expect(standingScore(Number.NaN)).toBe(0)
    // The topic score's positive cap is 10: three points outweigh the most credit a peer can hold.
    expect(standingScore(3) + 10).toBeLessThan(0)
    expect(standingScore(16)).toBeLessThanOrEqual(-80)
    expect(standingScore(1e9)).toBe(STANDING_SCORE_FLOOR)
    const params = gossipScoreParams(['t'], peer => (peer === 'bad' ? 4 : 0))
    expect(params.appSpecificWeight).toBe(1)
    expect(params.appSpecificScore?.('bad')).toBe(-20)
    expect(params.appSpecificScore?.('good')).toBe(0)
    expect(gossipScoreParams(['t']).appSpecificScore?.('bad')).toBe(0)
  })
})

describe('the book: standing per member across plans', () => {
  it('sums a member’s evidence over plans, and names the plans', () => {
    const book = new StandingBook()
    book.set(P1, standing([...items(A, 'equivocation', 2), ...items(B, 'late', 1)], [A]))
    book.set(P2, standing(items(A, 'claim-over-limit', RULE_ALLOWANCE_PER_PLAN + 1)))
    const a = book.record(A)
    expect(a?.counts.equivocation).toBe(2)
    expect(a?.counts['claim-over-limit']).toBe(7)
    expect(a?.total).toBe(9)
    expect(a?.plans).toStrictEqual([P1, P2])
    expect(a?.equivocatedIn).toStrictEqual([P1])
    expect(a?.penalty).toBe(3)
    expect(book.penalty(A)).toBe(3)
    expect(isPoor(a)).toBe(true)
    expect(isPoor(book.record(B))).toBe(false)
    expect(describeRecord(a!)).toBe('2 equivocation, 7 claim-over-limit in 2 plans')
    expect(book.records().map(r => r.peer)).toStrictEqual([A, B])
  })

  it('replaces a plan’s part when the plan changes, and drops it when the plan goes', () => {
    const book = new StandingBook()
    book.set(P1, standing(items(A, 'equivocation', 1)))
    book.set(P2, standing(items(A, 'equivocation', 1)))
    book.set(P1, standing([...items(A, 'equivocation', 2), ...items(B, 'result-rejected', 1)]))
    expect(book.record(A)?.counts.equivocation).toBe(3)
    expect(book.penalty(A)).toBe(3)
    book.forget(P1)
    expect(book.record(A)?.plans).toStrictEqual([P2])
    expect(book.record(B)).toBeUndefined()
    book.set(P2, standing([]))
    expect(book.record(A)).toBeUndefined()
    expect(book.penalty(A)).toBe(0)
    expect(book.records()).toStrictEqual([])
  })

  it('gives the same records whatever order the plans come in', () => {
    const parts: Array<[PlanId, PlanStanding]> = [
      [P1, standing([...items(A, 'late', SOFT_ALLOWANCE_PER_PLAN + 3), ...items(B, 'equivocation', 1)], [B])],
      [P2, standing([...items(A, 'self-takeover', RULE_ALLOWANCE_PER_PLAN + 1), ...items(B, 'late', 1)])]
    ]
    const one = new StandingBook()
    const two = new StandingBook()
    for (const [p, s] of parts) one.set(p, s)
    for (const [p, s] of [...parts].reverse()) two.set(p, s)
    expect(two.records()).toStrictEqual(one.records())
    expect(one.record(A)?.penalty).toBe(2.5)
  })

  it('reads a folded version-5 plan’s evidence', () => {
    const { b, events } = hoardingPlan()
    const book = new StandingBook()
    book.set(b.plan, treeOf(b, events).standing)
    const r = book.record(cast.executors[0])
    expect(r?.counts['claim-over-limit']).toBe(1)
    expect(r?.counts['self-takeover']).toBe(1)
    // Two breaches in one plan are within what faults make honest members leave.
    expect(r?.penalty).toBe(0)
    const d = book.record(cast.decomposers[0])
    expect(d?.counts.equivocation).toBe(2)
    expect(d?.equivocatedIn).toStrictEqual([b.plan])
    expect(d?.penalty).toBe(2)
    expect(book.records().map(x => x.peer)).toStrictEqual([cast.decomposers[0], cast.executors[0]])
  })
})

describe('the runtime’s tracker', () => {
  it('reads a plan again only when it changed, and lists the worst first on /status', () => {
    const { b, events } = hoardingPlan()
    const fold = new Fold()
    const tracker = new StandingTracker(fold)
    fold.add(b.goal, 1e15)
    tracker.markAll()
    expect(tracker.records()).toStrictEqual([])
    for (const e of events) fold.add(e, 1e15)
    // Nothing marked: the events did not pass through `folded`, so the book is as it was.
    tracker.refresh()
    expect(tracker.book.records()).toStrictEqual([])
    tracker.folded(events.slice(-1))
    tracker.refresh()
    expect(tracker.penalty(cast.decomposers[0])).toBe(2)
    expect(tracker.book.record(cast.executors[0])?.total).toBe(2)
    const shown = statusStanding(tracker.records())
    expect(shown.poor).toStrictEqual([{ peer: cast.decomposers[0], penalty: 2, says: '2 equivocation in 1 plan' }])
    expect(shown.withEvidence).toBe(2)
    expect(shown.more).toBe(0)
  })

  it('marks nothing for plans before version 5', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const fold = new Fold()
    const tracker = new StandingTracker(fold)
    fold.add(b.goal, 1e15)
    tracker.folded([b.goal])
    tracker.markAll()
    tracker.refresh()
    expect([...tracker.book.plans()]).toStrictEqual([])
  })

  it('/status lists at most STATUS_STANDING_MAX poor members, and counts the rest', () => {
    const book = new StandingBook()
    const peers = Array.from(
      { length: STATUS_STANDING_MAX + 3 },
      (_, i) => `p${String(i).padStart(3, '0')}` as PeerIdString
    )
    book.set(P1, standing([...peers.flatMap(p => items(p, 'equivocation', 1)), ...items(A, 'late', 1)]))
    const shown = statusStanding(book.records())
    expect(shown.poor.length).toBe(STATUS_STANDING_MAX)
    expect(shown.more).toBe(3)
    expect(shown.withEvidence).toBe(peers.length + 1)
  })
})

describe('the dashboard’s standing panel', () => {
  it('lists at most MAX_STANDING_LINES members, marks the poor ones, and names a few plans each', () => {
    const book = new StandingBook()
    const peers = Array.from(
      { length: MAX_STANDING_LINES + 2 },
      (_, i) => `q${String(i).padStart(3, '0')}` as PeerIdString
    )
    book.set(P1, standing([...items(A, 'equivocation', 1), ...peers.flatMap(p => items(p, 'late', 1))]))
    book.set(P2, standing(items(A, 'equivocation', 1)))
    const { standing: lines, standingMore } = standingLines(book.records())
    expect(lines.length).toBe(MAX_STANDING_LINES)
    expect(standingMore).toBe(3)
    expect(lines[0]).toStrictEqual({
      peer: A,
      poor: true,
      penalty: 2,
      says: '2 equivocation in 2 plans',
      plans: [P1, P2]
    })
    expect(lines[1]?.poor).toBe(false)
  })
})
