/**
 * A person's actions (src/author/person-events.ts): what waits for them
 * (`awaitingMe`), their ballot (`castVote`) and review (`castReview`), and
 * every refusal, with a message that says what to do and nothing published.
 * The view here is a fold with a publish that stamps after the deps, as a
 * replica does; every event it is given must have the wire shape.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { eventVersion } from '../../src/core/events.js'
import { MAX_NOTES_CHARS } from '../../src/core/limits.js'
import { validateEnvelope } from '../../src/wire/shape.js'
import { awaitingMe, castReview, castVote } from '../../src/author/person-events.js'
import { ConfigError } from '../../src/errors.js'
import { PlanBuilder, makeEvent, subgoals } from '../helpers/plan-builder.js'
import { leafTask, makeCast, rootOf, split } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PersonView } from '../../src/author/person-events.js'
import type { Bodies, EventId, EventType, PeerIdString, PlanEvent, PlanId, PlanParams } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
let s0: PeerIdString, s1: PeerIdString, d0: PeerIdString, d1: PeerIdString, e0: PeerIdString
let person: PeerIdString, stranger: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[s0, s1] = cast.scorers
  ;[d0, d1] = cast.decomposers
  ;[e0] = cast.executors
  ;[person, stranger] = cast.outsiders
})

/** A node view of `me` over a fold: publish stamps 1 ms after the latest dep and folds. */
function viewOf(me: PeerIdString, fold: Fold): PersonView & { published: PlanEvent[] } {
  const published: PlanEvent[] = []
  return {
    me,
    published,
    plans: () => fold.plans(),
    tree: plan => fold.tree(plan),
    loadTree: plan => fold.tree(plan),
    event: id => fold.events.get(id),
    reviewsOf: (plan, result) => fold.events.plan(plan)?.reviews.get(result) ?? [],
    publish: async <T extends EventType>(type: T, plan: PlanId | '', cites: readonly EventId[], body: Bodies[T]) => {
      const deps = [...new Set(plan === '' ? cites : [plan as string as EventId, ...cites])]
      const ms = Math.max(0, ...deps.map(d => fold.events.get(d)?.env.hlc.ms ?? 0)) + 1
      const e = makeEvent({
        v: eventVersion(type, body, plan === '' ? undefined : fold.events.get(plan as string as EventId)),
        type,
        plan,
        author: me,
        hlc: { ms, c: 0 },
        deps,
        body
      })
      expect(validateEnvelope(e.env), `${type} by ${me} has the wire shape`).toBeNull()
      const out = fold.add(e, NO_CLOCK)
      if (out.status !== 'folded') throw new Error(`not folded: ${JSON.stringify(out)}`)
      published.push(e)
      return { event: e, bytes: new Uint8Array() }
    }
  }
}

function setup(params: Partial<PlanParams> = {}): {
  b: PlanBuilder
  f: Fold
  me: ReturnType<typeof viewOf>
  tree: () => PlanTree
} {
  const b = new PlanBuilder(cast.author, [s0, s1, person], { quorum: 2, ...params })
  const f = new Fold()
  f.add(b.goal, NO_CLOCK)
  return { b, f, me: viewOf(person, f), tree: () => f.tree(b.plan) as PlanTree }
}

async function refused(p: Promise<unknown>, re: RegExp, view: { published: PlanEvent[] }): Promise<void> {
  const before = view.published.length
  const err = await p.then(
    () => null,
    (e: unknown) => e
  )
  expect(err).toBeInstanceOf(ConfigError)
  expect((err as Error).message).toMatch(re)
  expect(view.published.length, 'nothing published').toBe(before)
}

