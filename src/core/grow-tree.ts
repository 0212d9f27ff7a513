import { maxHlc } from './hlc.js'
import { childIds } from './node-ids.js'
import { decideNode } from './decide-node.js'
import type { NodeDecision } from './decide-node.js'
import type { PlanIndex } from './plan-index.js'
import { approversFor } from './events.js'
import type { EventId, Hlc, NodeId, PlanEvent, PlanParams } from './events.js'
import type { CommitteeView, LeafReason, TreeNode } from './tree.js'
import type { TrustRules } from './trust-rules.js'

/** A node as the tree grows it: settled once `growTree` returns. */
export interface Draft {
  readonly id: NodeId
  readonly parent: Draft | null
  readonly index: number
  readonly depth: number
  readonly title: string
  readonly detail: string
  readonly dependsOnIdx: readonly number[]
  /** What an executor must offer to take the node's own task (protocol 3; empty: anything). */
  readonly needs: readonly string[]
  readonly markedLeaf: boolean
  readonly evidence: readonly EventId[]
  /** When the node could first be executed as a leaf, and the events that show it. */
  readonly base: { readonly at: Hlc; readonly evidence: readonly EventId[] }
  /** The base its place gave it, before its own decision moved it (what `regrow` starts from again). */
  readonly placed: { readonly at: Hlc; readonly evidence: readonly EventId[] }
  /** How its decomposition stands (with the equivocations found in it); null for a leaf that was never decomposed. */
  readonly decision: NodeDecision | null
  readonly kind: TreeNode['kind']
  readonly leafReason: LeafReason | null
  readonly accepted: EventId | null
  readonly children: readonly Draft[]
  /**
   * How many descendants this node may still have. The root gets maxNodes - 1;
   * a split into k children is applied only if k fits, and each child gets an
   * equal share of what is left. A node's budget depends only on its
   * ancestors' accepted splits, so a late event never cuts a split that was
   * already applied.
   */
  readonly budget: number
}

/** A draft while the tree grows (and while live-tree.ts keeps it up to date). */
export type Growing = { -readonly [K in keyof Draft]: Draft[K] }

type Won = Extract<NodeDecision, { kind: 'won' }>

/**
 * What a caller that keeps a tree between derivations (live-tree.ts) lends the growth: each node's decision (from
 * its memo of decideNode), and the ids of a split's children. Without them the growth decides and hashes afresh.
 */
export interface GrowHooks {
  readonly decide?: (id: NodeId) => NodeDecision
  readonly childIds?: (parent: NodeId, proposal: EventId, count: number) => readonly string[]
}

/** What the growth reads besides the drafts. */
interface GrowCtx {
  readonly index: PlanIndex
  readonly params: PlanParams
  readonly committees: readonly CommitteeView[]
  readonly rules: TrustRules | undefined
  readonly hooks: GrowHooks
}

/**
 * Grow the tree from the goal: decide each node's decomposition and apply
 * each accepted split, top-down. Returns the root.
 *
 * The order in which accepted splits are applied does not matter: a node's
 * children and budget depend only on its own split and its ancestors'.
 */
export function growTree(
  index: PlanIndex,
  goal: PlanEvent<'goal-submitted'>,
  committees: readonly CommitteeView[],
  rules?: TrustRules,
  hooks: GrowHooks = {}
): Draft {
  const params = goal.env.body.params
  const root = draft({
    id: index.id as string as NodeId,
    parent: null,
    index: 0,
    depth: 0,
    title: goal.env.body.text,
    detail: '',
    dependsOnIdx: [],
    needs: [],
    markedLeaf: false,
    evidence: [],
    base: { at: goal.env.hlc, evidence: [] },
    budget: params.maxNodes - 1
  })
  grow(root, { index, params, committees, rules, hooks })
  return root
}

/**
 * Grow a node's subtree again from its place, as `growTree` grew it: its decision, base and children are
 * worked out afresh (its old children are dropped). For a node whose decision changed; the growth reads
 * nothing above the node but its place.
 */
