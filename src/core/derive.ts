import { sortEvents } from './order.js'
import { committeeOf } from './dep-rules.js'
import { growTree } from './grow-tree.js'
import { NodeTasks } from './node-tasks.js'
import { planOutcome } from './plan-status.js'
import { onePerSlot } from './slots.js'
import { NodeTitles, breadthFirst, treeNode } from './tree-nodes.js'
import { TrustRules } from './trust-rules.js'
import { countedTokens } from './counted-usage.js'
import type { PlanIndex } from './plan-index.js'
import { resolveParams } from './events.js'
import type { Hlc, PeerIdString, PlanEvent } from './events.js'
import type { CommitteeView, Equivocation, PlanStanding, PlanTree, TaskView, TreeNode } from './tree.js'

export { childId, rollupId } from './node-ids.js'

/**
 * The plan tree as a pure function of a plan's folded events, in steps:
 * the committees; the tree grown top-down from the goal (grow-tree.ts); each
 * node's task decided once its blockers have finished (node-tasks.ts); the
 * plan's status (plan-status.ts). Each step returns the equivocations it
 * found, and the tree keeps one proof per slot.
 *
 * Nothing here reads the arrival order: every group of events is sorted in
 * the total order (hlc, author, id) before use, and maxNodes is shared out
 * top-down (see Draft.budget), so it cuts the same way everywhere and never
 * undoes an applied split.
 */
export function derivePlan(index: PlanIndex): PlanTree {
  const goal = index.goal
  if (goal === undefined) throw new Error(`plan ${index.id} has no goal folded`)
  const params = resolveParams(goal.env.body.params)
  const committees = committeesOf(goal, index.amendments)
  const rules = params.trust === undefined ? undefined : new TrustRules(index, params)
  const root = growTree(index, goal, committees, rules)
  const order = breadthFirst(root)
  const finishes = new NodeTasks(index, params, committees, rules, root.id)
  const titles = new NodeTitles(order)
  const nodes: TreeNode[] = []
  const tasks: TaskView[] = []
  const found: Equivocation[] = []
  for (const d of order) {
    const f = finishes.finishOf(d)
    if (f.view !== null) tasks.push(f.view)
    nodes.push(treeNode(d, f, titles))
    for (const e of d.decision?.equivocations ?? []) found.push(e)
    for (const e of f.equivocations) found.push(e)
  }
  const rootTask = finishes.finishOf(root).view
  const equivocations = onePerSlot(found)
  const spentTokens = rules === undefined ? index.spentTokens : countedTokens(index, params, nodes, tasks, rules)
  const { budgetTokens, deliverable, status, statusReason } = planOutcome(index, params, rootTask, tasks, spentTokens)
  const standing = rules === undefined ? undefined : standingOf(rules, equivocations, index)
  // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
  return {
    author: goal.env.author,
    ...(rules === undefined ? {} : { backupMs: rules.backupMs }),
    ...(rules?.sooner === undefined ? {} : { backupSooner: soonerView(rules.sooner) }),
    budgetTokens,
    committees,
    deliverable,
    duplicates: tasks.reduce((n, t) => n + t.duplicates, 0),
    equivocations,
    events: index.size,
    goal: goal.env.body.text,
    ignoredClaims: tasks.reduce((n, t) => n + t.ignoredClaims, 0),
    nodes,
    params,
    plan: index.id,
    root: root.id,
    spentTokens,
    ...(standing === undefined ? {} : { standing }),
    status,
    statusReason,
    submittedAt: goal.env.hlc,
    tasks
  }
}

/** The goal's committee, then each amendment's, in the total order. */
export function committeesOf(
  goal: PlanEvent<'goal-submitted'>,
  amendments: ReadonlyArray<PlanEvent<'committee-amended'>>
): CommitteeView[] {
  return sortEvents<PlanEvent>([goal, ...amendments]).map(e => {
    const c = committeeOf(e) as NonNullable<ReturnType<typeof committeeOf>>
    return { event: e.id, members: c.members, quorum: c.quorum }
  })
}

/** The tree's `backupSooner`: members in sorted order (tree objects are built with sorted keys). */
function soonerView(s: { ms: number; after: ReadonlyMap<PeerIdString, Hlc> }): NonNullable<PlanTree['backupSooner']> {
  const after: Record<PeerIdString, Hlc> = {}
  for (const m of [...s.after.keys()].sort()) after[m] = s.after.get(m) as Hlc
  return { after, ms: s.ms }
}

/** Protocol 5's standing: the equivocators, and every piece of evidence the rules noted (equivocations included). */
function standingOf(rules: TrustRules, equivocations: readonly Equivocation[], index: PlanIndex): PlanStanding {
  for (const q of equivocations)
    for (const id of q.events) {
      const e = index.event(id)
      if (e !== undefined) rules.note('equivocation', e)
    }
  return { equivocators: [...rules.equivocators].sort(), evidence: rules.evidence() }
}
