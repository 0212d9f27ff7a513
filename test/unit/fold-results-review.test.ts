/**
 * Fold rules: results (earliest wins, the rest are duplicates; failures use
 * attempts; retries add attempts) and review (a committee quorum accepts or
 * rejects; a rejected task reopens after the rejection; in-review status).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { rollupId } from '../../src/core/derive.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, expectOrderFree, leafTask, makeCast, nodeOf, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'
import type { PlanTree, TaskView } from '../../src/core/tree.js'

let cast: Cast
let e0: PeerIdString, e1: PeerIdString, e2: PeerIdString
let s0: PeerIdString, s1: PeerIdString, s2: PeerIdString, s3: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[e0, e1, e2] = cast.executors
  ;[s0, s1, s2, s3] = cast.scorers
})

/** Root split into two leaves, ready from 2200; lease 1000 ms. */
function leafPlan(params: Partial<PlanParams> = {}): { b: PlanBuilder; s: Split; t: TaskId } {
  const b = new PlanBuilder(cast.author, [s0, s1, s2], { leaseMs: 1000, ...params })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['book flights', 'book hotels'],
    voters: [s0, s1],
    at: 2000
  })
  return { b, s, t: leafTask(child(s, 0)) }
}

function task(b: PlanBuilder, s: Split, t: TaskId, events: readonly PlanEvent[]): { tree: PlanTree; task: TaskView } {
  const tree = expectOrderFree(b, [...s.events, ...events])
  return { tree, task: taskOf(tree, t) }
}