export function regrow(
  d: Draft,
  index: PlanIndex,
  goal: PlanEvent<'goal-submitted'>,
  committees: readonly CommitteeView[],
  rules: TrustRules | undefined,
  hooks: GrowHooks
): void {
  const g = d as Growing
  g.base = g.placed
  g.decision = null
  g.kind = 'decomposing'
  g.leafReason = null
  g.accepted = null
  g.children = []
  grow(g, { index, params: goal.env.body.params, committees, rules, hooks })
}

/** Decide `from` and grow every accepted split below it. */
function grow(from: Growing, ctx: GrowCtx): void {
  const pending: Growing[] = []
  if (decompose(from, ctx)) pending.push(from)
  while (pending.length > 0) {
    const d = pending.pop() as Growing
    for (const c of split(d, d.decision as Won, ctx)) if (decompose(c, ctx)) pending.push(c)
  }
}

/** A fresh node, not decided yet. */
function draft(place: Omit<Draft, 'decision' | 'kind' | 'leafReason' | 'accepted' | 'children' | 'placed'>): Growing {
  // Field by field, in one order: every draft gets the same shape (a spread would not), which keeps the walks over them fast.
  return {
    id: place.id,
    parent: place.parent,
    index: place.index,
    depth: place.depth,
    title: place.title,
    detail: place.detail,
    dependsOnIdx: place.dependsOnIdx,
    needs: place.needs,
    markedLeaf: place.markedLeaf,
    evidence: place.evidence,
    base: place.base,
    placed: place.base,
    decision: null,
    kind: 'decomposing',
    leafReason: null,
    accepted: null,
    children: [],
    budget: place.budget
  }
}

/**
 * Settle what a node's own events say: a leaf (marked, at maxDepth, or out of
 * attempts), still decomposing, or won. True when a split won and is to be
 * applied.
 */
function decompose(d: Growing, ctx: GrowCtx): boolean {
  const { index, params, committees, rules } = ctx
  if (d.markedLeaf || d.depth >= params.maxDepth) {
    d.kind = 'leaf'
    d.leafReason = d.markedLeaf ? 'marked-leaf' : 'max-depth'
    return false
  }
  const decision =
    ctx.hooks.decide?.(d.id) ??
    decideNode(index, d.id, params.maxAttempts, committees, approversFor(params, 'splits'), rules)
  d.decision = decision
  if (decision.kind === 'exhausted') {
    d.kind = 'leaf'
    d.leafReason = 'attempts-exhausted'
    d.base = { at: maxHlc([d.base.at, decision.failedAt]), evidence: decision.lastBallots }
  }
  return decision.kind === 'won'
}

/** Apply a won split: the node's children, or a max-nodes leaf when they do not fit its budget. Returns the children. */
function split(d: Growing, won: Won, ctx: GrowCtx): Growing[] {
  const subgoals = won.proposal.env.body.subgoals
  const evidence = [won.proposal.id, ...won.deciding].sort() as EventId[]
  d.accepted = won.proposal.id
  if (subgoals.length > d.budget) {
    d.kind = 'leaf'
    d.leafReason = 'max-nodes'
    d.base = { at: won.decidedBy.env.hlc, evidence }
    return []
  }
  d.kind = 'composite'
  const budget = Math.floor((d.budget - subgoals.length) / subgoals.length)
  const ids = (ctx.hooks.childIds ?? childIds)(d.id, won.proposal.id, subgoals.length)
  const children = subgoals.map((s, i) =>
    draft({
      id: ids[i] as NodeId,
      parent: d,
      index: i,
      depth: d.depth + 1,
      title: s.title,
      detail: s.detail,
      dependsOnIdx: s.dependsOn,
      needs: s.needs ?? [],
      markedLeaf: s.leaf,
      evidence,
      base: { at: won.decidedBy.env.hlc, evidence },
      budget
    })
  )
  d.children = children
  return children
}
