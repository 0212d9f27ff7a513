import * as z from 'zod'
import { publishRetry } from '../../author/plan-actions.js'
import { HINT, authorTool } from './author-tool.js'
import { PLAN_ID } from './plan-input.js'

/** Another round of attempts for a failed task of a plan of this server's key. */
export const planRetry = authorTool({
  name: 'plan_retry',
  title: 'Retry a failed task',
  description: 'Give a failed task of a plan this server submitted another round of attempts.',
  inputSchema: z.object({ plan: PLAN_ID, task: z.string().describe('the task id or node id (from plan_get)') }),
  act: async (view, tree, a) => await publishRetry(view, tree, a.task, HINT)
})
