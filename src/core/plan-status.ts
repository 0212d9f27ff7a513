import { compareEvents, earliest } from './order.js'
import type { PlanIndex } from './plan-index.js'
import type { ResolvedParams } from './events.js'
import type { PlanStatus, PlanTree, TaskView } from './tree.js'

/** The plan-wide part of the tree: its status and why, its budget, and its deliverable. */
export type PlanOutcome = Pick<PlanTree, 'budgetTokens' | 'deliverable' | 'status' | 'statusReason'>

/**
 * The plan's status from its root task and its author's events.
 * Cancellation and completion: whichever comes first in the total order
 * wins. Then failure, then an exhausted budget (a raise resumes the plan).
 */
export function planOutcome(
  index: PlanIndex,
  params: ResolvedParams,
  rootTask: TaskView | null,
  tasks: readonly TaskView[],
  spentTokens: number = index.spentTokens,
  /** Whether some task has a chain: a caller that keeps count passes it, sparing a pass over `tasks`. */
  anyChains: boolean = tasks.some(t => t.chains.length > 0)
): PlanOutcome {
  const budgetTokens = Math.max(params.budgetTokens, ...index.raises.map(r => r.env.body.budgetTokens))
  const { status, statusReason } = planStatus(index, rootTask, budgetTokens, anyChains, spentTokens)
  const accepted = rootTask?.results.find(r => r.accepted)
  const deliverable =
    status === 'completed' && rootTask !== null && accepted !== undefined
      ? { output: accepted.output, result: accepted.id, task: rootTask.id }
      : null
  return { budgetTokens, deliverable, status, statusReason }
}

function planStatus(
  index: PlanIndex,
  rootTask: TaskView | null,
  budgetTokens: number,
  anyChains: boolean,
  spentTokens: number
): { status: PlanStatus; statusReason: string } {
  const cancel = earliest(index.cancels)
  const finishEvent =
    rootTask?.finishEvent === null || rootTask === null ? undefined : index.event(rootTask.finishEvent)
  if (cancel !== undefined && (finishEvent === undefined || compareEvents(cancel, finishEvent) < 0)) {
    return { status: 'cancelled', statusReason: `cancelled by its author: ${cancel.env.body.reason}` }
  }
  if (rootTask?.status === 'done' && rootTask.finishedAt !== null)
    return { status: 'completed', statusReason: 'the root roll-up has an accepted result: the deliverable' }
  if (rootTask?.status === 'failed')
    return { status: 'failed', statusReason: `the root task failed after ${rootTask.failures} attempts` }
  if (spentTokens >= budgetTokens) {
    return {
      status: 'budget-exhausted',
      statusReason: `spent ${spentTokens} of ${budgetTokens} tokens; the author can raise the budget`
    }
  }
  if (anyChains) return { status: 'executing', statusReason: 'executors are working on tasks' }
  return { status: 'planning', statusReason: 'decomposers and scorers are growing the tree' }
}
