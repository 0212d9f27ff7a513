/**
 * Fold rules: where the tree stops growing (marked leaves, maxDepth,
 * maxNodes) and when a sibling may start (dependsOn: blocked until its
 * dependencies finish; readyAt and evidence).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import {
  child,
  expectOrderFree,
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
import type { NodeId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

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
    const p = b.propose(
      cast.decomposers[0],
      b.root,
      1,
      [
        { title: 'book flights', detail: '', leaf: true, dependsOn: [] },
        { title: 'plan Kyoto', detail: '', leaf: false, dependsOn: [] }
      ],
      2000
    )
    const ballots = voters.map((v, i) => b.ballot(v, { node: b.root, attempt: 1 }, p, 2100 + 100 * i))
    const tree = expectOrderFree(b, [p, ...ballots])
    const [leaf, inner] = rootOf(tree).children.map(id => nodeOf(tree, id))
    expect(leaf).toMatchObject({
      kind: 'leaf',
      leafReason: 'marked-leaf',
      status: 'ready',
      task: leaf?.id,
      waiting: 'ready: waiting for an executor to claim it'
    })
    expect(inner).toMatchObject({
      kind: 'decomposing',
      leafReason: null,
      status: 'decomposing',
      task: null,
      waiting: 'attempt 1: waiting for proposals from decomposers'
    })
    // The root's roll-up waits for both.
    expect(rootOf(tree).status).toBe('blocked')
  })

  it.each([
    { maxDepth: 0, leafDepth: 0 },
    { maxDepth: 1, leafDepth: 1 },
    { maxDepth: 2, leafDepth: 2 }
  ])(
    'maxDepth $maxDepth: nodes at depth $leafDepth are leaves (max-depth) even if not marked',
    ({ maxDepth, leafDepth }) => {
      const b = new PlanBuilder(cast.author, committee(), { maxDepth })
      const events: PlanEvent[] = []
      let level = [b.root]
      for (let depth = 0; depth < leafDepth; depth++) {
        const next: typeof level = []
        for (const [i, n] of level.entries()) {
          const s = split(b, {
            node: n,
            by: cast.decomposers[i % 3] as PeerIdString,
            titles: [`x${depth}`, `y${depth}`],
            voters,
            at: 2000 + 1000 * depth + 10 * i,
            leaf: false
          })
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
    }
  )

  it('a proposal for a node at maxDepth never splits it', () => {
    const b = new PlanBuilder(cast.author, committee(), { maxDepth: 1 })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
    const deeper = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['c', 'd'], voters, at: 3000 })
    const tree = treeOf(b, [...s.events, ...deeper.events])
    expect(nodeOf(tree, child(s, 0))).toMatchObject({
      kind: 'leaf',
      leafReason: 'max-depth',
      children: [],
      accepted: null
    })
    expect(tree.nodes).toHaveLength(3)
  })
})

describe('leaves: maxNodes is shared out top-down', () => {
  it.each([
    { maxNodes: 3, titles: ['a', 'b'], kind: 'composite', nodes: 3 },
    { maxNodes: 3, titles: ['a', 'b', 'c'], kind: 'leaf', nodes: 1 },
    { maxNodes: 4, titles: ['a', 'b', 'c'], kind: 'composite', nodes: 4 },
    { maxNodes: 1, titles: ['a', 'b'], kind: 'leaf', nodes: 1 }
  ])(
    'maxNodes $maxNodes (the root may have maxNodes - 1 descendants), a split into $titles.length: the root is $kind',
    ({ maxNodes, titles, kind, nodes }) => {
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
    }
  )

  // A child's allowance is floor((parent's allowance - k) / k). Below, the root
  // splits into two, and each child then proposes a split of its own.
  it.each([
    // maxNodes 5: the root may have 4 descendants; 2 children leave 2, so each child may have 1: no child can split.
    { maxNodes: 5, aTitles: 2, bTitles: 2, aGrows: false, bGrows: false, nodes: 3 },
    // maxNodes 7: 6 - 2 = 4 left, so each child may have 2: a split into 2 fits, one into 3 does not.
    { maxNodes: 7, aTitles: 2, bTitles: 2, aGrows: true, bGrows: true, nodes: 7 },
    { maxNodes: 7, aTitles: 2, bTitles: 3, aGrows: true, bGrows: false, nodes: 5 },
    // maxNodes 8: 7 - 2 = 5 left, floor(5 / 2) = 2 each. b's split into 3 is cut although the whole
    // tree would have had 1 + 2 + 2 + 3 = 8 nodes: the cost of sharing out (an unbalanced tree is cut early).
    { maxNodes: 8, aTitles: 2, bTitles: 3, aGrows: true, bGrows: false, nodes: 5 },
    // maxNodes 9: 8 - 2 = 6 left, 3 each: both fit.
    { maxNodes: 9, aTitles: 2, bTitles: 3, aGrows: true, bGrows: true, nodes: 8 }
  ])(
    'maxNodes $maxNodes, root split into 2, then a into $aTitles and b into $bTitles: a grows $aGrows, b grows $bGrows',
    ({ maxNodes, aTitles, bTitles, aGrows, bGrows, nodes }) => {
      const b = new PlanBuilder(cast.author, committee(), { maxNodes })
      const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
      const names = (p: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${p}${i + 1}`)
      const sa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: names('a', aTitles), voters, at: 3000 })
      const sb = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: names('b', bTitles), voters, at: 3500 })
      const tree = expectOrderFree(b, [...s.events, ...sa.events, ...sb.events])
      expect(tree.nodes).toHaveLength(nodes)
      expect(tree.nodes.length).toBeLessThanOrEqual(maxNodes)
      for (const [sub, grows] of [
        [sa, aGrows],
        [sb, bGrows]
      ] as const) {
        const n = nodeOf(tree, sub.proposal.env.body.node)
        // The child's split is accepted either way; it is applied only if it fits the child's allowance.
        expect(n.accepted).toBe(sub.proposal.id)
        if (grows) expect(n).toMatchObject({ kind: 'composite', leafReason: null, children: sub.children })
        else {
          expect(n).toMatchObject({ kind: 'leaf', leafReason: 'max-nodes', children: [], status: 'ready' })
          expect(taskOf(tree, sub.proposal.env.body.node).readyAt).toEqual(sub.decidedAt)
        }
      }
    }
  )

  it("the allowance is passed down: a grandchild gets its share of its parent's share", () => {
    // maxNodes 15: the root may have 14; split into 2 leaves 12, so a may have 6; a into 3 leaves 3,
    // so each of a's children may have 1: a1's split into 2 is cut. With a into 2, a's children
    // may have 2 each, and a1's split into 2 fits.
    const grow = (aTitles: string[]): { tree: ReturnType<typeof treeOf>; a1: NodeId } => {
      const b = new PlanBuilder(cast.author, committee(), { maxNodes: 15 })
      const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
      const sa = split(b, {
        node: child(s, 0),
        by: cast.decomposers[1],
        titles: aTitles,
        voters,
        at: 3000,
        leaf: false
      })
      const sa1 = split(b, { node: child(sa, 0), by: cast.decomposers[2], titles: ['x', 'y'], voters, at: 4000 })
      return { tree: expectOrderFree(b, [...s.events, ...sa.events, ...sa1.events]), a1: child(sa, 0) }
    }
    const three = grow(['a1', 'a2', 'a3'])
    expect(nodeOf(three.tree, three.a1)).toMatchObject({
      depth: 2,
      kind: 'leaf',
      leafReason: 'max-nodes',
      children: []
    })
    expect(three.tree.nodes).toHaveLength(6)
    const two = grow(['a1', 'a2'])
    expect(nodeOf(two.tree, two.a1)).toMatchObject({ depth: 2, kind: 'composite', leafReason: null })
    expect(two.tree.nodes).toHaveLength(7)
  })

  it.each([
    { name: 'a decided first', aAt: 3000, bAt: 3500 },
    { name: 'b decided first', aAt: 3500, bAt: 3000 }
  ])(
    'the order of deciding ballots does not matter ($name): each child splits within its own allowance',
    ({ aAt, bAt }) => {
      for (const [maxNodes, grows, nodes] of [
        [5, false, 3],
        [7, true, 7]
      ] as const) {
        const b = new PlanBuilder(cast.author, committee(), { maxNodes })
        const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
        const sa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['a1', 'a2'], voters, at: aAt })
        const sb = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['b1', 'b2'], voters, at: bAt })
        const tree = expectOrderFree(b, [...s.events, ...sa.events, ...sb.events])
        expect(tree.nodes).toHaveLength(nodes)
        for (const i of [0, 1]) {
          expect(nodeOf(tree, child(s, i))).toMatchObject(
            grows ? { kind: 'composite', leafReason: null } : { kind: 'leaf', leafReason: 'max-nodes', children: [] }
          )
        }
      }
    }
  )

  it("a late deciding ballot never removes an applied split's children", () => {
    // maxNodes 7: a and b may have 2 descendants each. a's split into 2 is decided at 3200 and
    // applied. Then b's split into 3 arrives, decided earlier (3100). Sharing the room globally
    // in the order of deciding ballots, b would take it (1 + 2 + 3 = 6) and a's applied children
    // would vanish (8 > 7). Top-down, b's split does not fit b's own allowance: b is cut, a keeps its children.
    const b = new PlanBuilder(cast.author, committee(), { maxNodes: 7 })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
    const sa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['a1', 'a2'], voters, at: 3000 })
    const sb = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['b1', 'b2', 'b3'], voters, at: 2900 })
    expect(sb.decidedAt.ms).toBeLessThan(sa.decidedAt.ms)
    const f = new Fold()
    for (const e of [b.goal, ...s.events, ...sa.events]) f.add(e, NO_CLOCK)
    const before = f.tree(b.plan) as PlanTree
    expect(nodeOf(before, child(s, 0))).toMatchObject({ kind: 'composite', children: sa.children })
    expect(nodeOf(before, child(s, 1)).kind).toBe('decomposing')
    // b's proposal, then its ballots, the last of them deciding (and stamped before a's deciding ballot).
    for (const e of sb.events) {
      f.add(e, NO_CLOCK)
      const now = f.tree(b.plan) as PlanTree
      expect(nodeOf(now, child(s, 0))).toMatchObject({ kind: 'composite', children: sa.children })
      for (const c of sa.children) expect(nodeOf(now, c)).toMatchObject({ kind: 'leaf', status: 'ready' })
    }
    const after = f.tree(b.plan) as PlanTree
    expect(nodeOf(after, child(s, 1))).toMatchObject({
      kind: 'leaf',
      leafReason: 'max-nodes',
      accepted: sb.proposal.id,
      children: []
    })
    expect(after.nodes).toHaveLength(5)
    // The same tree as folding everything at once, in any order.
    const all = [...s.events, ...sa.events, ...sb.events]
    expectOrderFree(b, all)
    expect(f.treeHash(b.plan)).toBe(hashOf(b, all))
  })

  it('when a split that fits arrives late and decided earlier, it is applied beside the others, never instead of them', () => {
    // maxNodes 7 again, b into 2: it fits b's own allowance, so both a and b grow whatever the arrival order.
    const b = new PlanBuilder(cast.author, committee(), { maxNodes: 7 })
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b'], voters, at: 2000, leaf: false })
    const sa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['a1', 'a2'], voters, at: 3000 })
    const sb = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['b1', 'b2'], voters, at: 2900 })
    const f = new Fold()
    for (const e of [b.goal, ...s.events, ...sa.events, ...sb.events]) f.add(e, NO_CLOCK)
    const tree = f.tree(b.plan) as PlanTree
    expect(nodeOf(tree, child(s, 0))).toMatchObject({ kind: 'composite', children: sa.children })
    expect(nodeOf(tree, child(s, 1))).toMatchObject({ kind: 'composite', children: sb.children })
    expect(tree.nodes).toHaveLength(7)
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
    expect(h).toMatchObject({
      status: 'blocked',
      dependsOn: [child(s, 0)],
      waiting: 'waiting for "book flights" to finish'
    })
    expect(d).toMatchObject({
      status: 'blocked',
      dependsOn: [child(s, 0), child(s, 1)],
      waiting: 'waiting for "book flights", "book hotels" to finish'
    })
    expect(taskOf(tree, child(s, 1))).toMatchObject({
      status: 'blocked',
      blockedBy: [child(s, 0)],
      readyAt: null,
      evidence: []
    })
  })

  it("once the dependency is done, the sibling is ready from the dependency's result on, and cites it", () => {
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
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['visa', 'itinerary'],
      voters,
      at: 2000,
      leaf: false,
      dependsOn: { 1: [0] }
    })
    const visa = split(b, { node: child(s, 0), by: cast.decomposers[1], titles: ['forms', 'photos'], voters, at: 3000 })
    const itin = split(b, { node: child(s, 1), by: cast.decomposers[2], titles: ['tokyo', 'kyoto'], voters, at: 3000 })
    const tree = expectOrderFree(b, [...s.events, ...visa.events, ...itin.events])
    for (const leaf of itin.children)
      expect(taskOf(tree, leaf)).toMatchObject({ status: 'blocked', blockedBy: [child(s, 0)] })
    for (const leaf of visa.children) expect(taskOf(tree, leaf).status).toBe('ready')
    expect(nodeOf(tree, itin.children[0] as typeof b.root).waiting).toBe('waiting for "visa" to finish')
  })
})
