import * as z from 'zod'
import { renderMarkdown } from '../../../roles/render.js'
import { PLAN_ID, treeOf } from './plan-input.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** A plan as the same Markdown the `export` command writes, finished or not. */
export const planExport = swarmTool({
  name: 'plan_export',
  title: 'Export a plan',
  description:
    'The plan as Markdown: the goal, the tree with every result, and the deliverable. Works ' +
    'for a plan in progress too (what there is so far).',
  inputSchema: z.object({ plan: PLAN_ID }),
  annotations: { readOnlyHint: true },
  handle: async ({ view }, { plan }) => {
    const tree = treeOf(view, plan)
    const markdown = renderMarkdown(tree)
    return ok(markdown, { plan: tree.plan, status: tree.status, markdown })
  }
})
