import * as z from 'zod'
import { castVote } from '../../author/person-events.js'
import { PLAN_ID, planId } from './plan-input.js'
import { confirmHeld } from './readiness.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** This key's ballot on a split that waits for it, answered once another peer holds the ballot. */
export const planVote = swarmTool({
  name: 'plan_vote',
  title: 'Vote on a split',
  description:
    "Cast this key's ballot on a node that waits for it (see inbox): choose one proposal by " +
    'its id, or none (choice: null) with notes saying what to change, so that the decomposers ' +
    'propose again addressing them.',
  inputSchema: z.object({
    plan: PLAN_ID,
    node: z.string().describe('the node id (from inbox)'),
    choice: z.string().nullable().describe('the proposal id to choose, or null for none'),
    notes: z.string().optional().describe('why; required when choosing none')
  }),
  handle: async ({ view }, { plan, node, choice, notes }) => {
    const ballot = await castVote(view, planId(plan), node, choice, notes ?? '')
    const heldBy = await confirmHeld(view, 30_000)
    return ok(
      `cast a ballot for ${ballot.env.body.choice === null ? 'none' : `proposal ${ballot.env.body.choice.slice(0, 12)}`} ` +
        `on node ${node.slice(0, 12)}; held by ${heldBy}`,
      { plan, node: ballot.env.body.node, choice: ballot.env.body.choice, ballot: ballot.id, heldBy }
    )
  }
})
