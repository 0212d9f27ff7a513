/**
 * Fold rules: budget (spent = sum of capped usage; budget-exhausted; raises
 * resume), cancellation vs completion (whichever is earlier in (hlc, author,
 * id) order wins), and the plan status transitions.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { childId, rollupId } from '../../src/core/derive.js'
import { isFinished, view } from '../../src/core/view.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import { child, expectOrderFree, forge, leafTask, makeCast, split, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanParams, TaskId, Usage } from '../../src/core/events.js'
import type { PlanStatus } from '../../src/core/tree.js'

let cast: Cast
let e0: PeerIdString, e1: PeerIdString
let s0: PeerIdString, s1: PeerIdString, s2: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[e0, e1] = cast.executors
  ;[s0, s1, s2] = cast.scorers
})

const use = (inputTokens: number, outputTokens = 0): Usage => ({ inputTokens, outputTokens })

describe('budget: spent is the sum of reported usage, each event capped at maxTokensPerCall', () => {
  interface Row {
    name: string
    events: (b: PlanBuilder) => PlanEvent[]
    spent: number
  }
  const rows: Row[] = [
    { name: 'nothing reported', events: () => [], spent: 0 },
    {
      name: 'a proposal: input + output',
      events: b => [b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(300, 200))],
      spent: 500
    },
    {
      name: 'a proposal over the cap counts as the cap',
      events: b => [b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(4000, 2000))],
      spent: 1000
    },
    {
      name: 'exactly the cap',
      events: b => [b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(1000))],
      spent: 1000
    },
    {
      name: 'proposals, ballots, failures, results and reviews all count',
      events: b => {
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(100))
        const v1 = b.ballot(s0, { node: b.root, attempt: 1 }, p, 2100, { usage: use(10, 5) })
        const v2 = b.ballot(s1, { node: b.root, attempt: 1 }, p, 2200, { usage: use(5000) })
        const t = leafTask(childId(b.root, p.id, 0))
        const c = b.claim(e0, t, 3000)
        const f = b.fail(c, 3100, use(7))
        const c2 = b.claim(e1, t, 3200)
        const r = b.result(c2, 3300, 'x', use(20, 30))
        const rv = forge(b, 'result-reviewed', s0, 3400, [r.id], {
          task: t,
          result: r.id,
          committee: b.goal.id,
          verdict: 'accept',
          notes: '',
          usage: use(2)
        })
        return [p, v1, v2, c, f, c2, r, rv]
      },
      spent: 100 + 15 + 1000 + 7 + 50 + 2
    },
    {
      name: 'equivocating proposals still cost what they reported',
      events: b => [
        b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(100)),
        b.propose(cast.decomposers[0], b.root, 1, subgoals(['c', 'd']), 2001, [], use(100))
      ],
      spent: 200
    }
  ]
  it.each(rows)('$name -> $spent', ({ events, spent }) => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], {
      maxTokensPerCall: 1000,
      budgetTokens: 1_000_000,
      review: true
    })
    const tree = expectOrderFree(b, events(b))
    expect(tree.spentTokens).toBe(spent)
    expect(tree.budgetTokens).toBe(1_000_000)
  })
})

describe('budget: spent >= budget sets budget-exhausted; budget-raised resumes', () => {
  const plan = (budgetTokens = 1000): PlanBuilder =>
    new PlanBuilder(cast.author, [s0, s1, s2], { budgetTokens, maxTokensPerCall: 800 })
  const spend = (b: PlanBuilder, tokens: number[]): PlanEvent[] =>
    tokens.map((n, i) =>
      b.propose(cast.decomposers[i] as PeerIdString, b.root, 1, subgoals(['a', 'b']), 2000 + i, [], use(n))
    )

  it.each([
    { spent: [999], status: 'planning' },
    { spent: [500, 500], status: 'budget-exhausted' },
    { spent: [800, 201], status: 'budget-exhausted' },
    { spent: [1500], status: 'planning' },
    { spent: [900, 900], status: 'budget-exhausted' }
  ])('spent of $spent (each capped at 800) against 1000 -> $status', ({ spent, status }) => {
    const b = plan()
    const tree = expectOrderFree(b, spend(b, spent))
    expect(tree.status).toBe(status)
  })

  it('budget-exhausted says what was spent; no role is offered new work, and the fold voids nothing', () => {
    const b = plan()
    const events = spend(b, [600, 600])
    const tree = treeOf(b, events)
    expect(tree.status).toBe('budget-exhausted')
    expect(tree.statusReason).toBe('spent 1200 of 1000 tokens; the author can raise the budget')
    expect(isFinished(tree)).toBe(false)
    const v = view(tree, 10_000)
    expect(v.openAttempts).toEqual([])
    expect(v.claimable).toEqual([])
    // Ballots still fold and still decide: the split is accepted, the leaves exist.
    const p = events[0] as PlanEvent<'split-proposed'>
    const more = [
      b.ballot(s0, { node: b.root, attempt: 1 }, p, 2100),
      b.ballot(s1, { node: b.root, attempt: 1 }, p, 2200)
    ]
    const after = treeOf(b, [...events, ...more])
    expect(after.status).toBe('budget-exhausted')
    expect(after.nodes).toHaveLength(3)
    expect(after.tasks.filter(t => t.status === 'ready')).toHaveLength(2)
  })

  it.each([
    { name: 'a raise above spent resumes planning', raises: [5000], status: 'planning', budget: 5000 },
    {
      name: 'a raise below the original budget changes nothing',
      raises: [500],
      status: 'budget-exhausted',
      budget: 1000
    },
    {
      name: 'a raise still below spent keeps the plan exhausted',
      raises: [1100],
      status: 'budget-exhausted',
      budget: 1100
    },
    { name: 'several raises: the largest counts', raises: [3000, 1100], status: 'planning', budget: 3000 }
  ])('$name', ({ raises, status, budget }) => {
    const b = plan()
    const tree = expectOrderFree(b, [...spend(b, [600, 600]), ...raises.map((n, i) => b.raiseBudget(n, 2500 + i))])
    expect(tree.status).toBe(status)
    expect(tree.budgetTokens).toBe(budget)
  })

  it('a raise resumes an executing plan as executing', () => {
    const b = plan()
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    const c = b.claim(e0, leafTask(child(s, 0)), 3000)
    const r = b.result(c, 3500, 'x', use(800, 800))
    const r2 = b.result(c, 3600, 'y', use(300))
    expect(treeOf(b, [...s.events, c, r, r2]).status).toBe('budget-exhausted')
    expect(treeOf(b, [...s.events, c, r, r2, b.raiseBudget(10_000, 4000)]).status).toBe('executing')
  })

  it('completion beats an exhausted budget', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxDepth: 0, budgetTokens: 100 })
    const c = b.claim(e0, b.root as string as TaskId, 2000)
    const tree = treeOf(b, [c, b.result(c, 2500, 'all of it', use(500))])
    expect(tree.spentTokens).toBe(500)
    expect(tree.status).toBe('completed')
  })
})

describe('cancellation vs completion: whichever comes first in (hlc, author, id) order wins', () => {
  /** A plan whose root is a leaf (maxDepth 0): claimed at 2000, result at 3000. */
  const leafRoot = (
    author: PeerIdString,
    params: Partial<PlanParams> = {}
  ): { b: PlanBuilder; events: PlanEvent[]; result: PlanEvent<'result-reported'> } => {
    const b = new PlanBuilder(author, [s0, s1, s2], { maxDepth: 0, ...params })
    const c = b.claim(e0, b.root as string as TaskId, 2000)
    const result = b.result(c, 3000, 'the plan')
    return { b, events: [c, result], result }
  }

  it.each([
    { name: 'cancel before the root result', cancelAt: 2500, status: 'cancelled' },
    { name: 'cancel after the root result', cancelAt: 3500, status: 'completed' },
    { name: 'cancel with no completion', cancelAt: 2500, status: 'cancelled', noResult: true }
  ])('$name -> $status', ({ cancelAt, status, noResult }) => {
    const { b, events } = leafRoot(cast.author)
    const evs = noResult === true ? events.slice(0, 1) : events
    const tree = expectOrderFree(b, [...evs, b.cancel(cancelAt, 'trip called off')])
    expect(tree.status).toBe(status)
    if (status === 'cancelled') expect(tree.statusReason).toBe('cancelled by its author: trip called off')
    expect(isFinished(tree)).toBe(true)
    expect(view(tree, 10_000).claimable).toEqual([])
  })

  it('the earliest of several cancels gives the reason', () => {
    const { b, events } = leafRoot(cast.author)
    const tree = treeOf(b, [...events, b.cancel(2600, 'second'), b.cancel(2500, 'first')])
    expect(tree.statusReason).toBe('cancelled by its author: first')
  })

  it('a tie in hlc, with the canceller after the executor in author order: completion wins', () => {
    // The goal author is the largest peer id of the cast, so it sorts after the executor.
    const { b, events } = leafRoot(cast.outsiders[1])
    expect(treeOf(b, [...events, b.cancel(3000)]).status).toBe('completed')
  })

  // Design: "whichever comes first in order wins", and the order is (hlc, author, id), not
  // hlc alone. Here the goal author sorts before the executor, so the cancel, stamped at the
  // same hlc as the root result, comes first.
  it('a tie in hlc, with the canceller before the executor in author order: cancellation wins', () => {
    const { b, events } = leafRoot(cast.author)
    expect(cast.author < e0).toBe(true)
    expect(treeOf(b, [...events, b.cancel(3000)]).status).toBe('cancelled')
  })

  // If cancellation wins, completion lost: a cancelled plan has no deliverable, although its
  // root has a result (submit --wait, the observer and /plans/<id> must not print one).
  it('a plan cancelled before completion has no deliverable, although the root has a result', () => {
    const { b, events } = leafRoot(cast.author)
    const tree = treeOf(b, [...events, b.cancel(2500)])
    expect(tree.status).toBe('cancelled')
    expect(tree.deliverable).toBeNull()
  })

  it.each([
    { name: 'cancel before the root failed', cancelAt: 2500, status: 'cancelled' },
    { name: 'cancel after the root failed', cancelAt: 3500, status: 'failed' }
  ])('failure counts as the finish too: $name -> $status', ({ cancelAt, status }) => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxDepth: 0, maxAttempts: 1 })
    const c = b.claim(e0, b.root as string as TaskId, 2000)
    expect(treeOf(b, [c, b.fail(c, 3000), b.cancel(cancelAt)]).status).toBe(status)
  })

  it('cancellation beats an exhausted budget', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { budgetTokens: 10 })
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000, [], use(50))
    expect(treeOf(b, [p]).status).toBe('budget-exhausted')
    expect(treeOf(b, [p, b.cancel(2500)]).status).toBe('cancelled')
  })
})