describe('results: the earliest result is accepted, later ones are duplicates', () => {
  it('one result: the task is done, and shows its result', () => {
    const { b, s, t } = leafPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500, 'flights: NRT, 14 days')
    const { tree, task: v } = task(b, s, t, [c, r])
    expect(v).toMatchObject({
      status: 'done',
      owner: null,
      accepted: r.id,
      duplicates: 0,
      finishedAt: r.env.hlc,
      finishEvent: r.id
    })
    expect(v.chains.map(x => x.end)).toEqual([{ kind: 'result', event: r.id }])
    expect(v.results).toEqual([
      {
        id: r.id,
        author: e0,
        claim: c.id,
        at: r.env.hlc,
        output: 'flights: NRT, 14 days',
        model: 'fake',
        source: 'llm',
        toolCalls: [],
        accepted: true,
        review: 'none'
      }
    ])
    expect(nodeOf(tree, t as string as typeof b.root)).toMatchObject({ status: 'done', waiting: null })
  })

  interface Row {
    name: string
    events: (b: PlanBuilder, t: TaskId) => { events: PlanEvent[]; accepted: PlanEvent; finished?: PlanEvent }
    duplicates: number
  }
  const rows: Row[] = [
    {
      name: 'a second result for the same claim is a duplicate',
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const r = b.result(c, 3500)
        return { events: [c, r, b.result(c, 3600, 'again')], accepted: r }
      },
      duplicates: 1
    },
    {
      name: "a result from a claim that lost the race is accepted when it is the earliest; the owner's later result is the duplicate",
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const lost = b.claim(e1, t, 3100)
        const racer = b.result(lost, 3400, 'racer')
        return { events: [c, lost, racer, b.result(c, 3500)], accepted: racer }
      },
      duplicates: 1
    },
    {
      name: "a result from a claim that lost the race is a duplicate when the owner's result is earlier",
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const lost = b.claim(e1, t, 3100)
        const r = b.result(c, 3400)
        return { events: [c, lost, b.result(lost, 3500, 'racer'), r], accepted: r }
      },
      duplicates: 1
    },
    {
      name: 'a result from a claim stamped after the task was done is a duplicate',
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const r = b.result(c, 3500)
        const late = b.claim(e1, t, 3600)
        return { events: [c, r, late, b.result(late, 3700)], accepted: r }
      },
      duplicates: 1
    },
    {
      name: "a superseded owner's result still counts when it is the earliest",
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const taker = b.claim(e1, t, 4001, { prev: c.id })
        const old = b.result(c, 4100, 'old owner')
        return { events: [c, taker, old, b.result(taker, 4200, 'new owner')], accepted: old }
      },
      duplicates: 1
    },
    {
      name: "the new owner's result wins when it is earlier than the superseded owner's",
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const taker = b.claim(e1, t, 4001, { prev: c.id })
        const fresh = b.result(taker, 4050, 'new owner')
        return { events: [c, taker, b.result(c, 4100, 'old owner'), fresh], accepted: fresh }
      },
      duplicates: 1
    },
    {
      name: "a superseded owner's result finishes the task while the new owner still works",
      events: (b, t) => {
        const c = b.claim(e0, t, 3000)
        const taker = b.claim(e1, t, 4001, { prev: c.id })
        const old = b.result(c, 4100)
        return { events: [c, taker, b.renew(taker, taker, 4500), old], accepted: old }
      },
      duplicates: 0
    },
    {
      name: 'three executions: one accepted, two duplicates',
      events: (b, t) => {
        const c0 = b.claim(e0, t, 3000)
        const c1 = b.claim(e1, t, 4001)
        const c2 = b.claim(e2, t, 5002)
        const first = b.result(c1, 5100)
        return { events: [c0, c1, c2, b.result(c0, 5300), first, b.result(c2, 5200)], accepted: first }
      },
      duplicates: 2
    }
  ]

  it.each(rows)('$name', ({ events, duplicates }) => {
    const { b, s, t } = leafPlan()
    const x = events(b, t)
    const { tree, task: v } = task(b, s, t, x.events)
    expect(v.status).toBe('done')
    expect(v.accepted).toBe(x.accepted.id)
    expect(v.finishedAt).toEqual(x.accepted.env.hlc)
    expect(v.duplicates).toBe(duplicates)
    expect(v.results.filter(r => r.accepted).map(r => r.id)).toEqual([x.accepted.id])
    expect(tree.duplicates).toBe(duplicates)
  })

  it(
    "a lost race: e1 claimed 100 ms after e0 (so e0 owns) but reported first; e1's result is " +
      "accepted, counted once, and e0's is the one duplicate",
    () => {
      const { b, s, t } = leafPlan()
      const owner = b.claim(e0, t, 3000)
      const racer = b.claim(e1, t, 3100)
      const fast = b.result(racer, 3400, 'flights: NRT, from the racer')
      const slow = b.result(owner, 3500, 'flights: HND, from the owner')
      const { tree, task: v } = task(b, s, t, [owner, racer, fast, slow])
      // e0 still owned the task: e1's claim was ignored for ownership, and e0's chain ended with its own result.
      expect(v.chains).toHaveLength(1)
      expect(v.chains[0]).toMatchObject({ owner: e0, claim: owner.id, end: { kind: 'result', event: slow.id } })
      expect(v.ignoredClaims).toBe(1)
      // But the earliest result of a claim stamped after readyAt is the accepted one, owner or not.
      expect(v).toMatchObject({
        status: 'done',
        owner: null,
        accepted: fast.id,
        finishedAt: fast.env.hlc,
        finishEvent: fast.id,
        duplicates: 1
      })
      expect(v.results.map(r => ({ author: r.author, output: r.output, accepted: r.accepted }))).toEqual([
        { author: e1, output: 'flights: NRT, from the racer', accepted: true },
        { author: e0, output: 'flights: HND, from the owner', accepted: false }
      ])
      expect(tree.duplicates).toBe(1)
      // What depends on it (here the root's roll-up, once the other leaf is done) starts from the accepted result.
      const other = b.claim(e2, leafTask(child(s, 1)), 3000)
      const otherResult = b.result(other, 3300)
      const rollup = taskOf(task(b, s, t, [owner, racer, fast, slow, other, otherResult]).tree, rollupId(b.root))
      expect(rollup).toMatchObject({ status: 'ready', readyAt: fast.env.hlc })
      expect(rollup.evidence).toContain(fast.id)
      expect(rollup.evidence).not.toContain(slow.id)
    }
  )
})

