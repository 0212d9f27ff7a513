import * as z from 'zod'
import { castReview } from '../../author/person-events.js'
import { PLAN_ID, planId } from './plan-input.js'
import { confirmHeld } from './readiness.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** This key's verdict on a result that waits for its review, answered once another peer holds it. */
export const planReview = swarmTool({
  name: 'plan_review',
  title: 'Review a result',
  description:
    "Accept or reject a task's result that waits for this key's review (see inbox). A reject " +
    'needs notes saying what to redo: the task reopens and is done again.',
  inputSchema: z.object({
    plan: PLAN_ID,
    task: z.string().describe('the task id (from inbox)'),
    verdict: z.enum(['accept', 'reject']),
    notes: z.string().optional().describe('why; required for a reject')
  }),
  handle: async ({ view }, { plan, task, verdict, notes }) => {
    const r = await castReview(view, planId(plan), task, verdict, notes ?? '')
    const heldBy = await confirmHeld(view, 30_000)
    return ok(
      `${verdict === 'accept' ? 'accepted' : 'rejected'} the result of task ${r.env.body.task.slice(0, 12)}; held by ${heldBy}`,
      { plan, task: r.env.body.task, verdict, review: r.id, heldBy }
    )
  }
})
