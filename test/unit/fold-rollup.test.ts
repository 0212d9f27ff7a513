/**
 * Fold rules: roll-ups. A composite node gets a roll-up task (rollupId) that
 * becomes claimable once every child is done or failed; it is claimed and run
 * like a leaf; the root's roll-up result is the plan's deliverable.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { rollupId } from '../../src/core/derive.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import {
  child,
  expectOrderFree,
  leafTask,
  makeCast,
  nodeOf,
  rootOf,
  split,
  taskOf,
  treeOf
} from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { NodeId, PeerIdString, PlanEvent, PlanParams } from '../../src/core/events.js'

let cast: Cast
let e0: PeerIdString, e1: PeerIdString, e2: PeerIdString
let voters: PeerIdString[]
beforeAll(async () => {
  cast = await makeCast()
  ;[e0, e1, e2] = cast.executors
  voters = [cast.scorers[0], cast.scorers[1]]
})

function plan(params: Partial<PlanParams> = {}): { b: PlanBuilder; s: Split } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), params)
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['book flights', 'book hotels'],
    voters,
    at: 2000
  })
  return { b, s }
}

/** Claim a leaf and report its result. */
function run(b: PlanBuilder, node: NodeId, ex: PeerIdString, at: number, output = `done ${at}`): PlanEvent[] {
  const c = b.claim(ex, leafTask(node), at)
  return [c, b.result(c, at + 100, output)]
}