describe('results: task-failed uses an attempt; at maxAttempts the task fails; task-retried gives more', () => {
  it('one failure releases the claim and uses an attempt; the next claim after it owns', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 2 })
    const c = b.claim(e0, t, 3000)
    const f = b.fail(c, 3500)
    const v = task(b, s, t, [c, f]).task
    expect(v).toMatchObject({ status: 'ready', owner: null, failures: 1, attemptsAllowed: 2, finishedAt: null })
    expect(v.chains.map(x => x.end)).toEqual([{ kind: 'failed', event: f.id }])
    const before = b.claim(e1, t, 3400)
    const after = b.claim(e2, t, 3600, { prev: f.id })
    expect(task(b, s, t, [c, f, before, after]).task).toMatchObject({ status: 'claimed', owner: e2, ignoredClaims: 1 })
  })

  it('at maxAttempts failures the task fails, and the tree shows when and why', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 2 })
    const c = b.claim(e0, t, 3000)
    const f1 = b.fail(c, 3500)
    const c2 = b.claim(e1, t, 3600, { prev: f1.id })
    const f2 = b.fail(c2, 4000)
    const { tree, task: v } = task(b, s, t, [c, f1, c2, f2])
    expect(v).toMatchObject({
      status: 'failed',
      failures: 2,
      attemptsAllowed: 2,
      finishedAt: f2.env.hlc,
      finishEvent: f2.id,
      accepted: null
    })
    expect(nodeOf(tree, t as string as typeof b.root)).toMatchObject({ status: 'failed', waiting: null })
    // Claims after the final failure own nothing.
    const late = task(b, s, t, [c, f1, c2, f2, b.claim(e2, t, 4100)]).task
    expect(late).toMatchObject({ status: 'failed', ignoredClaims: 1 })
  })

  it('task-retried by the author gives maxAttempts more: the task is ready again, and can finish', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c = b.claim(e0, t, 3000)
    const f1 = b.fail(c, 3500)
    expect(task(b, s, t, [c, f1]).task.status).toBe('failed')
    const retry = b.retry(t, 3600, [f1.id])
    const v = task(b, s, t, [c, f1, retry]).task
    expect(v).toMatchObject({ status: 'ready', failures: 1, attemptsAllowed: 2, finishedAt: null })
    const c2 = b.claim(e1, t, 3700, { prev: f1.id })
    const r = b.result(c2, 4000)
    expect(task(b, s, t, [c, f1, retry, c2, r]).task).toMatchObject({ status: 'done', accepted: r.id, failures: 1 })
  })

  it('a release does not use an attempt', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c = b.claim(e0, t, 3000)
    const rel = b.release(c, 3500)
    expect(task(b, s, t, [c, rel]).task).toMatchObject({ status: 'ready', failures: 0 })
  })

  it('failures are counted from every claim stamped after readyAt, owner or not: the task fails at the maxAttempts-th', () => {
    // maxAttempts 2. e0 owns; e1 lost the race, yet its failure is an attempt too.
    const { b, s, t } = leafPlan({ maxAttempts: 2 })
    const owner = b.claim(e0, t, 3000)
    const racer = b.claim(e1, t, 3100)
    const f1 = b.fail(racer, 3200)
    const f2 = b.fail(owner, 3300)
    expect(task(b, s, t, [owner, racer, f1]).task).toMatchObject({
      status: 'claimed',
      owner: e0,
      failures: 1,
      finishedAt: null
    })
    const v = task(b, s, t, [owner, racer, f1, f2]).task
    expect(v).toMatchObject({
      status: 'failed',
      failures: 2,
      attemptsAllowed: 2,
      accepted: null,
      finishedAt: f2.env.hlc,
      finishEvent: f2.id
    })
  })

  it('two failures at the same stamp: the one first in (hlc, author, id) order is the failing event', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c0 = b.claim(e0, t, 3000)
    const c1 = b.claim(e1, t, 3100)
    const f0 = b.fail(c0, 3500)
    const f1 = b.fail(c1, 3500)
    expect(e0 < e1).toBe(true)
    expect(task(b, s, t, [c0, c1, f1, f0]).task).toMatchObject({
      status: 'failed',
      failures: 2,
      finishedAt: f0.env.hlc,
      finishEvent: f0.id
    })
  })

  it('a result wins over failure: a result stamped before the final failure makes the task done, finished at the result', () => {
    // maxAttempts 1. e0 claims at 3000 (lease 1000), e1 takes over at 4001; e0's result at 4020, e1 fails at 4050.
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c = b.claim(e0, t, 3000)
    const taker = b.claim(e1, t, 4001, { prev: c.id })
    const r = b.result(c, 4020, 'from the superseded owner')
    const f = b.fail(taker, 4050)
    const v = task(b, s, t, [c, taker, r, f]).task
    expect(v).toMatchObject({
      status: 'done',
      accepted: r.id,
      finishedAt: r.env.hlc,
      finishEvent: r.id,
      failures: 1,
      duplicates: 0
    })
    expect(v.results.map(x => [x.id, x.accepted])).toEqual([[r.id, true]])
  })

  it('a result wins over failure: a result stamped after the final failure still makes the task done, finished at the failure', () => {
    // maxAttempts 1. e1 takes over and fails at 4050: the task has failed. Then the superseded owner
    // e0 reports a result stamped 4100. A result of a counted claim always wins, so the task is
    // done with that result; it finished at the earlier of the two (the failure), so what waits
    // for it does not have to wait longer than it already did.
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c = b.claim(e0, t, 3000)
    const taker = b.claim(e1, t, 4001, { prev: c.id })
    const f = b.fail(taker, 4050)
    const r = b.result(c, 4100, 'late but valid')
    const other = b.claim(e2, leafTask(child(s, 1)), 3000)
    const otherDone = b.result(other, 3300)

    // Before the result arrives: failed, and a failed task shows no accepted result.
    const failed = task(b, s, t, [c, taker, f, other, otherDone])
    expect(failed.task).toMatchObject({
      status: 'failed',
      accepted: null,
      duplicates: 0,
      failures: 1,
      finishedAt: f.env.hlc,
      finishEvent: f.id
    })
    expect(failed.task.results).toEqual([])
    expect(taskOf(failed.tree, rollupId(b.root))).toMatchObject({ status: 'ready', readyAt: f.env.hlc })

    const done = task(b, s, t, [c, taker, f, r, other, otherDone])
    expect(done.task).toMatchObject({
      status: 'done',
      accepted: r.id,
      duplicates: 0,
      failures: 1,
      finishedAt: f.env.hlc,
      finishEvent: f.id
    })
    expect(done.task.results.map(x => ({ id: x.id, output: x.output, accepted: x.accepted }))).toEqual([
      { id: r.id, output: 'late but valid', accepted: true }
    ])
    expect(nodeOf(done.tree, t as string as typeof b.root)).toMatchObject({ status: 'done', waiting: null })
    // The roll-up's readyAt did not move.
    expect(taskOf(done.tree, rollupId(b.root))).toMatchObject({ status: 'ready', readyAt: f.env.hlc })
  })

  it('a task that failed shows no accepted result: a result of a claim stamped before readyAt does not count', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const early = b.claim(e1, t, 2150)
    const c = b.claim(e0, t, 3000)
    const f = b.fail(c, 3500)
    const ignored = b.result(early, 3600, 'from a claim made before the task was ready')
    const v = task(b, s, t, [early, c, f, ignored]).task
    expect(v).toMatchObject({ status: 'failed', finishEvent: f.id, accepted: null, duplicates: 0, ignoredClaims: 1 })
    expect(v.results.map(x => [x.id, x.accepted])).toEqual([[ignored.id, false]])
  })

  it('a done task never reopens: failures after its result change nothing', () => {
    const { b, s, t } = leafPlan({ maxAttempts: 1 })
    const c = b.claim(e0, t, 3000)
    const racer = b.claim(e1, t, 3100)
    const r = b.result(c, 3500)
    const f = b.fail(racer, 3600)
    const v = task(b, s, t, [c, racer, r, f]).task
    expect(v).toMatchObject({ status: 'done', accepted: r.id, finishedAt: r.env.hlc, finishEvent: r.id, failures: 1 })
  })
})

