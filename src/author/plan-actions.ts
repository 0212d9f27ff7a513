import { majority } from '../core/events.js'
import { isFinished } from '../core/view.js'
import { ConfigError } from '../errors.js'
import { checkAuthor } from './author-events.js'
import type { NodeView } from '../ports/node-view.js'
import type { EventId, PeerIdString, TaskId } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'

/**
 * The author's other actions on a plan it submitted: amend the committee,
 * raise the budget, retry a failed task. One implementation for the
 * commands (`amend`, `raise-budget`, `retry`) and the MCP tools; each checks
 * first and throws a ConfigError that says what to change, publishing
 * nothing.
 */
type AuthorView = Pick<NodeView, 'publish' | 'me'>

function checkOpen(tree: PlanTree): void {
  if (isFinished(tree))
    throw new ConfigError(`plan ${tree.plan.slice(0, 12)} is ${tree.status}: nothing more can be changed`)
}

/** Publish `committee-amended`; the quorum defaults to a strict majority. Returns a line saying what changed. */
export async function publishAmend(
  view: AuthorView,
  tree: PlanTree,
  committee: PeerIdString[],
  quorum?: number,
  hint?: string
): Promise<string> {
  checkAuthor(view, tree, hint ?? "run this from the submitter's --data-dir")
  checkOpen(tree)
  if (committee.length === 0)
    throw new ConfigError('the committee needs at least one member (peer ids of scorers or people)')
  const q = quorum ?? majority(committee.length)
  if (q < majority(committee.length) || q > committee.length)
    throw new ConfigError(`quorum ${q}: must be a majority of the ${committee.length} members, at most all of them`)
  await view.publish('committee-amended', tree.plan, [], { committee, quorum: q })
  return `amended the committee of plan ${tree.plan} to ${committee.length} members, quorum ${q}`
}

/** Publish `budget-raised` to `budget` tokens, which must be above the current budget. */
export async function publishRaiseBudget(
  view: AuthorView,
  tree: PlanTree,
  budget: number | undefined,
  hint?: string
): Promise<string> {
  checkAuthor(view, tree, hint ?? "run this from the submitter's --data-dir")
  checkOpen(tree)
  if (budget === undefined || !Number.isSafeInteger(budget) || budget <= tree.budgetTokens)
    throw new ConfigError(`the new budget must be a whole number of tokens above the current ${tree.budgetTokens}`)
  await view.publish('budget-raised', tree.plan, [], { budgetTokens: budget })
  return `raised the budget of plan ${tree.plan} to ${budget} tokens`
}

/** Publish `task-retried` for a failed task, named by its task id or its node id. */
export async function publishRetry(
  view: AuthorView,
  tree: PlanTree,
  taskOrNode: string | undefined,
  hint?: string
): Promise<string> {
  checkAuthor(view, tree, hint ?? "run this from the submitter's --data-dir")
  checkOpen(tree)
  const task = tree.tasks.find(t => t.id === taskOrNode || t.node === taskOrNode)
  if (task === undefined)
    throw new ConfigError(
      `retry needs a task or node id of plan ${tree.plan.slice(0, 12)} (see plan_get or GET /plans/<id>)`
    )
  if (task.status !== 'failed')
    throw new ConfigError(`task ${task.id.slice(0, 12)} is ${task.status}, not failed: nothing to retry`)
  await view.publish('task-retried', tree.plan, task.finishEvent === null ? [] : [task.finishEvent as EventId], {
    task: task.id as TaskId
  })
  return `retried task ${task.id}`
}
