import * as z from 'zod'
import { isFinished } from '../../core/view.js'
import { sleep } from '../../ports/scheduler.js'
import { agentPlan, planText } from '../plan-json.js'
import { PLAN_ID, int, planId } from './plan-input.js'
import { swarmTool } from './swarm-tool.js'
import { ToolInputError, ok } from './tool-result.js'
import type { ServerContext } from '@modelcontextprotocol/server'
import type { PlanTree } from '../../core/tree.js'

/** How far a plan is, for progress notifications: finished tasks out of all known. */
function progressOf(tree: PlanTree, held: string | null): { done: number; total: number; line: string } {
  const done = tree.tasks.filter(t => t.status === 'done' || t.status === 'failed').length
  const total = Math.max(tree.tasks.length, 1)
  return {
    done,
    total,
    line:
      `${tree.status}: ${done}/${tree.tasks.length} tasks finished, ${tree.nodes.length} nodes, ${tree.spentTokens} tokens` +
      (held === null ? '' : `; the plan ${held}`)
  }
}

async function notifyProgress(ctx: ServerContext, progress: number, total: number, message: string): Promise<void> {
  const token = ctx.mcpReq._meta?.progressToken
  if (token === undefined) return
  await ctx.mcpReq.notify({
    method: 'notifications/progress',
    params: { progressToken: token, progress, total, message }
  })
}

/**
 * Follow a plan until it finishes or the timeout passes, with a progress
 * notification whenever where it stands changes. The outside executor's
 * claims are renewed all the while (a waiting agent is still at work).
 */
export const planWait = swarmTool({
  name: 'plan_wait',
  title: 'Wait for a plan',
  description:
    'Follow a plan until it finishes or the timeout passes (default 300 s, at most 3600), ' +
    'sending progress notifications as tasks finish. Returns the final status and the ' +
    'deliverable; on timeout, where it stands (call again to keep waiting).',
  inputSchema: z.object({
    plan: PLAN_ID,
    timeoutSeconds: int('give up after this many seconds (default 300, at most 3600)'),
    maxResultChars: int('cut the deliverable to this many characters (default 0: whole)')
  }),
  handle: async (tools, { plan, timeoutSeconds, maxResultChars }, ctx) => {
    const view = tools.view
    const id = planId(plan)
    const deadline = view.now() + 1_000 * Math.min(3_600, timeoutSeconds ?? 300)
    let last = ''
    while (true) {
      if (ctx.mcpReq.signal.aborted) throw new ToolInputError('the wait was cancelled')
      const tree = view.loadTree(id)
      if (tree === undefined && view.now() > deadline)
        throw new ToolInputError(`plan ${id.slice(0, 12)} never arrived at this node: check the id with plan_list`)
      if (tree !== undefined) {
        const pr = progressOf(tree, view.held(id))
        if (pr.line !== last) {
          last = pr.line
          await notifyProgress(ctx, pr.done, pr.total, pr.line)
        }
        if (isFinished(tree) || view.now() > deadline) {
          const p = agentPlan(tree, view.me, view.treeHash(id), maxResultChars ?? 0)
          const finished = isFinished(tree)
          const text = finished
            ? `${planText(p)}`
            : `still ${tree.status} after the timeout: ${pr.line}; call plan_wait again to keep waiting`
          return ok(text, {
            finished,
            status: tree.status,
            statusReason: tree.statusReason,
            deliverable: p.deliverable,
            spentTokens: tree.spentTokens,
            treeHash: p.treeHash
          })
        }
      }
      tools.outside.touch()
      await sleep(view.scheduler, 250)
    }
  }
})
