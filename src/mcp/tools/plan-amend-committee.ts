import * as z from 'zod'
import { parseCommittee } from '../../author/author-events.js'
import { publishAmend } from '../../author/plan-actions.js'
import { HINT, authorTool } from './author-tool.js'
import { PLAN_ID, int } from './plan-input.js'

/** A new committee (and quorum) for a plan of this server's key, e.g. when a member never answers. */
export const planAmendCommittee = authorTool({
  name: 'plan_amend_committee',
  title: 'Amend the committee',
  description: 'Replace the committee (and quorum) of a plan this server submitted, e.g. when a member never answers.',
  inputSchema: z.object({
    plan: PLAN_ID,
    committee: z.array(z.string()).describe('peer ids of the new committee'),
    quorum: int('ballots needed (default: a majority)')
  }),
  act: async (view, tree, a) => {
    const committee = parseCommittee(a.committee.join(','))
    return await publishAmend(view, tree, committee ?? [], a.quorum, HINT)
  }
})
