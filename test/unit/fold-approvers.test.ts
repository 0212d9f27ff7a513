/**
 * Fold rules for people in the committee and approvers (protocol 2): a person's ballot is an ordinary committee ballot; an approver's
 * choice is needed besides the quorum for a split, and an approver's accept
 * besides the review quorum for a result; an approver's "none" closes the
 * attempt (the next one opens) and an approver's reject reopens the task; a
 * silent approver leaves the node waiting, by name, until the author amends
 * the committee. Every table row also checks order independence
 * (expectOrderFree).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { childId, rollupId } from '../../src/core/derive.js'
import { NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { view } from '../../src/core/view.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import {
  child,
  expectOrderFree,
  forge,
  hashOf,
  leafTask,
  makeCast,
  nodeOf,
  rootOf,
  split,
  taskOf,
  treeOf
} from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { Approvers, NodeId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'

let cast: Cast
let s0: PeerIdString, s1: PeerIdString, s2: PeerIdString
let d0: PeerIdString, d1: PeerIdString
let e0: PeerIdString, e1: PeerIdString
/** A person: the peer id of their client data dir (sorted after every other actor of the cast). */
let person: PeerIdString
let stranger: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[s0, s1, s2] = cast.scorers
  ;[d0, d1] = cast.decomposers
  ;[e0, e1] = cast.executors
  ;[person, stranger] = cast.outsiders
})

const root = (b: PlanBuilder): { node: NodeId; attempt: number } => ({ node: b.root, attempt: 1 })

/** Two scorers and a person, quorum 2; `approvers` names the person for splits, results or both. */
function plan(approve?: Approvers['for'], params: Partial<PlanParams> = {}): PlanBuilder {
  const approvers = approve === undefined ? {} : { approvers: { ids: [person], for: approve } }
  return new PlanBuilder(cast.author, [s0, s1, person], {
    quorum: 2,
    leaseMs: 1000,
    ...(approve === 'splits' ? {} : { review: approve !== undefined }),
    ...approvers,
    ...params
  })
}

describe('a person in the committee', () => {
  it("one person and two scorers (quorum 2): the person's ballot decides the split, and the plan completes", () => {
    const b = plan()
    expect(b.goal.env.v).toBe(1)
    const p = b.propose(d0, b.root, 1, subgoals(['book flights', 'book hotels']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['by city', 'by week']), 2010)
    const ballots = [
      b.ballot(s0, root(b), p, 2100, { judged: [p, q] }),
      b.ballot(s1, root(b), q, 2200, { judged: [p, q] }),
      // The person scores only what they chose.
      b.ballot(person, root(b), p, 2300, { notes: 'flights first' })
    ]
    const work = [0, 1]
      .map(i => leafTask(childId(b.root, p.id, i)))
      .flatMap((t, i) => {
        const c = b.claim(e0, t, 2400 + i)
        return [c, b.result(c, 2600 + i, `done ${i}`)]
      })
    const roll = b.claim(e1, rollupId(b.root), 2700)
    const events = [p, q, ...ballots, ...work, roll, b.result(roll, 2800, 'the trip')]
    const tree = expectOrderFree(b, events)
    expect(rootOf(tree)).toMatchObject({ accepted: p.id, kind: 'composite' })
    expect(rootOf(tree).attempts[0]).toMatchObject({
      outcome: 'won',
      winner: p.id,
      decidedBy: (ballots[2] as PlanEvent).id
    })
    expect(tree.status).toBe('completed')
    expect(tree.deliverable?.output).toBe('the trip')
  })

  it('a person who never answers leaves the node waiting, by name, until the author amends the committee', () => {
    const b = plan()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const one = [p, b.ballot(s0, root(b), p, 2100)]
    const waits = expectOrderFree(b, one)
    expect(rootOf(waits).awaiting).toStrictEqual([s1, person])
    expect(rootOf(waits).waiting).toContain(person)
    // Once a quorum has chosen, nobody is needed any more.
    expect(rootOf(treeOf(b, [...one, b.ballot(s1, root(b), p, 2200)])).awaiting).toStrictEqual([])
  })
})

