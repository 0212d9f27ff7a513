import * as z from 'zod'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** Every plan this node holds, one line each, marked `yours` when this server's key submitted it. */
export const planList = swarmTool({
  name: 'plan_list',
  title: 'List plans',
  description:
    'Every plan this node holds, one line each: id, goal, status, nodes done, tokens spent, and why it waits.',
  inputSchema: z.object({
    status: z
      .enum(['planning', 'executing', 'completed', 'failed', 'cancelled', 'budget-exhausted'])
      .optional()
      .describe('only plans in this status')
  }),
  annotations: { readOnlyHint: true },
  handle: async ({ view }, { status }) => {
    const plans = view
      .planLines()
      .filter(p => status === undefined || p.status === status)
      .map(p => ({ ...p, yours: view.summary(p.id)?.author === view.me }))
    return ok(
      plans.length === 0
        ? 'no plans'
        : plans
            .map(
              p =>
                `${p.id} ${p.status} ${p.done}/${p.nodes} done ${p.spentTokens} ` +
                `tokens: ${p.goal.slice(0, 80)}${p.waiting.length > 0 ? ` (waits: ${p.waiting.join('; ')})` : ''}`
            )
            .join('\n'),
      { plans }
    )
  }
})
