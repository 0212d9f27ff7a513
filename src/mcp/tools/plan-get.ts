import * as z from 'zod'
import { agentPlan, planText } from '../plan-json.js'
import { PLAN_ID, int, planId, treeOf } from './plan-input.js'
import { swarmTool } from './swarm-tool.js'
import { ToolInputError, ok } from './tool-result.js'

/**
 * A plan's tree as an agent reads it, results trimmed to a length it picks.
 * A node that never fetches finished plans (--history open) answers with a
 * peer's summary instead, saying so.
 */
export const planGet = swarmTool({
  name: 'plan_get',
  title: 'Get a plan',
  description:
    "A plan's tree: every node with its status, why it waits, the owner of its task, and its " +
    'result (trimmed to maxResultChars, default 500; 0 for whole), plus the deliverable once there is one.',
  inputSchema: z.object({
    plan: PLAN_ID,
    node: z.string().optional().describe('only this node (a node or task id)'),
    maxResultChars: int('cut each result to this many characters (default 500; 0: whole)')
  }),
  annotations: { readOnlyHint: true },
  handle: async ({ view }, { plan, node, maxResultChars }) => {
    const id = planId(plan)
    const loaded = view.loadTree(id)
    if (loaded === undefined && view.history === 'open') {
      const found = await view.planSummary(id)
      if (found !== null) {
        const s = found.summary
        const text =
          `plan ${id.slice(0, 12)} "${s.goal}": ${s.status}, ${s.done}/${s.nodes} nodes done, as peer ` +
          `${found.from} describes it (this node keeps only the plans under way, --history open)` +
          (s.deliverable === null ? '' : `\n\ndeliverable:\n${s.deliverable}`)
        return ok(text, { ...s, from: found.from, held: false })
      }
    }
    const tree = loaded ?? treeOf(view, plan)
    const p = agentPlan(tree, view.me, view.treeHash(tree.plan), maxResultChars ?? 500, node, view.held(tree.plan))
    if (node !== undefined && p.nodes.length === 0)
      throw new ToolInputError(
        `plan ${tree.plan.slice(0, 12)} has no node or task ${JSON.stringify(node.slice(0, 80))}: see plan_get without node`
      )
    return ok(planText(p), p as unknown as Record<string, unknown>)
  }
})
