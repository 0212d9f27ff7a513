/**
 * Fold rules: derived child ids, one slot per author (proposals, ballots) and
 * acceptance by a committee quorum (final at the deciding ballot; failed
 * attempts; exhausted attempts; silent members; committee amendments).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { childId, rollupId } from '../../src/core/derive.js'
import { view } from '../../src/core/view.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import {
  expectOrderFree,
  hlc,
  leafTask,
  makeCast,
  nodeOf,
  rootOf,
  split,
  taskOf,
  treeOf
} from '../helpers/fold-fixtures.js'
import { shuffle } from '../helpers/random.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanParams } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
let s0: PeerIdString, s1: PeerIdString, s2: PeerIdString, s3: PeerIdString, s4: PeerIdString
let d0: PeerIdString, d1: PeerIdString, d2: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[s0, s1, s2, s3, s4] = cast.scorers
  ;[d0, d1, d2] = cast.decomposers
})

/** A plan with a committee of three (quorum 2). */
function plan3(params: Partial<PlanParams> = {}): PlanBuilder {
  return new PlanBuilder(cast.author, [s0, s1, s2], params)
}

const rootSlot = (b: PlanBuilder, attempt = 1): { node: typeof b.root; attempt: number } => ({ node: b.root, attempt })

describe('child ids are derived', () => {
  it('children are hash(parent, proposal, index), the same on every replica whatever the arrival order', () => {
    const b = plan3()
    const s = split(b, { node: b.root, by: d0, titles: ['fly', 'stay', 'eat'], voters: [s0, s1], at: 2000 })
    const tree = expectOrderFree(b, s.events, 6)
    const root = rootOf(tree)
    expect(root.children).toEqual([0, 1, 2].map(i => childId(b.root, s.proposal.id, i)))
    expect(tree.nodes.map(n => n.title)).toEqual(['plan a two-week trip to Japan', 'fly', 'stay', 'eat'])
    expect(tree.nodes.slice(1).map(n => ({ parent: n.parent, index: n.index, depth: n.depth }))).toEqual(
      [0, 1, 2].map(i => ({ parent: b.root, index: i, depth: 1 }))
    )
    // A leaf's task is the node itself; a composite's task is its roll-up.
    expect(root.task).toBe(rollupId(b.root))
    for (const c of root.children) expect(nodeOf(tree, c).task).toBe(leafTask(c))
  })

  it('a different accepted proposal (or parent, or index) gives different ids', () => {
    const b = plan3()
    const p = split(b, { node: b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    const q = split(b, { node: b.root, by: d1, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    expect(rootOf(treeOf(b, p.events)).children).not.toEqual(rootOf(treeOf(b, q.events)).children)
    const ids = new Set([
      childId(b.root, p.proposal.id, 0),
      childId(b.root, p.proposal.id, 1),
      childId(b.root, q.proposal.id, 0),
      rollupId(b.root)
    ])
    expect(ids.size).toBe(4)
  })
})

describe('one slot per author: proposals', () => {
  it('two proposals by one decomposer for one node and attempt are equivocation: recorded, and neither can win', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const p2 = b.propose(d0, b.root, 1, subgoals(['c', 'd']), 2001)
    const votes = [
      b.ballot(s0, rootSlot(b), p, 2100),
      b.ballot(s1, rootSlot(b), p, 2200),
      b.ballot(s2, rootSlot(b), p2, 2300)
    ]
    const tree = expectOrderFree(b, [p, p2, ...votes])
    const root = rootOf(tree)
    expect(root.kind).toBe('decomposing')
    expect(root.accepted).toBeNull()
    expect(tree.equivocations).toEqual([
      { author: d0, slot: `proposal:${b.root}#1:${d0}`, events: [p.id, p2.id].sort() }
    ])
    expect(root.attempts[0]?.proposals.map(x => x.equivocated)).toEqual([true, true])
    // Every member cast a ballot and nothing won: the attempt fails.
    expect(root.attempts[0]?.outcome).toBe('failed')
  })

  it("a won split is unseated when its author's second proposal for the slot arrives (neither counts)", () => {
    // Design note: "final the moment the deciding ballot arrives" cannot hold against an
    // equivocating decomposer; the fold keeps "neither counts", which is a function of the set.
    const b = plan3()
    const s = split(b, { node: b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    expect(rootOf(treeOf(b, s.events)).accepted).toBe(s.proposal.id)
    const p2 = b.propose(d0, b.root, 1, subgoals(['c', 'd']), 2500)
    const root = rootOf(treeOf(b, [...s.events, p2]))
    expect(root.accepted).toBeNull()
    expect(root.children).toEqual([])
  })

  it.each([
    { name: 'the same event delivered twice', other: 'same' },
    { name: 'a proposal for another attempt', other: 'attempt' },
    { name: 'a proposal for another node', other: 'node' }
  ])('$name is not equivocation', ({ other }) => {
    const b = plan3()
    const s = split(b, { node: b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000, leaf: false })
    const extra =
      other === 'same'
        ? s.proposal
        : other === 'attempt'
          ? b.propose(d0, b.root, 2, subgoals(['c', 'd']), 2500)
          : b.propose(d0, s.children[0] as typeof b.root, 1, subgoals(['c', 'd']), 2500)
    const tree = treeOf(b, [...s.events, extra])
    expect(tree.equivocations).toEqual([])
    expect(rootOf(tree).accepted).toBe(s.proposal.id)
  })
})

describe('one slot per author: ballots', () => {
  it('two ballots by one scorer under one committee event are equivocation: recorded, and neither counts', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
    const e1 = b.ballot(s0, rootSlot(b), p, 2100, { judged: [p, q] })
    const e2 = b.ballot(s0, rootSlot(b), q, 2150, { judged: [p, q] })
    const v1 = b.ballot(s1, rootSlot(b), p, 2200, { judged: [p, q] })
    const tree = expectOrderFree(b, [p, q, e1, e2, v1])
    const root = rootOf(tree)
    // s0 + s1 chose p: a quorum, were s0's ballot to count.
    expect(root.kind).toBe('decomposing')
    expect(root.attempts[0]?.proposals.map(x => ({ id: x.id, votes: x.votes }))).toEqual(
      expect.arrayContaining([
        { id: p.id, votes: 1 },
        { id: q.id, votes: 0 }
      ])
    )
    expect(tree.equivocations).toEqual([
      { author: s0, slot: `ballot:${b.root}#1:${s0}@${b.goal.id}`, events: [e1.id, e2.id].sort() }
    ])
    expect(
      root.attempts[0]?.ballots
        .filter(x => x.equivocated)
        .map(x => x.id)
        .sort()
    ).toEqual([e1.id, e2.id].sort())
    // The equivocating member has cast: it is not waited for.
    expect(root.attempts[0]?.waitingFor).toEqual([s2])

    const v2 = b.ballot(s2, rootSlot(b), p, 2300, { judged: [p, q] })
    const won = rootOf(treeOf(b, [p, q, e1, e2, v1, v2]))
    expect(won.accepted).toBe(p.id)
    expect(won.attempts[0]?.decidedBy).toBe(v2.id)
  })

  it('with an equivocating member, the others splitting their votes fail the attempt', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
    const events = [
      p,
      q,
      b.ballot(s0, rootSlot(b), p, 2100),
      b.ballot(s0, rootSlot(b), q, 2110),
      b.ballot(s1, rootSlot(b), p, 2200),
      b.ballot(s2, rootSlot(b), q, 2300)
    ]
    const root = rootOf(expectOrderFree(b, events))
    expect(root.attempts.map(a => a.outcome)).toEqual(['failed', 'open'])
  })
})

describe('acceptance: a proposal wins (node, attempt) with a quorum of the committee', () => {
  it('wins at the quorum-th ballot, which is recorded as deciding', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2010)
    const first = b.ballot(s0, rootSlot(b), p, 2100, { judged: [p, q] })
    const oneVote = rootOf(treeOf(b, [p, q, first]))
    expect(oneVote.kind).toBe('decomposing')
    expect(oneVote.attempts[0]?.outcome).toBe('open')
    const deciding = b.ballot(s1, rootSlot(b), p, 2200, { judged: [p, q] })
    const tree = expectOrderFree(b, [p, q, first, deciding])
    const root = rootOf(tree)
    expect(root.kind).toBe('composite')
    expect(root.accepted).toBe(p.id)
    expect(root.attempts).toHaveLength(1)
    expect(root.attempts[0]).toMatchObject({
      attempt: 1,
      outcome: 'won',
      winner: p.id,
      decidedBy: deciding.id,
      waitingFor: []
    })
    expect(root.children).toEqual([childId(b.root, p.id, 0), childId(b.root, p.id, 1)])
    // The children cite the split that made them, and are claimable from the deciding ballot on.
    expect(nodeOf(tree, root.children[0] as typeof b.root).evidence).toEqual([p.id, first.id, deciding.id].sort())
    expect(taskOf(tree, root.children[0] as typeof b.root).readyAt).toEqual(deciding.env.hlc)
  })

  it('the deciding ballot is the quorum-th in (hlc, author, id) order, not in arrival order', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const late = b.ballot(s0, rootSlot(b), p, 2300)
    const early = b.ballot(s1, rootSlot(b), p, 2100)
    const tie = b.ballot(s2, rootSlot(b), p, 2300)
    // s0 < s2 in peer-id order: at the same stamp, s0's ballot comes first.
    const f = new Fold()
    for (const e of [b.goal, tie, late, early, p]) f.add(e, NO_CLOCK)
    expect(rootOf(f.tree(b.plan) as PlanTree).attempts[0]?.decidedBy).toBe(late.id)
    expectOrderFree(b, [p, late, early, tie])
  })

  it.each([
    { name: "the last member's ballot for another proposal", extra: 'other-ballot' },
    { name: "the last member's ballot for the winner", extra: 'same-ballot' },
    { name: 'a later proposal by another decomposer', extra: 'proposal' },
    { name: 'ballots for a later attempt', extra: 'attempt-2' },
    { name: 'a committee amendment and a quorum under it for another proposal, decided later', extra: 'amend' }
  ])('final at once: $name never changes the winner', ({ extra }) => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2010)
    const base = [
      p,
      q,
      b.ballot(s0, rootSlot(b), p, 2100, { judged: [p, q] }),
      b.ballot(s1, rootSlot(b), p, 2200, { judged: [p, q] })
    ]
    const before = rootOf(treeOf(b, base))
    let more: PlanEvent[] = []
    if (extra === 'other-ballot') more = [b.ballot(s2, rootSlot(b), q, 2300, { judged: [p, q] })]
    if (extra === 'same-ballot') more = [b.ballot(s2, rootSlot(b), p, 2300, { judged: [p, q] })]
    if (extra === 'proposal') more = [b.propose(d2, b.root, 1, subgoals(['e', 'f']), 2400)]
    if (extra === 'attempt-2') {
      const p2 = b.propose(d2, b.root, 2, subgoals(['e', 'f']), 2400)
      more = [p2, b.ballot(s0, rootSlot(b, 2), p2, 2500), b.ballot(s1, rootSlot(b, 2), p2, 2600)]
    }
    if (extra === 'amend') {
      const a = b.amend([s2, s3, s4], 2250)
      more = [
        a,
        b.ballot(s3, rootSlot(b), q, 2300, { committee: a.id }),
        b.ballot(s4, rootSlot(b), q, 2400, { committee: a.id })
      ]
    }
    const after = rootOf(expectOrderFree(b, [...base, ...more]))
    expect(after.accepted).toBe(p.id)
    expect(after.attempts[0]?.decidedBy).toBe(before.attempts[0]?.decidedBy)
    expect(after.children).toEqual(before.children)
  })

  it('a split vote 1-1-1 fails the attempt once all have cast; the node shows attempt 2 open', () => {
    const b = plan3()
    const [p, q, r] = [d0, d1, d2].map((d, i) => b.propose(d, b.root, 1, subgoals([`a${i}`, `b${i}`]), 2000 + i))
    const all = [p, q, r] as Array<PlanEvent<'split-proposed'>>
    const votes = [s0, s1, s2].map((s, i) =>
      b.ballot(s, rootSlot(b), all[i] as PlanEvent<'split-proposed'>, 2100 + 100 * i, { judged: all })
    )
    const twoCast = rootOf(treeOf(b, [...all, ...votes.slice(0, 2)]))
    expect(twoCast.attempts.map(a => a.outcome)).toEqual(['open'])
    const tree = expectOrderFree(b, [...all, ...votes])
    const root = rootOf(tree)
    expect(root.kind).toBe('decomposing')
    expect(root.attempts.map(a => ({ attempt: a.attempt, outcome: a.outcome }))).toEqual([
      { attempt: 1, outcome: 'failed' },
      { attempt: 2, outcome: 'open' }
    ])
    expect(root.attempts[0]?.proposals.map(x => x.votes)).toEqual([1, 1, 1])
    expect(root.waiting).toBe('attempt 2: waiting for proposals from decomposers')
    expect(view(tree, 0).openAttempts.map(o => ({ node: o.node.id, attempt: o.attempt }))).toEqual([
      { node: b.root, attempt: 2 }
    ])
  })

  it('a ballot for none counts as cast: the attempt fails when all have cast without a quorum', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const events = [
      p,
      b.ballot(s0, rootSlot(b), p, 2100),
      b.ballot(s1, rootSlot(b), null, 2200, { judged: [p] }),
      b.ballot(s2, rootSlot(b), null, 2300, { judged: [p] })
    ]
    expect(rootOf(treeOf(b, events)).attempts.map(a => a.outcome)).toEqual(['failed', 'open'])
  })

  it('attempt 2 proposals win after attempt 1 failed', () => {
    const b = plan3()
    const [p, q, r] = [d0, d1, d2].map((d, i) => b.propose(d, b.root, 1, subgoals([`a${i}`, `b${i}`]), 2000 + i))
    const all = [p, q, r] as Array<PlanEvent<'split-proposed'>>
    const failed = [
      ...all,
      ...[s0, s1, s2].map((s, i) =>
        b.ballot(s, rootSlot(b), all[i] as PlanEvent<'split-proposed'>, 2100 + 100 * i, { judged: all })
      )
    ]
    const s = split(b, { node: b.root, by: d1, titles: ['x', 'y', 'z'], voters: [s2, s0], at: 3000, attempt: 2 })
    const tree = expectOrderFree(b, [...failed, ...s.events])
    const root = rootOf(tree)
    expect(root.kind).toBe('composite')
    expect(root.accepted).toBe(s.proposal.id)
    expect(root.attempts.map(a => a.outcome)).toEqual(['failed', 'won'])
    expect(root.children).toEqual(s.children)
    expect(tree.nodes.slice(1).map(n => n.title)).toEqual(['x', 'y', 'z'])
  })

  it('attempts exhausted: the node is executed as a leaf, and the tree says so', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxAttempts: 2 })
    const events: PlanEvent[] = []
    for (const attempt of [1, 2]) {
      const ps = [d0, d1, d2].map((d, i) =>
        b.propose(d, b.root, attempt, subgoals([`a${i}`, `b${i}`]), 1000 * attempt + 1000 + i)
      )
      events.push(...ps)
      events.push(
        ...[s0, s1, s2].map((s, i) =>
          b.ballot(s, rootSlot(b, attempt), ps[i] as PlanEvent<'split-proposed'>, 1000 * attempt + 1100 + 100 * i, {
            judged: ps
          })
        )
      )
    }
    const lastBallot = events[events.length - 1] as PlanEvent
    const tree = expectOrderFree(b, events)
    const root = rootOf(tree)
    expect(root.kind).toBe('leaf')
    expect(root.leafReason).toBe('attempts-exhausted')
    expect(root.attempts.map(a => a.outcome)).toEqual(['failed', 'failed'])
    expect(root.task).toBe(leafTask(b.root))
    expect(root.status).toBe('ready')
    expect(root.waiting).toBe('ready: waiting for an executor to claim it')
    const t = taskOf(tree, b.root)
    expect(t.kind).toBe('leaf')
    expect(t.readyAt).toEqual(lastBallot.env.hlc)
    expect(t.evidence).toEqual(
      events
        .slice(-3)
        .map(e => e.id)
        .sort()
    )
    expect(view(tree, 0).openAttempts).toEqual([])
    // Executed as a leaf: its result is the plan's deliverable.
    const c = b.claim(cast.executors[0], leafTask(b.root), 4000)
    const done = treeOf(b, [...events, c, b.result(c, 4500, 'the whole trip')])
    expect(done.status).toBe('completed')
    expect(done.deliverable?.output).toBe('the whole trip')
  })

  it.each([
    { name: 'one member silent', cast: 2, waitingIdx: [2], words: '1 of 3' },
    { name: 'two members silent', cast: 1, waitingIdx: [1, 2], words: '2 of 3' }
  ])('silent members leave the node waiting, visibly: $name', ({ cast: n, waitingIdx, words }) => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
    const choices = [p, q]
    const votes = [s0, s1]
      .slice(0, n)
      .map((s, i) => b.ballot(s, rootSlot(b), choices[i] as PlanEvent<'split-proposed'>, 2100 + i, { judged: choices }))
    const tree = treeOf(b, [p, q, ...votes])
    const root = rootOf(tree)
    const silent = waitingIdx.map(i => [s0, s1, s2][i] as PeerIdString)
    expect(root.kind).toBe('decomposing')
    expect(root.attempts[0]?.outcome).toBe('open')
    expect(root.attempts[0]?.waitingFor).toEqual(silent)
    expect(root.waiting).toContain(words)
    expect(root.waiting).toContain('quorum 2')
    for (const m of silent) expect(root.waiting).toContain(m)
    expect(view(tree, 0).waiting).toContainEqual({ node: b.root, title: tree.goal, reason: root.waiting })
  })

  it('with no proposals yet, the node waits for decomposers', () => {
    const tree = treeOf(plan3(), [])
    expect(rootOf(tree).waiting).toBe('attempt 1: waiting for proposals from decomposers')
    expect(rootOf(tree).status).toBe('decomposing')
  })
})

