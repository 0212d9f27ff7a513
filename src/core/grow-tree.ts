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

/** A draft while the tree grows. */
type Growing = { -readonly [K in keyof Draft]: Draft[K] }

type Won = Extract<NodeDecision, { kind: 'won' }>

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
  rules?: TrustRules
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
  const pending: Growing[] = []
  if (decompose(root, index, params, committees, rules)) pending.push(root)
  while (pending.length > 0) {
    const d = pending.pop() as Growing
    for (const c of split(d, d.decision as Won)) if (decompose(c, index, params, committees, rules)) pending.push(c)
  }
  return root
}

/** A fresh node, not decided yet. */
function draft(place: Omit<Draft, 'decision' | 'kind' | 'leafReason' | 'accepted' | 'children'>): Growing {
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
function decompose(
  d: Growing,
  index: PlanIndex,
  params: PlanParams,
  committees: readonly CommitteeView[],
  rules: TrustRules | undefined
): boolean {
  if (d.markedLeaf || d.depth >= params.maxDepth) {
    d.kind = 'leaf'
    d.leafReason = d.markedLeaf ? 'marked-leaf' : 'max-depth'
    return false
  }
  const decision = decideNode(index, d.id, params.maxAttempts, committees, approversFor(params, 'splits'), rules)
  d.decision = decision
  if (decision.kind === 'exhausted') {
    d.kind = 'leaf'
    d.leafReason = 'attempts-exhausted'
    d.base = { at: maxHlc([d.base.at, decision.failedAt]), evidence: decision.lastBallots }
  }
  return decision.kind === 'won'
}

/** Apply a won split: the node's children, or a max-nodes leaf when they do not fit its budget. Returns the children. */
function split(d: Growing, won: Won): Growing[] {
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
  const ids = childIds(d.id, won.proposal.id, subgoals.length)
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