describe('split approvers: the quorum and every approver', () => {
  it("no split is applied until the approver chooses it; then it is, decided by the approver's ballot", () => {
    const b = plan('splits')
    expect(b.goal.env.v).toBe(2)
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const quorum = [b.ballot(s0, root(b), p, 2100), b.ballot(s1, root(b), p, 2200)]
    const waits = expectOrderFree(b, [p, ...quorum])
    expect(rootOf(waits)).toMatchObject({ kind: 'decomposing', accepted: null, children: [], awaiting: [person] })
    expect(rootOf(waits).waiting).toMatch(
      new RegExp(`a proposal has its quorum; waiting for the approval of ${person}`)
    )
    expect(rootOf(waits).attempts[0]?.outcome).toBe('open')
    expect(view(waits, 5000).claimable).toStrictEqual([])
    expect(view(waits, 5000).waiting[0]?.reason).toContain(person)
    const yes = b.ballot(person, root(b), p, 2300)
    const won = expectOrderFree(b, [p, ...quorum, yes])
    expect(rootOf(won)).toMatchObject({ kind: 'composite', accepted: p.id, awaiting: [] })
    expect(rootOf(won).attempts[0]).toMatchObject({ outcome: 'won', decidedBy: yes.id })
  })

  it('when the approver chose first, the quorum-th ballot decides', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const yes = b.ballot(person, root(b), p, 2050)
    const other = b.ballot(s0, root(b), p, 2100)
    const tree = expectOrderFree(b, [p, yes, other])
    expect(rootOf(tree).attempts[0]).toMatchObject({ outcome: 'won', decidedBy: other.id })
    expect(taskOf(tree, leafTask(rootOf(tree).children[0] as NodeId)).readyAt).toStrictEqual(other.env.hlc)
  })

  it('the approver\'s "none" with notes closes the attempt at once; decomposers propose again and a new split wins', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const s0p = b.ballot(s0, root(b), p, 2100)
    const none = b.ballot(person, root(b), null, 2200, { notes: 'split by week, not by city' })
    const closed = expectOrderFree(b, [p, s0p, none])
    const r = rootOf(closed)
    expect(r.attempts.map(a => a.outcome)).toStrictEqual(['failed', 'open'])
    expect(r.attempts[0]?.ballots.find(x => x.id === none.id)).toMatchObject({
      choice: null,
      notes: 'split by week, not by city'
    })
    expect(view(closed, 5000).openAttempts.map(o => o.attempt)).toStrictEqual([2])
    expect(r.awaiting).toStrictEqual([])
    expect(r.waiting).toMatch(/attempt 2: waiting for proposals/)
    // s1's later ballot for attempt 1 changes nothing: the attempt is closed.
    const late = b.ballot(s1, root(b), p, 2300)
    const again = b.propose(d0, b.root, 2, subgoals(['week 1', 'week 2']), 2400, [none.id])
    const second = [
      b.ballot(s0, { node: b.root, attempt: 2 }, again, 2500),
      b.ballot(person, { node: b.root, attempt: 2 }, again, 2600)
    ]
    const won = expectOrderFree(b, [p, s0p, none, late, again, ...second])
    expect(rootOf(won).attempts.map(a => a.outcome)).toStrictEqual(['failed', 'won'])
    expect(rootOf(won).accepted).toBe(again.id)
  })

  it('"none" from the approver even after the quorum chose closes the attempt', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const tree = expectOrderFree(b, [
      p,
      b.ballot(s0, root(b), p, 2100),
      b.ballot(s1, root(b), p, 2200),
      b.ballot(person, root(b), null, 2300)
    ])
    expect(rootOf(tree).attempts.map(a => a.outcome)).toStrictEqual(['failed', 'open'])
  })

  it('the approver choosing another proposal: no win; the attempt fails once everyone has cast', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2010)
    const tree = expectOrderFree(b, [
      p,
      q,
      b.ballot(s0, root(b), p, 2100),
      b.ballot(s1, root(b), p, 2200),
      b.ballot(person, root(b), q, 2300)
    ])
    expect(rootOf(tree).attempts.map(a => a.outcome)).toStrictEqual(['failed', 'open'])
  })

  it('at the last attempt, the approver\'s "none" makes the node a leaf, ready from that ballot whatever comes after', () => {
    const b = plan('splits', { maxAttempts: 1 })
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const none = b.ballot(person, root(b), null, 2200)
    const tree = expectOrderFree(b, [p, none])
    expect(rootOf(tree)).toMatchObject({ kind: 'leaf', leafReason: 'attempts-exhausted' })
    expect(taskOf(tree, leafTask(b.root))).toMatchObject({
      status: 'ready',
      readyAt: none.env.hlc,
      evidence: [none.id]
    })
    const later = treeOf(b, [p, none, b.ballot(s0, root(b), p, 2300), b.ballot(s1, root(b), p, 2400)])
    expect(taskOf(later, leafTask(b.root)).readyAt).toStrictEqual(none.env.hlc)
  })

  it("a silent approver: the author drops them from the committee, and the scorers' quorum decides under the amendment", () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const before = [p, b.ballot(s0, root(b), p, 2100), b.ballot(s1, root(b), p, 2200)]
    expect(rootOf(treeOf(b, before)).awaiting).toStrictEqual([person])
    const amend = b.amend([s0, s1, s2], 3000)
    const under = [
      b.ballot(s0, root(b), p, 3100, { committee: amend.id }),
      b.ballot(s2, root(b), p, 3200, { committee: amend.id })
    ]
    const won = expectOrderFree(b, [...before, amend, ...under])
    expect(rootOf(won)).toMatchObject({ accepted: p.id, kind: 'composite' })
    expect(rootOf(won).attempts[0]?.decidedBy).toBe((under[1] as PlanEvent).id)
    // An amendment that keeps the approver still needs them.
    const keep = b.amend([s0, s1, s2, person], 3000, 3)
    const kept = treeOf(b, [
      ...before,
      keep,
      ...[s0, s1, s2].map((s, i) => b.ballot(s, root(b), p, 3100 + i, { committee: keep.id }))
    ])
    expect(rootOf(kept)).toMatchObject({ kind: 'decomposing', awaiting: [person] })
  })

  it('approvers for results only leave splits to the quorum', () => {
    const b = plan('results')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    expect(rootOf(treeOf(b, [p, b.ballot(s0, root(b), p, 2100), b.ballot(s1, root(b), p, 2200)])).accepted).toBe(p.id)
  })
})

