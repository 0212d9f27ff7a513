import * as z from 'zod'
import { MAX_REASON_CHARS } from '../../core/limits.js'
import { isFinished } from '../../core/view.js'
import { publishCancel } from '../../author/author-events.js'
import { HINT, authorTool } from './author-tool.js'
import { PLAN_ID } from './plan-input.js'
import { ToolInputError } from './tool-result.js'

/** Cancel a plan of this server's key; a finished plan is refused, since nothing of it can change. */
export const planCancel = authorTool({
  name: 'plan_cancel',
  title: 'Cancel a plan',
  description: "Cancel a plan this server submitted: no new work starts on it. Others' plans: a tool error.",
  inputSchema: z.object({
    plan: PLAN_ID,
    reason: z.string().optional().describe(`why, shown to everyone (at most ${MAX_REASON_CHARS} characters)`)
  }),
  act: async (view, tree, a) => {
    if (isFinished(tree))
      throw new ToolInputError(`plan ${tree.plan.slice(0, 12)} is ${tree.status}: nothing more can be changed`)
    await publishCancel(view, tree, a.reason, HINT)
    return `cancelled plan ${tree.plan}`
  }
})