describe('acceptance: committee amendments', () => {
  it('ballots under an amendment count with its own quorum', () => {
    const b = plan3()
    const a = b.amend([s0, s1, s3, s4], 1500, 3)
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const under = (s: PeerIdString, at: number): PlanEvent<'ballot-cast'> =>
      b.ballot(s, rootSlot(b), p, at, { committee: a.id })
    const two = rootOf(treeOf(b, [a, p, under(s0, 2100), under(s1, 2200)]))
    expect(two.kind).toBe('decomposing')
    expect(two.attempts[0]?.waitingFor).toEqual([s3, s4])
    expect(two.waiting).toContain('2 of 4')
    expect(two.waiting).toContain('quorum 3')
    const third = under(s3, 2300)
    const tree = expectOrderFree(b, [a, p, under(s0, 2100), under(s1, 2200), third])
    expect(rootOf(tree).accepted).toBe(p.id)
    expect(rootOf(tree).attempts[0]?.decidedBy).toBe(third.id)
    expect(tree.committees.map(c => ({ event: c.event, quorum: c.quorum }))).toEqual([
      { event: b.goal.id, quorum: 2 },
      { event: a.id, quorum: 3 }
    ])
  })

  it('a win needs a quorum under one committee event: one ballot under each does not win', () => {
    const b = plan3()
    const a = b.amend([s0, s1, s2], 1500)
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const events = [a, p, b.ballot(s0, rootSlot(b), p, 2100), b.ballot(s1, rootSlot(b), p, 2200, { committee: a.id })]
    const root = rootOf(treeOf(b, events))
    expect(root.kind).toBe('decomposing')
    expect(root.attempts[0]?.proposals[0]?.votes).toBe(1)
    // One scorer may vote once under each committee event: not equivocation.
    expect(treeOf(b, [...events, b.ballot(s1, rootSlot(b), p, 2300)]).equivocations).toEqual([])
    expect(rootOf(treeOf(b, [...events, b.ballot(s1, rootSlot(b), p, 2300)])).accepted).toBe(p.id)
  })

  it('a node left waiting by a silent member goes on once the author amends the committee', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
    const stuck = [
      p,
      q,
      b.ballot(s0, rootSlot(b), p, 2100, { judged: [p, q] }),
      b.ballot(s1, rootSlot(b), q, 2200, { judged: [p, q] })
    ]
    expect(rootOf(treeOf(b, stuck)).attempts[0]?.waitingFor).toEqual([s2])
    const a = b.amend([s0, s1], 3000)
    // Under the two-member committee, the waiting list names only its members.
    expect(rootOf(treeOf(b, [...stuck, a])).attempts[0]?.waitingFor).toEqual([s0, s1])
    const agree = [
      b.ballot(s0, rootSlot(b), p, 3100, { committee: a.id, judged: [p, q] }),
      b.ballot(s1, rootSlot(b), p, 3200, { committee: a.id, judged: [p, q] })
    ]
    expect(rootOf(expectOrderFree(b, [...stuck, a, ...agree])).accepted).toBe(p.id)
    const disagree = [
      b.ballot(s0, rootSlot(b), p, 3100, { committee: a.id, judged: [p, q] }),
      b.ballot(s1, rootSlot(b), q, 3200, { committee: a.id, judged: [p, q] })
    ]
    expect(rootOf(treeOf(b, [...stuck, a, ...disagree])).attempts.map(x => x.outcome)).toEqual(['failed', 'open'])
  })

  it.each([
    { name: 'the goal committee decides first', goalAt: 2200, amendAt: 2300, winner: 'p' },
    { name: 'the amendment decides first', goalAt: 2300, amendAt: 2200, winner: 'q' }
  ])(
    'if an amendment lets two proposals win, the earlier deciding ballot wins: $name',
    ({ goalAt, amendAt, winner }) => {
      const b = plan3()
      const a = b.amend([s2, s3, s4], 1500)
      const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
      const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
      const events = [
        a,
        p,
        q,
        b.ballot(s0, rootSlot(b), p, 2100),
        b.ballot(s1, rootSlot(b), p, goalAt),
        b.ballot(s3, rootSlot(b), q, 2100, { committee: a.id }),
        b.ballot(s4, rootSlot(b), q, amendAt, { committee: a.id })
      ]
      const root = rootOf(expectOrderFree(b, events))
      expect(root.accepted).toBe(winner === 'p' ? p.id : q.id)
    }
  )

  it('a scorer outside the committee never counts: its ballot is refused and the tree is unchanged', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const inside = b.ballot(s0, rootSlot(b), p, 2100)
    const f = foldAll([b.goal, p, inside])
    const before = f.treeHash(b.plan)
    for (const [i, out] of [cast.outsiders[0], s3].entries()) {
      expect(f.add(b.ballot(out, rootSlot(b), p, 2200 + i), NO_CLOCK)).toMatchObject({
        status: 'rejected',
        reason: 'not-in-committee'
      })
    }
    expect(f.treeHash(b.plan)).toBe(before)
    expect(rootOf(f.tree(b.plan) as PlanTree).kind).toBe('decomposing')
  })

  it('arrival order never changes which proposal wins (shuffled competing quorums)', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2, s3, s4])
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), 2000)
    const events = [
      p,
      q,
      ...[s0, s1, s2, s3, s4].map((s, i) =>
        b.ballot(s, rootSlot(b), i % 2 === 0 ? p : q, 2100 + ((i * 37) % 5) * 10, { judged: [p, q] })
      )
    ]
    const want = rootOf(treeOf(b, events)).accepted
    expect(want).toBe(p.id)
    for (let seed = 1; seed <= 5; seed++) {
      const f = new Fold()
      for (const e of shuffle([b.goal, ...events], seed)) f.add(e, NO_CLOCK)
      expect(rootOf(f.tree(b.plan) as PlanTree).accepted).toBe(want)
    }
  })

  it('a proposal stamped at the same time as another: both compete, only votes decide', () => {
    const b = plan3()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), hlc(2000))
    const q = b.propose(d1, b.root, 1, subgoals(['c', 'd']), hlc(2000))
    const events = [
      p,
      q,
      b.ballot(s0, rootSlot(b), q, 2100, { judged: [p, q] }),
      b.ballot(s2, rootSlot(b), q, 2200, { judged: [p, q] })
    ]
    expect(rootOf(treeOf(b, events)).accepted).toBe(q.id)
  })
})
