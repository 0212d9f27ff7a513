/**
 * view(tree, now): the time questions the fold does not answer. Lease time
 * left, what is claimable now (a lapsed claim only after the skew
 * allowance), who owns what, which attempts are open, and who waits for what.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { rollupId } from '../../src/core/derive.js'
import { isFinished, view } from '../../src/core/view.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import { child, leafTask, makeCast, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
let e0: PeerIdString, e1: PeerIdString
let s0: PeerIdString, s1: PeerIdString, s2: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[e0, e1] = cast.executors
  ;[s0, s1, s2] = cast.scorers
})

/** Root split into two leaves (ready from 2200), the first claimed by e0 at 3000 with a 1000 ms lease. */
function claimed(extra: (b: PlanBuilder, c: PlanEvent<'task-claimed'>) => PlanEvent[] = () => []): {
  b: PlanBuilder
  s: Split
  t: TaskId
  other: TaskId
  tree: PlanTree
} {
  const b = new PlanBuilder(cast.author, [s0, s1, s2], { leaseMs: 1000 })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['book flights', 'book hotels'],
    voters: [s0, s1],
    at: 2000
  })
  const t = leafTask(child(s, 0))
  const c = b.claim(e0, t, 3000)
  return { b, s, t, other: leafTask(child(s, 1)), tree: treeOf(b, [...s.events, c, ...extra(b, c)]) }
}

describe('view: lease time left', () => {
  it.each([
    { now: 3000, left: 1000 },
    { now: 3500, left: 500 },
    { now: 4000, left: 0 },
    { now: 4500, left: -500 }
  ])('at $now the claimed task has $left ms left', ({ now, left }) => {
    const { tree, t } = claimed()
    expect(view(tree, now).leaseLeftMs(taskOf(tree, t))).toBe(left)
  })

  it('renewals extend it', () => {
    const { tree, t } = claimed((b, c) => [b.renew(c, c, 3800)])
    expect(view(tree, 4500).leaseLeftMs(taskOf(tree, t))).toBe(300)
  })

  it('a task nobody holds, or that is done, has no lease', () => {
    const { tree, other } = claimed()
    expect(view(tree, 3500).leaseLeftMs(taskOf(tree, other))).toBeNull()
    const done = claimed((b, c) => [b.result(c, 3500)])
    expect(view(done.tree, 3600).leaseLeftMs(taskOf(done.tree, done.t))).toBeNull()
  })
})

describe('view: claimable', () => {
  it.each([
    { now: 3500, skew: undefined, lapsedClaimable: false },
    { now: 4001, skew: undefined, lapsedClaimable: false },
    { now: 6000, skew: undefined, lapsedClaimable: false },
    { now: 6001, skew: undefined, lapsedClaimable: true },
    { now: 4001, skew: 0, lapsedClaimable: true },
    { now: 4500, skew: 500, lapsedClaimable: false },
    { now: 4501, skew: 500, lapsedClaimable: true }
  ])(
    'at $now (skew allowance $skew): a lapsed claim is claimable: $lapsedClaimable',
    ({ now, skew, lapsedClaimable }) => {
      const { tree, t, other } = claimed()
      const v = view(tree, now, skew)
      expect(v.claimable.map(x => x.id)).toEqual(lapsedClaimable ? [t, other] : [other])
    }
  )

  it('blocked, done and in-review tasks are never claimable', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { review: true })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b', 'c'],
      voters: [s0, s1],
      at: 2000,
      dependsOn: { 2: [0] }
    })
    const c0 = b.claim(e0, leafTask(child(s, 0)), 3000)
    const c1 = b.claim(e1, leafTask(child(s, 1)), 3000)
    const r0 = b.result(c0, 3100)
    const tree = treeOf(b, [
      ...s.events,
      c0,
      r0,
      b.review(s0, r0, 'accept', 3200),
      b.review(s1, r0, 'accept', 3300),
      c1,
      b.result(c1, 3400)
    ])
    expect(tree.tasks.map(x => x.status)).toEqual(['blocked', 'done', 'in-review', 'ready'])
    expect(view(tree, 100_000).claimable.map(x => x.id)).toEqual([leafTask(child(s, 2))])
    expect(view(tree, 100_000).claimable.map(x => x.id)).not.toContain(rollupId(b.root))
  })

  it('a finished or budget-exhausted plan offers nothing', () => {
    const { b, s } = claimed()
    const cancelled = treeOf(b, [...s.events, b.cancel(2500)])
    expect(isFinished(cancelled)).toBe(true)
    expect(view(cancelled, 10_000).claimable).toEqual([])
    const broke = new PlanBuilder(cast.author, [s0, s1, s2], { budgetTokens: 10 })
    const p = broke.propose(cast.decomposers[0], broke.root, 1, subgoals(['a', 'b']), 2000, [], {
      inputTokens: 10,
      outputTokens: 0
    })
    const v = view(treeOf(broke, [p]), 10_000)
    expect(v.tree.status).toBe('budget-exhausted')
    expect(v.claimable).toEqual([])
    expect(v.openAttempts).toEqual([])
  })
})

