import { isFinished } from '../src/core/view.js'
import type { NodeId, PlanEvent, EventId } from '../src/core/events.js'
import type { PlanTree, TreeNode, TaskView } from '../src/core/tree.js'
import type { QuotedResult } from '../src/llm/types.js'

/** Read-only lookups a role needs beside the tree: events by id (the tree holds ids, not bodies). */
export interface EventLookup {
  get: (id: EventId) => PlanEvent | undefined
}

export function nodeMap(tree: PlanTree): Map<NodeId, TreeNode> {
  return new Map(tree.nodes.map(n => [n.id, n]))
}

/** Ancestor titles from the root down to (not including) `node`. */
export function pathOf(tree: PlanTree, node: TreeNode, nodes = nodeMap(tree)): string[] {
  const path: string[] = []
  for (
    let p = node.parent === null ? undefined : nodes.get(node.parent);
    p !== undefined;
    p = p.parent === null ? undefined : nodes.get(p.parent)
  ) {
    path.unshift(p.title)
  }
  return path
}

/** A finished node's output (its task's accepted result), or a note that it failed. */
export function outputOf(tree: PlanTree, node: TreeNode): QuotedResult | undefined {
  const task = tree.tasks.find(t => t.id === node.task)
  if (task === undefined) return undefined
  if (task.status === 'failed')
    return { title: node.title, output: `(this step failed after ${task.failures} attempts; no result)` }
  const r = task.results.find(x => x.accepted)
  return r === undefined ? undefined : { title: node.title, output: r.output }
}

/**
 * What a task's prompt quotes: for a leaf, the results of the siblings it
 * (or an ancestor) depends on; for a roll-up, its children's results.
 */
export function inputsOf(tree: PlanTree, task: TaskView, nodes = nodeMap(tree)): QuotedResult[] {
  const node = nodes.get(task.node)
  if (node === undefined) return []
  const from: TreeNode[] = []
  if (task.kind === 'rollup') {
    for (const c of node.children) {
      const n = nodes.get(c)
      if (n !== undefined) from.push(n)
    }
  } else {
    for (let a: TreeNode | undefined = node; a !== undefined; a = a.parent === null ? undefined : nodes.get(a.parent)) {
      for (const d of a.dependsOn) {
        const n = nodes.get(d)
        if (n !== undefined) from.push(n)
      }
    }
  }
  return from.flatMap(n => {
    const o = outputOf(tree, n)
    return o === undefined ? [] : [o]
  })
}

/** The plan takes no new LLM work: finished, cancelled or out of budget. */
export function isIdle(tree: PlanTree): boolean {
  return isFinished(tree) || tree.status === 'budget-exhausted'
}

/** Below this share of the budget left, roles switch to the cheap model when one is configured. */
export const CHEAP_MODEL_BELOW = 0.2

export function nearBudget(tree: PlanTree): boolean {
  return tree.budgetTokens - tree.spentTokens < tree.budgetTokens * CHEAP_MODEL_BELOW
}

/** Who may execute a plan's tasks (its `executors` parameter; plans of protocol version 1 have none: models). */
export function executorsOf(tree: PlanTree): 'model' | 'outside' | 'any' {
  const who = (tree.params as { executors?: string }).executors
  return who === 'outside' || who === 'any' ? who : 'model'
}

/** Model executors leave plans reserved for outside workers alone. */
export function welcomesModels(tree: PlanTree): boolean {
  return executorsOf(tree) !== 'outside'
}

/** Outside workers (task_next, `task next`) take tasks of plans marked 'outside' or 'any'. */
export function welcomesOutside(tree: PlanTree): boolean {
  return executorsOf(tree) !== 'model'
}