describe('result approvers: the review quorum and every approver', () => {
  function reviewed(approve: Approvers['for']): { b: PlanBuilder; t: TaskId; events: PlanEvent[] } {
    const b = plan(approve)
    const voters = approve === 'results' ? [s0, s1] : [s0, s1, person]
    const s = split(b, { node: b.root, by: d0, titles: ['book flights', 'book hotels'], voters, at: 2000 })
    return { b, t: leafTask(child(s, 0)), events: [...s.events] }
  }

  it("a result the scorers accepted waits for the approver; a person's reject reopens the task, and the new result is accepted", () => {
    for (const approve of ['results', 'both'] as const) {
      const { b, t, events } = reviewed(approve)
      const c = b.claim(e0, t, 3000)
      const r1 = b.result(c, 3500, 'flights: NRT')
      const yes = [b.review(s0, r1, 'accept', 3600), b.review(s1, r1, 'accept', 3700)]
      const waiting = expectOrderFree(b, [...events, c, r1, ...yes])
      expect(taskOf(waiting, t)).toMatchObject({ status: 'in-review', awaiting: [person] })
      expect(nodeOf(waiting, t as string as NodeId).awaiting).toStrictEqual([person])
      const no = b.review(person, r1, 'reject', 3800, undefined, 'no prices')
      const reopened = expectOrderFree(b, [...events, c, r1, ...yes, no])
      expect(taskOf(reopened, t)).toMatchObject({ status: 'ready', failures: 1, awaiting: [] })
      expect(taskOf(reopened, t).results[0]?.review).toBe('rejected')
      const redo = b.claim(e1, t, 3900, { prev: r1.id })
      const r2 = b.result(redo, 4200, 'flights: NRT, 84,000 yen')
      const done = expectOrderFree(b, [
        ...events,
        c,
        r1,
        ...yes,
        no,
        redo,
        r2,
        b.review(s0, r2, 'accept', 4300),
        b.review(person, r2, 'accept', 4400)
      ])
      expect(taskOf(done, t)).toMatchObject({ status: 'done', accepted: r2.id, failures: 1, awaiting: [] })
      expect(taskOf(done, t).results.map(x => x.review)).toStrictEqual(['rejected', 'accepted'])
    }
  })

  it('before the accepts are in, the task waits for every member who has not reviewed', () => {
    const { b, t, events } = reviewed('results')
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    expect(taskOf(treeOf(b, [...events, c, r]), t).awaiting).toStrictEqual([s0, s1, person])
    expect(taskOf(treeOf(b, [...events, c, r, b.review(person, r, 'accept', 3600)]), t).awaiting).toStrictEqual([
      s0,
      s1
    ])
  })

  it('once accepted, a later reject changes nothing (final on arrival)', () => {
    const { b, t, events } = reviewed('results')
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const yes = [b.review(s0, r, 'accept', 3600), b.review(person, r, 'accept', 3700)]
    const done = taskOf(treeOf(b, [...events, c, r, ...yes]), t)
    expect(done).toMatchObject({ status: 'done', accepted: r.id })
    // (The approver's own second review would be equivocation, which voids both: see "Equivocation beats finality".)
    const tree = expectOrderFree(b, [...events, c, r, ...yes, b.review(s1, r, 'reject', 3800)])
    expect(taskOf(tree, t)).toMatchObject({ status: 'done', accepted: r.id, finishEvent: (yes[1] as PlanEvent).id })
  })
})