describe('review: a committee quorum accepts or rejects each result', () => {
  const reviewPlan = (maxAttempts = 2): ReturnType<typeof leafPlan> => leafPlan({ review: true, maxAttempts })

  it('a result waiting for review: in-review, visibly, with nothing accepted', () => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const { tree, task: v } = task(b, s, t, [c, r])
    expect(v).toMatchObject({ status: 'in-review', owner: null, accepted: null, finishedAt: null })
    expect(v.results[0]?.review).toBe('pending')
    expect(nodeOf(tree, t as string as typeof b.root)).toMatchObject({
      status: 'in-review',
      waiting: 'waiting for the committee to review the result'
    })
  })

  it.each([
    { name: 'one accept', verdicts: ['accept'], status: 'in-review', review: 'pending' },
    { name: 'one accept and one reject', verdicts: ['accept', 'reject'], status: 'in-review', review: 'pending' },
    { name: 'a quorum of accepts', verdicts: ['accept', 'accept'], status: 'done', review: 'accepted' },
    {
      name: 'a quorum of accepts after a reject',
      verdicts: ['reject', 'accept', 'accept'],
      status: 'done',
      review: 'accepted'
    },
    { name: 'a quorum of rejects', verdicts: ['reject', 'reject'], status: 'ready', review: 'rejected' },
    {
      name: 'a quorum of rejects after an accept',
      verdicts: ['accept', 'reject', 'reject'],
      status: 'ready',
      review: 'rejected'
    }
  ] as const)('$name -> $status', ({ verdicts, status, review }) => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const reviews = verdicts.map((v, i) => b.review([s0, s1, s2][i] as PeerIdString, r, v, 3600 + 100 * i))
    const v = task(b, s, t, [c, r, ...reviews]).task
    const deciding = reviews[reviews.length - 1] as PlanEvent
    expect(v.status).toBe(status)
    expect(v.results[0]?.review).toBe(review)
    if (status === 'done')
      expect(v).toMatchObject({ accepted: r.id, finishedAt: deciding.env.hlc, finishEvent: deciding.id, duplicates: 0 })
    if (status === 'ready') {
      expect(v).toMatchObject({ accepted: null, failures: 1, finishedAt: null })
      expect(v.chains.map(x => x.end)).toEqual([{ kind: 'rejected', event: r.id }])
    }
  })

  it('after a rejection the next claim must be stamped after the deciding reject', () => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const no1 = b.review(s0, r, 'reject', 3600)
    const no2 = b.review(s1, r, 'reject', 3700)
    const early = b.claim(e1, t, 3650)
    const ok = b.claim(e2, t, 3800, { prev: r.id })
    const v = task(b, s, t, [c, r, no1, no2, early, ok]).task
    expect(v).toMatchObject({ status: 'claimed', owner: e2, ignoredClaims: 1, failures: 1 })
    const r2 = b.result(ok, 4000, 'better')
    const yes = [b.review(s0, r2, 'accept', 4100), b.review(s2, r2, 'accept', 4200)]
    const done = task(b, s, t, [c, r, no1, no2, early, ok, r2, ...yes]).task
    expect(done).toMatchObject({ status: 'done', accepted: r2.id, failures: 1 })
    expect(done.results.map(x => x.review)).toEqual(['rejected', 'accepted'])
  })

  it('rejected in maxAttempts rounds, the task fails', () => {
    const { b, s, t } = reviewPlan(2)
    const events: PlanEvent[] = []
    let prev: PlanEvent | null = null
    for (const [round, ex] of [e0, e1].entries()) {
      const at = 3000 + 1000 * round
      const c = b.claim(ex, t, at, { prev: prev?.id ?? null })
      const r = b.result(c, at + 100)
      const no = [b.review(s0, r, 'reject', at + 200), b.review(s1, r, 'reject', at + 300)]
      events.push(c, r, ...no)
      prev = no[1] as PlanEvent
    }
    const v = task(b, s, t, events).task
    expect(v).toMatchObject({ status: 'failed', failures: 2, accepted: null, finishEvent: (prev as PlanEvent).id })
  })

  it('a reviewer who both accepts and rejects one result equivocates: recorded, and neither counts', () => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const yes = b.review(s0, r, 'accept', 3600)
    const no = b.review(s0, r, 'reject', 3650)
    const other = b.review(s1, r, 'accept', 3700)
    const { tree, task: v } = task(b, s, t, [c, r, yes, no, other])
    expect(v.status).toBe('in-review')
    expect(tree.equivocations).toEqual([
      { author: s0, slot: `review:${r.id}:${s0}@${b.goal.id}`, events: [yes.id, no.id].sort() }
    ])
    expect(task(b, s, t, [c, r, yes, no, other, b.review(s2, r, 'accept', 3800)]).task.status).toBe('done')
  })

  it("reviews under a committee amendment count with its quorum; a non-member's review is refused", () => {
    const { b, s, t } = reviewPlan()
    const a = b.amend([s0, s3], 2500, 2)
    const c = b.claim(e0, t, 3000)
    const r = b.result(c, 3500)
    const one = b.review(s3, r, 'accept', 3600, a.id)
    expect(task(b, s, t, [a, c, r, one]).task.status).toBe('in-review')
    expect(task(b, s, t, [a, c, r, one, b.review(s0, r, 'accept', 3700, a.id)]).task.status).toBe('done')
    // s3 is not in the goal's committee: its review under the goal is refused at ingest, and so never counts.
    const tree = treeOf(b, [...s.events, a, c, r, b.review(s3, r, 'accept', 3600), b.review(s0, r, 'accept', 3700)])
    expect(taskOf(tree, t).status).toBe('in-review')
  })

  // Design: "a task reopens only when all its results are rejected". The superseded owner e0's
  // result is still pending review while e1's was rejected: no third execution may start yet.
  it('a task does not reopen while another of its results is still pending review: one rejected, one pending -> in-review', () => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const taker = b.claim(e1, t, 4001, { prev: c.id })
    const old = b.result(c, 4100, 'old owner')
    const fresh = b.result(taker, 4200, 'new owner')
    const no = [b.review(s0, fresh, 'reject', 4300), b.review(s1, fresh, 'reject', 4400)]
    const v = task(b, s, t, [c, taker, old, fresh, ...no]).task
    expect(v.results.map(x => x.review)).toEqual(['pending', 'rejected'])
    expect(v.status).toBe('in-review')
  })

  it("a superseded owner's result accepted by review finishes the task even if the newer result was rejected", () => {
    const { b, s, t } = reviewPlan()
    const c = b.claim(e0, t, 3000)
    const taker = b.claim(e1, t, 4001, { prev: c.id })
    const old = b.result(c, 4100, 'old owner')
    const fresh = b.result(taker, 4200, 'new owner')
    const events = [
      c,
      taker,
      old,
      fresh,
      b.review(s0, fresh, 'reject', 4300),
      b.review(s1, fresh, 'reject', 4400),
      b.review(s0, old, 'accept', 4500),
      b.review(s2, old, 'accept', 4600)
    ]
    const v = task(b, s, t, events).task
    expect(v).toMatchObject({ status: 'done', accepted: old.id })
  })
})
