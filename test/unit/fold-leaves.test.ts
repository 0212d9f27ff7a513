/**
 * Fold rules: where the tree stops growing (marked leaves, maxDepth,
 * maxNodes) and when a sibling may start (dependsOn: blocked until its
 * dependencies finish; readyAt and evidence).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, expectOrderFree, leafTask, makeCast, nodeOf, rootOf, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent } from '../../src/core/events.js'

let cast: Cast
let voters: PeerIdString[]
beforeAll(async () => {
  cast = await makeCast()
  voters = [cast.scorers[0], cast.scorers[1]]
})

const committee = (): PeerIdString[] => cast.scorers.slice(0, 3)

describe('leaves: marked by the accepted split, or at maxDepth', () => {
  it('a subgoal marked leaf is a leaf task at once; an unmarked one waits for its own split', () => {
    const b = new PlanBuilder(cast.author, committee())
    const p = b.propose(cast.decomposers[0], b.root, 1, [
      { title: 'book flights', detail: '', leaf: true, dependsOn: [] },
      { title: 'plan Kyoto', detail: '', leaf: false, dependsOn: [] }
    ], 2000)
    const ballots = voters.map((v, i) => b.ballot(v, { node: b.root, attempt: 1 }, p, 2100 + 100 * i))
    const tree = expectOrderFree(b, [p, ...ballots])
    const [leaf, inner] = rootOf(tree).children.map(id => nodeOf(tree, id))
    expect(leaf).toMatchObject({ kind: 'leaf', leafReason: 'marked-leaf', status: 'ready', task: leaf?.id, waiting: 'ready: waiting for an executor to claim it' })
    expect(inner).toMatchObject({ kind: 'decomposing', leafReason: null, status: 'decomposing', task: null, waiting: 'attempt 1: waiting for proposals from decomposers' })
    // The root's roll-up waits for both.
    expect(rootOf(tree).status).toBe('blocked')
  })

  it.each([
    { maxDepth: 0, leafDepth: 0 },
    { maxDepth: 1, leafDepth: 1 },
    { maxDepth: 2, leafDepth: 2 }
  ])('maxDepth $maxDepth: nodes at depth $leafDepth are leaves (max-depth) even if not marked', ({ maxDepth, leafDepth }) => {
    const b = new PlanBuilder(cast.author, committee(), { maxDepth })
    const events: PlanEvent[] = []
    let level = [b.root]
    for (let depth = 0; depth < leafDepth; depth++) {
      const next: typeof level = []
      for (const [i, n] of level.entries()) {
        const s = split(b, { node: n, by: cast.decomposers[i % 3] as PeerIdString, titles: [`x${depth}`, `y${depth}`], voters, at: 2000 + 1000 * depth + 10 * i, leaf: false })
        events.push(...s.events)
        next.push(...s.children)
      }
      level = next
    }
    const tree = expectOrderFree(b, events, 2)
    for (const n of tree.nodes) {
      if (n.depth === leafDepth) expect(n).toMatchObject({ kind: 'leaf', leafReason: 'max-depth', status: 'ready' })
      else expect(n.kind).toBe('composite')
    }
    expect(tree.nodes.filter(n => n.depth === leafDepth)).toHaveLength(2 ** leafDepth)
    if (maxDepth === 0) expect(taskOf(tree, b.root).readyAt).toEqual(b.goal.env.hlc)
  })

  it('a proposal for a node at maxDepth never splits it', () => {
    const b = new PlanBuilder(cast.author, committee(), { maxDepth: 1 })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
    const deeper = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['c', 'd'], voters, at: 3000 })
    const tree = treeOf(b, [...s.events, ...deeper.events])
    expect(nodeOf(tree, child(s, 0))).toMatchObject({ kind: 'leaf', leafReason: 'max-depth', children: [], accepted: null })
    expect(tree.nodes).toHaveLength(3)
  })
})

describe('leaves: maxNodes', () => {
  it.each([
    { maxNodes: 3, titles: ['a', 'b'], kind: 'composite', nodes: 3 },
    { maxNodes: 3, titles: ['a', 'b', 'c'], kind: 'leaf', nodes: 1 },
    { maxNodes: 4, titles: ['a', 'b', 'c'], kind: 'composite', nodes: 4 }
  ])('maxNodes $maxNodes, a split into $titles.length: the root is $kind', ({ maxNodes, titles, kind, nodes }) => {
    const b = new PlanBuilder(cast.author, committee(), { maxNodes })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles, voters, at: 2000 })
    const tree = expectOrderFree(b, s.events)
    const root = rootOf(tree)
    expect(tree.nodes).toHaveLength(nodes)
    expect(root.kind).toBe(kind)
    // Either way the split was accepted: the tree shows which one, and why it did not grow.
    expect(root.accepted).toBe(s.proposal.id)
    if (kind === 'leaf') {
      expect(root).toMatchObject({ leafReason: 'max-nodes', children: [], task: leafTask(b.root), status: 'ready' })
      expect(taskOf(tree, b.root).readyAt).toEqual(s.decidedAt)
      expect(taskOf(tree, b.root).evidence).toEqual([s.proposal.id, ...s.ballots.map(x => x.id)].sort())
    }
  })

  it.each([
    { name: 'the split of a decided first takes the room', aAt: 3000, bAt: 3500, grows: 0 },
    { name: 'the split of b decided first takes the room', aAt: 3500, bAt: 3000, grows: 1 }
  ])('splits are applied in the order of their deciding ballots: $name', ({ aAt, bAt, grows }) => {
    const b = new PlanBuilder(cast.author, committee(), { maxNodes: 5 })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
    const sa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['a1', 'a2'], voters, at: aAt })
    const sb = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['b1', 'b2'], voters, at: bAt })
    const tree = expectOrderFree(b, [...s.events, ...sa.events, ...sb.events])
    expect(tree.nodes).toHaveLength(5)
    const grew = nodeOf(tree, child(s, grows))
    const cut = nodeOf(tree, child(s, 1 - grows))
    expect(grew.kind).toBe('composite')
    expect(cut).toMatchObject({ kind: 'leaf', leafReason: 'max-nodes', children: [] })
  })
})

describe('dependsOn: a sibling waits until its dependencies finish', () => {
  const titles = ['book flights', 'book hotels', 'plan days']
  const setup = (b: PlanBuilder): ReturnType<typeof split> =>
    split(b, { node: b.root, by: cast.decomposers[0], titles, voters, at: 2000, dependsOn: { 1: [0], 2: [0, 1] } })

  it('blocked siblings name what they wait for, and have no readyAt', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = setup(b)
    const tree = expectOrderFree(b, s.events)
    const [a, h, d] = s.children.map(id => nodeOf(tree, id))
    expect(a?.status).toBe('ready')
    expect(h).toMatchObject({ status: 'blocked', dependsOn: [child(s, 0)], waiting: 'waiting for "book flights" to finish' })
    expect(d).toMatchObject({ status: 'blocked', dependsOn: [child(s, 0), child(s, 1)], waiting: 'waiting for "book flights", "book hotels" to finish' })
    expect(taskOf(tree, child(s, 1))).toMatchObject({ status: 'blocked', blockedBy: [child(s, 0)], readyAt: null, evidence: [] })
  })

  it('once the dependency is done, the sibling is ready from the dependency\'s result on, and cites it', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = setup(b)
    const c = b.claim(cast.executors[0], leafTask(child(s, 0)), 3000)
    const r = b.result(c, 3500)
    const tree = expectOrderFree(b, [...s.events, c, r])
    const hotels = taskOf(tree, child(s, 1))
    expect(hotels.status).toBe('ready')
    expect(hotels.readyAt).toEqual(r.env.hlc)
    expect(hotels.evidence).toEqual([s.proposal.id, ...s.ballots.map(x => x.id), r.id].sort())
    expect(taskOf(tree, child(s, 2)).blockedBy).toEqual([child(s, 1)])
    expect(nodeOf(tree, child(s, 2)).waiting).toBe('waiting for "book hotels" to finish')
  })

  it('a claim stamped before the dependency finished is ignored; one stamped after owns', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = setup(b)
    const c = b.claim(cast.executors[0], leafTask(child(s, 0)), 3000)
    const r = b.result(c, 3500)
    const early = b.claim(cast.executors[1], leafTask(child(s, 1)), 3400)
    const blockedTree = treeOf(b, [...s.events, c, early])
    expect(taskOf(blockedTree, child(s, 1))).toMatchObject({ status: 'blocked', ignoredClaims: 1 })
    const ignored = expectOrderFree(b, [...s.events, c, r, early])
    expect(taskOf(ignored, child(s, 1))).toMatchObject({ status: 'ready', owner: null, ignoredClaims: 1 })
    const onTime = b.claim(cast.executors[2], leafTask(child(s, 1)), 3600)
    const owned = expectOrderFree(b, [...s.events, c, r, early, onTime])
    expect(taskOf(owned, child(s, 1))).toMatchObject({ status: 'claimed', owner: cast.executors[2], ignoredClaims: 1 })
  })

  it('a dependency that failed also unblocks its dependants (the failure is a finish)', () => {
    const b = new PlanBuilder(cast.author, committee(), { maxAttempts: 1 })
    const s = setup(b)
    const c = b.claim(cast.executors[0], leafTask(child(s, 0)), 3000)
    const f = b.fail(c, 3500)
    const tree = expectOrderFree(b, [...s.events, c, f])
    expect(taskOf(tree, child(s, 0))).toMatchObject({ status: 'failed', finishedAt: f.env.hlc, finishEvent: f.id })
    expect(taskOf(tree, child(s, 1))).toMatchObject({ status: 'ready', readyAt: f.env.hlc })
    expect(taskOf(tree, child(s, 1)).evidence).toContain(f.id)
  })

  it('a composite that depends on a sibling blocks its own children too', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['visa', 'itinerary'], voters, at: 2000, leaf: false, dependsOn: { 1: [0] } })
    const visa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['forms', 'photos'], voters, at: 3000 })
    const itin = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['tokyo', 'kyoto'], voters, at: 3000 })
    const tree = expectOrderFree(b, [...s.events, ...visa.events, ...itin.events])
    for (const leaf of itin.children) expect(taskOf(tree, leaf)).toMatchObject({ status: 'blocked', blockedBy: [child(s, 0)] })
    for (const leaf of visa.children) expect(taskOf(tree, leaf).status).toBe('ready')
    expect(nodeOf(tree, itin.children[0] as typeof b.root).waiting).toBe('waiting for "visa" to finish')
  })
})