describe('choosing a split', () => {
  it("awaitingMe shows the open attempt with its proposals, the scorers' scores and notes; castVote decides as an approver", async () => {
    const { b, f, me, tree } = setup({ approvers: { ids: [person], for: 'splits' } })
    const p = b.propose(d0, b.root, 1, subgoals(['book flights', 'book hotels']), 2000)
    const q = b.propose(d1, b.root, 1, subgoals(['Tokyo', 'Kyoto']), 2010)
    for (const e of [
      p,
      q,
      b.ballot(s0, { node: b.root, attempt: 1 }, p, 2100, { judged: [p, q], notes: 'p covers more' }),
      b.ballot(s1, { node: b.root, attempt: 1 }, p, 2200, { judged: [p, q] })
    ])
      f.add(e, NO_CLOCK)
    const [item, ...rest] = awaitingMe(me)
    expect(rest).toStrictEqual([])
    expect(item).toMatchObject({
      plan: b.plan,
      node: b.root,
      ask: 'choose a split',
      attempt: 1,
      approver: true,
      sinceMs: 2000,
      task: null,
      result: null
    })
    expect(item?.proposals.map(x => x.titles)).toStrictEqual([
      ['book flights', 'book hotels'],
      ['Tokyo', 'Kyoto']
    ])
    expect(item?.proposals[0]?.scores).toStrictEqual([
      { scorer: s0, score: 80, notes: 'ok' },
      { scorer: s1, score: 80, notes: 'ok' }
    ])
    expect(item?.notes).toStrictEqual([{ author: s0, notes: 'p covers more' }])
    expect(awaitingMe(viewOf(s0, f))).toStrictEqual([])

    const ballot = await castVote(me, b.plan.slice(0, 10), b.root.slice(0, 10), p.id.slice(0, 8))
    expect(ballot.env.body).toMatchObject({
      choice: p.id,
      scores: [{ proposal: p.id, score: 100, notes: '' }],
      committee: b.goal.id
    })
    expect(ballot.env.v).toBe(2)
    expect(rootOf(tree())).toMatchObject({ kind: 'composite', accepted: p.id })
    expect(awaitingMe(me)).toStrictEqual([])
  })

  it('none with notes closes the attempt; the next attempt awaits the person again', async () => {
    const { b, f, me, tree } = setup({ approvers: { ids: [person], for: 'splits' } })
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    f.add(p, NO_CLOCK)
    await refused(castVote(me, b.plan, b.root, null), /choosing none needs notes/, me)
    const none = await castVote(me, b.plan, b.root, null, '  by week, please  ')
    expect(none.env.body).toMatchObject({ choice: null, scores: [], notes: 'by week, please' })
    expect(rootOf(tree()).attempts.map(a => a.outcome)).toStrictEqual(['failed', 'open'])
    expect(awaitingMe(me)).toStrictEqual([])
    f.add(b.propose(d0, b.root, 2, subgoals(['week 1', 'week 2']), 2500, [none.id]), NO_CLOCK)
    expect(awaitingMe(me).map(i => [i.ask, i.attempt])).toStrictEqual([['choose a split', 2]])
  })

  it('a person in a plain committee (no approvers, v1): one ballot among the others', async () => {
    const { b, f, me, tree } = setup()
    const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
    f.add(p, NO_CLOCK)
    f.add(b.ballot(s0, { node: b.root, attempt: 1 }, p, 2100), NO_CLOCK)
    expect(awaitingMe(me)[0]).toMatchObject({ approver: false, ask: 'choose a split' })
    const ballot = await castVote(me, b.plan, b.root, p.id)
    expect(ballot.env.v).toBe(1)
    // Stamped just after the proposal it cites, so before s0's: s0's completes the quorum.
    expect(rootOf(tree()).attempts[0]).toMatchObject({ outcome: 'won', winner: p.id })
    expect(rootOf(tree()).attempts[0]?.ballots.map(x => x.id)).toContain(ballot.id)
  })

  it(
    'refuses, saying what to do: not in the committee, not waiting, a second ballot, unknown ' +
      'ids, long notes, a finished plan',
    async () => {
      const { b, f, me } = setup()
      const p = b.propose(d0, b.root, 1, subgoals(['a', 'b']), 2000)
      f.add(p, NO_CLOCK)
      const other = viewOf(stranger, f)
      await refused(castVote(other, b.plan, b.root, p.id), /not in the committee of plan .*amend/, other)
      await refused(castVote(me, b.plan, b.root, 'f'.repeat(64)), /no proposal "f{64}" of attempt 1/, me)
      await refused(castVote(me, 'abc', b.root, p.id), /no plan "abc"/, me)
      await refused(castVote(me, b.plan, b.root, p.id, 'x'.repeat(MAX_NOTES_CHARS + 1)), /the most is 4000/, me)
      await castVote(me, b.plan, b.root, p.id)
      await refused(castVote(me, b.plan, b.root, p.id), /already cast a ballot .*equivocation/, me)
      f.add(b.ballot(s0, { node: b.root, attempt: 1 }, p, 2200), NO_CLOCK)
      await refused(
        castVote(viewOf(s1, f), b.plan, b.root, p.id),
        /is not waiting for a ballot: it is (blocked|ready)/,
        viewOf(s1, f)
      )
      f.add(b.cancel(3000), NO_CLOCK)
      await refused(castVote(me, b.plan, b.root, p.id), /is cancelled: there is nothing left to decide/, me)
      expect(awaitingMe(me)).toStrictEqual([])
    }
  )
})