describe('roll-up: a composite node gets a roll-up task once its children finish', () => {
  it('the roll-up is blocked by every unfinished child, and says which', () => {
    const { b, s } = plan()
    const tree = expectOrderFree(b, s.events)
    const root = rootOf(tree)
    expect(root).toMatchObject({
      kind: 'composite',
      task: rollupId(b.root),
      status: 'blocked',
      waiting: 'waiting for "book flights", "book hotels" to finish'
    })
    expect(taskOf(tree, rollupId(b.root))).toMatchObject({
      kind: 'rollup',
      node: b.root,
      status: 'blocked',
      blockedBy: s.children,
      readyAt: null
    })
    const one = treeOf(b, [...s.events, ...run(b, child(s, 0), e0, 3000)])
    expect(taskOf(one, rollupId(b.root)).blockedBy).toEqual([child(s, 1)])
  })

  it("when all children are done, the roll-up is ready from the last finish on, citing the children's results", () => {
    const { b, s } = plan()
    const a = run(b, child(s, 0), e0, 3000)
    const h = run(b, child(s, 1), e1, 3200)
    const tree = expectOrderFree(b, [...s.events, ...a, ...h])
    const roll = taskOf(tree, rollupId(b.root))
    expect(roll.status).toBe('ready')
    expect(roll.readyAt).toEqual((h[1] as PlanEvent).env.hlc)
    expect(roll.evidence).toEqual([(a[1] as PlanEvent).id, (h[1] as PlanEvent).id].sort())
    expect(rootOf(tree).waiting).toBe('ready: waiting for an executor to claim it')
    expect(tree.status).toBe('executing')
  })

  it('a child that failed also counts as finished: the roll-up becomes claimable and the failure stays visible', () => {
    const { b, s } = plan({ maxAttempts: 1 })
    const a = run(b, child(s, 0), e0, 3000)
    const c = b.claim(e1, leafTask(child(s, 1)), 3000)
    const f = b.fail(c, 3500)
    const tree = expectOrderFree(b, [...s.events, ...a, c, f])
    expect(nodeOf(tree, child(s, 1)).status).toBe('failed')
    expect(taskOf(tree, rollupId(b.root))).toMatchObject({ status: 'ready', readyAt: f.env.hlc })
    expect(taskOf(tree, rollupId(b.root)).evidence).toContain(f.id)
  })

  it('a roll-up claim stamped before the children finished is ignored; the roll-up result is the deliverable', () => {
    const { b, s } = plan()
    const a = run(b, child(s, 0), e0, 3000)
    const h = run(b, child(s, 1), e1, 3200)
    const early = b.claim(e2, rollupId(b.root), 3250)
    const c = b.claim(e2, rollupId(b.root), 3400, { evidence: [(a[1] as PlanEvent).id, (h[1] as PlanEvent).id] })
    const r = b.result(c, 3900, 'two weeks in Japan: flights and hotels booked')
    const tree = expectOrderFree(b, [...s.events, ...a, ...h, early, c, r])
    expect(taskOf(tree, rollupId(b.root))).toMatchObject({ status: 'done', accepted: r.id, ignoredClaims: 1 })
    expect(rootOf(tree).status).toBe('done')
    expect(tree.status).toBe('completed')
    expect(tree.statusReason).toBe('the root roll-up has an accepted result: the deliverable')
    expect(tree.deliverable).toEqual({
      task: rollupId(b.root),
      result: r.id,
      output: 'two weeks in Japan: flights and hotels booked'
    })
  })

  it('nested: an inner roll-up must finish before the root roll-up is claimable', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['travel', 'stay'],
      voters,
      at: 2000,
      leaf: false
    })
    const travel = split(b, {
      node: child(s, 0),
      by: cast.decomposers[1],
      titles: ['flights', 'rail pass'],
      voters,
      at: 2500
    })
    const stay = split(b, {
      node: child(s, 1),
      by: cast.decomposers[2],
      titles: ['tokyo hotel', 'kyoto ryokan'],
      voters,
      at: 2500
    })
    const leaves = [...travel.children, ...stay.children].flatMap((n, i) =>
      run(b, n, cast.executors[i % 3] as PeerIdString, 3000 + 10 * i)
    )
    const base = [...s.events, ...travel.events, ...stay.events, ...leaves]
    const mid = expectOrderFree(b, base, 2)
    expect(taskOf(mid, rollupId(child(s, 0))).status).toBe('ready')
    expect(taskOf(mid, rollupId(child(s, 1))).status).toBe('ready')
    expect(taskOf(mid, rollupId(b.root))).toMatchObject({ status: 'blocked', blockedBy: s.children })
    const inner = [
      ...((): PlanEvent[] => {
        const c = b.claim(e0, rollupId(child(s, 0)), 3500)
        return [c, b.result(c, 3600, 'travel plan')]
      })(),
      ...((): PlanEvent[] => {
        const c = b.claim(e1, rollupId(child(s, 1)), 3500)
        return [c, b.result(c, 3700, 'stay plan')]
      })()
    ]
    const ready = treeOf(b, [...base, ...inner])
    expect(taskOf(ready, rollupId(b.root))).toMatchObject({ status: 'ready', readyAt: (inner[3] as PlanEvent).env.hlc })
    const c = b.claim(e2, rollupId(b.root), 3800)
    const r = b.result(c, 3900, 'the trip')
    const done = expectOrderFree(b, [...base, ...inner, c, r], 2)
    expect(done.status).toBe('completed')
    expect(done.deliverable?.output).toBe('the trip')
    expect(done.nodes.every(n => n.status === 'done')).toBe(true)
  })

  it("a child still decomposing blocks its parent's roll-up", () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
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
    const events = [p, ...voters.map((v, i) => b.ballot(v, { node: b.root, attempt: 1 }, p, 2100 + 100 * i))]
    const tree = treeOf(b, events)
    const [leaf, inner] = rootOf(tree).children
    const done = treeOf(b, [...events, ...run(b, leaf as NodeId, e0, 3000)])
    expect(taskOf(done, rollupId(b.root)).blockedBy).toEqual([inner])
  })

  it('a roll-up that fails maxAttempts times fails the root, and the plan', () => {
    const { b, s } = plan({ maxAttempts: 1 })
    const a = run(b, child(s, 0), e0, 3000)
    const h = run(b, child(s, 1), e1, 3200)
    const c = b.claim(e2, rollupId(b.root), 3400)
    const f = b.fail(c, 3500)
    const tree = expectOrderFree(b, [...s.events, ...a, ...h, c, f])
    expect(rootOf(tree).status).toBe('failed')
    expect(tree.status).toBe('failed')
    expect(tree.statusReason).toBe('the root task failed after 1 attempts')
    expect(tree.deliverable).toBeNull()
  })
})
