import type { NodeId, PeerIdString, TaskId } from './events.js'
import type { PlanStatus, PlanTree, TaskView, TreeNode } from './tree.js'

/**
 * The time questions, answered outside the fold: `view` takes the folded
 * tree and a wall time, and tells the roles what they may do now.
 */
export interface PlanView {
  readonly tree: PlanTree
  readonly nowMs: number
  /** Tasks nobody holds, or whose lease lapsed more than the skew allowance ago. */
  readonly claimable: readonly TaskView[]
  /** Nodes with an open attempt, and the attempt. */
  readonly openAttempts: ReadonlyArray<{ readonly node: TreeNode; readonly attempt: number }>
  /** Nodes that wait, and why (in words). */
  readonly waiting: ReadonlyArray<{ readonly node: NodeId; readonly title: string; readonly reason: string }>
  task: (id: TaskId) => TaskView | undefined
  node: (id: NodeId) => TreeNode | undefined
  /** Tasks whose current claim chain belongs to `peer`. */
  ownedBy: (peer: PeerIdString) => TaskView[]
  /** Milliseconds left on a task's current lease (negative once lapsed), or null when nobody holds it. */
  leaseLeftMs: (task: TaskView) => number | null
}

/**
 * Statuses after which a plan takes no new work.
 * The one test of it: takes a tree, a summary, or anything with a plan status.
 */
export function isFinished(plan: { readonly status: PlanStatus }): boolean {
  return plan.status === 'completed' || plan.status === 'failed' || plan.status === 'cancelled'
}

export function view(tree: PlanTree, nowMs: number, skewAllowanceMs = 2_000): PlanView {
  const tasks = new Map(tree.tasks.map(t => [t.id, t]))
  const nodes = new Map(tree.nodes.map(n => [n.id, n]))
  const current = (t: TaskView): TaskView['chains'][number] | undefined => {
    const c = t.chains[t.chains.length - 1]
    return t.status === 'claimed' && c !== undefined && c.end === null ? c : undefined
  }
  const leaseLeftMs = (t: TaskView): number | null => {
    const c = current(t)
    return c === undefined ? null : c.lapseMs - nowMs
  }
  const active = !isFinished(tree) && tree.status !== 'budget-exhausted'
  const claimable = active
    ? tree.tasks.filter(
        t => t.status === 'ready' || (t.status === 'claimed' && (leaseLeftMs(t) ?? 0) < -skewAllowanceMs)
      )
    : []
  const openAttempts = active
    ? tree.nodes.flatMap(n => {
        const a = n.attempts[n.attempts.length - 1]
        return n.kind === 'decomposing' && a !== undefined && a.outcome === 'open'
          ? [{ node: n, attempt: a.attempt }]
          : n.kind === 'decomposing' && a === undefined
            ? [{ node: n, attempt: 1 }]
            : []
      })
    : []
  const waiting = tree.nodes.flatMap(n =>
    n.waiting === null ? [] : [{ node: n.id, title: n.title, reason: n.waiting }]
  )
  return {
    tree,
    nowMs,
    claimable,
    openAttempts,
    waiting,
    task: id => tasks.get(id),
    node: id => nodes.get(id),
    ownedBy: peer => tree.tasks.filter(t => current(t)?.owner === peer),
    leaseLeftMs
  }
}
