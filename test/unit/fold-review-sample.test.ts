/**
 * Protocol 5's review sample (docs/protocol/fold.md 11.7, ADR-0049): without
 * `review`, the committee still reviews a member's first results (until one
 * passes), every result of a member once one of its results was rejected,
 * and one in `trust.reviewOneIn` of the rest, picked by a hash of task and
 * author. Each case folds in any order to one treeHash.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST, reviewsResults } from '../../src/core/events.js'
import { inSample } from '../../src/core/review-sample.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { rollupId } from '../../src/core/derive.js'
import { validateParams } from '../../src/wire/index.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, expectOrderFree, leafTask, makeCast, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'
import type { PlanTree, ResultView } from '../../src/core/tree.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

function builder(params: Partial<PlanParams> = {}, oneIn = 4): PlanBuilder {
  return new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    trust: { ...DEFAULT_TRUST, reviewOneIn: oneIn },
    ...params
  })
}

/**
 * The root split into seven leaves, decided at 2200, whose titles are chosen so that at least `sampled` of the
 * tasks are in `who`'s sample and `unsampled` are not (the ids hang on the titles; the peer ids are fresh each run).
 */
function leaves(
  b: PlanBuilder,
  who: PeerIdString,
  want: { sampled: number; unsampled: number }
): { s: Split; sampled: TaskId[]; unsampled: TaskId[] } {
  const oneIn = b.params.trust?.reviewOneIn ?? 4
  for (let k = 0; k < 500; k++) {
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: Array.from({ length: 7 }, (_, i) => `step ${i} of ${k}`),
      voters: cast.scorers.slice(0, 2),
      at: 2000
    })
    const tasks = s.children.map(leafTask)
    const sampled = tasks.filter(t => inSample(t, who, oneIn))
    const unsampled = tasks.filter(t => !inSample(t, who, oneIn))
    if (sampled.length >= want.sampled && unsampled.length >= want.unsampled) return { s, sampled, unsampled }
  }
  throw new Error('no split with that many sampled and unsampled tasks')
}

/** A claim and its result 50 ms later. */
function work(
  b: PlanBuilder,
  who: PeerIdString,
  task: TaskId,
  at: number,
  s: Split,
  output = 'done',
  passed: readonly PlanEvent[] = []
): [PlanEvent<'task-claimed'>, PlanEvent<'result-reported'>] {
  const c = b.claim(who, task, at, { evidence: s.events.map(e => e.id) })
  return [
    c,
    b.result(
      c,
      at + 50,
      output,
      undefined,
      passed.map(e => e.id)
    )
  ]
}

/** Two of the three scorers (the quorum) review `r` with `verdict`, 10 ms apart from `at`. */
function verdict(b: PlanBuilder, r: PlanEvent<'result-reported'>, v: 'accept' | 'reject', at: number): PlanEvent[] {
  return [b.review(cast.scorers[0], r, v, at), b.review(cast.scorers[1], r, v, at + 10)]
}

function resultOf(tree: PlanTree, r: PlanEvent<'result-reported'>): ResultView {
  const v = taskOf(tree, r.env.body.task).results.find(x => x.id === r.id)
  if (v === undefined) throw new Error(`result ${r.id} is not in the tree`)
  return v
}

