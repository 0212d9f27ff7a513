/**
 * Fixtures for the fold-rule unit tests (test/unit/fold-*.test.ts): a cast of
 * real peer ids sorted so that ties in the (hlc, author, id) order are
 * predictable, one-call folds of a builder's events, lookups that fail loudly,
 * a scripted accepted split, and an order-independence check that every
 * table row can run for free.
 */
import { expect } from 'vitest'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { childId } from '../../src/core/derive.js'
import { shuffle } from './random.js'
import { makeEvent, makePeers, subgoals } from './plan-builder.js'
import type { PlanBuilder } from './plan-builder.js'
import type { Bodies, EventId, EventType, Hlc, NodeId, PeerIdString, PlanEvent, TaskId } from '../../src/core/events.js'
import type { PlanTree, TaskView, TreeNode } from '../../src/core/tree.js'

/**
 * Who plays what. Every list is in ascending peer-id order, and the lists are
 * cut from one sorted list in the order author < scorers < decomposers <
 * executors < outsiders, so "the earlier author" of a tie is known in advance.
 */
export interface Cast {
  readonly author: PeerIdString
  readonly scorers: readonly [PeerIdString, PeerIdString, PeerIdString, PeerIdString, PeerIdString]
  readonly decomposers: readonly [PeerIdString, PeerIdString, PeerIdString]
  readonly executors: readonly [PeerIdString, PeerIdString, PeerIdString]
  readonly outsiders: readonly [PeerIdString, PeerIdString]
  /** Every id above, ascending. */
  readonly all: readonly PeerIdString[]
}

export async function makeCast(): Promise<Cast> {
  const all = (await makePeers(14)).map(p => p.id).sort()
  const at = (i: number): PeerIdString => all[i] as PeerIdString
  return {
    author: at(0),
    scorers: [at(1), at(2), at(3), at(4), at(5)],
    decomposers: [at(6), at(7), at(8)],
    executors: [at(9), at(10), at(11)],
    outsiders: [at(12), at(13)],
    all
  }
}

export function hlc(ms: number, c = 0): Hlc {
  return { ms, c }
}

/** Fold the builder's goal plus `events` as one set and return the plan's tree. */
export function treeOf(b: PlanBuilder, events: readonly PlanEvent[]): PlanTree {
  const t = foldAll([b.goal, ...events]).tree(b.plan)
  if (t === undefined) throw new Error('the plan has no tree: was its goal folded?')
  return t
}

export function hashOf(b: PlanBuilder, events: readonly PlanEvent[]): string {
  const h = foldAll([b.goal, ...events]).treeHash(b.plan)
  if (h === undefined) throw new Error('the plan has no tree hash')
  return h
}

export function nodeOf(tree: PlanTree, id: NodeId): TreeNode {
  const n = tree.nodes.find(x => x.id === id)
  if (n === undefined) throw new Error(`node ${id} is not in the tree`)
  return n
}

export function taskOf(tree: PlanTree, id: TaskId | NodeId): TaskView {
  const t = tree.tasks.find(x => x.id === id)
  if (t === undefined) throw new Error(`task ${id} is not in the tree`)
  return t
}

export function rootOf(tree: PlanTree): TreeNode {
  return nodeOf(tree, tree.root)
}

/**
 * The invariant every rule must keep: fold the goal plus `events` in arrival
 * order, reversed, and a few seeded shuffles with duplicates, one event at a
 * time (so missing deps park and fold later); every order must give the
 * treeHash of the one-shot fold. Returns that tree.
 */
export function expectOrderFree(b: PlanBuilder, events: readonly PlanEvent[], shuffles = 3): PlanTree {
  const all = [b.goal, ...events]
  const want = hashOf(b, events)
  const orders: PlanEvent[][] = [[...all].reverse()]
  for (let s = 1; s <= shuffles; s++) {
    const dupes = shuffle(all, s * 7919).slice(0, Math.ceil(all.length / 3))
    orders.push(shuffle([...all, ...dupes], s))
  }
  for (const order of orders) {
    const f = new Fold()
    for (const e of order) f.add(e, NO_CLOCK)
    expect(f.events.parkedCount).toBe(0)
    expect(f.treeHash(b.plan)).toBe(want)
  }
  return treeOf(b, events)
}

/** An event of the builder's plan by any author, with any body: for events the builder would not make (forgeries). */
export function forge<T extends EventType>(
  b: PlanBuilder,
  type: T,
  author: PeerIdString,
  at: number | Hlc,
  deps: readonly EventId[],
  body: Bodies[T]
): PlanEvent<T> {
  return makeEvent({
    v: b.goal.env.v,
    type,
    plan: b.plan,
    author,
    hlc: typeof at === 'number' ? hlc(at) : at,
    deps: [b.goal.id, ...deps],
    body
  })
}

export interface Split {
  readonly proposal: PlanEvent<'split-proposed'>
  readonly ballots: ReadonlyArray<PlanEvent<'ballot-cast'>>
  /** The proposal, then the ballots. */
  readonly events: readonly PlanEvent[]
  readonly children: readonly NodeId[]
  /** The stamp of the deciding (last) ballot: when the children become claimable. */
  readonly decidedAt: Hlc
}

/**
 * A split of `node` proposed by `by` at `at`, and chosen by each of `voters`
 * (100 ms apart after the proposal). With `voters` a quorum, the split is
 * accepted at the last ballot.
 */
export function split(
  b: PlanBuilder,
  opts: {
    node: NodeId
    by: PeerIdString
    titles: readonly string[]
    voters: readonly PeerIdString[]
    at: number
    attempt?: number
    leaf?: boolean
    dependsOn?: Record<number, number[]>
  }
): Split {
  const attempt = opts.attempt ?? 1
  const proposal = b.propose(
    opts.by,
    opts.node,
    attempt,
    subgoals(opts.titles, { leaf: opts.leaf ?? true, dependsOn: opts.dependsOn }),
    opts.at
  )
  const ballots = opts.voters.map((v, i) =>
    b.ballot(v, { node: opts.node, attempt }, proposal, opts.at + 100 * (i + 1))
  )
  const last = ballots[ballots.length - 1]
  return {
    proposal,
    ballots,
    events: [proposal, ...ballots],
    children: opts.titles.map((_, i) => childId(opts.node, proposal.id, i)),
    decidedAt: last === undefined ? proposal.env.hlc : last.env.hlc
  }
}

/**
 * The root split into two leaves ("book flights", "book hotels") by the first decomposer, chosen by two scorers and
 * decided at 2200: the split, its leaves' tasks, and the ids of its events (what a claim cites as evidence).
 */
export function twoLeaves(b: PlanBuilder, cast: Cast): { s: Split; t0: TaskId; t1: TaskId; ev: EventId[] } {
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['book flights', 'book hotels'],
    voters: cast.scorers.slice(0, 2),
    at: 2000
  })
  return { s, t0: leafTask(child(s, 0)), t1: leafTask(child(s, 1)), ev: s.events.map(e => e.id) }
}

/** Child i of a split, failing loudly when it does not exist. */
export function child(s: Split, i: number): NodeId {
  const c = s.children[i]
  if (c === undefined) throw new Error(`the split has no child ${i}`)
  return c
}

/** The task id of a leaf node. */
export function leafTask(n: NodeId): TaskId {
  return n as string as TaskId
}
