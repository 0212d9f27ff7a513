import * as z from 'zod'
import { publishRaiseBudget } from '../../author/plan-actions.js'
import { HINT, authorTool } from './author-tool.js'
import { PLAN_ID } from './plan-input.js'

/** A higher token budget for a plan of this server's key, e.g. one that ran out. */
export const planRaiseBudget = authorTool({
  name: 'plan_raise_budget',
  title: "Raise a plan's budget",
  description: 'Raise the token budget of a plan this server submitted (for example one that is budget-exhausted).',
  inputSchema: z.object({
    plan: PLAN_ID,
    budgetTokens: z.number().int().positive().describe('the new budget in tokens, above the current one')
  }),
  act: async (view, tree, a) => await publishRaiseBudget(view, tree, a.budgetTokens, HINT)
})