describe('the review sample of a version-5 plan without --review', () => {
  it('reviews a member’s first result; with the sample off it is accepted as it comes', () => {
    const x = cast.executors[0]
    for (const oneIn of [4, 0]) {
      const b = builder({}, oneIn)
      const { s, unsampled } = leaves(b, x, { sampled: 0, unsampled: 1 })
      const first = work(b, x, unsampled[0] as TaskId, 2300, s)
      const tree = expectOrderFree(b, [...s.events, ...first])
      const t = taskOf(tree, unsampled[0] as TaskId)
      expect(t.status, `one in ${oneIn}`).toBe(oneIn === 0 ? 'done' : 'in-review')
      expect(resultOf(tree, first[1]).reviewedFor).toBe(oneIn === 0 ? null : 'first')
      expect(resultOf(tree, first[1]).review).toBe(oneIn === 0 ? 'none' : 'pending')
      if (oneIn !== 0) expect([...t.awaiting].sort()).toStrictEqual([...cast.scorers.slice(0, 3)].sort())
    }
  })

  it('after its first result passed review, reviews exactly the member’s results in the sample', () => {
    const x = cast.executors[0]
    const b = builder()
    const { s, sampled, unsampled } = leaves(b, x, { sampled: 2, unsampled: 3 })
    const [first, ...rest] = [...unsampled.slice(0, 3), ...sampled.slice(0, 2)] as TaskId[]
    const w0 = work(b, x, first as TaskId, 2300, s)
    const ok = verdict(b, w0[1], 'accept', 2400)
    const later = rest.map((t, i) => work(b, x, t, 2500 + 100 * i, s, 'done', ok))
    const tree = expectOrderFree(b, [...s.events, ...w0, ...ok, ...later.flat()])
    expect(resultOf(tree, w0[1])).toMatchObject({ review: 'accepted', reviewedFor: 'first', accepted: true })
    for (const [, r] of later) {
      const inIt = inSample(r.env.body.task, x, 4)
      expect(resultOf(tree, r).reviewedFor).toBe(inIt ? 'sample' : null)
      expect(taskOf(tree, r.env.body.task).status).toBe(inIt ? 'in-review' : 'done')
    }
  })

  it('a result that does not cite its author’s passed review is a first, whenever stamped', () => {
    const x = cast.executors[0]
    const b = builder()
    const { s, unsampled } = leaves(b, x, { sampled: 0, unsampled: 3 })
    const w0 = work(b, x, unsampled[0] as TaskId, 2300, s)
    const ok = verdict(b, w0[1], 'accept', 2400)
    const silent = work(b, x, unsampled[1] as TaskId, 2500, s)
    const citing = work(b, x, unsampled[2] as TaskId, 2600, s, 'done', ok)
    // Another member's accepting review does not count for x.
    const y = cast.executors[1]
    const wy = work(b, y, unsampled[0] as TaskId, 2700, s)
    const tree = expectOrderFree(b, [...s.events, ...w0, ...ok, ...silent, ...citing])
    expect(resultOf(tree, silent[1])).toMatchObject({ reviewedFor: 'first', review: 'pending' })
    expect(resultOf(tree, citing[1])).toMatchObject({ reviewedFor: null, accepted: true })
    const other = b.result(
      wy[0],
      2800,
      'done',
      undefined,
      ok.map(e => e.id)
    )
    const t2 = treeOf(b, [...s.events, ...w0, ...ok, wy[0], other])
    expect(resultOf(t2, other).reviewedFor).toBe('first')
  })

  it('the rank takes about one in N, and neither task nor author alone decides it', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `${i}`.padStart(64, '0'))
    for (const n of [2, 4, 10]) {
      const share = ids.filter(t => inSample(t, cast.executors[0], n)).length / ids.length
      expect(share, `one in ${n}`).toBeGreaterThan(0.8 / n)
      expect(share, `one in ${n}`).toBeLessThan(1.2 / n)
    }
    expect(ids.every(t => inSample(t, cast.executors[0], 1))).toBe(true)
    // Keys are fresh each run: one in 100 over 4,000 ids misses all with odds e^-40 (one in 1,000 missed 1.8 % of runs).
    expect(ids.some(t => inSample(t, cast.executors[0], 100))).toBe(true)
    const byAuthor = ids
      .slice(0, 200)
      .filter(t => inSample(t, cast.executors[0], 4) !== inSample(t, cast.executors[1], 4))
    expect(byAuthor.length).toBeGreaterThan(0)
  })

  it('after one rejection reviews every result of that member, whenever stamped, except what others built on', () => {
    const x = cast.executors[0]
    const y = cast.executors[1]
    const b = builder()
    const { s, sampled, unsampled } = leaves(b, x, { sampled: 1, unsampled: 5 })
    const [u0, u1, u2, u3, u4] = unsampled as [TaskId, TaskId, TaskId, TaskId, TaskId]
    const w0 = work(b, x, u0, 2300, s)
    const ok = verdict(b, w0[1], 'accept', 2400)
    // Accepted as they came: u1 before the rejection (and built on by y), u2 stamped before the rejection too.
    const w1 = work(b, x, u1, 2500, s, 'done', ok)
    const w2 = work(b, x, u2, 2600, s, 'done', ok)
    const builtOn = b.claim(y, u4, 2700, { evidence: [w1[1].id, ...s.events.map(e => e.id)] })
    const bad = work(b, x, sampled[0] as TaskId, 2800, s, 'junk', ok)
    const no = verdict(b, bad[1], 'reject', 2900)
    const w3 = work(b, x, u3, 3000, s, 'done', ok)
    const before = [...s.events, ...w0, ...ok, ...w1, ...w2, builtOn, ...bad]
    const t0 = expectOrderFree(b, before)
    expect(taskOf(t0, u1).status).toBe('done')
    expect(taskOf(t0, u2).status).toBe('done')
    const t1 = expectOrderFree(b, [...before, ...no, ...w3])
    expect(resultOf(t1, bad[1])).toMatchObject({ review: 'rejected', accepted: false })
    expect(taskOf(t1, bad[1].env.body.task).status).toBe('ready')
    // Built on by y: final. Not built on: back in review, though stamped before the rejection.
    expect(taskOf(t1, u1).status).toBe('done')
    expect(resultOf(t1, w1[1]).reviewedFor).toBeNull()
    expect(taskOf(t1, u2).status).toBe('in-review')
    expect(resultOf(t1, w2[1]).reviewedFor).toBe('after-rejection')
    expect(resultOf(t1, w0[1])).toMatchObject({ review: 'accepted', accepted: true })
    expect(t1.standing?.evidence.map(e => e.kind)).toContain('result-rejected')
  })

  it('a dishonest executor’s junk is caught at its first result and never accepted after its first rejection', () => {
    const liar = cast.executors[2]
    const b = builder()
    const { s, unsampled } = leaves(b, liar, { sampled: 0, unsampled: 5 })
    const tasks = unsampled.slice(0, 5)
    const events: PlanEvent[] = [...s.events]
    const results: Array<PlanEvent<'result-reported'>> = []
    tasks.forEach((t, i) => {
      // One claim at a time, each a tick after the last; only junk, none of it in the rank's sample.
      const w = work(b, liar, t, 2300 + 200 * i, s, `junk ${i}`)
      events.push(...w)
      results.push(w[1])
    })
    // The committee rejects the first result it sees (the first one, reviewed as the liar's first).
    const no = verdict(b, results[0] as PlanEvent<'result-reported'>, 'reject', 2400)
    const tree = expectOrderFree(b, [...events, ...no])
    for (const r of results) {
      expect(resultOf(tree, r).accepted, r.env.body.output).toBe(false)
      expect(resultOf(tree, r).reviewedFor).not.toBeNull()
    }
    expect(tasks.map(t => taskOf(tree, t).status)).toStrictEqual([
      'ready',
      'in-review',
      'in-review',
      'in-review',
      'in-review'
    ])
  })

  it('a claim after a rejection does not build on the rejected result, so it stays rejected', () => {
    const liar = cast.executors[2]
    const y = cast.executors[1]
    const b = builder()
    const { s, unsampled } = leaves(b, liar, { sampled: 0, unsampled: 2 })
    const [u0, u1] = unsampled as [TaskId, TaskId]
    const junk = work(b, liar, u0, 2300, s, 'junk 0')
    const no = verdict(b, junk[1], 'reject', 2400)
    // The honest executor claims the reopened task, citing the rejected result as what reopened it, and finishes it.
    const again = b.claim(y, u0, 2500, { evidence: [junk[1].id, ...no.map(e => e.id), ...s.events.map(e => e.id)] })
    const redone = b.result(again, 2550, 'done')
    const ok = verdict(b, redone, 'accept', 2600)
    // The liar's next junk, stamped after the rejection, waits for review as its first result would.
    const junk2 = work(b, liar, u1, 2700, s, 'junk 1')
    const tree = expectOrderFree(b, [...s.events, ...junk, ...no, again, redone, ...ok, ...junk2])
    expect(resultOf(tree, junk[1])).toMatchObject({ review: 'rejected', accepted: false })
    expect(resultOf(tree, redone)).toMatchObject({ review: 'accepted', accepted: true })
    expect(taskOf(tree, u0).status).toBe('done')
    expect(resultOf(tree, junk2[1]).reviewedFor).toBe('first')
    expect(taskOf(tree, u1).status).toBe('in-review')
  })

  it('--review reviews every result, and says so', () => {
    const x = cast.executors[0]
    const b = builder({ review: true })
    const { s, unsampled } = leaves(b, x, { sampled: 0, unsampled: 2 })
    const w0 = work(b, x, unsampled[0] as TaskId, 2300, s)
    const ok = verdict(b, w0[1], 'accept', 2400)
    const w1 = work(b, x, unsampled[1] as TaskId, 2500, s)
    const tree = expectOrderFree(b, [...s.events, ...w0, ...ok, ...w1])
    expect(resultOf(tree, w0[1]).reviewedFor).toBe('review')
    expect(resultOf(tree, w1[1])).toMatchObject({ reviewedFor: 'review', review: 'pending' })
  })

  it('the deliverable’s plan JSON says which results were reviewed; a plan of version 4 has no such key', () => {
    const x = cast.executors[0]
    const b = builder()
    const { s } = leaves(b, x, { sampled: 0, unsampled: 0 })
    const events: PlanEvent[] = [...s.events]
    let at = 2300
    let passed: PlanEvent[] = []
    for (const t of s.children.map(leafTask)) {
      const w = work(b, x, t, at, s, 'done', passed)
      events.push(...w)
      if (at === 2300) events.push(...(passed = verdict(b, w[1], 'accept', at + 60)))
      else if (inSample(t, x, 4)) events.push(...verdict(b, w[1], 'accept', at + 60))
      at += 100
    }
    const roll = rollupId(b.root)
    const cr = b.claim(x, roll, at + 200, { evidence: events.map(e => e.id) })
    const rr = b.result(
      cr,
      at + 300,
      'the trip',
      undefined,
      passed.map(e => e.id)
    )
    events.push(cr, rr)
    // The deliverable waits for the committee whatever the sample says (fold.md 11.9); the tree names the sample
    // when the roll-up is in it (the keys, and so the rank, are fresh each run).
    expect(expectOrderFree(b, events).status).toBe('executing')
    expect(resultOf(expectOrderFree(b, events), rr).reviewedFor).toBe(inSample(roll, x, 4) ? 'sample' : 'deliverable')
    events.push(...verdict(b, rr, 'accept', at + 400))
    const tree = expectOrderFree(b, events)
    expect(tree.status).toBe('completed')
    expect(tree.deliverable?.result).toBe(rr.id)
    const reviewed = tree.tasks.flatMap(t => t.results).filter(r => r.reviewedFor !== null)
    expect(reviewed.length).toBeGreaterThan(0)
    expect(reviewed.every(r => r.review === 'accepted')).toBe(true)
    const v4 = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const s4 = split(v4, {
      node: v4.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: cast.scorers.slice(0, 2),
      at: 2000
    })
    const c4 = v4.claim(x, leafTask(child(s4, 0)), 2300, { evidence: s4.events.map(e => e.id) })
    const t4 = treeOf(v4, [...s4.events, c4, v4.result(c4, 2400)])
    expect(Object.hasOwn(t4.tasks[0]?.results[0] ?? {}, 'reviewedFor')).toBe(false)
  })
})