describe('plan status: planning -> executing -> completed / failed', () => {
  it('walks through planning, executing and completed as events arrive', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    const c0 = b.claim(e0, leafTask(child(s, 0)), 3000)
    const r0 = b.result(c0, 3100)
    const c1 = b.claim(e1, leafTask(child(s, 1)), 3000)
    const r1 = b.result(c1, 3200)
    const cr = b.claim(e0, rollupId(b.root), 3300)
    const rr = b.result(cr, 3400, 'deliverable')
    const steps: Array<[PlanEvent[], PlanStatus]> = [
      [[], 'planning'],
      [[s.proposal], 'planning'],
      [s.events as PlanEvent[], 'planning'],
      [[...s.events, c0], 'executing'],
      [[...s.events, c0, r0, c1, r1], 'executing'],
      [[...s.events, c0, r0, c1, r1, cr], 'executing'],
      [[...s.events, c0, r0, c1, r1, cr, rr], 'completed']
    ]
    for (const [events, status] of steps) expect(expectOrderFree(b, events, 1).status).toBe(status)
    expect(treeOf(b, steps[steps.length - 1]?.[0] ?? []).deliverable?.output).toBe('deliverable')
  })

  it('a root leaf that fails maxAttempts times fails the plan', () => {
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxDepth: 0, maxAttempts: 2 })
    const t = b.root as string as TaskId
    const c0 = b.claim(e0, t, 2000)
    const f0 = b.fail(c0, 2100)
    const c1 = b.claim(e1, t, 2200)
    const f1 = b.fail(c1, 2300)
    expect(treeOf(b, [c0, f0]).status).toBe('executing')
    const tree = expectOrderFree(b, [c0, f0, c1, f1])
    expect(tree.status).toBe('failed')
    expect(tree.statusReason).toBe('the root task failed after 2 attempts')
    expect(isFinished(tree)).toBe(true)
  })
})