describe('what is refused, and changes nothing', () => {
  it('a ballot by someone not in the committee is refused (not-in-committee)', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const f = foldAll([b.goal, p])
    const before = f.treeHash(b.plan)
    expect(f.add(b.ballot(stranger, root(b), p, 2100), NO_CLOCK)).toMatchObject({
      status: 'rejected',
      reason: 'not-in-committee'
    })
    expect(f.treeHash(b.plan)).toBe(before)
  })

  it('a review by someone not in the committee is refused', () => {
    const b = plan('results')
    const s = split(b, { node: b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    const c = b.claim(e0, leafTask(child(s, 0)), 3000)
    const r = b.result(c, 3500)
    const f = foldAll([b.goal, ...s.events, c, r])
    expect(f.add(b.review(stranger, r, 'accept', 3600), NO_CLOCK)).toMatchObject({
      status: 'rejected',
      reason: 'not-in-committee'
    })
  })

  it('a ballot for a finished plan is folded but changes no outcome: the split, the status and the deliverable stay', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, person], { quorum: 2, maxDepth: 1 })
    const s = split(b, { node: b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    const work = s.children.flatMap((n, i) => {
      const c = b.claim(e0, leafTask(n), 2400 + i)
      return [c, b.result(c, 2500 + i)]
    })
    const roll = b.claim(e1, rollupId(b.root), 2600)
    const events = [...s.events, ...work, roll, b.result(roll, 2700, 'done')]
    const done = treeOf(b, events)
    expect(done.status).toBe('completed')
    const late = treeOf(b, [...events, b.ballot(person, root(b), null, 2800, { notes: 'too late' })])
    expect([late.status, rootOf(late).accepted, late.deliverable]).toStrictEqual([
      done.status,
      rootOf(done).accepted,
      done.deliverable
    ])
    expect(hashOf(b, events)).not.toBe(hashOf(b, [...events, b.ballot(person, root(b), null, 2800)]))
  })

  it('a second ballot by the approver under one committee equivocates: neither counts, the proof is recorded', () => {
    const b = plan('splits')
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const quorum = [b.ballot(s0, root(b), p, 2100), b.ballot(s1, root(b), p, 2200)]
    const tree = expectOrderFree(b, [
      p,
      ...quorum,
      b.ballot(person, root(b), p, 2300),
      b.ballot(person, root(b), null, 2310)
    ])
    expect(rootOf(tree)).toMatchObject({ kind: 'decomposing', accepted: null })
    expect(tree.equivocations.map(e => e.author)).toStrictEqual([person])
  })

  it("a forged ballot (another author's name on it) is not the person's: the wire refuses its signature", async () => {
    const { decodeEvent, signRawSync, encodeEnvelope } = await import('../../src/wire/index.js')
    const { testKeys, peerIdOf } = await import('../helpers/arbitraries.js')
    const [mine, theirs] = await testKeys(2)
    if (mine === undefined || theirs === undefined) throw new Error('no keys')
    const b = new PlanBuilder(peerIdOf(mine), [peerIdOf(mine), peerIdOf(theirs)], {
      approvers: { ids: [peerIdOf(theirs)].sort(), for: 'splits' }
    })
    const p = b.propose(peerIdOf(mine), b.root, 1, subgoals(['a', 'b']), 2000)
    const ballot = forge(b, 'ballot-cast', peerIdOf(theirs), 2100, [p.id], {
      node: b.root,
      attempt: 1,
      committee: b.goal.id,
      scores: [{ proposal: p.id, score: 100, notes: '' }],
      choice: p.id,
      notes: '',
      usage: { inputTokens: 0, outputTokens: 0 }
    })
    const d = decodeEvent(signRawSync('test', encodeEnvelope(ballot.env), mine), { swarm: 'test' })
    expect(d.kind === 'rejected' ? d.reason : d.kind).toBe('bad-signature')
  })
})