describe('reviewing a result', () => {
  function reviewPlan(): ReturnType<typeof setup> & { t: ReturnType<typeof leafTask> } {
    const s = setup({ review: true, approvers: { ids: [person], for: 'results' } })
    const sp = split(s.b, {
      node: s.b.root,
      by: d0,
      titles: ['book flights', 'book hotels'],
      voters: [s0, s1],
      at: 2000
    })
    for (const e of sp.events) s.f.add(e, NO_CLOCK)
    return { ...s, t: leafTask(sp.children[0] as NonNullable<(typeof sp.children)[0]>) }
  }

  it('awaitingMe shows the result; a reject with notes reopens the task, and the redone result is accepted', async () => {
    const { b, f, me, tree, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r1 = b.result(c, 3500, 'flights: NRT')
    for (const e of [c, r1, b.review(s0, r1, 'accept', 3600), b.review(s1, r1, 'accept', 3700)]) f.add(e, NO_CLOCK)
    expect(awaitingMe(me)).toMatchObject([
      {
        ask: 'review a result',
        task: t,
        approver: true,
        sinceMs: 3500,
        result: { id: r1.id, output: 'flights: NRT', author: e0, source: 'llm' }
      }
    ])
    await refused(castReview(me, b.plan, t, 'reject'), /a reject needs notes/, me)
    const no = await castReview(me, b.plan, t.slice(0, 12), 'reject', 'add the prices')
    expect(no.env.body).toMatchObject({ result: r1.id, verdict: 'reject', notes: 'add the prices' })
    expect(tree().tasks.find(x => x.id === t)).toMatchObject({ status: 'ready', failures: 1 })
    await refused(castReview(me, b.plan, t, 'accept'), /is ready: no result of it waits for review/, me)
    const redo = b.claim(e0, t, 4000, { prev: r1.id, evidence: [no.id] })
    const r2 = b.result(redo, 4200, 'flights: NRT, 84,000 yen')
    for (const e of [redo, r2, b.review(s0, r2, 'accept', 4300)]) f.add(e, NO_CLOCK)
    await castReview(me, b.plan, t, 'accept')
    expect(tree().tasks.find(x => x.id === t)).toMatchObject({ status: 'done', accepted: r2.id })
  })

  it('refuses a second review, a plan without review, and a key outside the committee', async () => {
    const { b, f, me, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    for (const e of [c, r]) f.add(e, NO_CLOCK)
    await castReview(me, b.plan, t, 'accept')
    await refused(castReview(me, b.plan, t, 'accept'), /already reviewed .*equivocation/, me)
    const other = viewOf(stranger, f)
    await refused(castReview(other, b.plan, t, 'accept'), /not in the committee/, other)

    const plain = setup()
    const sp = split(plain.b, { node: plain.b.root, by: d0, titles: ['a', 'b'], voters: [s0, s1], at: 2000 })
    for (const e of sp.events) plain.f.add(e, NO_CLOCK)
    await refused(
      castReview(plain.me, plain.b.plan, leafTask(sp.children[0] as NonNullable<(typeof sp.children)[0]>), 'accept'),
      /does not ask for review/,
      plain.me
    )
  })
})
