import { MAX_GOAL_CHARS } from '../../core/limits.js'
import { publishGoal } from '../../author/author-events.js'
import { confirmHeld, readiness } from './readiness.js'
import { SUBMIT, paramsAndWarnings } from './submit-args.js'
import { swarmTool } from './swarm-tool.js'
import { ToolInputError, ok } from './tool-result.js'

/**
 * Publish a goal signed with this server's key, within the node's goal rate,
 * and answer only once another peer holds it: a plan id returned is never
 * one that lives on this node alone.
 */
export const planSubmit = swarmTool({
  name: 'plan_submit',
  title: 'Submit a goal',
  description:
    "Publish a goal for the swarm to plan and carry out, signed with this server's key (so " +
    'the author tools work on it). Returns the plan id once another peer holds the goal. Follow ' +
    'it with plan_wait or plan_get. Use executors: "outside" to do its tasks yourself with task_next.',
  inputSchema: SUBMIT,
  handle: async (tools, a) => {
    const view = tools.view
    if (a.goal.trim() === '')
      throw new ToolInputError('the goal is empty: say what to plan, e.g. "plan a two-week trip to Japan"')
    if (a.goal.length > MAX_GOAL_CHARS)
      throw new ToolInputError(
        `the goal is ${a.goal.length} characters long; the most is ${MAX_GOAL_CHARS}: say it shorter`
      )
    if (a.committee === undefined && !readiness(view).canSubmit)
      throw new ToolInputError(`cannot submit now: ${readiness(view).why}`)
    const { params, warnings } = paramsAndWarnings(view, a)
    const refused = tools.rate.refusal(view.now())
    if (refused !== null) throw new ToolInputError(`${refused}; nothing was published`)
    const plan = await publishGoal(view, a.goal, params)
    tools.rate.took(view.now())
    const heldBy = await confirmHeld(view, 1_000 * (a.timeoutSeconds ?? 60))
    tools.say(`submitted plan ${plan}`)
    // Over the open-plan limit per author: it is stored and waits its turn; the caller is told so.
    const waits = view.held(plan)
    return ok(
      `submitted plan ${plan} (committee of ${params.committee.length}, quorum ${params.quorum}); held by ${heldBy}` +
        (waits === null ? '' : `; the plan ${waits}`) +
        warnings.map(w => `\nwarning: ${w}`).join(''),
      {
        plan,
        committee: params.committee,
        quorum: params.quorum,
        heldBy,
        waits,
        ...(warnings.length > 0 ? { warnings } : {})
      }
    )
  }
})