describe('the sample’s parameter', () => {
  it('is checked with a clear error, and makes reviews valid in a version-5 plan without --review', () => {
    const b = builder()
    expect(validateParams(b.params)).toBeNull()
    for (const bad of [-1, 1_001, 2.5, '4'])
      expect(validateParams({ ...b.params, trust: { claimWindowMs: 10, reviewOneIn: bad } })).toMatch(
        /trust\.reviewOneIn.*one result in this many/
      )
    expect(validateParams({ ...b.params, trust: { claimWindowMs: 10 } })).toBeNull()
    expect(validateParams({ ...b.params, trust: { claimWindowMs: 10, reviewOneIn: 0 } })).toBeNull()
    expect(reviewsResults(b.params)).toBe(true)
    // Without a sample the deliverable is still reviewed.
    expect(reviewsResults({ ...b.params, trust: { claimWindowMs: 10, reviewOneIn: 0 } })).toBe(true)
    expect(reviewsResults({ ...b.params, trust: undefined })).toBe(false)
    expect(reviewsResults({ ...b.params, trust: undefined, review: true })).toBe(true)
  })
})

describe('a member whose result was rejected', () => {
  it('ranks after every other claim of the plan from the rejection on', () => {
    const b = builder({ review: true })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b', 'c'],
      voters: cast.scorers.slice(0, 2),
      at: 2000
    })
    const [t0, t1] = s.children.map(leafTask) as [TaskId, TaskId]
    // On t1, x ranks before y: it would win a contest within the window.
    const [x, y] = [cast.executors[0], cast.executors[1]].sort((p, q) =>
      claimRank(t1, p) < claimRank(t1, q) ? -1 : 1
    ) as [PeerIdString, PeerIdString]
    const junk = work(b, x, t0, 2300, s, 'junk')
    const no = verdict(b, junk[1], 'reject', 2400)
    const cx = b.claim(x, t1, 2500, { evidence: s.events.map(e => e.id) })
    const cy = b.claim(y, t1, 2600, { evidence: s.events.map(e => e.id) })
    const before = expectOrderFree(b, [...s.events, ...junk, cx, cy])
    expect(taskOf(before, t1).chains[0]?.owner).toBe(x)
    const after = expectOrderFree(b, [...s.events, ...junk, ...no, cx, cy])
    expect(taskOf(after, t1).chains[0]?.owner).toBe(y)
    // A claim stamped before the rejection keeps its rank.
    const early = b.claim(x, t1, 2350, { evidence: s.events.map(e => e.id) })
    const kept = expectOrderFree(b, [...s.events, ...junk, ...no, early, cy])
    expect(taskOf(kept, t1).chains[0]?.owner).toBe(x)
  })
})