describe('view: ownedBy', () => {
  it('lists the tasks whose current chain a peer holds, lapsed or not', () => {
    const { tree, t } = claimed()
    expect(
      view(tree, 3500)
        .ownedBy(e0)
        .map(x => x.id)
    ).toEqual([t])
    expect(
      view(tree, 9000)
        .ownedBy(e0)
        .map(x => x.id)
    ).toEqual([t])
    expect(view(tree, 3500).ownedBy(e1)).toEqual([])
  })

  it('a superseded, released or finished chain belongs to nobody', () => {
    const taken = claimed((b, c) => [b.claim(e1, c.env.body.task, 4001, { prev: c.id })])
    expect(view(taken.tree, 4100).ownedBy(e0)).toEqual([])
    expect(
      view(taken.tree, 4100)
        .ownedBy(e1)
        .map(x => x.id)
    ).toEqual([taken.t])
    const released = claimed((b, c) => [b.release(c, 3500)])
    expect(view(released.tree, 3600).ownedBy(e0)).toEqual([])
    const done = claimed((b, c) => [b.result(c, 3500)])
    expect(view(done.tree, 3600).ownedBy(e0)).toEqual([])
  })
})

describe('view: openAttempts and waiting', () => {
  it('a fresh goal: the root is open at attempt 1 and waits for decomposers', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const tree = treeOf(b, [])
    const v = view(tree, 0)
    expect(v.openAttempts.map(o => ({ node: o.node.id, attempt: o.attempt }))).toEqual([{ node: b.root, attempt: 1 }])
    expect(v.waiting).toEqual([
      {
        node: b.root,
        title: 'plan a two-week trip to Japan',
        reason: 'attempt 1: waiting for proposals from decomposers'
      }
    ])
  })

  it('accepted splits open attempt 1 of each unmarked child; leaves wait for executors', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const p = b.propose(
      cast.decomposers[0],
      b.root,
      1,
      [
        { title: 'leaf', detail: '', leaf: true, dependsOn: [] },
        { title: 'inner', detail: '', leaf: false, dependsOn: [] }
      ],
      2000
    )
    const tree = treeOf(b, [
      p,
      b.ballot(s0, { node: b.root, attempt: 1 }, p, 2100),
      b.ballot(s1, { node: b.root, attempt: 1 }, p, 2200)
    ])
    const v = view(tree, 0)
    const [leaf, inner] = tree.nodes.slice(1)
    expect(v.openAttempts.map(o => ({ node: o.node.id, attempt: o.attempt }))).toEqual([
      { node: inner?.id, attempt: 1 }
    ])
    expect(v.waiting).toEqual([
      { node: b.root, title: tree.goal, reason: 'waiting for "leaf", "inner" to finish' },
      { node: leaf?.id, title: 'leaf', reason: 'ready: waiting for an executor to claim it' },
      { node: inner?.id, title: 'inner', reason: 'attempt 1: waiting for proposals from decomposers' }
    ])
  })

  it('a failed attempt opens the next one', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const ps = cast.decomposers.map((d, i) => b.propose(d, b.root, 1, subgoals([`a${i}`, `b${i}`]), 2000 + i))
    const votes = [s0, s1, s2].map((s, i) =>
      b.ballot(s, { node: b.root, attempt: 1 }, ps[i] as PlanEvent<'split-proposed'>, 2100 + i, { judged: ps })
    )
    const v = view(treeOf(b, [...ps, ...votes]), 0)
    expect(v.openAttempts.map(o => o.attempt)).toEqual([2])
  })

  it('task() and node() look up by id', () => {
    const { tree, t, s } = claimed()
    const v = view(tree, 0)
    expect(v.task(t)?.owner).toBe(e0)
    expect(v.node(child(s, 1))?.title).toBe('book hotels')
    expect(v.task('0'.repeat(64) as TaskId)).toBeUndefined()
    expect(v.nowMs).toBe(0)
    expect(v.tree).toBe(tree)
  })
})

describe('view: isFinished', () => {
  it.each([
    ['planning', false],
    ['executing', false],
    ['budget-exhausted', false],
    ['completed', true],
    ['failed', true],
    ['cancelled', true]
  ] as const)('%s -> %s', (status, finished) => {
    const { tree } = claimed()
    expect(isFinished({ ...tree, status })).toBe(finished)
  })
})
