import { inbox } from './inbox.js'
import { planAmendCommittee } from './plan-amend-committee.js'
import { planCancel } from './plan-cancel.js'
import { planEvents } from './plan-events.js'
import { planExport } from './plan-export.js'
import { planGet } from './plan-get.js'
import { planList } from './plan-list.js'
import { planRaiseBudget } from './plan-raise-budget.js'
import { planRetry } from './plan-retry.js'
import { planReview } from './plan-review.js'
import { planSubmit } from './plan-submit.js'
import { planVote } from './plan-vote.js'
import { planWait } from './plan-wait.js'
import { swarmStanding } from './swarm-standing.js'
import { swarmStatus } from './swarm-status.js'
import { taskComplete } from './task-complete.js'
import { taskNext } from './task-next.js'
import { taskRelease } from './task-release.js'
import { guarded } from './tool-result.js'
import type { McpServer } from '@modelcontextprotocol/server'
import type { SwarmTool, SwarmTools } from './swarm-tool.js'

/**
 * Every tool of the swarm, in the order a client lists them (tools/list
 * keeps registration order): status first, then a plan's life from submit
 * to export, the author's actions, a person's answers, outside workers.
 */
export const SWARM_TOOLS: readonly SwarmTool[] = [
  swarmStatus,
  swarmStanding,
  planSubmit,
  planList,
  planGet,
  planEvents,
  planWait,
  planCancel,
  planRetry,
  planRaiseBudget,
  planAmendCommittee,
  planExport,
  inbox,
  planVote,
  planReview,
  taskNext,
  taskComplete,
  taskRelease
]

/** Register every tool on `server` over one node; each call runs guarded, so no input crashes the server. */
export function registerSwarmTools(server: McpServer, tools: SwarmTools): void {
  for (const tool of SWARM_TOOLS)
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        annotations: tool.annotations
      },
      async (args, ctx) => await guarded(tools, tool.name, async () => await tool.handle(tools, args, ctx))
    )
}
